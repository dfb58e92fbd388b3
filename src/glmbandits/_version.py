"""The package version, in one place (read by ``pyproject.toml`` and ``glmbandits.__version__``)."""

__version__ = "0.1.0"
