"""VAGEN core: policies, prompts, rewards, rollouts, algorithms, training, evaluation, CLI."""

__version__ = "0.1.0"
