"""The experiment-config loader: any mapping gives a config or a ConfigError, nothing else."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from glmbandits.experiments.config import ConfigError, parse_config

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000),
                     st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=12)
_TOP = ("name", "description", "seeds", "seed", "horizon", "environment", "policies", "dask",
        "grid")
_ENVIRONMENT = ("n_features", "n_actions", "family", "theta_norm", "fixed_arms", "kind")
_PARAMS = ("alpha", "l2", "tau", "refit", "refit_tol", "epsilon", "radius", "horizon", "x")


@st.composite
def configs(draw: Any) -> dict:
    """A valid config with up to three keys replaced by arbitrary values.

    Integers stay within ±1000 so that a value the loader wrongly accepts cannot
    allocate gigabytes (absurd sizes have their own test in tests/experiments).
    """
    base: dict[str, Any] = {
        "name": "p", "seeds": 2, "horizon": 10,
        "environment": {"n_features": 2, "n_actions": 3},
        "policies": [{"name": "ucb-glm", "params": {"alpha": 1.0}}],
    }
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.sampled_from(("top", "environment", "policy", "params")))
        keys = {"top": _TOP, "environment": _ENVIRONMENT, "policy": ("name", "params", "label"),
                "params": _PARAMS}[where]
        target: Any = base
        path = {"top": (), "environment": ("environment",), "policy": ("policies", 0),
                "params": ("policies", 0, "params")}[where]
        for step in path:  # an earlier replacement may have removed the way down
            inside = (isinstance(target, dict) and step in target) or (
                isinstance(target, list) and isinstance(step, int) and step < len(target))
            target = target[step] if inside else None
        if isinstance(target, dict):
            target[draw(st.sampled_from(keys))] = draw(_values)
    return base


@given(data=configs())
def test_any_mapping_gives_a_config_or_a_config_error(data: dict) -> None:
    try:
        parse_config(data)
    except ConfigError as error:
        assert str(error)
