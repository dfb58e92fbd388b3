"""Declarative experiment configs (TOML): environments × policies × parameter grids × seeds.

A config is a TOML file (or the equivalent dict)::

    name = "faury2022-fig1"      # required
    horizon = 3000               # required, int > 0 (a list of ints is a grid axis)
    seeds = 5                    # replicates per cell (default 5)
    seed = 0                     # master seed (default 0)
    [environment]                # keyword arguments of SyntheticGLMEnv
    family = "logistic"
    n_features = [2, 4]          # a LIST value is a grid axis; scalars are fixed
    drift = "piecewise"          # optional: "piecewise" (breakpoints, jump, thetas) or
    breakpoints = 4              # "smooth" (path_length, path) over each horizon
    [[policies]]                 # one table per algorithm, by registry name
    name = "ucb-glm"
    [policies.params]            # optional keyword arguments of the policy
    alpha = [0.5, 1.0]
    [dask]                       # optional
    scheduler = "tcp://127.0.0.1:8786"

The cells are the product of the environment grid, the horizon grid and, for
each policy, its own parameter grid. Every key is checked when the config is
parsed: an unknown or missing key, an unknown policy, family or drift kind, or a
value the environment or the policy rejects raises :class:`ConfigError` naming the key.

Why this module is long: it is the one home of a config's key tables and their checks
(the top level, ``[environment]`` with the keys of each drift kind, ``[[policies]]``,
``[dask]``) and of the memory estimate that refuses an impossible sweep before it runs.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..environments import SyntheticGLMEnv
from ..environments.drifting import DRIFT_KINDS, drift_keywords, make_synthetic_env
from ..families import FAMILY_NAMES
from ..policies.registry import ProblemSpec, make_policy, policy_names

__all__ = ["ConfigError", "Cell", "PolicySpec", "ExperimentConfig", "load_config",
           "parse_config", "expand_grid", "estimate_run_memory", "memory_limit"]

class ConfigError(ValueError):
    """An experiment config is missing a key, has an unknown key or a bad value."""


def _env_keywords() -> tuple[list[str], list[str]]:
    """(keyword names, required names) of the synthetic environments, drifting ones too."""
    parameters = list(inspect.signature(SyntheticGLMEnv.__init__).parameters.values())[1:]
    names = list(dict.fromkeys(drift_keywords() + sum(map(drift_keywords, DRIFT_KINDS), ())))
    return names, [p.name for p in parameters if p.default is inspect.Parameter.empty]


def expand_grid(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """All combinations of the list-valued entries of ``values`` (scalars stay fixed).

    Examples
    --------
    >>> expand_grid({"a": [1, 2], "b": "x"})
    [{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'x'}]
    >>> expand_grid({})
    [{}]
    """
    keys = list(values)
    axes = [values[k] if isinstance(values[k], list) else [values[k]] for k in keys]
    return [dict(zip(keys, combo)) for combo in itertools.product(*axes)]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True, eq=False)
class Cell:
    """One point of the sweep: an environment, a horizon, a policy and its parameters."""

    environment: dict[str, Any]
    horizon: int
    policy: str
    params: dict[str, Any] = field(default_factory=dict)
    label: str | None = None

    @property
    def key(self) -> str:
        """A stable identifier (canonical JSON) used by the store to resume runs."""
        return _canonical({"environment": self.environment, "horizon": self.horizon,
                           "policy": self.policy, "params": self.params})

    @property
    def seed_key(self) -> int:
        """A stable 32-bit integer from :attr:`key`, for the cell's own seed stream."""
        return int(hashlib.sha256(self.key.encode()).hexdigest()[:8], 16)

    @property
    def name(self) -> str:
        """The policy label: ``ucb-glm(alpha=0.5)``, or the config's explicit label."""
        if self.label:
            return self.label
        if not self.params:
            return self.policy
        inside = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.policy}({inside})"

    @property
    def problem(self) -> ProblemSpec:
        """What a policy factory needs to know (:class:`ProblemSpec`)."""
        env = self.environment
        n_actions = env.get("n_actions", 20)
        return ProblemSpec(int(env["n_features"]), int(n_actions),
                           str(env.get("family", "logistic")), int(self.horizon),
                           float(env.get("theta_norm", 3.0)))

    def make_environment(self, seed: Any = None) -> SyntheticGLMEnv:  # drifts over horizon
        return make_synthetic_env(**self.environment, horizon=self.horizon, seed=seed)

    def make_policy(self, seed: Any = None) -> Any:
        return make_policy(self.policy, self.problem, seed=seed, **self.params)


@dataclass(frozen=True)
class PolicySpec:
    """One ``[[policies]]`` table: a registered name and its (grid of) parameters."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    label: str | None = None


@dataclass(frozen=True)
class ExperimentConfig:
    """A parsed and validated experiment (see the module docstring for the schema)."""

    name: str
    horizon: tuple[int, ...]
    environment: dict[str, Any]
    policies: tuple[PolicySpec, ...]
    seeds: int = 5
    seed: int = 0
    dask: dict[str, Any] | None = None
    description: str = ""

    def cells(self) -> list[Cell]:
        """Environment grid × horizon grid × (each policy × its parameter grid)."""
        cells = []
        for env in expand_grid(self.environment):
            for horizon in self.horizon:
                for spec in self.policies:
                    for params in expand_grid(spec.params):
                        cells.append(Cell(env, horizon, spec.name, params, spec.label))
        return cells

    def with_seeds(self, seeds: int) -> "ExperimentConfig":
        """The same experiment with another number of replicates (the ``--seeds`` flag)."""
        return parse_config({**self.to_dict(), "seeds": seeds})

    def to_dict(self) -> dict[str, Any]:
        """The resolved config as plain data (what the store records)."""
        data: dict[str, Any] = {
            "name": self.name,
            "horizon": self.horizon[0] if len(self.horizon) == 1 else list(self.horizon),
            "seeds": self.seeds, "seed": self.seed,
            "environment": dict(self.environment),
            "policies": [{"name": p.name, "params": dict(p.params),
                          **({"label": p.label} if p.label else {})} for p in self.policies],
        }
        if self.description:
            data["description"] = self.description
        if self.dask is not None:
            data["dask"] = dict(self.dask)
        return data


#: Rough bytes one planned (cell, replicate) task takes before it runs (its seeds and cell).
_TASK_BYTES = 2048


def estimate_run_memory(n_features: int, n_actions: int, horizon: int) -> int:
    """An upper estimate, in bytes, of the memory one simulated run needs.

    It counts, in float64: a round's contexts and their temporaries (the
    environment draws K x d features and normalises them; a policy scores them
    with K x d products), the policy's d x d matrices (V, V⁻¹ and work copies),
    its history of chosen contexts (T x d, grown geometrically, so up to twice
    that) and the per-round result arrays (a few of length T). It is an
    estimate for refusing absurd configs, not a measurement.

    Examples
    --------
    >>> estimate_run_memory(10, 20, 1000) < 2**20
    True
    >>> estimate_run_memory(10, 10**9, 100) > 100 * 2**30
    True
    """
    d, K, T = int(n_features), int(n_actions), int(horizon)
    return 8 * (K * (4 * d + 4) + 8 * d * d + 2 * T * d + 8 * T)


def memory_limit() -> int | None:
    """This machine's physical memory in bytes (None when the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return None


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:,.1f} GiB"


def _check_memory(owner: str, environments: list[dict[str, Any]], horizons: tuple[int, ...],
                  n_tasks: int) -> None:
    """Refuse, before anything is built, a config whose runs cannot fit in memory."""
    limit = memory_limit()
    if limit is None:
        return
    for env in environments:
        d, K = env.get("n_features"), env.get("n_actions", 20)
        if isinstance(K, (list, tuple)) and K:
            K = max(K, key=lambda k: k if isinstance(k, (int, np.integer)) else 0)
        sizes: tuple[Any, ...] = (d, K, max(horizons))
        # integral floats (TOML reads 1e9 as a float) are sized too, so the memory is stated
        if not all(isinstance(v, (int, np.integer, float)) and not isinstance(v, bool)
                   and np.isfinite(v) and v >= 1 and float(v) == int(v) for v in sizes):
            continue  # a wrong kind or value is reported by the environment's own checks
        need = estimate_run_memory(*sizes)
        if need > limit:
            raise ConfigError(
                f"{owner}: a run with environment.n_features = {int(sizes[0])}, "
                f"environment.n_actions = {int(K)} and horizon = {int(max(horizons))} needs an "
                f"estimated {_gib(need)} of memory (K x d contexts, d x d matrices, T x d "
                f"history), more than this machine's {_gib(limit)}; reduce n_actions, "
                f"n_features or horizon")
    if n_tasks * _TASK_BYTES > limit:
        raise ConfigError(f"{owner}: {n_tasks:,} runs (cells x seeds) need an estimated "
                          f"{_gib(n_tasks * _TASK_BYTES)} of memory just to plan, more than this "
                          f"machine's {_gib(limit)}; reduce seeds or the grid")


def _fail(owner: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{owner}: {key} {message}")


def _check_unknown(table: Mapping[str, Any], allowed: tuple[str, ...], owner: str,
                   where: str) -> None:
    for key in table:
        if key not in allowed:
            raise _fail(owner, f"{where}{key}", f"is not a known key (expected one of "
                                                f"{list(allowed)})")


def _int_value(value: Any, owner: str, key: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise _fail(owner, key, f"must be an int >= {minimum}, got {value!r}")
    if value < minimum:
        raise _fail(owner, key, f"must be an int >= {minimum}, got {value!r}")
    return int(value)


_ABSENT = object()  # no default: an absent key stays absent


@dataclass(frozen=True)
class _Key:
    """A config key: required, its default, its ``check(value, owner, key) -> kept``."""

    check: Callable[[Any, str, str], Any] | None = None
    required: bool = False
    default: Any = _ABSENT


def _checked(test: Callable[[Any], bool], expected: str,
             keep: Callable[[Any], Any] = lambda value: value) -> Callable[[Any, str, str], Any]:
    """A check: ``test(value)`` or "must be EXPECTED, got VALUE"; keeps ``keep(value)``."""
    def check(value: Any, owner: str, key: str) -> Any:
        if not test(value):
            raise _fail(owner, key, f"must be {expected}, got {value!r}")
        return keep(value)
    return check


def _horizons(value: Any, owner: str, key: str) -> tuple[int, ...]:
    """An int >= 1, or a non-empty list of them (a grid axis)."""
    if isinstance(value, list) and not value:
        raise _fail(owner, key, "is an empty list (a grid axis needs values)")
    values = value if isinstance(value, list) else [value]
    return tuple(_int_value(h, owner, key, 1) for h in values)


_TEXT = _checked(lambda value: isinstance(value, str), "a string")
_TABLE = _checked(lambda value: isinstance(value, Mapping), "a table")
#: The keys of a config (the environment's are SyntheticGLMEnv's keywords, checked by it).
_TOP_FIELDS: dict[str, _Key] = {
    "name": _Key(_checked(lambda value: isinstance(value, str) and bool(value.strip()),
                          "a non-empty string", str.strip), required=True),
    "description": _Key(_TEXT, default=""), "horizon": _Key(_horizons, required=True),
    "seeds": _Key(lambda value, owner, key: _int_value(value, owner, key, 1), default=5),
    "seed": _Key(lambda value, owner, key: _int_value(value, owner, key, 0), default=0),
    "environment": _Key(_TABLE, required=True), "policies": _Key(required=True), "dask": _Key(),
}
#: The keys of one ``[[policies]]`` table (its params are the policy's keywords, checked by it).
_POLICY_FIELDS: dict[str, _Key] = {
    "name": _Key(lambda value, owner, key: _checked(  # the names registered when checked
        lambda name: isinstance(name, str) and name.lower() in policy_names(),
        f"one of {policy_names()}", str.lower)(value, owner, key), required=True),
    "params": _Key(_TABLE, default={}), "label": _Key(_TEXT),
}
_DASK_FIELDS = {"scheduler": _Key(_checked(lambda v: isinstance(v, str), "a string address")),
                "retries": _Key(lambda value, owner, key: _int_value(value, owner, key, 0))}


def _check_fields(table: Mapping[str, Any], fields: dict[str, _Key], owner: str,
                  where: str = "") -> dict[str, Any]:
    """``table`` against ``fields``: no key unknown, the required ones present, each value
    through its check (in the order of ``fields``), the absent ones' defaults filled in."""
    _check_unknown(table, tuple(fields), owner, where)
    for key in (key for key, spec in fields.items() if spec.required and key not in table):
        raise _fail(owner, f"{where}{key}", "is missing (required)")
    checked: dict[str, Any] = {}
    for key, spec in fields.items():
        if key in table:
            check = spec.check or (lambda value, *_: value)
            checked[key] = check(table[key], owner, f"{where}{key}")
        elif spec.default is not _ABSENT:
            checked[key] = spec.default
    return checked


def _check_grid_values(table: Mapping[str, Any], owner: str, where: str) -> None:
    for key, value in table.items():
        if isinstance(value, list) and not value:
            raise _fail(owner, f"{where}{key}", "is an empty list (a grid axis needs values)")
        if isinstance(value, dict):
            raise _fail(owner, f"{where}{key}", "must be a scalar or a list, got a table")


def _check_environments(environments: list[dict[str, Any]], horizons: tuple[int, ...],
                        owner: str) -> None:
    """Each cell's keys are those of its drift kind (no ``drift``: stationary), and its
    environment builds over every horizon."""
    for env in environments:
        kind = env.get("drift")
        if kind is not None and (not isinstance(kind, str) or kind not in DRIFT_KINDS):
            raise _fail(owner, "environment.drift", f"must be one of {list(DRIFT_KINDS)}, got "
                                                    f"{kind!r}")
        _check_unknown(env, drift_keywords(kind), owner, "environment.")
        try:
            for T in horizons:
                make_synthetic_env(**env, horizon=T, seed=0)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"{owner}: environment {env} is rejected: {error}") from None


def parse_config(data: Mapping[str, Any], owner: str = "parse_config") -> ExperimentConfig:
    """Validate a config mapping and return an :class:`ExperimentConfig`.

    Every environment cell and every policy cell is built once (cheaply), so a
    value that :class:`~glmbandits.SyntheticGLMEnv` or the policy rejects is
    reported now, with the key, instead of in the middle of a sweep.

    Examples
    --------
    >>> config = parse_config({"name": "demo", "horizon": 100,
    ...                        "environment": {"n_features": [2, 3]},
    ...                        "policies": [{"name": "ucb-glm", "params": {"alpha": [0.5, 1.0]}},
    ...                                     {"name": "random"}]})
    >>> [cell.name for cell in config.cells()][:3]
    ['ucb-glm(alpha=0.5)', 'ucb-glm(alpha=1.0)', 'random']
    >>> len(config.cells())
    6
    >>> parse_config({"name": "x", "horizon": -5, "environment": {"n_features": 2},
    ...               "policies": [{"name": "random"}]})
    Traceback (most recent call last):
    ...
    glmbandits.experiments.config.ConfigError: parse_config: horizon must be an int >= 1, got -5
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"{owner}: the config must be a table (dict), got {type(data).__name__}")
    top = _check_fields(data, _TOP_FIELDS, owner)
    name, horizon, seeds, seed = top["name"], top["horizon"], top["seeds"], top["seed"]
    description, environment = top["description"], top["environment"]
    names, required = _env_keywords()
    _check_unknown(environment, tuple(names), owner, "environment.")
    for key in required:
        if key not in environment:
            raise _fail(owner, f"environment.{key}", "is missing (required)")
    _check_grid_values(environment, owner, "environment.")
    environment = dict(environment)
    families = environment.get("family", "logistic")
    for family in families if isinstance(families, list) else [families]:
        if family not in FAMILY_NAMES:
            raise _fail(owner, "environment.family", f"must be one of {list(FAMILY_NAMES)}, "
                                                     f"got {family!r}")
    environments = expand_grid(environment)
    n_policy_cells = 0
    for table in data["policies"] if isinstance(data["policies"], list) else []:
        params = table.get("params", {}) if isinstance(table, Mapping) else {}
        n_policy_cells += len(expand_grid(params)) if isinstance(params, Mapping) else 1
    _check_memory(owner, environments, horizon,
                  len(environments) * len(horizon) * max(n_policy_cells, 1) * seeds)
    _check_environments(environments, horizon, owner)

    policies = data["policies"]
    if not isinstance(policies, list) or not policies:
        raise _fail(owner, "policies", f"must be a non-empty array of tables, got {policies!r}")
    specs = []
    for i, table in enumerate(policies):
        where = f"policies[{i}]"
        entry = _check_fields(_TABLE(table, owner, where), _POLICY_FIELDS, owner, f"{where}.")
        _check_grid_values(entry["params"], owner, f"{where}.params.")
        specs.append(PolicySpec(entry["name"], dict(entry["params"]), entry.get("label")))

    dask = data.get("dask")
    if dask is not None:
        dask = _check_fields(_TABLE(dask, owner, "dask"), _DASK_FIELDS, owner, "dask.")

    config = ExperimentConfig(name.strip(), horizon, environment, tuple(specs), seeds, seed,
                              dask, description)
    for cell in config.cells():  # every policy cell must build: catches bad params now
        try:
            cell.make_policy(seed=0)
        except (TypeError, ValueError) as error:
            index = next(i for i, s in enumerate(specs) if s.name == cell.policy)
            raise ConfigError(f"{owner}: policies[{index}].params {cell.params} are rejected "
                              f"by {cell.policy!r}: {error}") from None
    return config


def load_config(path: str | os.PathLike) -> ExperimentConfig:
    """Read a TOML experiment config and validate it (:func:`parse_config`)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    path = Path(path)
    owner = f"load_config({str(path)!r})"
    if path.is_dir():
        raise ConfigError(f"load_config: path must name a TOML file, got a directory "
                          f"{str(path)!r}")
    try:
        with path.open("rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise ConfigError(f"load_config: path must name an existing TOML file, got "
                          f"{str(path)!r}") from None
    except OSError as error:
        raise ConfigError(f"{owner}: cannot read the file: {error.strerror or error}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise ConfigError(f"{owner}: the file must be UTF-8 text (TOML), got byte "
                          f"0x{raw[error.start]:02x} on line {line} that is not UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{owner}: not valid TOML (truncated or malformed): {error}") from None
    return parse_config(data, owner)
