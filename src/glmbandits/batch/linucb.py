"""Lockstep kernel of :class:`~glmbandits.LinUCB` (Chu et al. 2011) for R replicates."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..estimation.estimates import RidgeEstimate
from ..policies.linucb import LinUCB
from .backend import ArrayBackend
from .kernels import BatchKernel, batched_sherman_morrison, batched_ucb

__all__ = ["LinUCBKernel"]


class LinUCBKernel(BatchKernel[LinUCB]):
    """:class:`~glmbandits.LinUCB` for R replicates: θ̂_r = A_r⁻¹b_r, A_r⁻¹ by rank-one steps."""

    def __init__(self, policies: Sequence[LinUCB], backend: ArrayBackend) -> None:
        super().__init__(policies, backend)
        self.est = est = RidgeEstimate.stack([policy.estimate_ for policy in self.policies])
        self.alpha = backend.asarray([policy.alpha for policy in self.policies])
        self.V_inv = backend.asarray(est.V_inv)
        self.b = backend.asarray(est.b)
        self.theta = backend.asarray(est.theta)
        if backend.compiled is not None:  # [V⁻¹ | θ̂] in one array: one product scores a row
            self.M = np.concatenate([est.V_inv, est.theta[:, :, None]], axis=2)
            self.V_inv, self.theta = self.M[:, :, :-1], self.M[:, :, -1]

    def select(self, X: np.ndarray, valid: np.ndarray | None, rows: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        if self.backend.compiled is not None:
            return self._select_compiled(X, self.M, self.alpha, valid, None, rows)
        ucb, mean, width = batched_ucb(self.backend, self.backend.asarray(X), self.theta,
                                       self.V_inv, self.alpha)
        return self._record(ucb, mean, width, valid, None, rows)

    def update(self, rows: np.ndarray, x: np.ndarray, rewards: np.ndarray) -> None:
        backend = self.backend
        if backend.compiled is not None:  # in place, on the rows that played only
            backend.compiled.ridge_rows(self.V_inv, self.b, self.theta, x, rewards, rows)
            self.rounds_[self._selector(rows)] += 1
            return
        # replicates that did not play get x = 0: their V⁻¹, b and θ stay bit for bit
        x = backend.asarray(self._full(rows, x))
        batched_sherman_morrison(backend, self.V_inv, x)
        self.b += backend.asarray(self._full(rows, rewards))[:, None] * x
        self.theta = backend.matmul(self.V_inv, self.b[:, :, None])[:, :, 0]
        self.rounds_[self._selector(rows)] += 1

    def finalize(self) -> None:
        to_numpy, est = self.backend.to_numpy, self.est
        est.V_inv, est.b, est.theta = to_numpy(self.V_inv), to_numpy(self.b), to_numpy(self.theta)
        est.unstack()
        super().finalize()
