"""Warning classes of glmbandits.

Errors caused by bad input are plain :class:`ValueError` / :class:`TypeError`
(see ``DESIGN.md``); this module only holds the library's warning classes so
that users can filter them precisely.
"""

from __future__ import annotations

__all__ = ["GLMBanditsWarning", "ConvergenceWarning"]


class GLMBanditsWarning(UserWarning):
    """Base class of every warning issued by glmbandits."""


class ConvergenceWarning(GLMBanditsWarning):
    """The GLM estimating equation could not be solved to tolerance.

    Typically the maximum-likelihood estimate does not exist (the data are
    separable), which is common in the first rounds of a bandit run. The
    returned estimate is still finite; see :func:`glmbandits.fit_glm`.
    """
