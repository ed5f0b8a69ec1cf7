"""Evaluation: vagen eval runs, results, leaderboards."""
