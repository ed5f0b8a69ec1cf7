import pytest
import torch

from vagen.policy import SamplingParams
from vagen.policy.chat import ChatFormatError
from vagen.policy.hf import HFPolicy


def image_chat(img, text="What do you see?"):
    return [{"role": "user", "content": [{"type": "image", "image": img}, {"type": "text", "text": text}]}]


def forward_logprobs(policy, chat, token_ids, temperature=1.0):
    """Teacher-forced log-probs of `token_ids` after the chat prompt, by one full forward."""
    inputs = policy.encode([chat])
    ids = torch.tensor([token_ids])
    full = torch.cat([inputs["input_ids"], ids], dim=1)
    extra = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask", "mm_token_type_ids")}
    if "mm_token_type_ids" in inputs:
        extra["mm_token_type_ids"] = torch.cat([inputs["mm_token_type_ids"], torch.zeros_like(ids)], dim=1)
    with torch.no_grad():
        logits = policy.model(input_ids=full, attention_mask=torch.ones_like(full), **extra).logits
    n = inputs["input_ids"].shape[1]
    lp = torch.log_softmax(logits[0, n - 1:-1].float() / temperature, dim=-1)
    return lp.gather(-1, ids[0].unsqueeze(-1)).squeeze(-1)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_image_chat_logprobs_match_forward_pass(tiny_policy, rgb_image, temperature):
    chat = image_chat(rgb_image)
    gen = tiny_policy.generate([chat], SamplingParams(max_tokens=24, temperature=temperature, seed=0))[0]
    assert gen.token_ids and len(gen.logprobs) == len(gen.token_ids)
    assert gen.policy_version == tiny_policy.policy_version
    ref = forward_logprobs(tiny_policy, chat, gen.token_ids, temperature)
    assert torch.allclose(torch.tensor(gen.logprobs), ref, atol=1e-5), (torch.tensor(gen.logprobs) - ref).abs().max()
    assert gen.prompt_token_ids == tiny_policy.encode([chat])["input_ids"][0].tolist()


def test_qwen3_vl_logprobs_match_forward_pass(rgb_image):
    policy = HFPolicy("tiny:qwen3_vl", device="cpu")
    chat = image_chat(rgb_image)
    gen = policy.generate([chat], SamplingParams(max_tokens=16, seed=1))[0]
    ref = forward_logprobs(policy, chat, gen.token_ids)
    assert torch.allclose(torch.tensor(gen.logprobs), ref, atol=1e-5)


def test_batched_left_padding_matches_single(tiny_policy, rgb_image):
    chats = [image_chat(rgb_image), [{"role": "user", "content": "a much longer text-only prompt " * 3}],
             image_chat(rgb_image[:40, :50], "short")]
    greedy = SamplingParams(max_tokens=12, temperature=0)
    batched = tiny_policy.generate(chats, greedy)
    for chat, b in zip(chats, batched, strict=True):
        single = tiny_policy.generate([chat], greedy)[0]
        assert b.token_ids == single.token_ids
        assert b.text == single.text
        assert torch.allclose(torch.tensor(b.logprobs), torch.tensor(single.logprobs), atol=1e-4)


def test_seed_makes_sampling_reproducible(tiny_policy, rgb_image):
    chats = [image_chat(rgb_image)] * 3
    a = tiny_policy.generate(chats, SamplingParams(max_tokens=16, seed=7))
    b = tiny_policy.generate(chats, SamplingParams(max_tokens=16, seed=7))
    assert [g.token_ids for g in a] == [g.token_ids for g in b]
    assert len({tuple(g.token_ids) for g in a}) > 1  # rows sample independently


def test_length_finish_and_token_budget(tiny_policy):
    gen = tiny_policy.generate([[{"role": "user", "content": "hi"}]], SamplingParams(max_tokens=5, seed=0))[0]
    assert len(gen.token_ids) <= 5
    if gen.finish_reason == "length":
        assert len(gen.token_ids) == 5


def test_stop_string_cuts_text_and_tokens(tiny_policy):
    chat = [{"role": "user", "content": "hi"}]
    free = tiny_policy.generate([chat], SamplingParams(max_tokens=40, temperature=0))[0]
    # Pick a stop string from the middle of what greedy decoding produces anyway.
    assert len(free.text) > 6
    stop = free.text[3:5]
    first = free.text.find(stop)
    cut = tiny_policy.generate([chat], SamplingParams(max_tokens=40, temperature=0, stop=(stop,)))[0]
    assert cut.finish_reason == "stop"
    assert cut.text == free.text[:first]
    assert cut.token_ids == free.token_ids[: len(cut.token_ids)]
    assert stop in tiny_policy.tokenizer.decode(cut.token_ids, skip_special_tokens=True)
    assert stop not in tiny_policy.tokenizer.decode(cut.token_ids[:-1], skip_special_tokens=True)


def test_vision_special_tokens_are_never_sampled(tiny_policy):
    chats = [[{"role": "user", "content": f"prompt {i}"}] for i in range(8)]
    gens = tiny_policy.generate(chats, SamplingParams(max_tokens=48, temperature=1.5, seed=0))
    banned = set(tiny_policy.suppress_ids)
    assert len(banned) == 5
    assert not banned & {t for g in gens for t in g.token_ids}


def test_eos_ends_generation_and_is_kept(tiny_policy):
    import copy

    chat = [{"role": "user", "content": "hi"}]
    greedy = SamplingParams(max_tokens=30, temperature=0)
    free = tiny_policy.generate([chat], greedy)[0]
    # Declare the 4th greedy token an end-of-turn token: generation must stop right there.
    stop_tok = free.token_ids[3]
    first = free.token_ids.index(stop_tok)
    policy = copy.copy(tiny_policy)
    policy.eos_ids = sorted(set(tiny_policy.eos_ids) | {stop_tok})
    gen = policy.generate([chat], greedy)[0]
    assert gen.finish_reason == "stop"
    assert gen.token_ids == free.token_ids[: first + 1]
    assert gen.logprobs == pytest.approx(free.logprobs[: first + 1], abs=1e-6)


def test_bad_chat_raises_format_error(tiny_policy):
    with pytest.raises(ChatFormatError, match="role"):
        tiny_policy.generate([[{"role": "robot", "content": "x"}]])
    with pytest.raises(ChatFormatError, match="data URL"):
        tiny_policy.generate([[{"role": "user", "content": [{"type": "image", "image": "/etc/passwd"}]}]])


def test_include_stop_keeps_the_stop_string(tiny_policy):
    chat = [{"role": "user", "content": "hi"}]
    free = tiny_policy.generate([chat], SamplingParams(max_tokens=40, temperature=0))[0]
    stop = free.text[3:5]
    kept = tiny_policy.generate([chat], SamplingParams(max_tokens=40, temperature=0, stop=(stop,), include_stop=True))[0]
    assert kept.text == free.text[: free.text.find(stop) + len(stop)]
