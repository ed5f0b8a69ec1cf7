"""Navigation env: contract, oracle per eval split, random baseline, fuzzing, rendering, agent layer."""

import random

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import envs
from envs.base import IMAGE_PLACEHOLDER
from envs.navigation import NavigationEnv, world

SPLITS = NavigationEnv.eval_splits


@pytest.fixture(scope="module")
def text_env():
    env = envs.make("navigation", observation="text")
    yield env
    env.close()


@pytest.fixture(scope="module")
def image_env():
    env = envs.make("navigation", image_size=(96, 128))
    yield env
    env.close()


def run_oracle(env, seed, split):
    _, info = env.reset(seed=seed, options={"split": split})
    k = env.config.max_actions_per_turn
    while True:
        plan = env.solve_state(info["state"])
        assert plan, (split, seed)
        _, reward, term, trunc, info = env.step(", ".join(plan[:k]))
        if term or trunc:
            return info, reward


def test_registered_and_splits():
    assert envs.env_class("navigation") is NavigationEnv
    assert SPLITS == ("base", "common_sense", "complex_instruction", "visual_appearance", "long_horizon")
    assert NavigationEnv.action_names == ("moveahead", "moveback", "moveleft", "moveright", "rotateleft",
                                          "rotateright", "lookup", "lookdown")


@pytest.mark.parametrize("mode", ["image", "text"])
def test_check_env_passes(mode):
    env = envs.make("navigation", observation=mode, image_size=(64, 64))
    check_env(env, skip_render_check=False)
    env.close()


def test_config_and_split_validation_errors_are_clear():
    with pytest.raises(ValueError, match="'room_size'.*allowed"):
        envs.make("navigation", room_size=5)
    with pytest.raises(ValueError, match="split must be one of"):
        envs.make("navigation", split="hard")
    with pytest.raises(ValueError, match="observation"):
        envs.make("navigation", observation="video")
    with pytest.raises(ValueError, match="image_size"):
        envs.make("navigation", image_size=(8, 8))
    with pytest.raises(ValueError, match="invalid_action_penalty"):
        envs.make("navigation", invalid_action_penalty=0.5)
    with pytest.raises(ValueError, match="min_start_distance"):
        envs.make("navigation", success_distance=2.0, min_start_distance=1.0)
    with pytest.raises(ValueError, match="action_separator"):
        envs.make("navigation", action_separator="moveahead")
    env = envs.make("navigation", observation="text")
    with pytest.raises(ValueError, match="split must be one of"):
        env.reset(seed=0, options={"split": "nope"})
    with pytest.raises(ValueError, match="unknown 'level'"):
        env.reset(seed=0, options={"level": 3})
    _, info = env.reset(seed=0, options={"split": "long_horizon"})
    assert info["state"]["split"] == "long_horizon"
    _, info = env.reset(seed=0)  # the config's split again
    assert info["state"]["split"] == "base"


def test_observation_image_shapes_and_text(image_env):
    obs, info = image_env.reset(seed=0)
    assert obs["text"].count(IMAGE_PLACEHOLDER) == len(obs["images"]) == 1
    img = obs["images"][0]
    assert img.shape == (96, 128, 3) and img.dtype == np.uint8 and img.std() > 5
    assert info["state"]["instruction"] in obs["text"]
    assert np.array_equal(image_env.render(), img)
    st_ = info["state"]
    assert set(st_) >= {"entities", "grid", "occupancy", "agent", "heading", "pitch", "target_name", "instruction",
                        "split", "distance", "direction", "visible", "success", "target_cells", "objects_info"}
    assert set(info) >= {"state", "action_valid", "action_effective", "success", "metrics", "penalty"}
    assert info["metrics"]["episode/score"] == 0.0
    ents = st_["entities"]
    assert st_["grid"][ents["agent"][0]][ents["agent"][1]] in "^>v<"
    assert st_["grid"][ents["target"][0]][ents["target"][1]] == "T"
    assert all(st_["grid"][r][c] == "O" for r, c in ents["objects"])
    both = envs.make("navigation", observation="image+text", image_size=(32, 32))
    obs, _ = both.reset(seed=0)
    assert obs["text"].count(IMAGE_PLACEHOLDER) == 1 and "In view:" in obs["text"]
    obs, _ = envs.make("navigation", observation="text").reset(seed=0)
    assert obs["images"] == () and IMAGE_PLACEHOLDER not in obs["text"] and "In view:" in obs["text"]


@pytest.mark.parametrize("split", SPLITS)
def test_oracle_solves_every_split(text_env, split):
    for seed in range(30):
        info, reward = run_oracle(text_env, seed, split)
        assert info["success"] and info["metrics"]["episode/score"] == 1.0, (split, seed)
        assert reward == pytest.approx(1.0)


@pytest.mark.slow
@pytest.mark.parametrize("split", SPLITS)
def test_oracle_solves_many_seeds(text_env, split):
    for seed in range(30, 1030):
        info, _ = run_oracle(text_env, seed, split)
        assert info["success"], (split, seed)


def test_random_policy_is_low(text_env):
    rng = random.Random(0)
    rates = {}
    for split in SPLITS:
        wins = 0
        for seed in range(30):
            _, info = text_env.reset(seed=500 + seed, options={"split": split})
            while True:
                acts = text_env.random_actions(rng, rng.randint(1, 5), info["state"])
                _, _, term, trunc, info = text_env.step(", ".join(acts))
                if term or trunc:
                    break
            wins += info["success"]
        rates[split] = wins / 30
    assert max(rates.values()) <= 0.3, rates
    assert sum(rates.values()) / len(rates) <= 0.15, rates


def test_instructions_are_unambiguous(text_env):
    for split in SPLITS:
        for seed in range(25):
            _, info = text_env.reset(seed=seed, options={"split": split})
            st_ = info["state"]
            names = [o["name"] for o in st_["objects_info"]]
            assert len(set(names)) == len(names)
            target = next(o for o in st_["objects_info"] if o["is_target"])
            assert st_["target_name"] == target["name"]
            cats = [o["category"] for o in st_["objects_info"]]
            if split in ("base", "common_sense", "long_horizon"):
                assert cats.count(target["category"]) == 1
                if split != "common_sense":
                    assert target["name"] in st_["instruction"]
            if split == "complex_instruction":
                assert cats.count(target["category"]) == 2
                assert any(w in st_["instruction"] for w in ("closest", "next to", "farther"))
            if split == "visual_appearance":
                inst = st_["instruction"]
                if "object" in inst:
                    colors = [o["color"] for o in st_["objects_info"]]
                    assert colors.count(target["color"]) == 1 and target["color"] in inst
                else:
                    assert target["name"] in inst
            assert st_["distance"] >= 2.5 and not st_["success"]


def test_long_horizon_target_is_in_the_other_room(text_env):
    for seed in range(10):
        _, info = text_env.reset(seed=seed, options={"split": "long_horizon"})
        sc = text_env.scene
        tgt = sc.objects[sc.target]
        ar, ac = sc.agent
        assert [world.room_contains(rm, ar, ac) for rm in sc.rooms] != \
            [world.room_contains(rm, tgt.r0, tgt.c0) for rm in sc.rooms]
        assert text_env._max_turns() == 20


def test_reset_is_deterministic_per_seed():
    a = envs.make("navigation", image_size=(48, 48))
    b = envs.make("navigation", image_size=(48, 48))
    for split in SPLITS:
        oa, ia = a.reset(seed=7, options={"split": split})
        ob, ib = b.reset(seed=7, options={"split": split})
        assert ia["state"] == ib["state"] and np.array_equal(oa["images"][0], ob["images"][0])
        _, ra, *_ = a.step("rotateleft, moveahead")
        _, rb, *_ = b.step("rotateleft, moveahead")
        assert a.render().tobytes() == b.render().tobytes()
    states = {str(a.reset(seed=s)[1]["state"]["occupancy"]) for s in range(5)}
    assert len(states) == 5


def test_rendering_changes_when_rotating_moving_and_looking(image_env):
    _, info = image_env.reset(seed=3)
    frames = [image_env.render().copy()]
    for act in ("rotateleft", "lookdown"):
        image_env.step(act)
        frames.append(image_env.render().copy())
    st_ = info["state"]
    # a free move: try each direction until one moves
    for act in ("moveahead", "moveback", "moveleft", "moveright"):
        _, _, _, _, info = image_env.step(act)
        if info["action_effective"]:
            break
    assert info["action_effective"] and info["state"]["entities"]["agent"] != st_["entities"]["agent"]
    frames.append(image_env.render().copy())
    for x, y in zip(frames, frames[1:], strict=False):
        assert np.abs(x.astype(int) - y.astype(int)).mean() > 1.0


def test_blocked_moves_are_valid_but_ineffective(text_env):
    _, info = text_env.reset(seed=2)
    for _ in range(30):
        before = info["state"]["entities"]["agent"]
        _, reward, term, trunc, info = text_env.step("moveahead")
        if not info["action_effective"]:
            break
        assert not term and not trunc
    assert info["action_valid"] and not info["action_effective"] and info["penalty"] == 0.0
    assert "blocked" in info["feedback"] and info["state"]["entities"]["agent"] == before
    _, _, _, _, info = text_env.step("lookup, lookup")
    assert "cannot look further up" in info["feedback"] and info["state"]["pitch"] == 30


def test_multi_action_turns_stop_at_first_invalid_and_respect_the_limit(text_env):
    _, info = text_env.reset(seed=4)
    obs, reward, _, _, info = text_env.step("RotateLeft, jump, rotateleft")
    assert info["executed_actions"] == ["rotateleft"] and not info["action_valid"]
    assert "Invalid action 'jump'" in obs["text"] and reward == pytest.approx(-0.1)
    _, _, _, _, info = text_env.step(", ".join(["rotateright"] * 7))
    assert len(info["executed_actions"]) == 5 and not info["action_valid"]
    assert "At most 5 actions" in info["feedback"]


def test_episode_limits_and_step_after_end(text_env):
    _, info = text_env.reset(seed=1)
    for _ in range(10):
        _, _, term, trunc, info = text_env.step("rotateleft")
    assert trunc and not term and info["metrics"]["episode/score"] == 0.0
    with pytest.raises(RuntimeError):
        text_env.step("rotateleft")


def test_predict_state_matches_the_env(text_env):
    rng = random.Random(1)
    for seed in range(15):
        split = SPLITS[seed % len(SPLITS)]
        _, info = text_env.reset(seed=seed, options={"split": split})
        for _ in range(6):
            acts = text_env.random_actions(rng, rng.randint(1, 5), info["state"])
            pred = NavigationEnv.predict_state(info["state"], acts)
            _, _, term, trunc, info = text_env.step(", ".join(acts))
            assert pred == info["state"], (seed, acts)
            if term or trunc:
                break


@settings(max_examples=120, deadline=None)
@given(action=st.one_of(
    st.text(max_size=200),
    st.from_regex(r"(moveahead|MoveBack|ROTATELEFT|lookup|jump|,| |\n|;){0,12}", fullmatch=True),
    st.sampled_from(["", ",,,", "\x00", "moveahead" * 1000, "🙂, moveahead", "a" * 100_000, "lookup;" * 50]),
    st.integers(), st.none(), st.lists(st.text(max_size=5), max_size=3)))
def test_any_action_is_handled(action):
    env = _FUZZ_ENV
    env.reset(seed=1)
    obs, reward, term, trunc, info = env.step(action)
    assert isinstance(obs["text"], str) and "Executed actions:" in obs["text"]
    assert obs["text"].isascii()
    assert isinstance(reward, float)
    if not info["action_valid"]:
        assert info["penalty"] == pytest.approx(-0.1)


_FUZZ_ENV = envs.make("navigation", observation="text")


def test_agent_layer_oracle_earns_full_world_model_reward():
    from vagen.prompts.agent_env import AgentConfig, AgentEnv
    from vagen.prompts.oracle import oracle_response

    for split in ("base", "long_horizon"):
        env = AgentEnv(envs.make("navigation", image_size=(64, 64)),
                       AgentConfig(format="grounding_worldmodeling", representation="structured"))
        obs, info = env.reset(seed=0, options={"split": split})
        for _ in range(25):
            msg = env.user_message(obs)
            resp = oracle_response(msg["oracle_context"])
            obs, r, term, trunc, info = env.step(resp)
            assert info["format_ok"]
            assert info["reward_parts"]["world_model"] == pytest.approx(1.0)
            if term or trunc:
                break
        assert info["success"] and term
        env.close()
