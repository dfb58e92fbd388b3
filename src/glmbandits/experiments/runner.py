"""Run an experiment config: every (cell, replicate), locally or on a Dask cluster.

This is the one experiment pipeline: ``glmbandits run CONFIG`` runs the config
it reads, and ``glmbandits run`` with flags the config that its flags describe
(one problem, each algorithm with its defaults), so both give the same replicates.

Seeds (the one derivation, :func:`plan_tasks`). Replicate r of every cell uses
the environment seed of replicate r of :func:`replicate_seeds` (so all cells
with the same environment see the same problem instance: common random
numbers), and a policy seed that is the r-th policy seed of that function
spawned further with the cell's own stable key, so every (cell, replicate) has
its own stream, independent of the order of cells in the config and of the
number of seeds.

Lockstep (the default, ``lockstep=True``). The replicates of a cell whose
policy has a batch kernel (:func:`~glmbandits.batch.has_batch_kernel`: LinUCB,
UCB-GLM) run together through :func:`~glmbandits.simulate_batch`, in one chunk per
cell or, with more processes than such cells, in as many chunks as keep the
processes busy; each replicate's run is the one :func:`execute_task` makes, bit
for bit (the summary's line says which policies ran lockstep, which sequentially).

Execution. ``backend="local"`` runs the tasks in ``n_jobs`` processes (all
cores by default, in-process when ``n_jobs == 1``); a Dask scheduler address
(``--scheduler`` or the config's ``[dask]`` table) sends them to a
``distributed`` cluster. A task that raises is retried ``retries`` times and
then stored as ``failed`` with its error; it is never dropped silently.
Finished runs are written to the store as they arrive, and a second run of the
same config skips the (cell, replicate) pairs already stored as ``ok`` (unless
``replace=True``: the experiment's stored runs are dropped and all are made again).
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, cast

import numpy as np

from .._validation import check_int
from ..batch import has_batch_kernel, simulate_batch
from ..environments import SyntheticGLMEnv
from ..simulation import simulate
from .workers import exit_with_parent
from .progress import progress_bar
from .config import Cell, ExperimentConfig
from .store import ResultStore, StoredRun

__all__ = ["RunTask", "ExperimentReport", "plan_tasks", "execute_task", "execute_lockstep",
           "run_experiment",
           "progress_enabled", "replicate_seeds", "run_replicate", "curve_grid"]


def curve_grid(horizon: int, n_points: int = 200) -> np.ndarray:
    """Rounds (1-based) at which regret curves are stored: ~n_points, always including T."""
    return np.unique(np.linspace(1, horizon, min(n_points, horizon)).round().astype(int))


def replicate_seeds(seed: int, n_seeds: int) -> list[tuple[np.random.SeedSequence,
                                                            np.random.SeedSequence]]:
    """(environment, policy) seed sequences of replicates 0..n_seeds-1.

    Replicate r uses the r-th child of ``SeedSequence(seed)``, split in two, so
    its seeds do not depend on ``n_seeds`` and every policy run as replicate r
    sees the same problem instance (common random numbers). :func:`plan_tasks`
    gives each cell its own policy stream from the second one.

    Examples
    --------
    >>> env_seed, policy_seed = replicate_seeds(0, 3)[2]
    >>> env_seed.spawn_key, policy_seed.spawn_key
    ((2, 0), (2, 1))
    """
    children = np.random.SeedSequence(seed).spawn(n_seeds)
    return [tuple(child.spawn(2)) for child in children]  # type: ignore[misc]


def run_replicate(policy: Any, env: SyntheticGLMEnv, horizon: int,
                  n_points: int = 200) -> tuple[float, float, np.ndarray, np.ndarray]:
    """Simulate once; return (final regret, seconds, curve rounds, down-sampled R_t)."""
    result = simulate(policy, env, horizon)
    grid = curve_grid(horizon, n_points)
    curve = result.cumulative_regret[grid - 1]
    return float(curve[-1]), result.seconds, grid, curve


@dataclass(frozen=True, eq=False)
class RunTask:
    """One (cell, replicate) to simulate, with its seeds."""

    experiment: str
    cell: Cell
    replicate: int
    env_seed: np.random.SeedSequence
    policy_seed: np.random.SeedSequence

    def seed_record(self) -> dict[str, Any]:
        """The seeds as plain data: master entropy and the two spawn keys."""
        entropy = cast(int, self.env_seed.entropy)  # plan_tasks seeds from the config's int
        return {"entropy": int(entropy), "environment": list(self.env_seed.spawn_key),
                "policy": list(self.policy_seed.spawn_key)}


@dataclass(frozen=True)
class ExperimentReport:
    """What :func:`run_experiment` did."""

    config: ExperimentConfig
    store: str
    n_tasks: int
    n_skipped: int
    n_ok: int
    failed: list[StoredRun]
    seconds: float
    #: Stored runs of this experiment that are not part of this config (another master
    #: seed, a replicate beyond ``seeds``, or a cell no longer in the config).
    n_stale: int = 0
    plan: dict[tuple[str, int], Any] = field(default_factory=dict, repr=False)
    #: Policy labels of the cells run this time in lockstep (batch kernels), and sequentially.
    lockstep: tuple[str, ...] = ()
    sequential: tuple[str, ...] = ()

    def runs(self) -> list[StoredRun]:
        """The stored runs of this config's (cell, replicate, seeds), re-read from the store,
        in the order of :func:`plan_tasks` (cells as the config lists them, then replicates),
        whatever order the workers finished in.

        Runs of the same experiment name made with another master seed, more
        replicates or other cells are left out (see :attr:`n_stale`).
        """
        with ResultStore(self.store) as store:
            runs = store.runs(self.config.name)
        if not self.plan:
            return runs
        order = {key: i for i, key in enumerate(self.plan)}
        mine = [run for run in runs if self.plan.get((run.cell_key, run.replicate)) == run.seed]
        return sorted(mine, key=lambda run: order[(run.cell_key, run.replicate)])


def plan_tasks(config: ExperimentConfig) -> list[RunTask]:
    """Every (cell, replicate) of ``config`` with its seeds (see the module docstring).

    Examples
    --------
    >>> from glmbandits.experiments.config import parse_config
    >>> config = parse_config({"name": "demo", "horizon": 50, "seeds": 2,
    ...     "environment": {"n_features": 2}, "policies": [{"name": "random"}]})
    >>> [task.replicate for task in plan_tasks(config)]
    [0, 1]
    """
    seeds = replicate_seeds(config.seed, config.seeds)
    tasks = []
    for cell in config.cells():
        for r, (env_seed, policy_seed) in enumerate(seeds):
            own = np.random.SeedSequence(policy_seed.entropy,
                                         spawn_key=(*policy_seed.spawn_key, cell.seed_key))
            tasks.append(RunTask(config.name, cell, r, env_seed, own))
    return tasks


def execute_task(task: RunTask) -> StoredRun:
    """Simulate one task and return its (successful) stored row. Raises on failure."""
    cell = task.cell
    env = cell.make_environment(seed=task.env_seed)
    policy = cell.make_policy(seed=np.random.default_rng(task.policy_seed))
    final, seconds, rounds, curve = run_replicate(policy, env, cell.horizon)
    return StoredRun(task.experiment, cell.key, task.replicate, cell.name, cell.policy,
                     dict(cell.params), dict(cell.environment), cell.horizon,
                     task.seed_record(), "ok", final, seconds, rounds, curve)


def execute_lockstep(tasks: list[RunTask]) -> list[StoredRun]:
    """Simulate replicates of one cell together (:func:`~glmbandits.simulate_batch`).

    Each replicate's run is the one :func:`execute_task` makes alone (same policy
    and environment seeds, environment reset without a seed), bit for bit; its
    ``seconds`` is an equal share of the batch's policy time. Raises on failure.
    """
    cell = tasks[0].cell
    batch = simulate_batch(
        lambda i: cell.make_policy(seed=np.random.default_rng(tasks[i].policy_seed)),
        lambda i: cell.make_environment(seed=tasks[i].env_seed), cell.horizon,
        list(range(len(tasks))), reset_seed=False)
    grid = curve_grid(cell.horizon)
    seconds = batch.seconds / len(tasks)
    runs = []
    for i, task in enumerate(tasks):
        curve = batch.cumulative_regret[i][grid - 1]
        runs.append(StoredRun(task.experiment, cell.key, task.replicate, cell.name, cell.policy,
                              dict(cell.params), dict(cell.environment), cell.horizon,
                              task.seed_record(), "ok", float(curve[-1]), seconds, grid, curve))
    return runs


def _one_by_one(function: Callable[[RunTask], StoredRun], tasks: list[RunTask]
                ) -> list[StoredRun]:
    return [function(task) for task in tasks]


def _lockstep_cells(tasks: list[RunTask]) -> set[str]:
    """Keys of the cells whose policy has a batch kernel."""
    cells = {task.cell.key: task.cell for task in tasks}
    return {key for key, cell in cells.items() if has_batch_kernel([cell.make_policy(seed=0)])}


def _units(tasks: list[RunTask], lockstep: set[str], n_jobs: int) -> list[list[RunTask]]:
    """What one worker runs at a time: a chunk of a lockstep cell's replicates, else one task.

    Lockstep cells are cut into ``ceil(n_jobs / number of lockstep cells)`` chunks, so
    that the processes have work; replicates are independent, so the cut changes no run.
    """
    groups: dict[Any, list[RunTask]] = {}  # in the tasks' order: cells as the plan lists them
    for task in tasks:
        key = task.cell.key if task.cell.key in lockstep else id(task)
        groups.setdefault(key, []).append(task)
    n_chunks = math.ceil(n_jobs / max(1, len(lockstep & set(groups))))
    units: list[list[RunTask]] = []
    for key, members in groups.items():
        size = math.ceil(len(members) / min(n_chunks, len(members))) if key in lockstep else 1
        units.extend(members[i:i + size] for i in range(0, len(members), size))
    return units


def _failed(task: RunTask, error: BaseException, attempts: int) -> StoredRun:
    cell = task.cell
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    return StoredRun(task.experiment, cell.key, task.replicate, cell.name, cell.policy,
                     dict(cell.params), dict(cell.environment), cell.horizon,
                     task.seed_record(), "failed", None, None, None, None, text, attempts)


def progress_enabled() -> bool:
    """A progress bar only on a terminal, and never when the ``CI`` variable is set."""
    return sys.stderr.isatty() and not os.environ.get("CI")


Outcome = tuple[RunTask, "StoredRun | BaseException"]



UnitFunction = Callable[[list[RunTask]], list[StoredRun]]


def _unit_outcomes(unit: list[RunTask], result: Any) -> Iterator[Outcome]:
    """Each task of a unit with its run, or with the unit's error."""
    if isinstance(result, BaseException):
        yield from ((task, result) for task in unit)
    else:
        yield from zip(unit, result)


def _local_outcomes(units: list[list[RunTask]], n_jobs: int, function: UnitFunction,
                    ) -> Iterator[Outcome]:
    if n_jobs == 1:
        for unit in units:
            try:
                result: Any = function(unit)
            except Exception as error:  # reported per task, never dropped
                result = error
            yield from _unit_outcomes(unit, result)
        return
    with ProcessPoolExecutor(max_workers=n_jobs, initializer=exit_with_parent,
                             initargs=(os.getpid(),)) as pool:
        pending: dict[Future, list[RunTask]] = {pool.submit(function, unit): unit
                                                for unit in units}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                unit = pending.pop(future)
                try:
                    result = future.result()
                except Exception as error:  # includes a worker that died (BrokenProcessPool)
                    result = error
                yield from _unit_outcomes(unit, result)


def _dask_outcomes(units: list[list[RunTask]], scheduler: Any, retries: int,
                   function: UnitFunction) -> Iterator[Outcome]:
    try:
        from distributed import Client, as_completed
    except ImportError:  # pragma: no cover - depends on the optional extra
        raise ImportError("run_experiment: a Dask scheduler needs the 'cluster' extra "
                          "(pip install 'glmbandits[cluster]')") from None
    own_client = not isinstance(scheduler, Client)
    client = Client(scheduler) if own_client else scheduler
    try:
        futures = {client.submit(function, unit, retries=retries, pure=False): unit
                   for unit in units}
        for future in as_completed(futures):
            unit = futures[future]
            try:
                result: Any = future.result()
            except Exception as error:  # the cluster already retried it
                result = error
            yield from _unit_outcomes(unit, result)
    finally:
        if own_client:
            client.close()


def run_experiment(
    config: ExperimentConfig,
    store: str | os.PathLike = "glmbandits-results.sqlite",
    *,
    scheduler: Any = None,
    n_jobs: int | None = None,
    retries: int = 1,
    progress: bool | None = None,
    task_function: Callable[[RunTask], StoredRun] = execute_task,
    replace: bool = False,
    lockstep: bool = True,
) -> ExperimentReport:
    """Run every unfinished (cell, replicate) of ``config`` and store the results.

    Parameters
    ----------
    config : ExperimentConfig
        From :func:`~glmbandits.experiments.config.load_config` or ``parse_config``.
    store : path
        SQLite results file (created if missing). Runs already stored as ``ok``
        for this experiment are skipped (resume).
    scheduler : str or distributed.Client, optional
        A Dask scheduler address (``tcp://HOST:PORT``) or client; defaults to the
        config's ``[dask] scheduler``. Without one, local processes are used.
    n_jobs : int, optional
        Local worker processes; default all cores (1 runs in this process).
    retries : int, default 1
        Extra attempts for a task that raises, before it is stored as ``failed``.
        (The config's ``[dask] retries`` takes precedence on a cluster.)
    progress : bool, optional
        Show a tqdm bar on stderr (runs done of this call, with an ETA, and per
        cell the replicates done); default :func:`progress_enabled`.
    task_function : callable
        What runs one task (:func:`execute_task`); replaceable for testing failures.
    replace : bool, default False
        Drop every stored run of this experiment first and make all runs again,
        rather than resume (``glmbandits run`` with flags: the next run of a
        problem replaces its runs).
    lockstep : bool, default True
        Run the replicates of cells whose policy has a batch kernel together
        (:func:`execute_lockstep`, same results); ``False``, or a ``task_function``
        of one's own, runs every task alone.

    Returns
    -------
    ExperimentReport
        Counts of tasks, skipped and successful runs, and the failed runs with
        their errors.
    """
    owner = "run_experiment"
    if not isinstance(config, ExperimentConfig):
        raise TypeError(f"{owner}: config must be an ExperimentConfig, "
                        f"got {type(config).__name__}")
    retries = check_int(retries, owner, "retries", minimum=0)
    for name, flag in (("replace", replace), ("lockstep", lockstep)):
        if not isinstance(flag, bool):
            raise TypeError(f"{owner}: {name} must be a bool, got {type(flag).__name__}")
    if n_jobs is None:
        n_jobs = os.cpu_count() or 1
    n_jobs = check_int(n_jobs, owner, "n_jobs", minimum=1)
    if scheduler is None and config.dask:
        scheduler = config.dask.get("scheduler")
        retries = int(config.dask.get("retries", retries))
    start = time.perf_counter()
    tasks = plan_tasks(config)
    with ResultStore(store) as results:
        if replace:
            results.remove_runs(config.name)
        results.save_experiment(config.name, config.to_dict())
        # resume key: the full cell definition, the replicate and its seeds (master seed
        # included); a run stored under another seed is made again and replaces it
        done = results.finished_seeds(config.name)
        plan = {(task.cell.key, task.replicate): task.seed_record() for task in tasks}
        todo = [task for task in tasks
                if done.get((task.cell.key, task.replicate)) != plan[(task.cell.key,
                                                                      task.replicate)]]
        n_skipped = len(tasks) - len(todo)
        together = (_lockstep_cells(todo) if lockstep and task_function is execute_task
                    else set())
        names = {task.cell.key: task.cell.name for task in todo}
        ran_lockstep = tuple(dict.fromkeys(names[key] for key in names if key in together))
        ran_alone = tuple(dict.fromkeys(names[key] for key in names if key not in together))
        bar = progress_bar(len(todo), progress_enabled() if progress is None else progress,
                           config.name)
        per_cell: dict[str, int] = {}
        for task in todo:
            per_cell[task.cell.key] = per_cell.get(task.cell.key, 0) + 1
        cell_done = dict.fromkeys(per_cell, 0)

        def advance(task: RunTask) -> None:
            key = task.cell.key
            cell_done[key] += 1
            complete = sum(cell_done[k] == per_cell[k] for k in per_cell)
            bar.set_postfix_str(f"cells {complete}/{len(per_cell)}, {task.cell.name}: "
                                f"{cell_done[key]}/{per_cell[key]} replicates", refresh=False)
            bar.update(1)
        failed: list[StoredRun] = []
        n_ok = 0
        attempts = 1
        alone: UnitFunction = functools.partial(_one_by_one, task_function)
        while todo:
            units = _units(todo, together, n_jobs)
            unit_function = (functools.partial(_run_unit, together, task_function) if together
                             else alone)
            if scheduler is not None:
                outcomes = _dask_outcomes(units, scheduler, retries, unit_function)
                final_attempt = True  # Dask retried already
            else:
                outcomes = _local_outcomes(units, min(n_jobs, len(units)), unit_function)
                final_attempt = attempts > retries
            again = []
            for task, outcome in outcomes:
                if isinstance(outcome, StoredRun):
                    results.add_run(StoredRun(**{**outcome.__dict__, "attempts": attempts}))
                    n_ok += 1
                    advance(task)
                elif final_attempt:
                    row = _failed(task, outcome, attempts if scheduler is None else retries + 1)
                    results.add_run(row)
                    failed.append(row)
                    advance(task)
                else:
                    again.append(task)
            todo = again
            attempts += 1
        bar.close()
        n_stale = sum(1 for run in results.runs(config.name)
                      if plan.get((run.cell_key, run.replicate)) != run.seed)
    return ExperimentReport(config, str(store), len(tasks), n_skipped, n_ok, failed,
                            time.perf_counter() - start, n_stale, plan, ran_lockstep, ran_alone)


def _run_unit(together: set[str], task_function: Callable[[RunTask], StoredRun],
              unit: list[RunTask]) -> list[StoredRun]:
    """A lockstep chunk through :func:`execute_lockstep`, any other unit task by task."""
    if unit[0].cell.key in together:
        return execute_lockstep(unit)
    return _one_by_one(task_function, unit)
