"""Bandit environments: synthetic GLM problems (stationary and drifting) and real-data ones."""

from .drifting import PiecewiseStationaryGLMEnv, SmoothlyDriftingGLMEnv, make_synthetic_env
from .full_information import ClassificationBanditEnv, FullInformationEnv, PerActionFeaturesEnv
from .synthetic import SyntheticGLMEnv

# The real-data loaders (datasets.py, open_bandit.py) import pandas / scikit-learn /
# statsmodels inside their functions; import them from their modules.
__all__ = ["SyntheticGLMEnv", "PiecewiseStationaryGLMEnv", "SmoothlyDriftingGLMEnv",
           "make_synthetic_env", "FullInformationEnv", "PerActionFeaturesEnv",
           "ClassificationBanditEnv"]
