"""The Open Bandit Dataset sample that ships inside the ``obp`` package, as a log.

The PyPI package ``obp`` (0.4.1 on Python 3.11) bundles a 10,000-row sample of
each campaign of the Open Bandit Dataset (Saito et al. 2021) under
``obp/dataset/obd/{random,bts}/{all,men,women}/``: a data CSV (one row per
impression: ``item_id``, ``position``, ``click``, ``propensity_score``, four
hashed ``user_feature_*`` columns and 80 ``user-item_affinity_*`` columns) and
``item_context.csv`` (one row per item: ``item_feature_0`` numeric, three
hashed categorical item features). The "random" campaign was logged by uniform
random choice among the 80 items, the "bts" campaign by Bernoulli Thompson
sampling.

The files are read from the installed package *without importing obp* (its
import pulls in torch): the package is only located with
``importlib.util.find_spec``. Install it with ``pip install --no-deps obp==0.4.1``
(its pinned dependencies are not needed to read the CSVs); reading needs pandas
(``pip install 'glmbandits[data]'``).

References
----------
Saito, Aihara, Matsutani & Narita (2021), "Open Bandit Dataset and Pipeline:
Towards Realistic and Reproducible Off-Policy Evaluation", NeurIPS Datasets
and Benchmarks.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from ..data import FactoredContexts, LoggedBanditData
from .datasets import _require

__all__ = ["OBD_CAMPAIGNS", "OBD_POPULATIONS", "open_bandit_path", "load_open_bandit"]

OBD_CAMPAIGNS = ("random", "bts")
OBD_POPULATIONS = ("all", "men", "women")
N_USER_FEATURES, N_ITEM_CATEGORICAL = 4, 3


def open_bandit_path(campaign: str = "random", population: str = "all") -> Path:
    """The folder of the installed obp package's OBD sample, found without importing obp.

    Raises
    ------
    ModuleNotFoundError
        When obp is not installed (``pip install --no-deps obp==0.4.1``).
    FileNotFoundError
        When the installed obp has no OBD sample at the expected place.
    """
    owner = "open_bandit_path"
    if campaign not in OBD_CAMPAIGNS:
        raise ValueError(f"{owner}: campaign must be one of {list(OBD_CAMPAIGNS)}, got {campaign!r}")
    if population not in OBD_POPULATIONS:
        raise ValueError(f"{owner}: population must be one of {list(OBD_POPULATIONS)}, "
                         f"got {population!r}")
    spec = importlib.util.find_spec("obp")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{owner}: the obp package is not installed; "
                                  "pip install --no-deps obp==0.4.1")
    folder = Path(list(spec.submodule_search_locations)[0]) / "dataset" / "obd" / campaign / population
    if not (folder / f"{population}.csv").is_file() or not (folder / "item_context.csv").is_file():
        raise FileNotFoundError(f"{owner}: no OBD sample at {folder} (expected {population}.csv "
                                "and item_context.csv; obp 0.4.1 ships them)")
    return folder


def _one_hot(values: np.ndarray) -> np.ndarray:
    _, codes = np.unique(values, return_inverse=True)
    return np.eye(int(codes.max()) + 1)[codes.ravel()]


def load_open_bandit(campaign: str = "random", population: str = "all", *,
                     max_rounds: int | None = None) -> LoggedBanditData:
    """The obp-bundled OBD sample as a :class:`LoggedBanditData` with per-action features.

    Every impression is one round; the 80 items are the actions; the reward is
    the click; the propensity is the logged ``propensity_score`` (1/80 in the
    random campaign). The per-action features, one θ for all items (the
    paper's setting), are x_{t,a} = [item_a, user_t, affinity_{t,a}] (d = 66
    for random/all):

    * item_a: ``item_feature_0`` (standardised) and the one-hots of the three
      categorical item features (41 columns);
    * user_t: the one-hots of the four user features (they shift every
      action's score alike, so they matter to a reward model, not to a ranking);
    * affinity_{t,a}: the ``user-item_affinity_a`` column of the row.

    All blocks are scaled by one factor so that ‖x_{t,a}‖ <= 1. The contexts
    are a :class:`FactoredContexts`, assembled per round (nothing of size
    T·K·d is stored). The slot ``position`` (1-3) is ignored.

    Parameters
    ----------
    campaign : {"random", "bts"}
    population : {"all", "men", "women"}
    max_rounds : int, optional
        Keep only the first rounds (in logging order).
    """
    owner = "load_open_bandit"
    folder = open_bandit_path(campaign, population)
    pandas = _require("pandas", owner)
    rows = pandas.read_csv(folder / f"{population}.csv", index_col=0)
    items = pandas.read_csv(folder / "item_context.csv", index_col=0).sort_values("item_id")
    if max_rounds is not None:
        rows = rows.iloc[:max_rounds]
    n_items = len(items)
    if not np.array_equal(items["item_id"].to_numpy(), np.arange(n_items)):
        raise ValueError(f"{owner}: item_context.csv must list items 0..{n_items - 1}")
    numeric = items[["item_feature_0"]].to_numpy(dtype=np.float64)
    numeric = (numeric - numeric.mean()) / max(float(numeric.std()), 1e-12)
    item_block = np.hstack([numeric] + [_one_hot(items[f"item_feature_{j}"].to_numpy())
                                        for j in range(1, 1 + N_ITEM_CATEGORICAL)])
    user_block = np.hstack([_one_hot(rows[f"user_feature_{j}"].to_numpy())
                            for j in range(N_USER_FEATURES)])
    affinity = rows[[f"user-item_affinity_{a}" for a in range(n_items)]].to_numpy(dtype=np.float64)
    scale = np.sqrt(np.max(np.sum(item_block**2, axis=1)) + np.max(np.sum(user_block**2, axis=1))
                    + np.max(affinity**2))
    contexts = FactoredContexts(item_block / scale, user_block / scale,
                                (affinity / scale)[:, :, None], owner=owner)
    return LoggedBanditData(contexts, rows["item_id"].to_numpy(), rows["click"].to_numpy(),
                            rows["propensity_score"].to_numpy(),
                            name=f"obd-{campaign}-{population}")
