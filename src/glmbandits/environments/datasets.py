"""Real datasets that ship inside installed packages, as full-information bandits.

* :func:`load_classification_bandit` — digits, wine, breast cancer and iris
  from scikit-learn (bundled with it: no network), classes as actions with the
  block encoding.
* :func:`load_modechoice_bandit` — statsmodels' ``modechoice``: 210 travellers
  choosing among 4 travel modes (air, train, bus, car) with per-mode features;
  the reward is 1 for the mode the traveller chose.

Both need the ``data`` extra (``pip install 'glmbandits[data]'``); the
packages are imported inside the functions. The Open Bandit Dataset sample is
in :mod:`glmbandits.environments.open_bandit`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import SeedLike
from .full_information import ClassificationBanditEnv, PerActionFeaturesEnv

__all__ = ["CLASSIFICATION_DATASETS", "load_classification_bandit", "load_modechoice_bandit",
           "scale_into_unit_ball", "standardize"]

#: scikit-learn loader names by dataset name.
CLASSIFICATION_DATASETS = {
    "iris": "load_iris",
    "wine": "load_wine",
    "breast-cancer": "load_breast_cancer",
    "digits": "load_digits",
}


def _require(module: str, owner: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"{owner} needs {module.split('.')[0]}: "
                          "pip install 'glmbandits[data]'") from error


def standardize(X: np.ndarray) -> np.ndarray:
    """Columns centred and scaled to unit variance (constant columns are only centred)."""
    centred = X - X.mean(axis=0)
    scale = centred.std(axis=0)
    scaled: np.ndarray = centred / np.where(scale > 0, scale, 1.0)
    return scaled


def scale_into_unit_ball(X: np.ndarray) -> np.ndarray:
    """Divide by the largest row norm (over the last axis), so every ‖x‖ <= 1.

    One global factor keeps the problem the same linear model (θ absorbs it),
    unlike per-row normalisation.
    """
    norms = np.linalg.norm(X, axis=-1)
    top = float(norms.max())
    return X / top if top > 0 else X


def load_classification_bandit(name: str, *, n_components: int | None = None,
                               seed: SeedLike = None) -> ClassificationBanditEnv:
    """A scikit-learn classification dataset as a full-information bandit.

    The features are standardised, optionally reduced by PCA to
    ``n_components`` (scikit-learn's ``PCA``; useful for digits, whose block
    encoding is otherwise 10 × 65 = 650-dimensional), given an intercept
    feature, and scaled by one global factor into the unit ball. Each class is
    an action; x_{i,a} is the block encoding e_a ⊗ z_i; the reward is 1 when a
    is the true class.

    Parameters
    ----------
    name : {"iris", "wine", "breast-cancer", "digits"}
    n_components : int, optional
    seed : int, Generator, SeedSequence or None
        Order in which the samples are visited.

    Examples
    --------
    >>> env = load_classification_bandit("iris", seed=0)  # doctest: +SKIP
    >>> env.n_samples, env.n_actions, env.n_features  # doctest: +SKIP
    (150, 3, 15)
    """
    owner = "load_classification_bandit"
    key = name.replace("_", "-").lower() if isinstance(name, str) else name
    if key not in CLASSIFICATION_DATASETS:
        raise ValueError(f"{owner}: name must be one of {list(CLASSIFICATION_DATASETS)}, "
                         f"got {name!r}")
    datasets = _require("sklearn.datasets", owner)
    bunch = getattr(datasets, CLASSIFICATION_DATASETS[key])()
    z = standardize(np.asarray(bunch.data, dtype=np.float64))
    if n_components is not None:
        decomposition = _require("sklearn.decomposition", owner)
        z = decomposition.PCA(n_components=n_components, random_state=0).fit_transform(z)
    z = scale_into_unit_ball(np.hstack([z, np.ones((z.shape[0], 1))]))
    labels = np.asarray(bunch.target, dtype=np.int64)
    return ClassificationBanditEnv(z, labels, seed=seed, name=key)


#: modechoice's modes, in the order of the ``mode`` column (1..4).
MODES = ("air", "train", "bus", "car")


def load_modechoice_bandit(*, seed: SeedLike = None) -> PerActionFeaturesEnv:
    """statsmodels' travel-mode choice data as a bandit with genuinely per-action features.

    Each of the 210 travellers is a round with K = 4 actions (air, train, bus,
    car). x_{i,a} (d = 11) holds the conditional-logit design of the data's
    classic analyses: four alternative-specific constants (one-hot of a),
    the mode's terminal waiting time ``ttme``, in-vehicle cost ``invc`` and
    in-vehicle time ``invt`` (standardised over all rows), and household
    income ``hinc`` interacted with the one-hot of a (standardised); the whole
    design is scaled by one factor into the unit ball. The reward is 1 for the
    mode the traveller chose.

    References
    ----------
    Greene, *Econometric Analysis*, Table F18.2 (travel mode choice, 210
    travellers between Sydney and Melbourne); shipped as
    ``statsmodels.datasets.modechoice``.

    Examples
    --------
    >>> env = load_modechoice_bandit(seed=0)  # doctest: +SKIP
    >>> env.n_samples, env.n_actions, env.n_features  # doctest: +SKIP
    (210, 4, 11)
    """
    owner = "load_modechoice_bandit"
    modechoice = _require("statsmodels.datasets.modechoice", owner)
    frame = modechoice.load_pandas().data.sort_values(["individual", "mode"])
    n, K = frame["individual"].nunique(), len(MODES)
    if len(frame) != n * K:
        raise ValueError(f"{owner}: expected {K} rows per traveller, got {len(frame)} rows "
                         f"for {n} travellers")
    one_hot = np.eye(K)[frame["mode"].to_numpy(dtype=np.int64) - 1]
    generic = standardize(frame[["ttme", "invc", "invt"]].to_numpy(dtype=np.float64))
    income = standardize(frame[["hinc"]].to_numpy(dtype=np.float64))
    design = np.hstack([one_hot, generic, one_hot * income])
    contexts = scale_into_unit_ball(design).reshape(n, K, design.shape[1])
    table = frame["choice"].to_numpy(dtype=np.float64).reshape(n, K)
    return PerActionFeaturesEnv(contexts, table, seed=seed, name="modechoice")
