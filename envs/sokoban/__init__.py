"""Sokoban env: procedural levels by reverse play, BFS solver."""

from envs.sokoban.env import SokobanConfig, SokobanEnv
from envs.sokoban.levels import generate_level, solve

__all__ = ["SokobanConfig", "SokobanEnv", "generate_level", "solve"]
