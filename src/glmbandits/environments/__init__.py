"""Bandit environments: synthetic GLM problems and real-data environments."""

from .full_information import ClassificationBanditEnv, FullInformationEnv, PerActionFeaturesEnv
from .synthetic import SyntheticGLMEnv

# The real-data loaders (datasets.py, open_bandit.py) import pandas / scikit-learn /
# statsmodels inside their functions; import them from their modules.
__all__ = ["SyntheticGLMEnv", "FullInformationEnv", "PerActionFeaturesEnv",
           "ClassificationBanditEnv"]
