"""GLM families: the link μ, its derivatives, an antiderivative, rewards, constants.

The reward model of Li, Lu & Zhou (2017, Section 2) is ``E[Y | X] = μ(X'θ*)``
with a strictly increasing link μ. Every family here provides, vectorized:

* ``mean(z) = μ(z)``, ``dmean(z) = μ'(z)``, ``d2mean(z) = μ''(z)``;
* ``antiderivative(z) = m(z)`` with ``m' = μ``. Because μ is increasing, ``m`` is
  convex, so the paper's estimating equation (Algorithm 1, step 1, eq. (3))
  ``Σ_i (Y_i - μ(X_i'θ)) X_i = 0`` is exactly the stationarity condition of the
  convex objective ``Σ_i m(X_i'θ) - Y_i X_i'θ``. For the canonical links
  (logistic, Poisson, Gaussian) ``m`` is the log-partition function and the
  objective is the negative log-likelihood; for probit it is a quasi-likelihood;
* the reward domain (``in_domain``) and a reward sampler (``sample``);
* the constants of the theory: ``lipschitz(radius)`` = L_μ and
  ``smoothness(radius)`` = M_μ of Assumption 2 (sup of |μ'| and |μ''| over
  |z| <= radius), and ``kappa(radius)`` = inf of μ' over |z| <= radius
  (Assumption 1 with radius ``‖θ*‖ + 1`` when ``‖x‖ <= 1``).

Wherever a family is accepted in glmbandits, its name (``"logistic"``,
``"probit"``, ``"linear"``, ``"poisson"``) is accepted too; see :func:`get_family`.

Examples
--------
>>> from glmbandits.families import get_family
>>> logistic = get_family("logistic")
>>> float(logistic.mean(0.0)), float(logistic.dmean(0.0))
(0.5, 0.25)
>>> round(logistic.kappa(4.0), 5)
0.01766
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
import numpy.typing as npt
from scipy import special

from ._validation import check_nonnegative, check_positive

__all__ = [
    "GLMFamily",
    "LogisticFamily",
    "ProbitFamily",
    "LinearFamily",
    "PoissonFamily",
    "FAMILY_NAMES",
    "get_family",
]

ArrayLike = Union[float, np.ndarray]
#: What the link functions return: float64 values, elementwise.
FloatArray = npt.NDArray[np.float64]

_SQRT_2PI = math.sqrt(2.0 * math.pi)
#: exp() argument cap of the Poisson family: e^700 ~ 1e304 is still finite.
_EXP_CAP = 700.0


class GLMFamily(ABC):
    """Abstract GLM family: a strictly increasing link μ and its reward law."""

    #: Family name, as accepted by :func:`get_family`.
    name: str = ""
    #: Whether μ is the canonical link, so ``antiderivative`` is the log-partition.
    canonical: bool = True
    #: Human-readable reward domain, used in error messages.
    reward_domain: str = ""
    #: |z| beyond which μ' is negligible (below ~1e-15 of its peak): a linear
    #: predictor that large means the MLE is running off to infinity (separation).
    #: Inside it μ(±z) also stays strictly inside the limits of its range, so a
    #: residual μ - y of a reward at such a limit is never rounded to 0 (which would
    #: make the gradient and the Newton step vanish short of the bound).
    saturation: float = math.inf
    #: The closed range of μ (lowest, highest mean), e.g. (0, 1) for Bernoulli rewards.
    mean_range: tuple[float, float] = (-math.inf, math.inf)

    @abstractmethod
    def mean(self, z: ArrayLike) -> FloatArray:
        """μ(z), the expected reward at linear predictor z."""

    @abstractmethod
    def dmean(self, z: ArrayLike) -> FloatArray:
        """μ'(z) (always > 0)."""

    @abstractmethod
    def d2mean(self, z: ArrayLike) -> FloatArray:
        """μ''(z)."""

    @abstractmethod
    def antiderivative(self, z: ArrayLike) -> FloatArray:
        """m(z) with m' = μ; convex, so the estimating equation has a convex potential."""

    @abstractmethod
    def in_domain(self, y: ArrayLike) -> npt.NDArray[np.bool_]:
        """Boolean mask: which rewards the family accepts."""

    @abstractmethod
    def sample(self, mean: ArrayLike, rng: np.random.Generator) -> FloatArray:
        """Draw rewards with the given expected values."""

    @abstractmethod
    def _lipschitz(self, radius: float) -> float: ...

    @abstractmethod
    def _smoothness(self, radius: float) -> float: ...

    @abstractmethod
    def _kappa(self, radius: float) -> float: ...

    @abstractmethod
    def sub_gaussian_sigma(self) -> float:
        """σ of the sub-Gaussian noise condition, eq. (2) of the paper."""

    def variance(self, mean: ArrayLike) -> FloatArray:
        """V(m): the variance of a reward whose mean is m (the GLM's variance function).

        Bernoulli ``m(1 - m)``, Poisson ``m``, Gaussian ``noise_sd²`` (McCullagh &
        Nelder 1989, Table 2.1). A family that does not define it (a user's
        subclass) returns ones. Used to standardise residuals (Pearson residuals
        ``(y - m)/√V(m)``, e.g. by :class:`glmbandits.evaluation.DriftMonitor`).

        Examples
        --------
        >>> get_family("logistic").variance([0.5, 0.9]).round(2).tolist()
        [0.25, 0.09]
        """
        return np.ones_like(_asarray(mean))

    def _radius(self, radius: Any, method: str) -> float:
        owner = f"{type(self).__name__}.{method}"
        if isinstance(radius, (float, np.floating)) and radius == math.inf:
            return math.inf
        return check_nonnegative(radius, owner, "radius")

    def lipschitz(self, radius: float = math.inf) -> float:
        """L_μ of Assumption 2: sup of μ'(z) over |z| <= radius."""
        return self._lipschitz(self._radius(radius, "lipschitz"))

    def smoothness(self, radius: float = math.inf) -> float:
        """M_μ of Assumption 2: sup of |μ''(z)| over |z| <= radius."""
        return self._smoothness(self._radius(radius, "smoothness"))

    def kappa(self, radius: float) -> float:
        """κ of Assumption 1: inf of μ'(z) over |z| <= radius.

        With ``‖x‖ <= 1`` and ``‖θ - θ*‖ <= 1`` one has ``|x'θ| <= ‖θ*‖ + 1``,
        so ``kappa(‖θ*‖ + 1)`` is a valid κ for Li, Lu & Zhou (2017), Assumption 1.
        """
        return self._kappa(self._radius(radius, "kappa"))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(self.__dict__.items()))))


def _asarray(z: ArrayLike) -> FloatArray:
    return np.asarray(z, dtype=np.float64)


class _BernoulliFamily(GLMFamily):
    """Rewards in [0, 1] (0/1 draws in simulation), shared by logistic and probit."""

    reward_domain = "[0, 1]"
    mean_range = (0.0, 1.0)

    def in_domain(self, y: ArrayLike) -> npt.NDArray[np.bool_]:
        y = _asarray(y)
        return (y >= 0.0) & (y <= 1.0)

    def sample(self, mean: ArrayLike, rng: np.random.Generator) -> FloatArray:
        mean = _asarray(mean)
        return (rng.random(mean.shape) < mean).astype(np.float64)

    def sub_gaussian_sigma(self) -> float:
        """1/2: a reward in [0, 1] minus its mean is 1/2-sub-Gaussian (Hoeffding's lemma)."""
        return 0.5

    def variance(self, mean: ArrayLike) -> FloatArray:
        """Bernoulli: ``m(1 - m)``."""
        mean = _asarray(mean)
        return mean * (1.0 - mean)


class LogisticFamily(_BernoulliFamily):
    """Bernoulli rewards with the logistic link μ(z) = 1 / (1 + e^{-z}) (canonical).

    Rewards must lie in [0, 1] (0/1 clicks, or fractions as a quasi-likelihood).
    L_μ = 1/4; M_μ = 1/(6√3) ≈ 0.0962, attained at z = ±log(2 + √3).
    """

    name = "logistic"
    canonical = True
    saturation = 36.0

    def mean(self, z: ArrayLike) -> FloatArray:
        return special.expit(_asarray(z))

    def dmean(self, z: ArrayLike) -> FloatArray:
        z = _asarray(z)
        return special.expit(z) * special.expit(-z)

    def d2mean(self, z: ArrayLike) -> FloatArray:
        z = _asarray(z)
        p = special.expit(z)
        return p * special.expit(-z) * (1.0 - 2.0 * p)

    def antiderivative(self, z: ArrayLike) -> FloatArray:
        return np.logaddexp(0.0, _asarray(z))


    def _lipschitz(self, radius: float) -> float:
        return 0.25

    def _smoothness(self, radius: float) -> float:
        peak = math.log(2.0 + math.sqrt(3.0))
        return float(abs(self.d2mean(min(radius, peak))))

    def _kappa(self, radius: float) -> float:
        return float(self.dmean(radius))



class ProbitFamily(_BernoulliFamily):
    """Bernoulli rewards with the probit link μ(z) = Φ(z) (standard normal CDF).

    Probit is *not* canonical: the paper's equation ``Σ (Y_i - Φ(X_i'θ)) X_i = 0``
    is a quasi-likelihood estimating equation, not the score of the probit
    likelihood (whose score weights each residual by φ/(Φ(1-Φ))). Its solution is
    still consistent, and it is what Li, Lu & Zhou (2017) analyse. The convex
    potential is ``m(z) = zΦ(z) + φ(z)``.

    L_μ = φ(0) = 1/√(2π); M_μ = φ(1) ≈ 0.242 (|μ''(z)| = |z|φ(z) peaks at |z| = 1).
    """

    name = "probit"
    canonical = False
    #: φ(8.2)/φ(0) ≈ 2.5e-15; beyond z ≈ 8.29 float64 rounds Φ(z) to exactly 1.
    saturation = 8.2

    def mean(self, z: ArrayLike) -> FloatArray:
        return special.ndtr(_asarray(z))

    def dmean(self, z: ArrayLike) -> FloatArray:
        z = _asarray(z)
        return np.exp(-0.5 * z * z) / _SQRT_2PI

    def d2mean(self, z: ArrayLike) -> FloatArray:
        z = _asarray(z)
        return -z * self.dmean(z)

    def antiderivative(self, z: ArrayLike) -> FloatArray:
        z = _asarray(z)
        return z * special.ndtr(z) + self.dmean(z)


    def _lipschitz(self, radius: float) -> float:
        return 1.0 / _SQRT_2PI

    def _smoothness(self, radius: float) -> float:
        r = min(radius, 1.0)
        return float(r * self.dmean(r))

    def _kappa(self, radius: float) -> float:
        return float(self.dmean(radius))



@dataclass(eq=False)
class LinearFamily(GLMFamily):
    """Gaussian rewards with the identity link μ(z) = z (canonical).

    Rewards are any finite reals; the simulator adds N(0, noise_sd²) noise.
    L_μ = κ = 1, M_μ = 0.
    """

    noise_sd: float = 0.5

    name = "linear"
    canonical = True
    reward_domain = "finite reals"

    def __post_init__(self) -> None:
        self.noise_sd = check_positive(self.noise_sd, "LinearFamily", "noise_sd")

    def __repr__(self) -> str:
        return f"LinearFamily(noise_sd={self.noise_sd!r})"

    def mean(self, z: ArrayLike) -> FloatArray:
        return _asarray(z).copy()

    def dmean(self, z: ArrayLike) -> FloatArray:
        return np.ones_like(_asarray(z))

    def d2mean(self, z: ArrayLike) -> FloatArray:
        return np.zeros_like(_asarray(z))

    def antiderivative(self, z: ArrayLike) -> FloatArray:
        z = _asarray(z)
        return 0.5 * z * z

    def in_domain(self, y: ArrayLike) -> npt.NDArray[np.bool_]:
        return np.isfinite(_asarray(y))

    def sample(self, mean: ArrayLike, rng: np.random.Generator) -> FloatArray:
        mean = _asarray(mean)
        return mean + self.noise_sd * rng.standard_normal(mean.shape)

    def _lipschitz(self, radius: float) -> float:
        return 1.0

    def _smoothness(self, radius: float) -> float:
        return 0.0

    def _kappa(self, radius: float) -> float:
        return 1.0

    def sub_gaussian_sigma(self) -> float:
        """The Gaussian noise standard deviation ``noise_sd``."""
        return self.noise_sd

    def variance(self, mean: ArrayLike) -> FloatArray:
        """Gaussian: ``noise_sd²`` whatever the mean."""
        return np.full_like(_asarray(mean), self.noise_sd * self.noise_sd)


class PoissonFamily(GLMFamily):
    """Poisson counts with the log link μ(z) = e^z (canonical).

    Rewards must be >= 0. On |z| <= r: L_μ = M_μ = e^r and κ = e^{-r}. Poisson
    noise is not sub-Gaussian, so :meth:`sub_gaussian_sigma` raises; pass σ to the
    theory helpers yourself. ``exp`` is capped at ``e^700`` to stay finite.
    """

    name = "poisson"
    canonical = True
    reward_domain = "[0, inf)"
    saturation = 40.0
    mean_range = (0.0, math.inf)

    def mean(self, z: ArrayLike) -> FloatArray:
        return np.exp(np.minimum(_asarray(z), _EXP_CAP))

    dmean = mean
    d2mean = mean
    antiderivative = mean

    def in_domain(self, y: ArrayLike) -> npt.NDArray[np.bool_]:
        y = _asarray(y)
        return (y >= 0.0) & np.isfinite(y)

    def variance(self, mean: ArrayLike) -> FloatArray:
        """Poisson: ``m``."""
        return _asarray(mean).copy()

    def sample(self, mean: ArrayLike, rng: np.random.Generator) -> FloatArray:
        return np.asarray(rng.poisson(_asarray(mean)), dtype=np.float64)

    def _lipschitz(self, radius: float) -> float:
        return math.exp(radius) if radius <= _EXP_CAP else math.inf

    _smoothness = _lipschitz

    def _kappa(self, radius: float) -> float:
        return math.exp(-min(radius, _EXP_CAP)) if math.isfinite(radius) else 0.0

    def sub_gaussian_sigma(self) -> float:
        raise ValueError(
            "PoissonFamily.sub_gaussian_sigma: Poisson noise is not sub-Gaussian; "
            "pass an explicit sigma (e.g. a bound valid on your range of means)"
        )


_FAMILIES: dict[str, type[GLMFamily]] = {
    "logistic": LogisticFamily,
    "probit": ProbitFamily,
    "linear": LinearFamily,
    "poisson": PoissonFamily,
}
#: The family names accepted wherever a family is.
FAMILY_NAMES: tuple[str, ...] = tuple(_FAMILIES)


def get_family(family: Any, owner: str = "get_family") -> GLMFamily:
    """Resolve a family name or instance into a :class:`GLMFamily`.

    Parameters
    ----------
    family : str or GLMFamily
        One of ``"logistic"``, ``"probit"``, ``"linear"``, ``"poisson"``
        (case-insensitive), or a family instance (returned as is).
    owner : str
        Who is asking, for the error message.

    Examples
    --------
    >>> get_family("Probit")
    ProbitFamily()
    """
    if isinstance(family, GLMFamily):
        return family
    if not isinstance(family, str):
        raise TypeError(
            f"{owner}: family must be a name {list(FAMILY_NAMES)} or a GLMFamily, "
            f"got {type(family).__name__}"
        )
    key = family.strip().lower()
    if key not in _FAMILIES:
        raise ValueError(f"{owner}: family must be one of {list(FAMILY_NAMES)}, got {family!r}")
    return _FAMILIES[key]()
