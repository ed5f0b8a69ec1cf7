import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import envs
from envs.base import IMAGE_PLACEHOLDER
from envs.frozenlake import generate_map
from envs.grid import GridEnv
from envs.sokoban import generate_level

#: The grid envs (GUI envs such as osworld have their own tests: they need a sandbox).
GRID = sorted(n for n in envs.list_envs() if issubclass(envs.env_class(n), GridEnv))
MODES = ("image", "text", "image+text")


def test_registry_lists_both_envs():
    assert {"sokoban", "frozenlake"} <= set(envs.list_envs())
    assert all(envs.list_envs().values())


@pytest.mark.parametrize("name", GRID)
@pytest.mark.parametrize("mode", MODES)
def test_check_env_passes(name, mode):
    env = envs.make(name, observation=mode)
    check_env(env, skip_render_check=False)


def test_unknown_env_and_bad_options_name_the_problem():
    with pytest.raises(ValueError, match="registered"):
        envs.make("sokobann")
    with pytest.raises(ValueError, match="'dim_rooms'.*allowed"):
        envs.make("sokoban", dim_rooms=(6, 6))
    with pytest.raises(ValueError, match="observation"):
        envs.make("frozenlake", observation="video")
    with pytest.raises(ValueError, match="reward"):
        envs.make("sokoban", reward="dense")


@pytest.mark.parametrize("name", GRID)
@pytest.mark.parametrize("mode", MODES)
def test_observation_has_one_placeholder_per_image(name, mode):
    env = envs.make(name, observation=mode, image_size=(64, 80))
    obs, info = env.reset(seed=0)
    assert obs["text"].count(IMAGE_PLACEHOLDER) == len(obs["images"]) == (0 if mode == "text" else 1)
    for img in obs["images"]:
        assert img.shape == (64, 80, 3) and img.dtype == np.uint8
    if "text" in mode:
        assert "\n".join(info["state"]["grid"]) in obs["text"]
    assert set(info) >= {"state", "action_valid", "action_effective", "success", "metrics"}


def test_sokoban_solver_solves_1000_generated_levels():
    env = envs.make("sokoban", observation="text", max_turns=1000, max_actions=1000, max_actions_per_turn=1)
    for seed in range(1000):
        level = generate_level(seed, 6, 6, 1)
        _, info = env.reset(seed=seed)
        assert env.solve_state(info["state"]) is not None
        for a in level.solution:
            _, _, term, trunc, info = env.step(a)
        assert info["success"] and term, seed


def test_frozenlake_solver_solves_1000_generated_maps():
    env = envs.make("frozenlake", observation="text", max_turns=1000, max_actions=1000, max_actions_per_turn=1)
    for seed in range(1000):
        _, _, _, solution = generate_map(seed, 4, 0.8, True)
        env.reset(seed=seed)
        for a in solution:
            _, _, term, trunc, info = env.step(a)
        assert info["success"] and term, seed


def test_larger_sokoban_levels_are_solvable_and_filtered():
    for seed in range(50):
        level = generate_level(seed, 8, 8, 2, 5, 30)
        assert 5 <= len(level.solution) <= 30


@pytest.mark.parametrize("name", GRID)
def test_reset_is_deterministic_per_seed(name):
    a, b = envs.make(name), envs.make(name)
    oa, ia = a.reset(seed=42)
    ob, ib = b.reset(seed=42)
    assert ia["state"] == ib["state"] and np.array_equal(oa["images"][0], ob["images"][0])
    assert a.reset(seed=43)[1]["state"] != ia["state"] or a.reset(seed=44)[1]["state"] != ia["state"]


@pytest.mark.parametrize("name", GRID)
@settings(max_examples=150, deadline=None)
@given(action=st.one_of(st.text(max_size=200), st.from_regex(r"(up|Down|LEFT|right|jump|,| |\n|;){0,12}", fullmatch=True)))
def test_any_action_string_is_handled(name, action):
    env = envs.make(name, observation="text")
    env.reset(seed=1)
    obs, reward, term, trunc, info = env.step(action)
    assert isinstance(obs["text"], str) and "Executed actions:" in obs["text"]
    assert isinstance(reward, float)
    if not info["action_valid"]:
        assert info["penalty"] == pytest.approx(-0.1)
        assert "nvalid" in obs["text"] or "No action" in obs["text"] or "At most" in obs["text"]


def test_multi_action_turn_stops_at_first_invalid():
    env = envs.make("sokoban", observation="text", max_actions_per_turn=3, reward="sparse")
    _, info = env.reset(seed=5)
    obs, reward, _, _, info = env.step("Up, Jump, Left")
    assert info["executed_actions"] == ["Up"]
    assert not info["action_valid"] and "Invalid action 'Jump'" in obs["text"]
    assert reward == pytest.approx(-0.1)  # sparse task reward 0 + invalid penalty


def test_too_many_actions_are_cut_and_reported():
    env = envs.make("frozenlake", observation="text", max_actions_per_turn=2, p=1.0, random_start_goal=False, size=6)
    env.reset(seed=0)
    obs, _, _, _, info = env.step("Right, Right, Down")
    assert info["executed_actions"] == ["Right", "Right"] and not info["action_valid"]
    assert "At most 2 actions" in obs["text"]


def test_shaped_and_sparse_sokoban_rewards():
    for reward, expected in (("shaped", None), ("sparse", 1.0)):
        env = envs.make("sokoban", observation="text", reward=reward, max_actions_per_turn=1, max_turns=1000)
        _, info = env.reset(seed=3)
        plan = env.solve_state(info["state"])
        total = 0.0
        for a in plan:
            _, r, term, _, info = env.step(a)
            total += r
        assert info["success"] and term
        if expected is None:
            # -0.1 per action, +1 for the box landing on its target, +10 for solving.
            assert total == pytest.approx(-0.1 * len(plan) + 1 + 10)
        else:
            assert total == pytest.approx(expected)


def test_progress_reward_is_the_solver_distance_difference():
    """reward=progress: +scale per move closer to solved, -scale per move away, 0 for a
    bump, the deadlock penalty once for the move that makes the level unsolvable, +1 on
    solving; along an optimal plan the total is scale * length + 1."""
    env = envs.make("sokoban", observation="text", reward="progress", max_actions_per_turn=1, max_turns=1000)
    _, info = env.reset(seed=3)
    plan = env.solve_state(info["state"])
    rewards = [env.step(a)[1] for a in plan]
    assert rewards[:-1] == pytest.approx([0.1] * (len(plan) - 1)) and rewards[-1] == pytest.approx(1.1)
    # Every move of random play is credited by how the distance-to-go changed.
    rng = np.random.default_rng(0)
    seen = {"away": 0, "bump": 0, "deadlock": 0}
    for seed in range(40):
        _, info = env.reset(seed=seed)
        dist = len(env.solve_state(info["state"]))
        for _ in range(15):
            _, r, term, _, info = env.step(str(rng.choice(["Up", "Down", "Left", "Right"])))
            if dist is None:
                assert r == 0.0  # already dead: nothing more to credit
                continue
            plan = env.solve_state(info["state"])
            new = None if plan is None else len(plan)
            if new is None:
                assert r == pytest.approx(-1.0)
                seen["deadlock"] += 1
            elif not info["action_effective"]:
                assert r == 0.0 and new == dist
                seen["bump"] += 1
            else:
                assert r == pytest.approx(0.1 * (dist - new) + (1.0 if info["success"] else 0.0))
                seen["away"] += new > dist
            dist = new
            if term:
                break
    assert min(seen.values()) > 0, seen
    with pytest.raises(ValueError, match="deadlock_penalty"):
        envs.make("sokoban", reward="progress", deadlock_penalty=0.5)


def test_frozenlake_hole_ends_episode_without_success():
    env = envs.make("frozenlake", observation="text", size=4)
    for seed in range(200):
        _, info = env.reset(seed=seed)
        holes = [tuple(h) for h in info["state"]["entities"]["holes"]]
        pr, pc = info["state"]["entities"]["player"]
        for name, (dr, dc) in {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}.items():
            if (pr + dr, pc + dc) in holes:
                _, r, term, _, info = env.step(name)
                assert term and not info["success"] and r == 0.0 and info["state"]["in_hole"]
                return
    pytest.fail("no start next to a hole in 200 seeds")


def test_slippery_is_seeded_and_slips_at_the_configured_rate():
    env = envs.make("frozenlake", observation="text", is_slippery=True, p=1.0, size=16, random_start_goal=False,
                    max_turns=10_000, max_actions=10_000, max_actions_per_turn=1)
    trace = []
    for _ in range(2):
        env.reset(seed=7)
        moves = []
        for _ in range(300):
            before = tuple(env.unwrapped.player)
            _, _, term, _, info = env.step("Right" if before[1] < 8 else "Left")
            moves.append((before, tuple(env.unwrapped.player)))
            if term:
                break
        trace.append(moves)
    assert trace[0] == trace[1]
    vertical = sum(a[0] != b[0] for a, b in trace[0])
    assert 0.5 < vertical / len(trace[0]) < 0.85  # slip_prob 2/3 sideways moves (some blocked at edges)


def test_truncation_at_max_turns():
    env = envs.make("sokoban", observation="text", max_turns=2)
    env.reset(seed=0)
    assert not env.step("Jump")[3]
    assert env.step("Jump")[3]


@pytest.mark.parametrize("name", GRID)
def test_predict_state_matches_the_real_transition(name):
    rng = np.random.default_rng(0)
    env = envs.make(name, observation="text", max_actions_per_turn=3, max_turns=1000)
    cls = type(env)
    for seed in range(60):
        _, info = env.reset(seed=seed)
        for _ in range(5):
            actions = list(rng.choice(["Up", "Down", "Left", "Right"], size=int(rng.integers(1, 4))))
            predicted = cls.predict_state(info["state"], actions)
            _, _, term, trunc, info = env.step(", ".join(actions))
            assert predicted["entities"] == info["state"]["entities"]
            if term or trunc:
                break


def test_render_matches_observation_image():
    env = envs.make("sokoban", cell_px=8)
    obs, _ = env.reset(seed=2)
    assert np.array_equal(env.render(), obs["images"][0])
    assert obs["images"][0].shape == (48, 48, 3)
