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
    lora_rank: int = Field(0, ge=0)
    lora_alpha: int | None = Field(None, ge=1)
    #: Training with a half-precision ``dtype``: ``float32`` keeps fp32 master copies of the
    #: trained weights and autocasts forwards (and generation) to ``dtype`` (mixed precision);
    #: ``model`` trains the weights in ``dtype`` itself (half the memory, but bf16 holds ~3
    #: significant digits, so updates below ~1/256 of a weight are lost: lr 1e-6 does nothing).
    master_weights: Literal["float32", "model"] = "float32"


class SamplingConfig(Section):
    """Sampling for rollouts (``temperature=0`` is greedy)."""

    temperature: float = Field(1.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(128, ge=1, le=32768)
    stop: list[str] = Field(default_factory=lambda: ["</answer>"])
    #: Keep the matched stop string in the response (so "</answer>" closes the answer).
    include_stop: bool = True


class PolicyConfig(Section):
    """Which backend generates rollouts: the trained model in process (``hf``), vLLM
    engines on GPUs, or a served/remote model (``openai``)."""

    backend: Literal["hf", "vllm", "openai"] = "hf"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: int = Field(8, ge=1)
    #: hf: how many contexts one ``generate`` call batches (larger on a GPU).
    max_batch_size: int = Field(16, ge=1)
    # vllm (``vagen train``): the engine's share of its GPU, whether it sleeps (frees its
    # memory) while the trainer updates on the same GPU, and the weight-load bucket size.
    gpu_memory_utilization: float = Field(0.5, gt=0.0, le=1.0)
    vllm_sleep: bool = False
    weight_bucket_mb: float = Field(512.0, gt=0.0)
    max_model_len: int | None = Field(None, ge=128)


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
    #: "full": env description + action help + format + one example; "minimal": action help + format only
    #: (short prompts for CPU-sized runs whose model learns the task from demonstrations).
    system_prompt: Literal["full", "minimal"] = "full"
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
    #: Distance within which a described position counts (None: the env's StateSchema.tolerance).
    wm_tolerance: float | None = Field(None, ge=0.0)


class RolloutConfig(Section):
    """How many trajectories per step and how long they may run."""

    groups: int = Field(8, ge=1)
    group_size: int = Field(4, ge=1)
    max_turns: int = Field(5, ge=1)
    max_tokens_per_trajectory: int = Field(2048, ge=1)
    #: Semi-online RL (env replay): how an env-patched turn appears in later history.
    patch_mode: Literal["thought_free", "off_policy", "on_policy"] = "thought_free"
    #: GiGPO anchor states: ``state`` = the observation without the env's feedback on the
    #: previous step; ``observation`` = the observation as shown (feedback included).
    anchor: Literal["state", "observation"] = "state"


class AlgoConfig(Section):
    """Advantage estimator, filtering and loss (see vagen/algos once it lands)."""

    advantage: Literal["grpo", "rloo", "reinforce_pp", "gae", "turn_gae", "bilevel_gae", "gigpo",
                       "semi_online"] = "grpo"
    norm_by_std: bool = True
    gamma: float = Field(1.0, ge=0.0, le=1.0)
    lam: float = Field(1.0, ge=0.0, le=1.0)
    gamma_token: float = Field(1.0, ge=0.0, le=1.0)
    lam_token: float = Field(1.0, ge=0.0, le=1.0)
    gigpo_omega: float = Field(1.0, ge=0.0)
    gigpo_gamma: float = Field(0.95, ge=0.0, le=1.0)
    # semi_online (UI-S1): R_t = r_t + gamma * matched_t * R_{t+1}; A = w_E A^E + w_S A^S
    semi_online_gamma: float = Field(0.5, ge=0.0, le=1.0)
    semi_online_step_weight: float = Field(1.0, ge=0.0)
    semi_online_episode_weight: float = Field(1.0, ge=0.0)
    uis1_min_std: float = Field(0.3, ge=0.0)  # filter=uis1: keep a task when std of its step-0 returns > this
    clip_ratio_low: float = Field(0.2, gt=0.0)
    clip_ratio_high: float = Field(0.28, gt=0.0)
    dual_clip: float | None = Field(None, gt=1.0)
    # Off-policy data (asynchronous rollouts): "decoupled" = decoupled PPO (AReaL): clip
    # against the proximal policy (the recomputed pre-update log-probs) and weight each token
    # by pi_prox / pi_behaviour (the rollout log-probs), capped at is_cap when set; "tis" =
    # the same weight always truncated at is_cap (truncated importance sampling).
    off_policy: Literal["none", "decoupled", "tis"] = "none"
    is_cap: float | None = Field(None, gt=0.0)
    kl_coef: float = Field(0.0, ge=0.0)
    kl_estimator: Literal["k1", "k2", "k3"] = "k3"
    kl_in_reward: bool = False
    entropy_coef: float = Field(0.0, ge=0.0)
    loss_agg: Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"] = (
        "token-mean")
    filter: Literal["none", "starpo_s", "zero_variance", "uis1"] = "starpo_s"
    filter_mode: Literal["top_fraction", "top_p"] = "top_fraction"
    filter_keep_ratio: float = Field(0.25, gt=0.0, le=1.0)
    #: Per-turn samples: "trajectory" divides each turn's advantage by its trajectory's number
    #: of turns so every trajectory carries equal weight (otherwise long, failing episodes
    #: dominate the batch and push down even the near-deterministic format tokens);
    #: "turn" weights every turn equally.
    turn_weighting: Literal["trajectory", "turn"] = "trajectory"
    value_coef: float = Field(0.5, ge=0.0)
    critic_lr: float = Field(1e-5, gt=0.0)


class TrainerConfig(Section):
    """Optimisation, logging and checkpoints."""

    steps: int = Field(100, ge=1)
    lr: float = Field(1e-6, gt=0.0)
    lr_schedule: Literal["constant", "cosine", "linear"] = "constant"
    warmup_steps: int = Field(0, ge=0)
    weight_decay: float = Field(0.0, ge=0.0)
    grad_clip: float = Field(1.0, gt=0.0)
    ppo_epochs: int = Field(1, ge=1)
    mini_batch_size: int = Field(64, ge=1)
    micro_batch_size: int = Field(8, ge=1)
    sample_mode: Literal["turn", "trajectory"] = "turn"
    old_logprobs: Literal["recompute", "rollout"] = "recompute"
    # async: a producer thread plays the next batches while the trainer updates, at most
    # max_staleness versions behind (AReaL's capacity rule per batch; 0 = synchronous results).
    rollout_mode: Literal["sync", "async"] = "sync"
    max_staleness: int = Field(1, ge=0)
    # single: one process; fsdp2: the actor (and critic) sharded with FSDP2 over the ranks of a
    # torchrun job (gloo on CPU, nccl on GPU), each rank playing its share of the groups.
    strategy: Literal["single", "fsdp2"] = "single"
    #: recompute activations in the backward pass (actor and critic): less memory, ~30% slower
    gradient_checkpointing: bool = False
    seed: int = 0
    out_dir: str = "runs/${env.name}"
    resume: str = "never"
    log_every: int = Field(1, ge=1)
    save_every: int = Field(50, ge=0)
    keep_checkpoints: int = Field(2, ge=1)
    val_every: int = Field(0, ge=0)
    val_episodes: int = Field(64, ge=1)
    val_seed_start: int = Field(1_000_000, ge=0)
    tensorboard: bool = True


class SandboxConfig(Section):
    """Where GUI envs get their desktops/browsers."""

    provider: Literal["local", "docker", "remote"] = "local"
    # desktop: Xvfb desktops with the control server (osworld); browser: headless Chromium over
    # CDP for the web envs (miniwob, web), which otherwise launch their own Chromium.
    kind: Literal["desktop", "browser"] = "desktop"
    num: int = Field(1, ge=1)
    urls: list[str] = Field(default_factory=list)
    # The remote sandboxes' token is read from this environment variable (never from a file
    # that may be committed).
    token_env: str = "VAGEN_SANDBOX_TOKEN"
    screen_width: int = Field(1280, ge=64)
    screen_height: int = Field(800, ge=64)
    image: str = "vagen/desktop:latest"
    network: Literal["host", "bridge"] = "host"
    reset_mode: Literal["inplace", "restart", "recreate"] = "inplace"
    mem_limit: str = "2g"
    cpus: float = Field(1.0, gt=0)

    @model_validator(mode="after")
    def _remote_needs_urls(self):
        if self.provider == "remote" and not self.urls:
            raise ValueError("sandbox.provider=remote needs sandbox.urls")
        return self


class ClusterConfig(Section):
    """Where rollouts run: in the trainer's process (``local``) or on Ray actors (``ray``), each
    holding a rollout policy replica and its own envs (and sandbox pool), placed by a Ray
    placement group; the trainer pushes weights to them through Ray's object store."""

    backend: Literal["local", "ray"] = "local"
    rollout_workers: int = Field(2, ge=1)
    # None: start a Ray on this machine (loopback only); "auto": join the cluster of `ray start
    # --head` (multi-node); or an address such as ray://host:10001.
    address: str | None = None
    worker_cpus: float = Field(1.0, gt=0)
    worker_gpus: float = Field(0.0, ge=0)
    placement: Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"] = "PACK"
    # A worker that dies is replaced (its in-flight trajectories dropped and counted) at most
    # this many times in a run; one more death fails the run.
    max_worker_restarts: int = Field(3, ge=0)
    # CPUs a Ray started here may schedule (default: what the workers ask for, at least 1).
    local_num_cpus: int | None = Field(None, ge=1)
    placement_timeout_s: float = Field(120.0, gt=0)


class SFTConfig(Section):
    """`vagen sft`: supervised fine-tuning on chat-format demonstrations."""

    data: str
    model: ModelConfig = Field(default_factory=ModelConfig)
    prompt: PromptConfig = Field(default_factory=PromptConfig)
    out_dir: str = "runs/sft"
    steps: int = Field(300, ge=1)
    batch_size: int = Field(16, ge=1)
    lr: float = Field(1e-3, gt=0.0)
    lr_schedule: Literal["constant", "cosine", "linear"] = "cosine"
    warmup_steps: int = Field(10, ge=0)
    weight_decay: float = Field(0.0, ge=0.0)
    grad_clip: float = Field(1.0, gt=0.0)
    max_length: int = Field(4096, ge=16)
    seed: int = 0
    log_every: int = Field(10, ge=1)


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
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)

    @model_validator(mode="after")
    def _trainable_rollout_backends(self):
        if self.policy.backend == "openai":
            raise ValueError("policy.backend=openai cannot be trained (its weights are elsewhere); use hf or vllm")
        if self.policy.backend == "vllm" and self.model.lora_rank:
            raise ValueError("policy.backend=vllm with model.lora_rank > 0 is not supported yet (the engine "
                             "would need merged or adapter weights); use full fine-tuning or policy.backend=hf")
        if self.policy.backend == "vllm" and (self.cluster.backend == "ray" or self.trainer.strategy == "fsdp2"):
            raise ValueError("policy.backend=vllm runs one engine beside a single trainer process for now "
                             "(cluster.backend=local, trainer.strategy=single)")
        return self

    @model_validator(mode="after")
    def _trajectory_samples_need_the_whole_history(self):
        # one concatenated sequence per trajectory is what the policy saw only when every turn
        # saw all earlier turns, images included (rollout/context.py: trajectory_sample)
        if self.trainer.sample_mode == "trajectory" and (self.prompt.history != "full" or self.prompt.max_images):
            raise ValueError("trainer.sample_mode=trajectory needs prompt.history=full and prompt.max_images=0 "
                             "(no image cap); otherwise use trainer.sample_mode=turn")
        return self

    @model_validator(mode="after")
    def _ray_needs_one_trainer_process(self):
        if self.cluster.backend == "ray" and self.trainer.strategy == "fsdp2":
            raise ValueError("cluster.backend=ray with trainer.strategy=fsdp2 is not supported yet: Ray rollout "
                             "workers are fed by one trainer process (strategy=single)")
        return self

    @model_validator(mode="after")
    def _fsdp2_is_synchronous(self):
        if self.trainer.strategy == "fsdp2" and self.trainer.rollout_mode == "async":
            raise ValueError("trainer.strategy=fsdp2 runs with trainer.rollout_mode=sync (the weight gather is a "
                             "collective of the training ranks); for asynchronous rollouts use cluster.backend=ray "
                             "or strategy=single")
        return self

    @model_validator(mode="after")
    def _off_policy_needs_proximal(self):
        if self.algo.off_policy != "none" and self.trainer.old_logprobs != "recompute":
            raise ValueError(f"algo.off_policy={self.algo.off_policy} weights tokens by pi_prox / pi_behaviour: "
                             "it needs trainer.old_logprobs=recompute (the proximal log-probs)")
        if self.algo.off_policy == "tis" and self.algo.is_cap is None:
            raise ValueError("algo.off_policy=tis needs algo.is_cap (the truncation, e.g. 2.0)")
        return self


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
KINDS: dict[str, type[Section]] = {"train": TrainConfig, "serve": ServeConfig, "sft": SFTConfig}
