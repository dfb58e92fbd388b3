"""Warning classes of glmbandits, and the error of an unreadable model file.

Errors caused by bad input are plain :class:`ValueError` / :class:`TypeError`
(see ``DESIGN.md``); this module holds the library's warning classes, so
that users can filter them precisely, and :class:`ModelFileError` (a
``ValueError``) for a saved model that :func:`glmbandits.load` refuses.
"""

from __future__ import annotations

__all__ = ["GLMBanditsWarning", "ConvergenceWarning", "ModelFileError"]


class GLMBanditsWarning(UserWarning):
    """Base class of every warning issued by glmbandits."""


class ConvergenceWarning(GLMBanditsWarning):
    """The GLM estimating equation could not be solved to tolerance.

    Typically the maximum-likelihood estimate does not exist (the data are
    separable), which is common in the first rounds of a bandit run. The
    returned estimate is still finite; see :func:`glmbandits.fit_glm`.
    """


class ModelFileError(ValueError):
    """A saved model file cannot be loaded: damaged, truncated, crafted or too new.

    Raised by :func:`glmbandits.load` (and ``Policy.load``) with a message that
    names the file and the reason; nothing is returned and nothing partial is
    built. A missing file raises :class:`FileNotFoundError` instead.
    """
