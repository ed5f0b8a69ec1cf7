"""Training: the RL trainer, SFT, checkpoints, metrics and plots."""
