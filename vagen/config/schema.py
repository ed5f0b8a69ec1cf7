"""Typed configuration: what a `configs/<kind>/<name>.yaml` preset may say.

Every section forbids unknown keys and constrains its values, so a typo or an
out-of-range value fails at load time with the key's dotted path and what is allowed.
Later subsystems add fields here; presets only name what differs from these defaults.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Section(BaseModel):
    """Base for config sections: strict keys, assignment validated too."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelConfig(Section):
    """The policy model. ``path=tiny`` resolves to the offline tiny Qwen2.5-VL."""

    path: str = "tiny"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    device: str = Field("auto", pattern=r"^(auto|cpu|cuda(:\d+)?|mps)$")


class SamplingConfig(Section):
    """Sampling for rollouts (``temperature=0`` is greedy)."""

    temperature: float = Field(1.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(128, ge=1, le=32768)
    stop: list[str] = Field(default_factory=list)


class PolicyConfig(Section):
    """Which backend generates rollouts: the trained model in process (``hf``), vLLM
    engines on GPUs, or a served/remote model (``openai``)."""

    backend: Literal["hf", "vllm", "openai"] = "hf"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: int = Field(8, ge=1)


class EnvConfig(Section):
    """The environment: a registered name and its keyword arguments."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class PromptConfig(Section):
    """How the agent is asked to answer (VAGEN's reasoning formats)."""

    format: Literal["free_think", "no_think", "grounding", "worldmodeling", "grounding_worldmodeling"] = (
        "grounding_worldmodeling"
    )
    representation: Literal["natural", "symbolic", "structured"] = "structured"
    history: Literal["full", "last_k", "none"] = "full"
    history_k: int = Field(4, ge=1)
    max_images: int = Field(4, ge=0)


class RewardConfig(Section):
    """Agent-layer rewards added to the env's own (see vagen.prompts.AgentEnv)."""

    format_reward: float = 0.5
    format_penalty: float = Field(0.0, le=0.0)
    execute_on_bad_format: bool = True
    wm_observation_weight: float = Field(0.5, ge=0.0)
    wm_prediction_weight: float = Field(0.5, ge=0.0)
    wm_matcher: Literal["rule", "judge"] = "rule"


class RolloutConfig(Section):
    """How many trajectories per step and how long they may run."""

    groups: int = Field(8, ge=1)
    group_size: int = Field(4, ge=1)
    max_turns: int = Field(5, ge=1)
    max_tokens_per_trajectory: int = Field(2048, ge=1)


class AlgoConfig(Section):
    """Advantage estimator, filtering and loss (see vagen/algos once it lands)."""

    advantage: Literal["grpo", "rloo", "gae", "bilevel_gae", "gigpo"] = "grpo"
    gamma: float = Field(1.0, ge=0.0, le=1.0)
    lam: float = Field(1.0, ge=0.0, le=1.0)
    clip_ratio_low: float = Field(0.2, gt=0.0)
    clip_ratio_high: float = Field(0.28, gt=0.0)
    kl_coef: float = Field(0.0, ge=0.0)
    kl_estimator: Literal["k1", "k2", "k3"] = "k3"
    entropy_coef: float = Field(0.0, ge=0.0)
    loss_agg: Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"] = "token-mean"
    filter: Literal["none", "starpo_s", "zero_variance"] = "starpo_s"
    filter_keep_ratio: float = Field(0.25, gt=0.0, le=1.0)


class TrainerConfig(Section):
    """Optimisation, logging and checkpoints."""

    steps: int = Field(100, ge=1)
    lr: float = Field(1e-6, gt=0.0)
    weight_decay: float = Field(0.0, ge=0.0)
    grad_clip: float = Field(1.0, gt=0.0)
    ppo_epochs: int = Field(1, ge=1)
    micro_batch_size: int = Field(8, ge=1)
    rollout_mode: Literal["sync", "async"] = "sync"
    seed: int = 0
    out_dir: str = "runs/${env.name}"
    log_every: int = Field(1, ge=1)
    save_every: int = Field(50, ge=0)


class SandboxConfig(Section):
    """Where GUI envs get their desktops/browsers."""

    provider: Literal["local", "docker", "remote"] = "local"
    num: int = Field(1, ge=1)
    urls: list[str] = Field(default_factory=list)
    screen_width: int = Field(1280, ge=64)
    screen_height: int = Field(800, ge=64)

    @model_validator(mode="after")
    def _remote_needs_urls(self):
        if self.provider == "remote" and not self.urls:
            raise ValueError("sandbox.provider=remote needs sandbox.urls")
        return self


class TrainConfig(Section):
    """`vagen train <env>`: everything one run needs."""

    env: EnvConfig
    model: ModelConfig = Field(default_factory=ModelConfig)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    prompt: PromptConfig = Field(default_factory=PromptConfig)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    algo: AlgoConfig = Field(default_factory=AlgoConfig)
    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)


class ServeConfig(Section):
    """`vagen serve`: an OpenAI-compatible server over a policy."""

    model: str = "tiny"
    served_name: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    api_key_env: str = "VAGEN_API_KEY"
    max_tokens_limit: int = Field(1024, ge=1)
    device: str = "auto"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"


#: Config kinds by the folder their presets live in under configs/.
KINDS: dict[str, type[Section]] = {"train": TrainConfig, "serve": ServeConfig}
