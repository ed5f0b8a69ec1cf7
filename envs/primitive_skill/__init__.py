"""PrimitiveSkill: tabletop pick/place/push manipulation in MuJoCo (see ``env.py``)."""

from envs.primitive_skill.env import PrimitiveSkillConfig, PrimitiveSkillEnv

__all__ = ["PrimitiveSkillConfig", "PrimitiveSkillEnv"]
