"""Environments behind one gymnasium-based API (embodied/visual and GUI).

Must never import `vagen`: the agent layer depends on envs, not the reverse.
The env contract, registry and first envs arrive with the environment issue.
"""
