"""The paper's statements checked by direct simulation: Theorem 1's coverage and Section 5.1's condition.

* :func:`theorem1_coverage` — over replications of the rewards on a fixed design
  whose λ_min(V) meets condition (4), how often
  ``|x'(θ̂ - θ*)| <= (3σ/κ)√log(1/δ)·‖x‖_{V⁻¹}`` (Theorem 1 promises >= 1 - 3δ).
* :func:`section51_condition` — ``Σ_{t>τ} λ_min(V_t)^{-1/2}`` against c√T for
  UCB-GLM (Section 5.1, eq. (9)).

:class:`ReproduceSettings` sizes these and the sweeps of
:func:`glmbandits.experiments.reproduce.reproduce`.

References
----------
Li, Lu & Zhou (2017), ICML: Theorem 1 (eqs. (4)–(5)) and Section 5.1 (eq. (9)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import theory
from ..environments import SyntheticGLMEnv
from ..estimation import solve_estimating_equation
from ..families import get_family
from ..policies import UCBGLM
from ..simulation import simulate
from .runner import replicate_seeds
from .plots import fit_loglog_slope

__all__ = ["ReproduceSettings", "DEFAULT_SETTINGS", "FULL_SETTINGS", "theorem1_coverage",
           "section51_condition"]


@dataclass(frozen=True)
class ReproduceSettings:
    """Sizes of the four checks (:data:`DEFAULT_SETTINGS` runs in a few minutes on 2 cores)."""

    # Theorem 1
    coverage_families: tuple[str, ...] = ("logistic", "probit")
    coverage_d: int = 2
    coverage_theta_norm: float = 0.5
    coverage_delta: float = 0.05
    coverage_replications: int = 100
    coverage_fractions: tuple[float, ...] = (1.0, 0.1, 0.01, 0.001)
    coverage_directions: int = 20
    # Theorem 2: (d, K, ‖θ*‖) problems, logistic
    theorem2_problems: tuple[tuple[int, int, float], ...] = ((10, 20, 3.0), (5, 20, 1.0))
    theorem2_horizon: int = 3000
    theorem2_delta: float = 0.05
    theorem2_seeds: int = 10
    # Scaling
    scaling_horizons: tuple[int, ...] = (250, 500, 1000, 2000, 4000)
    scaling_d_for_T: int = 5
    scaling_dims: tuple[int, ...] = (2, 4, 8, 16, 32)
    scaling_T_for_d: int = 2000
    scaling_seeds: int = 5
    scaling_n_actions: int = 20
    scaling_theta_norm: float = 3.0
    # Section 5.1
    section51_problem: tuple[int, int, float] = (10, 20, 3.0)
    section51_horizon: int = 3000
    section51_seeds: int = 5


DEFAULT_SETTINGS = ReproduceSettings()
FULL_SETTINGS = ReproduceSettings(
    coverage_replications=500, coverage_d=3,
    theorem2_horizon=10_000, theorem2_seeds=20,
    scaling_horizons=(250, 500, 1000, 2000, 4000, 8000, 16000), scaling_dims=(2, 4, 8, 16, 32, 64),
    scaling_T_for_d=5000, scaling_seeds=10, section51_horizon=10_000, section51_seeds=10)


# -- 1. Theorem 1 ---------------------------------------------------------------
def _sphere(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    X = rng.standard_normal((n, d))
    unit: np.ndarray = X / np.linalg.norm(X, axis=1, keepdims=True)
    return unit


def _design_meeting(rng: np.random.Generator, d: int, target: float) -> np.ndarray:
    """Rows on the unit sphere, just enough for λ_min(Σ x x') >= target."""
    X = _sphere(rng, max(d + 1, math.ceil(1.05 * d * target)), d)
    while np.linalg.eigvalsh(X.T @ X)[0] < target:
        X = np.vstack([X, _sphere(rng, max(d, X.shape[0] // 20), d)])
    return X


def theorem1_coverage(family: str, settings: ReproduceSettings = DEFAULT_SETTINGS,
                      seed: Any = 0) -> list[dict[str, Any]]:
    """Coverage of Theorem 1's width on fixed designs, one row per λ_min(V) level.

    For each fraction f of condition (4)'s λ_min (eq. (4)), a design of unit
    vectors with λ_min(V) >= f·λ_req is drawn once; then, in every replication,
    fresh rewards are drawn, the MLE θ̂ is solved (eq. (3), no ridge) and, for
    the d coordinate axes plus ``coverage_directions`` random unit directions x,
    ``|x'(θ̂ - θ*)|`` is compared with ``normality_width(x, V, δ, σ, κ)``.

    Returns rows with: ``fraction``, ``lambda_min``, ``n`` (design size),
    ``coverage`` (over replications and directions), ``min_coverage`` (worst
    direction), ``simultaneous`` (replications where all directions are covered),
    ``ratio_quantile`` (width over the empirical (1-3δ)-quantile of the error,
    averaged over directions: the factor by which the width could shrink and
    still cover as promised), ``ratio_median`` (median width/error) and
    ``failed_fits`` (replications where the MLE did not converge).
    """
    fam = get_family(family, "theorem1_coverage")
    s = settings
    d, delta = s.coverage_d, s.coverage_delta
    sigma, kappa = fam.sub_gaussian_sigma(), fam.kappa(s.coverage_theta_norm + 1.0)
    required = theory.normality_min_eigenvalue(d, delta, sigma, kappa, fam.smoothness())
    rng = np.random.default_rng(seed)
    theta_star = s.coverage_theta_norm * _sphere(rng, 1, d)[0]
    directions = np.vstack([np.eye(d), _sphere(rng, s.coverage_directions, d)])
    rows: list[dict[str, Any]] = []
    for fraction in s.coverage_fractions:
        X = _design_meeting(rng, d, fraction * required)
        V = X.T @ X
        widths = theory.normality_width(directions, V, delta, sigma, kappa)
        means = fam.mean(X @ theta_star)
        errors = np.empty((s.coverage_replications, directions.shape[0]))
        failed = 0
        for r in range(s.coverage_replications):
            y = fam.sample(means, rng)
            fit = solve_estimating_equation(X, y, fam, 0.0, None)
            failed += int(not fit.converged)
            errors[r] = np.abs(directions @ (fit.theta - theta_star))
        covered = errors <= widths
        quantile = np.quantile(errors, 1.0 - 3.0 * delta, axis=0)
        with np.errstate(divide="ignore"):
            ratios = widths / errors
        rows.append({
            "family": family, "fraction": fraction, "lambda_required": required,
            "lambda_min": float(np.linalg.eigvalsh(V)[0]), "n": int(X.shape[0]),
            "coverage": float(covered.mean()), "min_coverage": float(covered.mean(axis=0).min()),
            "simultaneous": float(covered.all(axis=1).mean()),
            "ratio_quantile": float(np.mean(widths / quantile)),
            "ratio_median": float(np.median(ratios)), "failed_fits": failed,
            "replications": s.coverage_replications,
        })
    return rows


# -- 4. Section 5.1 ---------------------------------------------------------------
class _Recorder:
    """Forwards select/update to a policy and records the played feature vectors."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.played: list[np.ndarray] = []

    def select(self, contexts: np.ndarray) -> int:
        action: int = self.policy.select(contexts)
        return action

    def update(self, x: np.ndarray, reward: float) -> None:
        self.played.append(np.array(x, dtype=float))
        self.policy.update(x, reward)

    @property
    def last_propensity_(self) -> Any:
        return self.policy.last_propensity_


def section51_condition(settings: ReproduceSettings = DEFAULT_SETTINGS,
                        seed: int = 0) -> dict[str, Any]:
    """Σ_{t=τ+1}^{T} λ_min(V_t)^{-1/2} for UCB-GLM on the default problem (Section 5.1, eq. (9)).

    ``V_t = Σ_{i<t} X_i X_i'`` is the paper's Gram matrix of the played vectors
    (no ridge). The condition holds with constant c when the partial sums
    ``S_t`` stay below ``c√t``; the returned ``ratios`` are ``S_t/√t`` on a grid
    of t for every seed, and ``slope`` the fitted slope of log S_t against log t
    (1/2 when the condition holds with a constant c, 1 when λ_min stays bounded).
    """
    d, K, norm = settings.section51_problem
    T = settings.section51_horizon
    grid = np.unique(np.linspace(T / 20, T, 20).round().astype(int))
    ratios, slopes, finals = [], [], []
    tau = 2 * d
    for env_seed, policy_seed in replicate_seeds(seed, settings.section51_seeds):
        env = SyntheticGLMEnv(d, K, "logistic", norm, seed=env_seed)
        recorder = _Recorder(UCBGLM(d, "logistic", seed=np.random.default_rng(policy_seed)))
        result = simulate(recorder, env, T)
        X = np.asarray(recorder.played)
        grams = np.cumsum(X[:, :, None] * X[:, None, :], axis=0)  # grams[t-1] = Σ_{i<=t}
        # V_t uses rounds i < t, i.e. grams[t-2]; sum over t = τ+1..T.
        lam = np.linalg.eigvalsh(grams[tau - 1: T - 1])[:, 0]
        terms = 1.0 / np.sqrt(np.maximum(lam, 1e-300))
        partial = np.cumsum(terms)  # S_t for t = τ+1..T
        t_values = np.arange(tau + 1, T + 1)
        ratios.append(partial[grid - tau - 1] / np.sqrt(grid))
        keep = t_values >= T / 10
        slopes.append(fit_loglog_slope(t_values[keep], partial[keep]))
        finals.append({"S_T": float(partial[-1]), "lambda_min_T": float(lam[-1]),
                       "regret": float(result.cumulative_regret[-1])})
    return {"grid": grid, "ratios": np.vstack(ratios), "slopes": np.array(slopes),
            "finals": finals, "tau": tau, "problem": (d, K, norm), "horizon": T}
