"""Growing storage of the (x, reward) samples a policy has observed."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .checkpoint import Checkpoint


class SampleHistory:
    """Append-only (X, y) buffers whose capacity doubles when full.

    Appending is amortised O(d) and never reallocates per sample; ``X`` and ``y``
    are views of the filled part, so fitting on them copies nothing.
    """

    def __init__(self, n_features: int, capacity: int = 64) -> None:
        self._X = np.empty((max(capacity, 1), n_features))
        self._y = np.empty(max(capacity, 1))
        self.n = 0

    def append(self, x: np.ndarray, reward: float) -> None:
        """Store one sample, doubling the buffers first if they are full."""
        if self.n == self._y.shape[0]:
            self._X = np.concatenate([self._X, np.empty_like(self._X)])
            self._y = np.concatenate([self._y, np.empty_like(self._y)])
        self._X[self.n] = x
        self._y[self.n] = reward
        self.n += 1

    def _checkpoint(self) -> Checkpoint:
        """Only the attribute dict: appends write beyond ``n`` or into new buffers."""
        return Checkpoint(self, self.__dict__.copy())

    @property
    def X(self) -> np.ndarray:
        """Feature vectors observed so far, shape (n, d) (a view)."""
        return self._X[: self.n]

    @property
    def y(self) -> np.ndarray:
        """Rewards observed so far, shape (n,) (a view)."""
        return self._y[: self.n]

    def copy(self) -> "SampleHistory":
        """An independent copy with the same samples."""
        clone = SampleHistory(self._X.shape[1], self._y.shape[0])
        clone._X[: self.n] = self.X
        clone._y[: self.n] = self.y
        clone.n = self.n
        return clone

    @staticmethod
    def stack(histories: Sequence["SampleHistory"], capacity: int
              ) -> tuple[np.ndarray, np.ndarray]:
        """The samples of R histories in zero-padded buffers (the lockstep batch form).

        Parameters
        ----------
        histories : sequence of SampleHistory
            R histories of the same dimension d.
        capacity : int
            Rows per replicate (at least the largest ``n``).

        Returns
        -------
        X : ndarray of shape (R, capacity, d)
            Row r holds history r's samples in its first ``histories[r].n`` rows and
            zeros beyond (a zero row adds nothing to eq. (3) of Li, Lu & Zhou 2017).
        y : ndarray of shape (R, capacity)
            Their rewards, zero-padded alike.
        """
        d = histories[0]._X.shape[1] if histories else 0
        X = np.zeros((len(histories), capacity, d))
        y = np.zeros((len(histories), capacity))
        for r, history in enumerate(histories):
            X[r, : history.n] = history.X
            y[r, : history.n] = history.y
        return X, y

    @classmethod
    def unstack(cls, X: np.ndarray, y: np.ndarray, n: np.ndarray) -> list["SampleHistory"]:
        """Histories of row r's first ``n[r]`` samples of :meth:`stack`'s buffers (copied).

        Each has the capacity of a loaded history, ``max(64, n[r])``.
        """
        histories = []
        for r, m in enumerate(n.tolist()):
            history = cls.__new__(cls)
            history.__setstate__({"X": X[r, :m], "y": y[r, :m]})
            histories.append(history)
        return histories

    def __getstate__(self) -> dict:
        # Save only the filled part: a pickle stays proportional to the data.
        return {"X": self.X.copy(), "y": self.y.copy()}

    def __setstate__(self, state: dict) -> None:
        X, y = state["X"], state["y"]
        if X.ndim != 2 or y.shape != (X.shape[0],):  # e.g. a crafted model file
            raise ValueError(f"SampleHistory: X must have shape (n, d) and y shape (n,), got "
                             f"{X.shape} and {y.shape}")
        capacity = max(64, X.shape[0])
        self._X = np.empty((capacity, X.shape[1]))
        self._y = np.empty(capacity)
        self._X[: X.shape[0]] = X
        self._y[: y.shape[0]] = y
        self.n = X.shape[0]
