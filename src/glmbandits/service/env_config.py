"""Environment variables of the service config: the name ``GLMBANDITS_<TABLE>_<KEY>`` of each
key of :data:`~glmbandits.service.config.CONFIG_FIELDS`, and how a variable's text is read.

:func:`~glmbandits.service.config.environment_tables` finds the variables set, reads each
with :func:`env_value` and the type its table declares, and checks it with the config's own
checker (an error names the variable); :func:`~glmbandits.service.config.load_config` lays
them over the file's values. Precedence, highest first: a command line flag, the
environment, the file, the default. This module imports nothing of the config, which
imports it.
"""

from __future__ import annotations

import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["env_variable", "env_value", "ENV_PREFIX"]

#: What every variable of a config key starts with.
ENV_PREFIX = "GLMBANDITS_"


def env_variable(table: str, key: str) -> str:
    """The environment variable of ``[table] key``.

    Examples
    --------
    >>> env_variable("service", "port"), env_variable("auth", "api_key_sha256")
    ('GLMBANDITS_SERVICE_PORT', 'GLMBANDITS_AUTH_API_KEY_SHA256')
    """
    return f"{ENV_PREFIX}{table.upper()}_{key.upper()}"


def env_value(text: str, kinds: type | tuple[type, ...]) -> Any:
    """A variable's ``text`` as a value of ``kinds`` (a config field's types): a string as
    it is, a list as comma-separated words (or a TOML array), anything else as a TOML value.

    Raises ``ValueError`` if the text is not a TOML value. Its type is not checked here: the
    config's checker does that, naming what it expects.

    Examples
    --------
    >>> env_value("ucb-glm", str), env_value("8000", int), env_value("0.5", (int, float))
    ('ucb-glm', 8000, 0.5)
    >>> env_value("ab, cd", list), env_value("{alpha = 2.0}", dict)
    (['ab', 'cd'], {'alpha': 2.0})

    An array of tables (``[[features.context]]``) is a TOML array of inline tables:

    >>> env_value('[{kind = "numeric", name = "age"}]', list)
    [{'kind': 'numeric', 'name': 'age'}]
    >>> env_value("{alpha", dict)
    Traceback (most recent call last):
    ...
    ValueError: not a TOML value: '{alpha'
    """
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if str in kinds:
        return text
    if list in kinds and not text.lstrip().startswith("["):
        return [word.strip() for word in text.split(",") if word.strip()]
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        raise ValueError(f"not a TOML value: {text[:60]!r}") from None
