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

import importlib.util
import os
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .. import theory
from ..families import get_family
from ..policies import UCBGLM
from .config import parse_config
from .plots import fit_loglog_slope, loglog_points
from .progress import progress_bar
from .reproduce_figures import figure_coverage, figure_scaling, figure_section51, figure_theorem2
from .runner import run_experiment
from .store import StoredRun, select_runs
from .theory_checks import (DEFAULT_SETTINGS, FULL_SETTINGS, ReproduceSettings,
                            section51_condition, theorem1_coverage)

__all__ = ["ReproduceSettings", "DEFAULT_SETTINGS", "FULL_SETTINGS", "theorem1_coverage",
           "section51_condition", "reproduce"]


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
                     "tau": policy.tau, "kappa": kappa, "bound": bound, "delta": delta,
                     "sigma": fam.sub_gaussian_sigma(), "lipschitz": fam.lipschitz()})
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


# -- the report ----------------------------------------------------------------------
#: The hand-written reading of a report, kept beside the committed one in the repository.
INTERPRETATION = "README.md"


def _interpretation_text(out: Path) -> str:
    """A link to the interpretation when one sits beside the report (as in
    ``docs/reproduction/``); otherwise where the reference run's reading is, as text
    (no link that would point at a missing file)."""
    if (out / INTERPRETATION).is_file():
        return f"the interpretation is in [{INTERPRETATION}]({INTERPRETATION}) beside this file."
    return ("the interpretation of the reference run (master seed 0, default settings) is in "
            "`docs/reproduction/README.md` of the glmbandits repository.")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def reproduce(out: str | os.PathLike = "glmbandits-reproduction", *, full: bool = False,
              seed: int = 0, n_jobs: int | None = None,
              settings: ReproduceSettings | None = None,
              command: str = "glmbandits reproduce", progress: bool = False) -> Path:
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
    progress : bool, default False
        Draw a bar on stderr with one step per check or sweep (Theorem 1, each
        Theorem 2 problem, scaling in T and in d, Section 5.1), naming the one
        running, with an ETA.

    Returns
    -------
    Path
        The report's path.

    Raises
    ------
    ImportError
        When matplotlib is not installed, before any work.

    Notes
    -----
    The report and the four PNGs committed in ``docs/reproduction/`` are regenerated,
    all of them, by one command from the repository root::

        glmbandits reproduce --out docs/reproduction

    (``PYTHONPATH=src python -m glmbandits reproduce --out docs/reproduction`` from a
    checkout). The report links to ``README.md`` when one is beside it, as there.
    """
    if importlib.util.find_spec("matplotlib") is None:  # before minutes of work, not after
        raise ImportError("reproduce: the report's figures need matplotlib: "
                          "pip install 'glmbandits[plot]'")
    start = time.perf_counter()
    s = settings or (FULL_SETTINGS if full else DEFAULT_SETTINGS)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "reproduce.sqlite"
    timings: dict[str, float] = {}

    bar = progress_bar(4 + len(s.theorem2_problems), progress, "reproduce", unit="step")

    def step(name: str) -> None:
        bar.set_postfix_str(name)

    clock = time.perf_counter()
    step("Theorem 1")
    coverage = [row for i, family in enumerate(s.coverage_families)
                for row in theorem1_coverage(family, s, seed=[seed, i])]
    bar.update(1)
    figure_coverage(coverage, out / "theorem1_coverage.png", s.coverage_delta)
    timings["Theorem 1"] = time.perf_counter() - clock

    clock = time.perf_counter()
    t2_rows, t2_envs = _theorem2_config(s)
    t2_runs: list[StoredRun] = []
    for row, env in zip(t2_rows, t2_envs):
        step(f"Theorem 2, d={row['d']}, ||theta*||={row['theta_norm']:g}")
        t2_runs += _run_sweep(
            f"reproduce-theorem2-d{row['d']}-norm{row['theta_norm']:g}",
            {"horizon": s.theorem2_horizon, "seeds": s.theorem2_seeds, "seed": seed,
             "environment": {"family": "logistic", **env},
             "policies": [{"name": "ucb-glm", "label": "UCB-GLM (Theorem 2 α)",
                           "params": {"alpha": row["alpha"], "tau": row["tau"]}},
                          {"name": "ucb-glm", "label": "UCB-GLM (α=1)",
                           "params": {"alpha": 1.0, "tau": row["tau"]}}]},
            store, n_jobs)
        bar.update(1)
    figure_theorem2(t2_runs, t2_rows, out / "theorem2_regret.png")
    timings["Theorem 2"] = time.perf_counter() - clock

    clock = time.perf_counter()
    policies = [{"name": "ucb-glm"}, {"name": "supcb-glm"}]
    env_common = {"family": "logistic", "n_actions": s.scaling_n_actions,
                  "theta_norm": s.scaling_theta_norm}
    step("Scaling in T")
    runs_T = _run_sweep("reproduce-scaling-T", {
        "horizon": list(s.scaling_horizons), "seeds": s.scaling_seeds, "seed": seed,
        "environment": {**env_common, "n_features": s.scaling_d_for_T},
        "policies": policies}, store, n_jobs)
    bar.update(1)
    step("Scaling in d")
    runs_d = _run_sweep("reproduce-scaling-d", {
        "horizon": s.scaling_T_for_d, "seeds": s.scaling_seeds, "seed": seed,
        "environment": {**env_common, "n_features": list(s.scaling_dims)},
        "policies": policies}, store, n_jobs)
    bar.update(1)
    figure_scaling(runs_T, runs_d, out / "scaling.png")
    timings["Scaling"] = time.perf_counter() - clock

    clock = time.perf_counter()
    step("Section 5.1")
    sec51 = section51_condition(s, seed)
    bar.update(1)
    bar.close()
    figure_section51(sec51, out / "section51_condition.png")
    timings["Section 5.1"] = time.perf_counter() - clock

    text = _report_text(s, coverage, t2_rows, t2_runs, runs_T, runs_d, sec51, timings,
                        time.perf_counter() - start, command, seed, out)
    path = out / "REPORT.md"
    path.write_text(text, encoding="utf-8")
    return path


def _report_text(s: ReproduceSettings, coverage: list[dict], t2_rows: list[dict],
                 t2_runs: list[StoredRun], runs_T: list[StoredRun], runs_d: list[StoredRun],
                 sec51: dict[str, Any], timings: dict[str, float], total: float, command: str,
                 seed: int, out: Path) -> str:
    from .store import package_versions

    delta = s.coverage_delta
    parts = [
        "# Reproduction of Li, Lu & Zhou (2017) with glmbandits",
        "",
        f"Made by `{command}` (master seed {seed}) in {total:.0f} s "
        f"({', '.join(f'{k}: {v:.0f} s' for k, v in timings.items())}). "
        f"Versions: {package_versions()}. Everything below was generated by that command; "
        f"{_interpretation_text(out)}",
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
        group = select_runs(t2_runs, n_features=row["d"], theta_norm=row["theta_norm"])
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
        x, y = loglog_points(select_runs(runs_T, policy=policy))
        group = select_runs(runs_d, policy=policy)
        ds = sorted({r.environment["n_features"] for r in group})
        means = [np.mean([r.final_regret for r in select_runs(group, n_features=d)]) for d in ds]
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
