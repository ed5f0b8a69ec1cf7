"""FrozenLake env: random solvable maps, optional slipperiness, shortest-path solver."""

from envs.frozenlake.env import FrozenLakeConfig, FrozenLakeEnv, generate_map, shortest_path

__all__ = ["FrozenLakeConfig", "FrozenLakeEnv", "generate_map", "shortest_path"]
