"""`desktop` tier: the OSWorld env on local sandboxes (real Xvfb, openbox, xterm, mousepad, Chromium)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envs
from envs.base import EnvInfraError
from envs.osworld.env import OSWorldEnv
from envs.osworld.tasks import load_suite, parse_task
from sandboxes.pool import SandboxPool
from sandboxes.providers import make_provider
from tests.envs.osworld.suite_runner import check_suite, play

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(1500)]


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    os.environ["VAGEN_SANDBOX_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    p = SandboxPool(make_provider("local"), size=1)  # one sandbox: an env that keeps a lease would hang
    yield p
    p.close()


def test_every_task_oracle_one_noop_zero_fail_inverted(pool):
    # One sandbox plays the whole suite. Two side by side (as the docker test does) failed the Calc
    # oracle in 2 of 4 CI runs before open_file waited for the app to be idle (the likely cause,
    # fixed since; not yet re-verified with two local sandboxes, which share the host's CPU).
    env = envs.make("osworld", pool=pool)
    noop = envs.make("osworld", pool=pool, max_steps=1)
    try:
        scores = check_suite([(env, noop)])
    finally:
        env.close()
        noop.close()
    assert len(scores) >= 40


def test_invalid_and_hostile_actions_execute_nothing(pool, tmp_path):
    env = OSWorldEnv(pool=pool, task_ids=["os-mkdir-projects"], max_steps=10, invalid_action_penalty=-0.1)
    marker = tmp_path / "pwned"
    try:
        obs, info = env.reset(seed=0)
        assert obs["text"].count("<image>") == len(obs["images"]) == 1
        assert obs["images"][0].shape == (800, 1280, 3) and obs["images"][0].dtype == np.uint8
        for bad in (f"import os; os.system('touch {marker}')", f"__import__('os').system('touch {marker}')",
                    "pyautogui.click(x, 10)", "", "click somewhere please", "pyautogui.os.system('id')"):
            obs, reward, term, trunc, info = env.step(bad)
            assert not info["action_valid"] and reward == pytest.approx(-0.1) and info["penalty"] == -0.1
            assert "Invalid action" in obs["text"] and not term
        assert not marker.exists()
        # a click outside the screen is clamped and said so; a valid step is not penalised
        obs, reward, *_ , info = env.step("pyautogui.click(5000, 10)")
        assert info["action_valid"] and reward == 0.0 and "clamped" in obs["text"]
    finally:
        env.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=200),
                 st.sampled_from(["pyautogui.typewrite('x')", "pyautogui.press('esc')", "WAIT", "time.sleep(0.01)",
                                  "exec('1')", "pyautogui.click(*[1, 2])", "pyautogui.hotkey('ctrl', 'alt', 'F1')",
                                  "pyautogui.moveRel(10, 10)", "lambda: 0", "```python\npyautogui.scroll(-3)\n```"])))
def test_fuzzed_actions_never_crash_the_env(fuzz_env, action):
    obs, reward, term, trunc, info = fuzz_env.step(action)
    assert isinstance(obs["text"], str) and len(obs["images"]) == 1
    assert isinstance(info["action_valid"], bool) and np.isfinite(reward)
    if term or trunc:
        fuzz_env.reset(seed=0)


@pytest.fixture
def fuzz_env(pool):  # one episode for all examples (hypothesis reuses function-scoped fixtures)
    env = OSWorldEnv(pool=pool, task_ids=["os-terminal-echo"], max_steps=500, lease_timeout=120)
    env.reset(seed=0)
    yield env
    env.close()


def test_image_size_scaling_and_observation_modes(pool):
    env = OSWorldEnv(pool=pool, task_ids=["ch-click-accept"], image_size=[640, 400], observation="som")
    try:
        ret, info = play(env, "ch-click-accept")  # oracle clicks are rescaled into the 640x400 image
        assert ret == 1.0 and info["success"]
        obs, _ = env.reset(seed=0)
        assert obs["images"][0].shape == (400, 640, 3)
        assert "Marked elements" in obs["text"]
    finally:
        env.close()
    env = OSWorldEnv(pool=pool, task_ids=["ed-append-milk"], observation="screenshot_a11y_tree", a11y_max_tokens=200)
    try:
        obs, _ = env.reset(seed=0)
        text = obs["text"]
        assert "Accessibility tree" in text and len(text.split("Accessibility tree", 1)[1]) < 200 * 4 + 200
    finally:
        env.close()


def test_setup_and_evaluation_failures_are_infra_errors(pool, tmp_path):
    raw = json.loads(json.dumps({
        "id": "needs-net", "instruction": "x",
        "config": [{"type": "download", "parameters": {"files": [{"url": "https://example.invalid/a.txt",
                                                                 "path": "/home/user/a.txt"}]}}],
        "evaluator": {"func": "exact_match", "result": {"type": "vm_command_line", "command": "true"},
                      "expected": {"type": "rule", "rules": {"expected": ""}}}}))
    env = OSWorldEnv(tasks=[parse_task(raw)], pool=pool)
    try:
        with pytest.raises(EnvInfraError, match="not in the file cache"):
            env.reset(seed=0)
    finally:
        env.close()
    raw["config"] = []
    raw["evaluator"]["expected"] = {"type": "cloud_file", "path": "https://example.invalid/gold.txt"}
    env = OSWorldEnv(tasks=[parse_task(raw)], pool=pool)
    try:
        env.reset(seed=0)
        with pytest.raises(EnvInfraError, match="evaluation could not run"):
            env.step("DONE")
    finally:
        env.close()


def test_a_result_file_linked_out_of_the_sandbox_scores_zero_not_infra(pool):
    # The evaluator reads ~/hello.txt; the agent makes it a symlink to a file outside the sandbox's
    # folders. Refused by the server, that read must be the agent's 0, never an unscored infra error.
    env = OSWorldEnv(pool=pool, task_ids=["os-write-hello"], max_steps=5)
    try:
        env.reset(seed=0)
        target = env.vm.vm_path("/home/user/hello.txt")
        env.vm.client.execute(["ln", "-sf", "/etc/hostname", target], timeout=10)
        _, reward, term, _, info = env.step("DONE")
        assert (reward, term, info["success"]) == (0.0, True, False)
        assert "read as missing: /home/user/hello.txt (a symbolic link" in info["feedback"]
    finally:
        env.close()


def test_dead_sandbox_mid_episode_is_an_infra_error(tmp_path):
    own = SandboxPool(make_provider("local"), size=1)
    env = OSWorldEnv(pool=own, task_ids=["os-mkdir-projects"])
    try:
        env.reset(seed=0)
        own.provider.kill(env._lease.handle)
        with pytest.raises(EnvInfraError, match="sandbox"):
            env.step("pyautogui.click(100, 100)")
    finally:
        env.close()
        own.close()


def test_agent_layer_with_scripted_oracle_solves_tasks(pool):
    from vagen.policy import make_policy
    from vagen.prompts.agent_env import AgentConfig, AgentEnv

    policy = make_policy("scripted:oracle")
    for tid in ("os-write-hello", "ed-append-milk", "os-infeasible-bluetooth"):
        agent = AgentEnv(OSWorldEnv(pool=pool, task_ids=[tid]), AgentConfig(format="free_think"))
        try:
            obs, _ = agent.reset(seed=0)
            for _ in range(15):
                reply = policy.generate([[{"role": "system", "content": agent.system_prompt},
                                          agent.user_message(obs)]])[0].text
                obs, reward, term, trunc, info = agent.step(reply)
                assert info["format_ok"], reply
                if term or trunc:
                    break
            assert info["success"] and info["reward_parts"]["env"] == 1.0, (tid, info["feedback"])
        finally:
            agent.close()


def test_suite_check_on_this_machine_is_all_runnable():
    from envs.osworld.check import check_dir

    reports = check_dir("osworld-lite")
    assert len(reports) == len(load_suite("osworld-lite"))
    assert [r.as_dict() for r in reports if r.status != "runnable"] == []


def test_computer_13_action_space_solves_a_task(pool):
    env = OSWorldEnv(pool=pool, task_ids=["os-mkdir-projects"], action_space="computer_13")
    try:
        assert "CLICK" in env.prompt_pieces().action_help
        ret, info = play(env, "os-mkdir-projects", [
            '{"action_type": "CLICK", "parameters": {"x": 490, "y": 330}}',
            '[{"action_type": "TYPING", "parameters": {"text": "mkdir ~/Documents/projects"}},'
            ' {"action_type": "PRESS", "parameters": {"key": "enter"}}]',
            "DONE"])
        assert ret == 1.0 and info["success"]
        _, info = env.reset(seed=0)
        _, reward, *_, info = env.step("pyautogui.click(1, 1)")  # the other grammar is invalid here
        assert not info["action_valid"]
    finally:
        env.close()
