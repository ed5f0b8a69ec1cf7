"""Synthetic GUI trajectories: scene specs, world models, planner, grounding, filters."""
