"""Every way θ̂ is computed, in one place.

The paper's estimate is the root of the estimating equation of Li, Lu & Zhou
(2017), eq. (3): ``Σ_i (Y_i - μ(X_i'θ)) X_i (- λθ) = 0``.

* :mod:`.mle` — :func:`fit_glm` / :func:`solve_estimating_equation`: Newton's method
  with a line search, from scratch (the reference every other path agrees with).
* :mod:`.gram` — ``V = λI + Σ X_i X_i'`` and its inverse by Sherman–Morrison updates.
* :mod:`.incremental` — exact warm-started refits after each new sample
  (cached gradient and Hessian inverse).
* :mod:`.lazy` — a stacked Newton solver for refits that are due rarely (lazy
  schedules, and many batch replicates at once).
* :mod:`.convergence` — the one convergence rule every solver applies (gradient;
  without ridge also the Newton step in the linear predictors and a finite MLE).
* :mod:`.certificate` — a certified bound on ``‖θ - θ̂‖_V`` from one exact
  gradient, behind the policies' ``refit_tol``.
* :mod:`.history` — the samples (X_i, Y_i), grown geometrically.
* :mod:`.online` — one-step online updates (proximal GLM step, online-mirror-descent
  step, projections) for the policies that keep no history.
* :mod:`.windowed` — the last τ samples in a ring buffer and the MLE over them
  (sliding-window forgetting, SW-GLUCB).
* :mod:`.schedule` — when to refit (every round, or rarely: det V doubled).
* :mod:`.estimates` — :class:`GLMEstimate` and :class:`RidgeEstimate`, the
  objects policies hold.
* :mod:`.checkpoint` — cheap checkpoints of that state, so that a failed
  ``Policy.update`` changes nothing.
"""

from .estimates import GLMEstimate, RidgeEstimate
from .gram import inverse_gram, sherman_morrison_update
from .mle import GLMFit, check_rewards, fit_glm, solve_estimating_equation

__all__ = [
    "GLMFit",
    "fit_glm",
    "solve_estimating_equation",
    "check_rewards",
    "sherman_morrison_update",
    "inverse_gram",
    "GLMEstimate",
    "RidgeEstimate",
]
