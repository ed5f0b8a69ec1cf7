"""Navigation env: egocentric object-goal navigation in procedural MuJoCo-rendered rooms."""

from envs.navigation.env import NavigationConfig, NavigationEnv

__all__ = ["NavigationConfig", "NavigationEnv"]
