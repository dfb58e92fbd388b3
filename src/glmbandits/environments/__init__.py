"""Bandit environments: synthetic GLM problems (stationary and drifting) and real-data ones.

Their Gymnasium form is :mod:`glmbandits.environments.gymnasium_envs` (the ``gym`` extra:
importing it imports gymnasium and registers the ``glmbandits/...`` ids), not imported here.
"""

from .drifting import PiecewiseStationaryGLMEnv, SmoothlyDriftingGLMEnv, make_synthetic_env
from .full_information import ClassificationBanditEnv, FullInformationEnv, PerActionFeaturesEnv
from .synthetic import SyntheticGLMEnv

# The real-data loaders (datasets.py, open_bandit.py) import pandas / scikit-learn /
# statsmodels inside their functions; import them from their modules.
__all__ = ["SyntheticGLMEnv", "PiecewiseStationaryGLMEnv", "SmoothlyDriftingGLMEnv",
           "make_synthetic_env", "FullInformationEnv", "PerActionFeaturesEnv",
           "ClassificationBanditEnv"]
