import numpy as np
import pytest
import torch

import envs
from vagen.policy import SamplingParams
from vagen.prompts import AgentConfig, AgentEnv
from vagen.rollout import ContextBuilder, RolloutLimits, RolloutManager
from vagen.train.batch import collate
from vagen.train.model import forward_logprobs


def collect(policy, builder, fmt="free_think", obs="image", seeds=(0, 1), group_size=2, max_turns=3, **limits):
    manager = RolloutManager(lambda: AgentEnv(envs.make("sokoban", observation=obs), AgentConfig(fmt)), policy,
                             builder, RolloutLimits(max_turns=max_turns, **limits))
    return manager.collect(list(seeds), group_size, SamplingParams(max_tokens=16), sample_seed=3)


def test_turn_contexts_are_prefixes_of_the_trajectory(tiny_policy):
    builder = ContextBuilder(tiny_policy.processor, history="full")
    trajs, _ = collect(tiny_policy, builder)
    for tr in trajs:
        whole = builder.trajectory_sample(tr)
        for s in builder.turn_samples(tr):
            assert whole.input_ids[: len(s.input_ids)] == s.input_ids
        assert sum(whole.loss_mask) == tr.response_tokens


def test_training_forward_reproduces_rollout_logprobs(tiny_policy):
    """The same ids + images give the same log-probs in training as during sampling."""
    builder = ContextBuilder(tiny_policy.processor, history="full")
    trajs, _ = collect(tiny_policy, builder, seeds=(4,), group_size=2)
    samples = [s for tr in trajs for s in builder.turn_samples(tr)]
    batch = collate(samples, tiny_policy)
    lp, _ = forward_logprobs(tiny_policy.model, batch, temperature=1.0)
    mask = batch["loss_mask"].bool()
    assert torch.allclose(lp[mask], batch["rollout_logprobs"][mask], atol=1e-4)
    whole = collate([builder.trajectory_sample(tr) for tr in trajs], tiny_policy)
    lp2, _ = forward_logprobs(tiny_policy.model, whole)
    m2 = whole["loss_mask"].bool()
    assert torch.allclose(lp2[m2], whole["rollout_logprobs"][m2], atol=1e-4)


def test_segments_match_the_chat_template(tiny_policy):
    builder = ContextBuilder(tiny_policy.processor)
    img = np.zeros((40, 40, 3), np.uint8)
    parts = [{"type": "text", "text": "look "}, {"type": "image", "image": img}, {"type": "text", "text": " now"}]
    ids, images = builder.user_ids(parts)
    text = tiny_policy.processor.apply_chat_template(
        [{"role": "system", "content": "S"}, {"role": "user", "content": [{"type": "text", "text": "look "},
                                                                          {"type": "image"},
                                                                          {"type": "text", "text": " now"}]}],
        add_generation_prompt=True, tokenize=False)
    ref = tiny_policy.processor(text=[text], images=[img], return_tensors="pt")["input_ids"][0].tolist()
    assert builder.system_ids("S") + ids == ref


@pytest.mark.parametrize("history, k", [("none", 0), ("last_k", 1)])
def test_history_policies(tiny_policy, history, k):
    builder = ContextBuilder(tiny_policy.processor, history=history, history_k=max(k, 1))
    trajs, _ = collect(tiny_policy, builder, obs="text", max_turns=3)
    tr = max(trajs, key=lambda t: len(t.turns))
    assert len(tr.turns) == 3
    last = builder.turn_samples(tr)[-1]
    expected = list(tr.prefix_ids)
    if history == "last_k":
        prev = tr.turns[-2]
        expected += prev.user_ids + prev.response_ids + prev.close_ids
    assert last.input_ids == expected + tr.turns[-1].user_ids + tr.turns[-1].response_ids
    with pytest.raises(ValueError, match="history=full"):
        builder.trajectory_sample(tr)


def test_image_cap_turns_old_images_into_text(tiny_policy):
    builder = ContextBuilder(tiny_policy.processor, history="full", max_images=1)
    trajs, _ = collect(tiny_policy, builder, obs="image", max_turns=3)
    tr = max(trajs, key=lambda t: len(t.turns))
    last = builder.turn_samples(tr)[-1]
    assert len(last.images) == 1
    assert tr.turns[0].text_user_ids is not None
    omitted = tiny_policy.tokenizer.decode(last.input_ids)
    assert omitted.count("[earlier image omitted]") == len(tr.turns) - 1


def test_non_chatml_template_is_refused(tiny_policy):
    import copy

    proc = copy.deepcopy(tiny_policy.processor)
    proc.chat_template = "{% for m in messages %}### {{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    with pytest.raises(ValueError, match="ChatML"):
        ContextBuilder(proc)
