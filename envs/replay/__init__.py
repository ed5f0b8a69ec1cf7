"""Replay of expert GUI trajectories for semi-online RL (``envs.make("replay", data=DIR)``)."""
