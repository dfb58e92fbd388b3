"""The package version, in one place.

Semantic versioning (https://semver.org); ``CHANGELOG.md`` lists what each version added, its
newest entry being this version (tests/test_packaging.py checks it). Read by the wheel's
metadata (``pyproject.toml``: ``[tool.setuptools.dynamic]``), ``glmbandits.__version__``,
``glmbandits --version``, a model file's ``library_version``, a results store's run metadata
and the service's OpenAPI ``info.version``.
"""

__version__ = "0.2.0"
