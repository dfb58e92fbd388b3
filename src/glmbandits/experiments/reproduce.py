"""``glmbandits reproduce``: check the claims of Li, Lu & Zhou (2017) on this library.

Four checks, each a section of a Markdown report with figures:

1. **Theorem 1** (normality of the MLE): over many replications of the rewards
   on a fixed design whose λ_min(V) meets condition (4), how often
   ``|x'(θ̂ - θ*)| <= (3σ/κ)√log(1/δ)·‖x‖_{V⁻¹}`` (promised: >= 1 - 3δ), for
   logistic and probit; the same at smaller λ_min(V); and the ratio of the width
   to the realised error, to show how conservative the constant is.
2. **Theorem 2**: UCB-GLM with the theorem's α (``UCBGLM.from_theory``) and the
   fraction of runs whose regret stays under the bound ``τ + (2L_μσd/κ)log(T/(dδ))√T``.
3. **Scaling**: fitted slopes of log R_T against log T, and against log d at a
   fixed T, for UCB-GLM and SupCB-GLM.
4. **Section 5.1's condition**: ``Σ_{t>τ} λ_min(V_t)^{-1/2}`` against c√T on the
   default problem of ``glmbandits run``.

The sweeps of checks 2–3 go through :func:`~glmbandits.experiments.runner.run_experiment`
(local processes, a SQLite store next to the report, so an interrupted run resumes).

References
----------
Li, Lu & Zhou (2017), "Provably Optimal Algorithms for Generalized Linear
Contextual Bandits", ICML: Theorem 1 (eqs. (4)–(5)), Theorem 2, Theorem 3 and
Section 5.1 (eq. (9)).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .. import theory
from ..environments import SyntheticGLMEnv
from ..estimation import solve_estimating_equation
from ..families import get_family
from ..policies import UCBGLM
from ..simulation import simulate
from .compare import replicate_seeds
from .config import parse_config
from .plots import fit_loglog_slope, loglog_points
from .runner import run_experiment
from .store import StoredRun

__all__ = ["ReproduceSettings", "DEFAULT_SETTINGS", "FULL_SETTINGS", "theorem1_coverage",
           "section51_condition", "reproduce"]


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
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _design_meeting(rng: np.random.Generator, d: int, target: float) -> np.ndarray:
    """Rows on the unit sphere, just enough for λ_min(Σ x x') >= target."""
    X = _sphere(rng, max(d + 1, math.ceil(1.05 * d * target)), d)
    while np.linalg.eigvalsh(X.T @ X)[0] < target:
        X = np.vstack([X, _sphere(rng, max(d, X.shape[0] // 20), d)])
    return X


def theorem1_coverage(family: str, settings: ReproduceSettings = DEFAULT_SETTINGS,
                      seed: Any = 0) -> list[dict[str, float]]:
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
    rows = []
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
        return self.policy.select(contexts)

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


# -- the sweeps (2 and 3) ---------------------------------------------------------
def _theorem2_config(settings: ReproduceSettings) -> tuple[list[dict], list[dict]]:
    """Theorem 2's α (``UCBGLM.from_theory``), τ, κ and bound for each problem."""
    T, delta = settings.theorem2_horizon, settings.theorem2_delta
    fam = get_family("logistic")
    rows, environments = [], []
    for d, K, norm in settings.theorem2_problems:
        policy = UCBGLM.from_theory(d, T, "logistic", theta_norm=norm, delta=delta)
        kappa = fam.kappa(norm + 1.0)
        bound = theory.ucb_glm_regret_bound(d, T, delta, fam.sub_gaussian_sigma(), kappa,
                                            fam.lipschitz(), policy.tau)
        rows.append({"d": d, "K": K, "theta_norm": norm, "alpha": policy.alpha,
                     "tau": policy.tau, "kappa": kappa, "bound": bound})
        environments.append({"n_features": d, "n_actions": K, "theta_norm": norm})
    return rows, environments


def _run_sweep(name: str, data: dict[str, Any], store: Path, n_jobs: int | None
               ) -> list[StoredRun]:
    config = parse_config({"name": name, **data})
    report = run_experiment(config, store, n_jobs=n_jobs, progress=False)
    if report.failed:
        raise RuntimeError(f"reproduce: {len(report.failed)} runs of {name!r} failed, e.g. "
                           f"{report.failed[0].error}")
    return report.runs()


def _by(runs: Sequence[StoredRun], **match: Any) -> list[StoredRun]:
    out = []
    for run in runs:
        fields = {**run.environment, "policy": run.policy, "horizon": run.horizon, **run.params}
        if all(fields.get(k) == v for k, v in match.items()):
            out.append(run)
    return out


# -- figures -----------------------------------------------------------------------
def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _figure_coverage(rows: list[dict], path: Path) -> None:
    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    delta = DEFAULT_SETTINGS.coverage_delta
    for family in dict.fromkeys(r["family"] for r in rows):
        mine = [r for r in rows if r["family"] == family]
        lam = [r["lambda_min"] for r in mine]
        axes[0].semilogx(lam, [r["coverage"] for r in mine], marker="o", label=f"{family}")
        axes[0].semilogx(lam, [r["min_coverage"] for r in mine], marker="x", ls=":",
                         label=f"{family} (worst direction)")
        axes[1].loglog(lam, [r["ratio_quantile"] for r in mine], marker="o", label=family)
    axes[0].axhline(1 - 3 * delta, color="grey", ls="--", label="promised 1 - 3δ")
    axes[0].set_xlabel("λ_min(V)  (largest = condition (4))")
    axes[0].set_ylabel("coverage of the Theorem 1 width")
    axes[0].legend(fontsize=7)
    axes[1].axhline(1, color="grey", ls="--")
    axes[1].set_xlabel("λ_min(V)")
    axes[1].set_ylabel("width / empirical (1-3δ)-quantile of error")
    axes[1].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _figure_scaling(runs_T: list[StoredRun], runs_d: list[StoredRun], path: Path) -> None:
    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for policy in ("ucb-glm", "supcb-glm"):
        x, y = loglog_points(_by(runs_T, policy=policy))
        axes[0].loglog(x, y, marker="o", label=f"{policy}: slope {fit_loglog_slope(x, y):.2f}")
        group = _by(runs_d, policy=policy)
        ds = sorted({r.environment["n_features"] for r in group})
        means = [np.mean([r.final_regret for r in _by(group, n_features=d)]) for d in ds]
        axes[1].loglog(ds, means, marker="o",
                       label=f"{policy}: slope {fit_loglog_slope(ds, means):.2f}")
    axes[0].set_xlabel("T")
    axes[0].set_ylabel("mean regret R_T")
    axes[0].set_title("regret against T (log-log)")
    axes[1].set_xlabel("d")
    axes[1].set_ylabel("mean regret R_T")
    axes[1].set_title("regret against d at fixed T (log-log)")
    for axis, runs in zip(axes, (runs_T, runs_d)):
        ticks = sorted({r.horizon for r in runs}) if axis is axes[0] else \
            sorted({r.environment["n_features"] for r in runs})
        axis.set_xticks(ticks, [str(t) for t in ticks])
        axis.minorticks_off()
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _figure_theorem2(runs: list[StoredRun], rows: list[dict], path: Path) -> None:
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(rows), figsize=(5 * len(rows), 3.8), squeeze=False)
    for axis, row in zip(axes[0], rows):
        for label, group in _group_label(_by(runs, n_features=row["d"],
                                              theta_norm=row["theta_norm"])).items():
            curves = np.vstack([r.curve for r in group])
            axis.plot(group[0].rounds, curves.mean(axis=0), label=label)
        rounds = group[0].rounds
        axis.plot(rounds, rounds, color="grey", ls=":", label="R_t = t (trivial)")
        axis.set_title(f"d={row['d']}, K={row['K']}, ‖θ*‖={row['theta_norm']:g}; "
                       f"bound at T: {row['bound']:.3g}", fontsize=8)
        axis.set_xlabel("round t")
        axis.set_ylabel("mean cumulative regret")
        axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _group_label(runs: Sequence[StoredRun]) -> dict[str, list[StoredRun]]:
    out: dict[str, list[StoredRun]] = {}
    for run in runs:
        out.setdefault(run.label, []).append(run)
    return out


def _figure_section51(result: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6.4, 4.0))
    for i, ratios in enumerate(result["ratios"]):
        axis.plot(result["grid"], ratios, color="C0", alpha=0.6,
                  label="seeds" if i == 0 else None)
    axis.set_xlabel("t")
    axis.set_ylabel("Σ_{τ<s<=t} λ_min(V_s)^{-1/2} / √t")
    d, K, norm = result["problem"]
    axis.set_title(f"Section 5.1 condition, UCB-GLM, logistic d={d}, K={K}, ‖θ*‖={norm:g}",
                   fontsize=9)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


# -- the report ----------------------------------------------------------------------
def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def reproduce(out: str | os.PathLike = "glmbandits-reproduction", *, full: bool = False,
              seed: int = 0, n_jobs: int | None = None,
              settings: ReproduceSettings | None = None,
              command: str = "glmbandits reproduce") -> Path:
    """Run the four checks and write ``REPORT.md`` and its PNG figures into ``out``.

    Parameters
    ----------
    out : path
        Folder for ``REPORT.md``, the figures and the sweeps' SQLite store
        (``reproduce.sqlite``; a second call resumes from it).
    full : bool
        Use :data:`FULL_SETTINGS` (tens of minutes) instead of :data:`DEFAULT_SETTINGS`.
    seed : int
        Master seed of every check.
    n_jobs : int, optional
        Processes for the sweeps (default all cores).
    settings : ReproduceSettings, optional
        Explicit sizes (overrides ``full``; used by the tests with tiny sizes).
    command : str
        The command line recorded in the report.

    Returns
    -------
    Path
        The report's path.
    """
    start = time.perf_counter()
    s = settings or (FULL_SETTINGS if full else DEFAULT_SETTINGS)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "reproduce.sqlite"
    timings: dict[str, float] = {}

    clock = time.perf_counter()
    coverage = [row for i, family in enumerate(s.coverage_families)
                for row in theorem1_coverage(family, s, seed=[seed, i])]
    _figure_coverage(coverage, out / "theorem1_coverage.png")
    timings["Theorem 1"] = time.perf_counter() - clock

    clock = time.perf_counter()
    t2_rows, t2_envs = _theorem2_config(s)
    t2_runs: list[StoredRun] = []
    for row, env in zip(t2_rows, t2_envs):
        t2_runs += _run_sweep(
            f"reproduce-theorem2-d{row['d']}-norm{row['theta_norm']:g}",
            {"horizon": s.theorem2_horizon, "seeds": s.theorem2_seeds, "seed": seed,
             "environment": {"family": "logistic", **env},
             "policies": [{"name": "ucb-glm", "label": "UCB-GLM (Theorem 2 α)",
                           "params": {"alpha": row["alpha"], "tau": row["tau"]}},
                          {"name": "ucb-glm", "label": "UCB-GLM (α=1)",
                           "params": {"alpha": 1.0, "tau": row["tau"]}}]},
            store, n_jobs)
    _figure_theorem2(t2_runs, t2_rows, out / "theorem2_regret.png")
    timings["Theorem 2"] = time.perf_counter() - clock

    clock = time.perf_counter()
    policies = [{"name": "ucb-glm"}, {"name": "supcb-glm"}]
    env_common = {"family": "logistic", "n_actions": s.scaling_n_actions,
                  "theta_norm": s.scaling_theta_norm}
    runs_T = _run_sweep("reproduce-scaling-T", {
        "horizon": list(s.scaling_horizons), "seeds": s.scaling_seeds, "seed": seed,
        "environment": {**env_common, "n_features": s.scaling_d_for_T},
        "policies": policies}, store, n_jobs)
    runs_d = _run_sweep("reproduce-scaling-d", {
        "horizon": s.scaling_T_for_d, "seeds": s.scaling_seeds, "seed": seed,
        "environment": {**env_common, "n_features": list(s.scaling_dims)},
        "policies": policies}, store, n_jobs)
    _figure_scaling(runs_T, runs_d, out / "scaling.png")
    timings["Scaling"] = time.perf_counter() - clock

    clock = time.perf_counter()
    sec51 = section51_condition(s, seed)
    _figure_section51(sec51, out / "section51_condition.png")
    timings["Section 5.1"] = time.perf_counter() - clock

    text = _report_text(s, coverage, t2_rows, t2_runs, runs_T, runs_d, sec51, timings,
                        time.perf_counter() - start, command, seed)
    path = out / "REPORT.md"
    path.write_text(text, encoding="utf-8")
    return path


def _report_text(s: ReproduceSettings, coverage: list[dict], t2_rows: list[dict],
                 t2_runs: list[StoredRun], runs_T: list[StoredRun], runs_d: list[StoredRun],
                 sec51: dict[str, Any], timings: dict[str, float], total: float, command: str,
                 seed: int) -> str:
    from .store import package_versions

    delta = s.coverage_delta
    parts = [
        "# Reproduction of Li, Lu & Zhou (2017) with glmbandits",
        "",
        f"Made by `{command}` (master seed {seed}) in {total:.0f} s "
        f"({', '.join(f'{k}: {v:.0f} s' for k, v in timings.items())}). "
        f"Versions: {package_versions()}. Everything below was generated by that command; "
        "the interpretation is in README.md beside this file.",
        "",
        "## 1. Theorem 1: coverage of the normality width",
        "",
        f"Fixed designs of unit vectors in d={s.coverage_d}, ‖θ*‖={s.coverage_theta_norm:g}, "
        f"δ={delta:g}; {s.coverage_replications} reward replications per design; the MLE solves "
        f"eq. (3) without ridge; {s.coverage_directions} random unit directions plus the "
        f"{s.coverage_d} axes. κ = μ'(‖θ*‖+1), σ = 1/2, M_μ = sup|μ''|. Promised coverage: "
        f"≥ 1 − 3δ = {1 - 3 * delta:.2f} per direction when λ_min(V) meets condition (4).",
        "",
        _table(["family", "λ_min(V) / condition (4)", "λ_min(V)", "n", "coverage",
                "worst direction", "all directions at once", "width / (1−3δ)-quantile of error",
                "median width / error", "non-converged fits"],
               [[r["family"], f"{r['fraction']:g}", f"{r['lambda_min']:.4g}", r["n"],
                 f"{r['coverage']:.3f}", f"{r['min_coverage']:.3f}", f"{r['simultaneous']:.3f}",
                 f"{r['ratio_quantile']:.1f}", f"{r['ratio_median']:.1f}",
                 f"{r['failed_fits']}/{r['replications']}"] for r in coverage]),
        "",
        "![Theorem 1 coverage](theorem1_coverage.png)",
        "",
    ]
    parts += ["## 2. Theorem 2: UCB-GLM with the theorem's α", "",
              f"Logistic rewards, T={s.theorem2_horizon}, δ={s.theorem2_delta:g}, "
              f"{s.theorem2_seeds} seeds. α from `UCBGLM.from_theory` (κ at radius ‖θ*‖+1); "
              "τ = 2d (Theorem 2's τ involves an unspecified universal constant). The bound is "
              "`theory.ucb_glm_regret_bound` with that τ. Per-round regret of a logistic "
              "bandit is below 1, so R_T ≤ T always.", ""]
    table = []
    for row in t2_rows:
        group = _by(t2_runs, n_features=row["d"], theta_norm=row["theta_norm"])
        theory_runs = [r for r in group if r.label.startswith("UCB-GLM (Theorem")]
        practical = [r for r in group if r.label == "UCB-GLM (α=1)"]
        final = np.array([r.final_regret for r in theory_runs])
        table.append([row["d"], row["K"], f"{row['theta_norm']:g}", f"{row['kappa']:.4f}",
                      f"{row['alpha']:.1f}", row["tau"], f"{row['bound']:.4g}",
                      f"{row['bound'] / s.theorem2_horizon:.2f}",
                      f"{final.mean():.1f} ± {final.std(ddof=1) if len(final) > 1 else 0:.1f}",
                      f"{np.mean(final <= row['bound']):.2f}",
                      f"{np.mean([r.final_regret for r in practical]):.1f}"])
    parts += [_table(["d", "K", "‖θ*‖", "κ", "α (Thm 2)", "τ", "bound at T", "bound / T",
                      "R_T with Thm 2 α (mean ± sd)", "fraction under bound",
                      "R_T with α=1 (mean)"], table),
              "", "![Theorem 2](theorem2_regret.png)", ""]
    parts += ["## 3. Scaling of the regret", "",
              f"Practical defaults (UCB-GLM α=1, SupCB-GLM α=0.5, τ=2d), logistic, "
              f"K={s.scaling_n_actions}, ‖θ*‖={s.scaling_theta_norm:g}, contexts uniform in "
              f"the unit ball, {s.scaling_seeds} seeds per cell. Against T: d={s.scaling_d_for_T}, "
              f"one run per horizon T ∈ {list(s.scaling_horizons)} (SupCB-GLM's stages depend "
              f"on T). Against d: T={s.scaling_T_for_d}, d ∈ {list(s.scaling_dims)}.", ""]
    rows = []
    for policy in ("ucb-glm", "supcb-glm"):
        x, y = loglog_points(_by(runs_T, policy=policy))
        group = _by(runs_d, policy=policy)
        ds = sorted({r.environment["n_features"] for r in group})
        means = [np.mean([r.final_regret for r in _by(group, n_features=d)]) for d in ds]
        rows.append([policy, " / ".join(f"{v:.1f}" for v in y), f"{fit_loglog_slope(x, y):.2f}",
                     " / ".join(f"{v:.1f}" for v in means), f"{fit_loglog_slope(ds, means):.2f}"])
    parts += [_table(["policy", "mean R_T over T", "slope log R_T vs log T",
                      "mean R_T over d", "slope log R_T vs log d"], rows),
              "", "![Scaling](scaling.png)", ""]
    d, K, norm = sec51["problem"]
    ratios = sec51["ratios"]
    picks = [i for i in range(len(sec51["grid"])) if i in (0, len(sec51["grid"]) // 4,
                                                             len(sec51["grid"]) // 2,
                                                             len(sec51["grid"]) - 1)]
    parts += ["## 4. Section 5.1's condition", "",
              f"UCB-GLM (α=1, τ={sec51['tau']}, λ=1) on the default problem of `glmbandits run` "
              f"(logistic, d={d}, K={K}, ‖θ*‖={norm:g}), T={sec51['horizon']}, "
              f"{ratios.shape[0]} seeds. V_t = Σ_{{i<t}} X_i X_i' of the played vectors (no "
              "ridge). The condition Σ_{t=τ+1}^T λ_min(V_t)^{-1/2} ≤ c√T holds with a constant "
              "c if the ratio S_t/√t levels off.", "",
              _table(["t"] + [str(int(sec51["grid"][i])) for i in picks] +
                     ["slope of log S_t vs log t (t ≥ T/10)"],
                     [["S_t/√t (mean over seeds)"] +
                      [f"{ratios[:, i].mean():.2f}" for i in picks] +
                      [f"{sec51['slopes'].mean():.2f} (per seed: "
                       f"{', '.join(f'{v:.2f}' for v in sec51['slopes'])})"]]),
              "", "![Section 5.1](section51_condition.png)", ""]
    return "\n".join(parts)
