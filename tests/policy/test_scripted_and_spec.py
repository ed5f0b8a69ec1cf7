import pytest

from vagen.policy import PolicyRequestError, SamplingParams, make_policy, parse_policy_spec
from vagen.policy.scripted import scripted_names


def echo_last(chat):
    """Used by the import-path test below."""
    return "echo: " + chat[-1]["content"]


@pytest.mark.parametrize("spec, expected", [
    ("tiny", ("hf", "tiny")),
    ("tiny:qwen3_vl", ("hf", "tiny:qwen3_vl")),
    ("hf:/models/qwen", ("hf", "/models/qwen")),
    ("openai:gpt-4o", ("openai", "gpt-4o")),
    ("vllm:Qwen/Qwen2.5-VL-3B-Instruct", ("vllm", "Qwen/Qwen2.5-VL-3B-Instruct")),
    ("scripted:noop", ("scripted", "noop")),
    ("scripted:pkg.mod:fn", ("scripted", "pkg.mod:fn")),
])
def test_parse_policy_spec(spec, expected):
    assert parse_policy_spec(spec) == expected


@pytest.mark.parametrize("bad", ["", "gpt", "hf:", "torch:x", ":x"])
def test_bad_specs_are_rejected(bad):
    with pytest.raises(ValueError, match="spec"):
        parse_policy_spec(bad)


def test_unknown_backend_option_is_rejected():
    with pytest.raises(ValueError, match="does not take"):
        make_policy("openai:m", temperature=1.0)


def test_scripted_noop_random_and_import_path():
    chats = [[{"role": "user", "content": "x"}]] * 20
    assert {g.text for g in make_policy("scripted:noop", text="<answer>Up</answer>").generate(chats)} == {"<answer>Up</answer>"}
    a = [g.text for g in make_policy("scripted:random", answers=["Up", "Down", "Left"], seed=1).generate(chats)]
    b = [g.text for g in make_policy("scripted:random", answers=["Up", "Down", "Left"], seed=1).generate(chats)]
    assert a == b and set(a) == {"Up", "Down", "Left"}
    gen = make_policy("scripted:tests.policy.test_scripted_and_spec:echo_last").generate(chats[:1], SamplingParams())[0]
    assert gen.text == "echo: x" and gen.token_ids == [] and gen.logprobs is None
    assert {"noop", "random", "oracle"} <= set(scripted_names())


def test_scripted_errors():
    with pytest.raises(ValueError, match="registered"):
        make_policy("scripted:nonexistent")
    with pytest.raises(PolicyRequestError, match="oracle_context"):
        make_policy("scripted:random").generate([[{"role": "user", "content": "x"}]])
    with pytest.raises(ValueError, match="cannot import"):
        make_policy("scripted:no.such.module:fn")


def test_sampling_params_validate():
    for kwargs in ({"temperature": -1}, {"top_p": 0}, {"top_p": 1.5}, {"max_tokens": 0}, {"stop": ("",)}):
        with pytest.raises(ValueError):
            SamplingParams(**kwargs)
    assert SamplingParams(stop="x").stop == ("x",)
