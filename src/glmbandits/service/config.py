"""The service's TOML config: read, checked before anything starts, and an example.

Every table and key is declared once, in :data:`CONFIG_FIELDS` (type, range,
conversion), and checked by one small checker; an unknown one, a wrong type or a bad
value is a :class:`ConfigError` that names the key, what was expected and what was given.
The policy is built once while checking, so its parameters are checked by the
policy class itself. ``example_config()`` is the commented config printed by
``glmbandits serve --example-config``; it starts as it is.

Every key can also come from an environment variable ``GLMBANDITS_<TABLE>_<KEY>``
(:func:`environment_tables`, named and read by :mod:`.env_config`), over the file's value.

The ``[features]`` table declares a :class:`~glmbandits.features.FeatureSchema` (the form
``schema.declaration()`` writes, every value declared, plus ``norm_bound``, the unit-ball
factor): the schema's own refusals become a :class:`ConfigError` naming the key
(``[features] context[2] vocabulary``), in :mod:`.config_features`, whose
:func:`~.config_features.features_table` writes the table of a schema fitted offline.

Why this module is long: the one table of keys (:data:`CONFIG_FIELDS`), the dataclasses it
fills (one per table), its checker for the file and the environment, and the example config
that shows every key belong together.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    from ..features import FeatureSchema

__all__ = ["ConfigError", "ServiceConfig", "PolicyConfig", "DecisionConfig", "DriftConfig", "MODES",
           "load_config",
           "parse_config", "example_config", "hash_key", "ENV_API_KEYS", "EXAMPLE_KEYS",
           "refuse_example_keys", "CONFIG_FIELDS", "Field", "check_table_types",
           "check_table_values", "check_key_digests", "environment_tables"]

#: The environment variable with extra API keys (comma-separated, in clear).
ENV_API_KEYS = "GLMBANDITS_API_KEYS"
#: Keys shown in glmbandits' documentation and examples (older versions' example config
#: held the digest of ``change-me``): anyone can guess them, so a service whose accepted
#: keys include one of them refuses to start (:func:`refuse_example_keys`).
EXAMPLE_KEYS = ("change-me", "replace-with-a-long-random-key")
#: ``[decisions] mode``: show the policy's choice, or the client's default (shadow mode).
MODES = ("live", "shadow")
_MIB = 1024 * 1024


class ConfigError(ValueError):
    """A service config that cannot be used; the message names the key."""


def hash_key(key: str) -> str:
    """The SHA-256 hex digest of an API key, the form a config holds.

    Examples
    --------
    >>> hash_key("change-me")[:16]
    'e2186dbdb1bb4193'
    """
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def refuse_example_keys(digests: Iterable[str], where: str) -> None:
    """Raise :class:`ConfigError` if ``digests`` hold the digest of a key of :data:`EXAMPLE_KEYS`.

    A key that the documentation shows is valid on every service configured with it,
    so no such key may open a service: the operator chooses one. ``where`` names
    where the digests came from (``[auth] api_key_sha256``, ``GLMBANDITS_API_KEYS``).

    Examples
    --------
    >>> refuse_example_keys([hash_key("s3cret-of-mine")], "GLMBANDITS_API_KEYS")
    >>> refuse_example_keys([hash_key("change-me")], "GLMBANDITS_API_KEYS")
    Traceback (most recent call last):
    ...
    glmbandits.service.config.ConfigError: GLMBANDITS_API_KEYS holds the key 'change-me', an example key shown in glmbandits' documentation that anyone can guess; the service refuses to start with it. Choose a key of your own, e.g. python -c 'import secrets; print(secrets.token_hex(16))', and send it as 'Authorization: Bearer KEY'
    """
    known = {hash_key(key): key for key in EXAMPLE_KEYS}
    for digest in digests:
        if digest in known:
            raise ConfigError(
                f"{where} holds the key {known[digest]!r}, an example key shown in glmbandits' "
                "documentation that anyone can guess; the service refuses to start with it. "
                "Choose a key of your own, e.g. python -c 'import secrets; "
                "print(secrets.token_hex(16))', and send it as 'Authorization: Bearer KEY'")


@dataclass(frozen=True)
class PolicyConfig:
    """``[policy]``: which policy, for which problem, and its keyword arguments."""

    name: str
    n_features: int
    family: str = "logistic"
    seed: int = 0
    horizon: int = 1_000_000
    params: dict[str, Any] = field(default_factory=dict)

    def build(self, max_actions: int) -> Any:
        """A fresh policy with this config (``glmbandits.policies.registry.make_policy``)."""
        from ..policies.registry import ProblemSpec, make_policy

        problem = ProblemSpec(n_features=self.n_features, n_actions=max_actions,
                              family=self.family, horizon=self.horizon)
        return make_policy(self.name, problem, seed=self.seed, **self.params)


@dataclass(frozen=True)
class DecisionConfig:
    """``[decisions]``: request limits, the serving mode, and what happens to rewards and
    missing rewards.

    ``mode`` is ``"live"`` (the policy's choice is shown) or ``"shadow"`` (the client
    sends its own ``default_action``, which is shown and learned from, while the
    policy's choice is only logged). It is not part of :meth:`ServiceConfig.fingerprint`:
    the log records per decision what was shown, so a service may switch modes
    across a restart and still replay its log.
    """

    max_actions: int = 100
    mode: str = "live"
    reward_wait: float | None = None
    missing_reward: str = "drop"
    default_reward: float = 0.0
    duplicate_rewards: str = "ignore"
    max_pending: int = 100_000
    max_resolved: int = 100_000
    max_catalogue: int = 100_000
    expire_every: float = 1.0

    def policy_options(self) -> dict[str, Any]:
        """The options of ``Policy.configure_decisions`` this config sets."""
        return {"max_pending": self.max_pending, "max_resolved": self.max_resolved,
                "duplicate_rewards": self.duplicate_rewards, "reward_wait": self.reward_wait,
                "default_reward": (self.default_reward if self.missing_reward == "default"
                                   else None)}


@dataclass(frozen=True)
class DriftConfig:
    """``[drift]``: the drift monitor the served policy carries (the table present: on;
    absent: off). See :class:`glmbandits.evaluation.DriftMonitor`; its state is part of
    the model (saved in snapshots, rebuilt by replay), so the table is in the fingerprint."""

    window: int = 500
    alpha: float = 0.01
    warmup: int | None = None
    action: str = "none"

    def monitor(self) -> Any:
        """A fresh :class:`~glmbandits.evaluation.DriftMonitor` with these parameters."""
        from ..evaluation.drift import DriftMonitor

        return DriftMonitor(self.window, self.alpha, warmup=self.warmup, action=self.action)


@dataclass(frozen=True)
class ServiceConfig:
    """A checked service config (see :func:`example_config` for every key)."""

    policy: PolicyConfig
    decisions: DecisionConfig = field(default_factory=DecisionConfig)
    host: str = "127.0.0.1"
    port: int = 8000
    db: str = "sqlite:///glmbandits-service.db"
    max_body_bytes: int = 4 * _MIB
    snapshot_every: int = 10_000
    synchronous: str = "FULL"
    max_header_bytes: int = 32 * 1024
    max_headers: int = 100
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    api_key_sha256: tuple[str, ...] = ()
    drift: DriftConfig | None = None
    max_queue: int = 10_000
    log_format: str = "text"
    features: FeatureSchema | None = None

    def fingerprint(self) -> str:
        """What the model state depends on, as canonical JSON; a store remembers it so
        that a log is never replayed into a policy configured differently.

        With ``[features]``, it holds the schema's ``fingerprint_`` (its declaration and
        its norm bound: a log written under one schema is never replayed under another);
        without, it is what it was before the table existed."""
        return json.dumps({"policy": {"name": self.policy.name,
                                      "n_features": self.policy.n_features,
                                      "family": self.policy.family, "seed": self.policy.seed,
                                      "horizon": self.policy.horizon,
                                      "params": self.policy.params,
                                      "max_actions": self.decisions.max_actions},
                           "decisions": self.decisions.policy_options(),
                           **({} if self.drift is None else {"drift": vars(self.drift)}),
                           **({} if self.features is None
                              else {"features": self.features.fingerprint_})},
                          sort_keys=True)

    def build_policy(self) -> Any:
        """A fresh policy, configured for decisions, as this config describes; with
        ``[features]`` it carries the schema (``policy.feature_schema_``, saved in its
        snapshots; :func:`~glmbandits.features.attach_schema`)."""
        policy = self.policy.build(self.decisions.max_actions)
        if self.features is not None:
            from ..features import attach_schema

            attach_schema(policy, self.features)
        if self.drift is not None:
            policy.monitor_drift(self.drift.monitor())
        return policy.configure_decisions(**self.decisions.policy_options())

    def key_hashes(self, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """The accepted key hashes: the config's plus those of ``GLMBANDITS_API_KEYS``.

        Raises :class:`ConfigError` if one is an example key of the documentation
        (:func:`refuse_example_keys`).
        """
        environ = os.environ if environ is None else environ
        extra = [hash_key(k.strip()) for k in environ.get(ENV_API_KEYS, "").split(",")
                 if k.strip()]
        refuse_example_keys(self.api_key_sha256, "the config's [auth] api_key_sha256")
        refuse_example_keys(extra, ENV_API_KEYS)
        return tuple(dict.fromkeys([*self.api_key_sha256, *extra]))


# -- reading ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Field:
    """One key of the config: its type, its range, and what it becomes.

    ``expected`` is what a value of the wrong type is told; ``valid`` (a predicate) and
    ``valid_text`` (default ``expected``) say what a value of the right type must be.
    """

    kinds: type | tuple[type, ...]
    expected: str
    valid: Callable[[Any], bool] | None = None
    valid_text: str | None = None
    required: bool = False
    convert: Callable[[Any], Any] | None = None


def _finite(value: float) -> bool:
    """Whether a number is finite as a float (an int beyond float64 is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _at_least(low: float) -> Callable[[Any], bool]:
    return lambda value: value >= low


def _one_of(*choices: str) -> Callable[[Any], bool]:
    return lambda value: value in choices


def _seconds(low: float) -> Field:
    """A finite number of seconds >= ``low``, kept as a float."""
    return Field((int, float), f"seconds {'>=' if low == 0 else '>'} 0",
                 lambda value: _finite(value) and value >= low,
                 f"a finite number of seconds >= {low:g}", convert=float)


def _count(low: int) -> Field:
    return Field(int, f"an integer >= {low}", _at_least(low))


def _choice(*choices: str) -> Field:
    return Field(str, " or ".join(repr(choice) for choice in choices), _one_of(*choices))


def _flag() -> Field:
    return Field(bool, "true or false")


def _tables(group: str) -> Field:
    """An array of tables (``[[features.<group>]]``), each checked by the feature schema."""
    return Field(list, f"an array of tables ([[features.{group}]], each a field with kind "
                       "and name)")


#: Every table and key of the config: THE list of what a config may hold and what each
#: value must be. The types of every table are checked first, then the values, in this
#: order.
CONFIG_FIELDS: dict[str, dict[str, Field]] = {
    "policy": {
        "name": Field(str, "a policy name", required=True),
        "n_features": Field(int, "an integer >= 1", _at_least(1), required=True),
        "family": Field(str, "a family name"),
        "seed": _count(0),
        "horizon": _count(1),
        "params": Field(dict, "a table"),
    },
    "decisions": {
        "max_actions": _count(1),
        "max_pending": _count(1),
        "max_resolved": _count(1),
        "max_catalogue": _count(1),
        "reward_wait": _seconds(0.0),
        "expire_every": _seconds(1e-3),
        "mode": _choice(*MODES),
        "missing_reward": _choice("drop", "default"),
        "default_reward": Field((int, float), "a number", _finite, "a finite number",
                                convert=float),
        "duplicate_rewards": _choice("ignore", "sum"),
    },
    "service": {
        "host": Field(str, "a host name or address"),
        "port": Field(int, "a port 1-65535", lambda value: 1 <= value <= 65535),
        "db": Field(str, "a sqlite:/// or postgresql:// URL"),
        "max_body_bytes": _count(1024),
        "snapshot_every": _count(1),
        "synchronous": _choice("FULL", "NORMAL"),
        "max_header_bytes": _count(1024),
        "max_headers": _count(1),
        "header_timeout": _seconds(0.01),
        "body_timeout": _seconds(0.01),
        "max_queue": Field(int, "an integer from 1 to 1000000",
                           lambda value: 1 <= value <= 1_000_000),
        "log_format": _choice("text", "json"),
    },
    "auth": {"api_key_sha256": Field(list, "a list of 64-digit SHA-256 hex digests")},
    "drift": {
        "window": _count(10),
        "alpha": Field((int, float), "a number in (0, 1)", lambda value: 0 < value < 1,
                       convert=float),
        "warmup": _count(0),
        "action": _choice("none", "restart"),
    },
    "features": {  # a FeatureSchema's declaration (checked by config_features), norm_bound
        "format": Field(int, "an integer (the declaration's format)"),
        "context": _tables("context"),
        "action": _tables("action"),
        "interactions": Field(list, 'an array of pairs of names ([["context", "action"]])'),
        "intercept": _flag(),
        "unit_ball": _flag(),
        "unknown": _choice("refuse", "ignore"),
        "norm_bound": Field((int, float), "a number > 0", lambda value: _finite(value)
                            and value > 0, "a finite number > 0", convert=float),
    },
}


def load_config(path: str | os.PathLike[str],
                environ: Mapping[str, str] | None = None) -> ServiceConfig:
    """Read and check a TOML config file (:class:`ConfigError` on any mistake), with the
    keys set in ``environ`` (default ``os.environ``) as ``GLMBANDITS_<TABLE>_<KEY>`` over
    the file's (:mod:`glmbandits.service.env_config`).

    Without ``[service] db`` the event log is ``<config stem>.db`` next to the config.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"config {str(path)!r}: cannot be read ({error.strerror})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config {str(path)!r}: not valid TOML ({error})") from None
    for table, values in environment_tables(os.environ if environ is None
                                            else environ).items():
        if isinstance(data.setdefault(table, {}), dict):  # (else: the file's error)
            data[table].update(values)
    default_db = "sqlite:///" + str(path.resolve().with_suffix(".db"))
    return parse_config(data, source=str(path), default_db=default_db)


def environment_tables(environ: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The keys set in ``environ`` as ``GLMBANDITS_<TABLE>_<KEY>``
    (:func:`~glmbandits.service.env_config.env_variable`, one per key of
    :data:`CONFIG_FIELDS`), as tables of checked values; :class:`ConfigError` names the
    variable of a value that cannot be read, of the wrong type or out of range.

    Examples
    --------
    >>> environment_tables({"GLMBANDITS_SERVICE_PORT": "9000", "HOME": "/root"})
    {'service': {'port': 9000}}
    >>> environment_tables({"GLMBANDITS_SERVICE_PORT": "0"})
    Traceback (most recent call last):
    ...
    glmbandits.service.config.ConfigError: environment variable GLMBANDITS_SERVICE_PORT: [service] port must be a port 1-65535, got 0
    """
    from .env_config import env_value, env_variable
    from .store import parse_db_url

    tables: dict[str, dict[str, Any]] = {}
    for table, fields in CONFIG_FIELDS.items():
        for key, field in fields.items():
            variable = env_variable(table, key)
            if variable not in environ:
                continue
            where = f"environment variable {variable}"
            try:
                value = env_value(environ[variable], field.kinds)
            except ValueError:
                raise ConfigError(f"{where}: [{table}] {key} must be {field.expected}, got "
                                  f"{environ[variable][:60]!r}") from None
            try:
                check_table_values(check_table_types({table: {key: value}}, table), table,
                                   partial=True)
                if table == "auth":
                    check_key_digests(value)
                if (table, key) == ("service", "db"):
                    parse_db_url(value)
            except ValueError as error:  # (a ConfigError too)
                raise ConfigError(f"{where}: {error}") from None
            tables.setdefault(table, {})[key] = value
    return tables


def _prefix(source: str | None) -> str:
    return "" if source is None else f"config {source!r}: "


def check_table_types(data: dict[str, Any], table: str,
                      source: str | None = None) -> dict[str, Any]:
    """One table's keys, known and of their declared types (:data:`CONFIG_FIELDS`); a
    message starts with ``config 'SOURCE':`` when ``source`` is given."""
    fields = CONFIG_FIELDS[table]
    section = data.get(table, {})
    if not isinstance(section, dict):
        raise ConfigError(f"{_prefix(source)}[{table}] must be a table, got {section!r}")
    unknown = sorted(set(section) - set(fields))
    if unknown:
        raise ConfigError(f"config {source!r}: unknown key(s) {unknown} in [{table}]; "
                          f"expected some of {sorted(fields)}")
    for key, value in section.items():
        if (isinstance(value, bool) and fields[key].kinds is not bool) or not isinstance(
                value, fields[key].kinds):
            raise ConfigError(f"{_prefix(source)}[{table}] {key} must be "
                              f"{fields[key].expected}, got {value!r} ({type(value).__name__})")
    return section


def check_table_values(section: dict[str, Any], table: str, source: str | None = None, *,
                       partial: bool = False) -> dict[str, Any]:
    """One typed table (:func:`check_table_types`): required keys present (unless
    ``partial``: some keys of a table), values in range, converted."""
    where = f"{_prefix(source)}[{table}]"
    checked = dict(section)
    for key, field in CONFIG_FIELDS[table].items():
        if key not in section:
            if field.required and not partial:
                raise ConfigError(f"{where} {key} is missing")
            continue
        if field.valid is not None and not field.valid(section[key]):
            raise ConfigError(f"{where} {key} must be {field.valid_text or field.expected}, "
                              f"got {section[key]!r}")
        if field.convert is not None:
            checked[key] = field.convert(section[key])
    return checked


def check_key_digests(hashes: list[Any], source: str | None = None) -> None:
    """Each accepted key's digest: 64 lower-case hex digits, never a documented example."""
    for index, digest in enumerate(hashes):
        if not (isinstance(digest, str) and len(digest) == 64
                and all(c in "0123456789abcdef" for c in digest)):
            raise ConfigError(f"{_prefix(source)}[auth] api_key_sha256[{index}] must be a "
                              "64-digit lower-case SHA-256 hex digest (sha256sum of the key; "
                              "the key itself never goes in the config), got '<hidden>'")
    try:
        refuse_example_keys(hashes, "[auth] api_key_sha256")
    except ConfigError as error:
        raise ConfigError(f"config {source!r}: {error}") from None


def parse_config(data: dict[str, Any], *, source: str = "<config>",
                 default_db: str | None = None) -> ServiceConfig:
    """Check a config already read from TOML (a dict) and return it as a :class:`ServiceConfig`."""
    from .config_features import feature_schema, schema_width

    unknown = sorted(set(data) - set(CONFIG_FIELDS))
    if unknown:
        raise ConfigError(f"config {source!r}: unknown table(s) or key(s) {unknown}; "
                          f"expected the tables {sorted(CONFIG_FIELDS)}")
    if "policy" not in data:
        raise ConfigError(f"config {source!r}: the [policy] table is missing (it needs at "
                          "least name and n_features)")
    typed = {table: check_table_types(data, table, source) for table in CONFIG_FIELDS}
    features = check_table_values(typed["features"], "features", source)
    try:
        schema = feature_schema(features) if "features" in data else None
        if schema is not None:
            typed["policy"] = schema_width(typed["policy"], schema)
    except ValueError as error:
        raise ConfigError(f"{_prefix(source)}{error}") from None
    policy, decisions, service, auth, drift = (check_table_values(typed[table], table, source)
                                               for table in CONFIG_FIELDS if table != "features")
    if "db" in service:
        from .store import parse_db_url

        try:
            parse_db_url(service["db"])
        except ValueError as error:
            raise ConfigError(f"config {source!r}: [service] db: {error}") from None
    elif default_db is not None:
        service["db"] = default_db
    hashes = auth.get("api_key_sha256", [])
    check_key_digests(hashes, source)
    config = ServiceConfig(policy=PolicyConfig(**policy), decisions=DecisionConfig(**decisions),
                           api_key_sha256=tuple(hashes), **service,
                           drift=DriftConfig(**drift) if "drift" in data else None,
                           features=schema)
    try:
        config.build_policy()
    except (TypeError, ValueError) as error:
        raise ConfigError(f"config {source!r}: [policy] cannot build the policy: "
                          f"{error}") from None
    return config


_EXAMPLE = '''\
# glmbandits serve: a complete config (TOML). It holds no API key: choose one, e.g.
#   export GLMBANDITS_API_KEYS=$(python -c 'import secrets; print(secrets.token_hex(16))')
#   glmbandits serve this-file.toml
# and send "Authorization: Bearer $GLMBANDITS_API_KEYS". Unknown keys are errors.

[policy]
name = "ucb-glm"          # any registered policy: ucb-glm, linucb, glm-tsl, laplace-ts, ...
n_features = 10           # d: every action's feature vector has this length
family = "logistic"       # reward family: logistic, probit, linear, poisson
seed = 0                  # the same seed and the same requests give the same decisions
horizon = 1000000         # the T of policies that need one (supcb-glm, rs-glincb)

[policy.params]           # keyword arguments of the policy class, e.g.
# alpha = 1.0

[decisions]
max_actions = 100         # the largest K accepted in one request
mode = "live"             # "live": answer with the policy's choice. "shadow": the client
                          # sends default_action, which is answered, shown and learned
                          # from; the policy's choice is only logged (GET /v1/evaluation).
                          # Switching is a config change: restart with the same log.
reward_wait = 3600.0      # seconds a reward may arrive after its decision (omit: forever)
missing_reward = "drop"   # a decision whose reward never comes: "drop" or "default"
default_reward = 0.0      # what "default" learns
duplicate_rewards = "ignore"  # a repeated reward: "ignore" (counted) or "sum"
max_pending = 100000      # at most this many decisions wait; the oldest expires first
max_resolved = 100000     # closed ids remembered, to tell a duplicate from an unknown id
max_catalogue = 100000    # live actions in the catalogue ([features]); a PUT beyond is 409
expire_every = 1.0        # seconds between sweeps that close decisions past reward_wait

[service]
host = "127.0.0.1"        # overridden by --host
port = 8000               # overridden by --port
# db = "sqlite:///events.db"   # or postgresql://...; --db overrides; default: CONFIG.db
max_body_bytes = 4194304  # larger request bodies are refused with 413
snapshot_every = 10000    # write a snapshot of the model every N events
synchronous = "FULL"      # SQLite: FULL survives power loss, NORMAL only process crashes
max_header_bytes = 32768  # a request line + headers above this: 431, connection closed
max_headers = 100         # more header lines than this: 431, connection closed
header_timeout = 10.0     # seconds a request's line and headers may take to arrive (408)
body_timeout = 30.0       # seconds its body may take after the headers (408)
max_queue = 10000         # requests waiting for the worker; more are refused (429, Retry-After)
log_format = "text"       # "json": one JSON object a line (--log-format overrides)

[auth]
# SHA-256 digests of the accepted keys (echo -n KEY | sha256sum), e.g.
# api_key_sha256 = ["<64 hex digits>"]; keys in clear may also come from
# GLMBANDITS_API_KEYS (comma-separated). Without any key the service does not start, and
# a key shown in the documentation (such as "change-me") is refused.
api_key_sha256 = []

# [drift]                 # uncomment to monitor drift (docs/drift.md); off without it
# window = 500            # rewarded decisions per block of the two-window test
# alpha = 0.01            # bound on the chance of any false alarm while nothing changes
# action = "none"         # on an alarm: "none" (report it) or "restart" (a fresh estimate)

# [features]              # uncomment for named features (docs/features.md): a request
#                         # sends a context and actions by name; n_features is then the
#                         # schema's width (leave it out). Every value is declared: fit a
#                         # schema offline, print its table: config_features.features_table
# interactions = [["context", "action"]]  # context x action columns, as VW's -q
# intercept = true        # a constant column
# unit_ball = true        # divide every row by norm_bound, so that ||x|| <= 1
# norm_bound = 7.5        # the factor, >= the largest row norm (here age 100: 7.35);
#                         # a fitted schema's norm_bound_ (unit_ball = true only)
# unknown = "refuse"      # a feature the schema does not name: "refuse" or "ignore"
#
# [[features.context]]    # one per context feature, in column order
# kind = "categorical"    # numeric, boolean, categorical, multi_categorical or vector
# name = "country"
# vocabulary = ["DE", "FR", "US"]  # one column each (or buckets = N: hashed)
# unseen = "other"        # another country: one "other" column, "zero" or "refuse"
# missing = "other"       # no country: "refuse", "zero" or "other"
#
# [[features.context]]
# kind = "numeric"
# name = "age"
# scale = [40.0, 12.0]    # (mean, sd): the column is (age - 40) / 12
# range = [16.0, 100.0]   # other ages are refused
#
# [[features.action]]     # one per action feature
# kind = "categorical"
# name = "topic"
# vocabulary = ["news", "sport", "tech"]
'''


def example_config() -> str:
    """The commented example config of ``glmbandits serve --example-config``.

    Examples
    --------
    >>> config = parse_config(tomllib.loads(example_config()))
    >>> config.policy.name, config.decisions.max_actions, config.api_key_sha256
    ('ucb-glm', 100, ())
    """
    return _EXAMPLE
