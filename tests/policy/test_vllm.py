import pytest

from vagen.policy import PolicyError, SamplingParams
from vagen.policy.vllm import VLLMPolicy, vllm_available


@pytest.mark.skipif(vllm_available(), reason="vLLM and a GPU are present")
def test_vllm_backend_says_what_is_missing():
    with pytest.raises(PolicyError, match=r"vagen\[vllm\]"):
        VLLMPolicy("tiny")


@pytest.mark.gpu
def test_vllm_generates_with_image_and_logprobs(rgb_image):
    if not vllm_available():
        pytest.skip("vLLM is not installed (pip install 'vagen[vllm]')")
    policy = VLLMPolicy("tiny", gpu_memory_utilization=0.2, max_model_len=2048, enforce_eager=True)
    chats = [[{"role": "user", "content": [{"type": "image", "image": rgb_image}, {"type": "text", "text": "hi"}]}]] * 2
    gens = policy.generate(chats, SamplingParams(max_tokens=16, seed=0))
    for g in gens:
        assert g.token_ids and len(g.logprobs) == len(g.token_ids)
        assert all(lp <= 0 for lp in g.logprobs)


def _vllm_or_skip():
    if not vllm_available():
        pytest.skip("vLLM is not installed (pip install 'vagen[vllm]')")


@pytest.mark.gpu
def test_vllm_token_contexts_and_weight_loads_follow_the_hf_model(rgb_image):
    """generate_ids takes the rollout's exact contexts (image placeholders expanded); after
    load_weights with changed weights, vLLM's greedy tokens are the HF model's again."""
    import torch

    from vagen.policy.hf import HFPolicy
    from vagen.rollout import ContextBuilder

    _vllm_or_skip()
    hf = HFPolicy("tiny", device="cuda", dtype="float32")
    engine = VLLMPolicy("tiny", dtype="float32", gpu_memory_utilization=0.2, max_model_len=2048, enforce_eager=True)
    builder = ContextBuilder(hf.processor)
    user_ids, images = builder.user_ids([{"type": "image", "image": rgb_image}, {"type": "text", "text": "go"}])
    ctx = builder.context(type("T", (), {"prefix_ids": builder.system_ids("Answer."), "turns": []})(), user_ids, images)
    greedy = SamplingParams(temperature=0.0, max_tokens=12, stop=())
    assert engine.generate_ids([ctx], greedy)[0].token_ids == hf.generate_ids([ctx], greedy)[0].token_ids
    with torch.no_grad():  # a different policy: scale the output head
        hf.model.lm_head.weight.mul_(-1.5)
    seconds = engine.load_weights(hf.model.state_dict().items(), bucket_mb=0.5)  # several buckets
    assert seconds > 0
    assert engine.generate_ids([ctx], greedy)[0].token_ids == hf.generate_ids([ctx], greedy)[0].token_ids


@pytest.mark.gpu
def test_vagen_train_with_the_vllm_rollout_backend(tmp_path):
    from tests.train.test_trainer import FAST
    from vagen.config import load_config
    from vagen.train.rl import RLTrainer

    _vllm_or_skip()
    cfg = load_config("train/frozenlake", [o for o in FAST if not o.startswith("model.device")] + [
        "policy.backend=vllm", "policy.gpu_memory_utilization=0.2", "policy.max_model_len=2048",
        "policy.vllm_sleep=true", "model.device=cuda", f"trainer.out_dir={tmp_path}", "trainer.steps=2"])
    summary = RLTrainer(cfg).run()
    assert summary["steps"] == 2
    rows = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == 2


def test_untrainable_rollout_backends_fail_at_config_load():
    from tests.train.test_trainer import FAST
    from vagen.config import ConfigError, load_config

    for extra, msg in ((["policy.backend=openai"], "cannot be trained"),
                       (["policy.backend=vllm", "model.lora_rank=4"], "lora_rank"),
                       (["policy.backend=vllm", "cluster.backend=ray"], "one engine beside")):
        with pytest.raises((ConfigError, ValueError), match=msg):
            load_config("train/frozenlake", FAST + extra)
