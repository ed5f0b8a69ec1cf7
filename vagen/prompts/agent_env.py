"""``AgentEnv``: a raw-text env for agents that reason before they act.

Wraps any ``envs`` env. ``step(response)`` takes the model's whole response, parses it
in the configured reasoning format, hands the ``<answer>`` to the inner env, and adds
the agent-layer rewards: a format reward, and the world-modeling reward that scores
``<observation>`` against the state before the step and ``<prediction>`` against the
state after. Every part is reported separately in ``info["reward_parts"]``:

- ``env``: the inner env's reward without its penalties,
- ``penalty``: the inner env's invalid-action penalty plus the anti-hacking frequency penalty,
- ``format``: ``format_reward`` when the format is valid, else ``format_penalty``,
- ``world_model``: the weighted observation/prediction score (0 unless the format is valid).

The returned reward is their sum. Malformed responses never raise: they are penalised
and the next observation explains what went wrong.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from envs.base import VagenEnv
from vagen.prompts import builder
from vagen.prompts.formats import REPRESENTATIONS, get_format
from vagen.prompts.parser import parse_response

EXAMPLE_SEED = 2**31 - 7  # a seed training/eval seeds are unlikely to use; only for the prompt example


@dataclass
class AgentConfig:
    """How the agent must answer and how the agent layer rewards it."""

    format: str = "grounding_worldmodeling"
    representation: str = "structured"
    format_reward: float = 0.5
    format_penalty: float = 0.0
    #: Run the <answer> even when the format is wrong (the format reward still drops).
    execute_on_bad_format: bool = True
    observation_weight: float = 0.5
    prediction_weight: float = 0.5
    #: "rule": the representation's own rule-based parser; "judge": an LLM judge (pass ``wm_reward``).
    matcher: str = "rule"
    #: Distance within which a described position is right (None: the env schema's ``tolerance``).
    wm_tolerance: float | None = None
    include_example: bool = True
    #: "full" or "minimal" (action help + format only); see ``builder.system_prompt``.
    system_prompt: str = "full"
    extra: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        get_format(self.format)
        if self.system_prompt not in ("full", "minimal"):
            raise ValueError(f"system_prompt must be 'full' or 'minimal', got {self.system_prompt!r}")
        if self.matcher not in ("rule", "judge"):
            raise ValueError(f"matcher must be 'rule' or 'judge', got {self.matcher!r}")
        if self.representation not in REPRESENTATIONS:
            raise ValueError(f"representation must be one of {', '.join(REPRESENTATIONS)}, got {self.representation!r}")


class AgentEnv(gym.Wrapper):
    """Raw model text in, observation + agent-layer rewards out. See the module docstring."""

    def __init__(self, env: VagenEnv, config: AgentConfig | None = None, wm_reward=None):
        super().__init__(env)
        self.cfg = config or AgentConfig()
        self.cfg.validate()
        self.fmt = get_format(self.cfg.format)
        self.pieces = env.unwrapped.prompt_pieces()
        self.schema = env.unwrapped.state_schema
        if wm_reward is None and (self.fmt.has_observation or self.fmt.has_prediction):
            from vagen.rewards import WorldModelReward, WorldModelRewardConfig

            if self.cfg.matcher == "judge":
                raise ValueError("matcher='judge' needs a WorldModelReward built with an LLMJudge (wm_reward=...)")
            wm_reward = WorldModelReward(WorldModelRewardConfig(
                observation_weight=self.cfg.observation_weight, prediction_weight=self.cfg.prediction_weight,
                representation=self.cfg.representation, tol=self.cfg.wm_tolerance))
        self.wm_reward = wm_reward
        minimal = self.cfg.system_prompt == "minimal"
        example = self._example() if self.cfg.include_example and not minimal else None
        self.system_prompt = builder.system_prompt(self.pieces, self.fmt, self.cfg.representation, example, minimal)
        self.state: dict[str, Any] | None = None

    # -- prompts -------------------------------------------------------------------
    def _example(self) -> str:
        """One correct response on a held-aside level, written by the oracle."""
        from vagen.prompts.oracle import oracle_response

        inner = self.env.unwrapped
        config = getattr(inner, "config", None)
        if config is None or not dataclasses.is_dataclass(config):
            return self.fmt.render(answer=self.pieces.example_action, think="...", observation="...",
                                   reasoning="...", prediction="...")
        twin = type(inner)(**dataclasses.asdict(config))
        _, info = twin.reset(seed=EXAMPLE_SEED)
        twin.close()
        return oracle_response(self._context(info["state"], inner.name))

    def _context(self, state: dict[str, Any], name: str | None = None) -> dict[str, Any]:
        return {"env": name or self.env.unwrapped.name, "state": state, "format": self.fmt.name,
                "representation": self.cfg.representation, "separator": self.pieces.action_separator,
                "max_actions": self.pieces.max_actions_per_turn}

    def user_message(self, obs: dict[str, Any]) -> dict[str, Any]:
        """The chat message for an observation: text/image parts in order, plus the
        ``oracle_context`` scripted policies read (model backends ignore it)."""
        text = builder.turn_text(obs["text"], self.fmt, self.pieces)
        return {"role": "user", "content": builder.observation_to_content(text, obs["images"]),
                "oracle_context": self._context(self.state or {})}

    # -- semi-online patches (envs.replay) -------------------------------------------------
    def patch_response(self, action: str, thought: str = "") -> str:
        """A response in this agent's format that takes ``action`` (the expert's), with
        ``thought`` as its reasoning (empty: thought-free)."""
        return self.fmt.render(answer=action, think=thought, observation="", reasoning=thought, prediction="")

    def patch_hint(self, action: str) -> str:
        """ChatML appended to the turn's context (which ends with the assistant header): an
        empty answer, then a user turn asking for a reasoning behind the expert's ``action``,
        then the assistant's ``<think>`` (on-policy-thought patches)."""
        return (f"<|im_end|>\n<|im_start|>user\nHint: the correct action here is {action}. Explain briefly why, "
                "inside <think></think>.<|im_end|>\n<|im_start|>assistant\n<think>")

    # -- gymnasium API -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.state = info["state"]
        return obs, info

    def step(self, response: Any):
        parsed = parse_response(response, self.fmt.name, self.pieces.action_separator,
                                self.pieces.max_actions_per_turn)
        action = parsed.action_text if (parsed.format_ok or self.cfg.execute_on_bad_format) else ""
        before = self.state or {}
        obs, env_reward, terminated, truncated, info = self.env.step(action)
        self.state = info["state"]
        penalty = float(info.get("penalty", 0.0))
        fmt_reward = self.cfg.format_reward if parsed.format_ok else self.cfg.format_penalty
        wm = {"wm/observation": 0.0, "wm/prediction": 0.0, "wm/reward": 0.0, "wm/frequency_penalty": 0.0}
        if self.wm_reward is not None:
            wm = self.wm_reward.score(parsed.observation if self.fmt.has_observation else None,
                                      parsed.prediction if self.fmt.has_prediction else None,
                                      before, info["state"], self.schema, parsed.format_ok)
        parts = {
            "env": float(env_reward) - penalty,
            "penalty": penalty + float(wm.get("wm/frequency_penalty", 0.0)),
            "format": float(fmt_reward),
            "world_model": float(wm.get("wm/reward", 0.0)),
        }
        if not parsed.format_ok:
            note = f"Your response did not follow the format ({'; '.join(parsed.errors)}). Answer as {self.fmt.template()}."
            obs = {**obs, "text": f"{note}\n{obs['text']}"}
            info = {**info, "format_note": note}  # history, like the env's feedback (not a GiGPO anchor part)
        info = {**info, "reward_parts": parts, "parsed": parsed.as_dict(), "format_ok": parsed.format_ok,
                "world_model": wm}
        info["metrics"] = {**info.get("metrics", {}), "format_ok": float(parsed.format_ok),
                           **{k: float(v) for k, v in wm.items()}}
        return obs, float(sum(parts.values())), terminated, truncated, info
