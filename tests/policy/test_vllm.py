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
