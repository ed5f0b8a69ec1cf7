"""AgentEnv + scripted policies on the grid envs: oracle, random and garbage agents."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envs
from vagen.policy import make_policy
from vagen.prompts.agent_env import AgentConfig, AgentEnv
from vagen.prompts.formats import FORMATS


def run_episode(env: AgentEnv, policy, seed: int):
    obs, _ = env.reset(seed=seed)
    chat = [{"role": "system", "content": env.system_prompt}]
    infos = []
    while True:
        chat.append(env.user_message(obs))
        text = policy.generate([chat])[0].text
        chat.append({"role": "assistant", "content": text})
        obs, reward, term, trunc, info = env.step(text)
        infos.append((reward, info))
        if term or trunc:
            return infos


ENV_CFGS = {"sokoban": {"observation": "image"}, "frozenlake": {"observation": "image"}}


@pytest.mark.parametrize("name", sorted(ENV_CFGS))
def test_oracle_reaches_full_success_and_max_world_model_reward(name):
    env = AgentEnv(envs.make(name, **ENV_CFGS[name]), AgentConfig("grounding_worldmodeling", "structured"))
    oracle = make_policy("scripted:oracle")
    for seed in range(100):
        infos = run_episode(env, oracle, seed)
        assert infos[-1][1]["success"], seed
        for _, info in infos:
            assert info["format_ok"]
            assert info["world_model"]["wm/observation"] == pytest.approx(1.0)
            assert info["world_model"]["wm/prediction"] == pytest.approx(1.0)
            assert info["reward_parts"]["world_model"] == pytest.approx(1.0)  # 0.5 + 0.5, the maximum
            assert info["reward_parts"]["format"] == pytest.approx(0.5)
            assert info["reward_parts"]["penalty"] == 0.0


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("rep", ["natural", "symbolic", "structured"])
def test_oracle_is_well_formatted_in_every_format_and_representation(fmt, rep):
    env = AgentEnv(envs.make("sokoban", observation="text"), AgentConfig(fmt, rep))
    infos = run_episode(env, make_policy("scripted:oracle"), seed=11)
    assert infos[-1][1]["success"]
    for _, info in infos:
        assert info["format_ok"], info["parsed"]["errors"]
        if FORMATS[fmt].has_observation:
            assert info["world_model"]["wm/observation"] == pytest.approx(1.0)
        if FORMATS[fmt].has_prediction:
            assert info["world_model"]["wm/prediction"] == pytest.approx(1.0)


@pytest.mark.parametrize("name", sorted(ENV_CFGS))
def test_random_agent_has_low_success(name):
    env = AgentEnv(envs.make(name, observation="text", max_turns=10), AgentConfig("grounding_worldmodeling"))
    policy = make_policy("scripted:random", seed=0)
    results = [run_episode(env, policy, seed)[-1][1]["success"] for seed in range(100)]
    rate = sum(results) / len(results)
    assert 0.0 <= rate < 0.6
    oracle = [run_episode(env, make_policy("scripted:oracle"), seed)[-1][1]["success"] for seed in range(20)]
    assert sum(oracle) == 20


def test_garbage_text_gets_format_penalty_and_never_crashes():
    env = AgentEnv(envs.make("frozenlake", observation="text", max_turns=5),
                   AgentConfig("grounding_worldmodeling", format_penalty=-0.5))
    infos = run_episode(env, make_policy("scripted:noop", text="I refuse to use tags! ;;;"), seed=0)
    assert len(infos) == 5
    for reward, info in infos:
        assert not info["format_ok"]
        assert info["reward_parts"]["format"] == -0.5
        assert info["reward_parts"]["world_model"] == 0.0
        assert info["reward_parts"]["penalty"] == pytest.approx(-0.1)  # no answer -> invalid action
        assert reward == pytest.approx(-0.6)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_any_response_is_handled(text):
    env = AgentEnv(envs.make("sokoban", observation="text"), AgentConfig("grounding_worldmodeling", "natural"))
    env.reset(seed=0)
    obs, reward, term, trunc, info = env.step(text)
    assert isinstance(reward, float) and set(info["reward_parts"]) == {"env", "penalty", "format", "world_model"}
    assert reward == pytest.approx(sum(info["reward_parts"].values()))


def test_user_message_interleaves_images_and_carries_context():
    env = AgentEnv(envs.make("sokoban", observation="image+text"), AgentConfig("free_think"))
    obs, _ = env.reset(seed=3)
    msg = env.user_message(obs)
    kinds = [p["type"] for p in msg["content"]]
    assert kinds.count("image") == 1 and kinds[0] == "text"
    assert msg["oracle_context"]["env"] == "sokoban" and msg["oracle_context"]["state"]["grid"]
    assert "<think>...</think><answer>...</answer>" in env.system_prompt
    assert "Example response:" in env.system_prompt


def test_system_prompt_example_is_not_the_episode_level():
    env = AgentEnv(envs.make("sokoban", observation="text"), AgentConfig("grounding_worldmodeling"))
    _, info = env.reset(seed=0)
    assert "\n".join(info["state"]["grid"]) not in env.system_prompt
