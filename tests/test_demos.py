import json

import pytest
from PIL import Image

from tests.conftest import run_cli
from vagen.prompts.parser import parse_response


def test_vagen_envs_lists_registered_envs():
    r = run_cli("envs")
    assert r.returncode == 0
    names = {line.split()[0] for line in r.stdout.splitlines()}
    assert {"sokoban", "frozenlake"} <= names


def test_vagen_demos_writes_sft_samples(tmp_path):
    out = tmp_path / "demos"
    r = run_cli("demos", "sokoban", "--n", "5", "--out", str(out), "--format", "grounding_worldmodeling",
                "--representation", "symbolic", "dim_room=[6,6]", "observation=image+text")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["success_rate"] == 1.0 and summary["n"] == 5
    assert json.loads((out / "manifest.json").read_text())["env_config"]["dim_room"] == [6, 6]
    lines = (out / "samples.jsonl").read_text().splitlines()
    assert len(lines) == 5
    for line in lines:
        s = json.loads(line)
        assert s["success"] and s["messages"][0]["role"] == "system"
        roles = [m["role"] for m in s["messages"][1:]]
        assert roles == ["user", "assistant"] * s["num_turns"]
        for m in s["messages"]:
            if m["role"] == "assistant":
                assert parse_response(m["content"], "grounding_worldmodeling").format_ok
            if m["role"] == "user":
                assert "oracle_context" not in m
                images = [p["image"] for p in m["content"] if p["type"] == "image"]
                assert len(images) == 1
                assert Image.open(out / images[0]).size == (96, 96)


def test_vagen_demos_rejects_bad_env_options(tmp_path):
    r = run_cli("demos", "frozenlake", "--n", "1", "--out", str(tmp_path / "o"), "sizee=4")
    assert r.returncode != 0 and "'sizee'" in r.stderr
    r = run_cli("demos", "nope", "--n", "1", "--out", str(tmp_path / "o"))
    assert r.returncode != 0 and "registered" in r.stderr
    r = run_cli("demos", "frozenlake", "--n", "1", "--out", str(tmp_path / "o"), "--format", "deep")
    assert r.returncode != 0 and "allowed" in r.stderr


@pytest.mark.parametrize("env,options", [("navigation", ["split=long_horizon", "image_size=[64,64]"]),
                                         ("primitive_skill", ["task=stack3", "image_size=[60,80]"]),
                                         ("svg", ["image_size=[64,64]"])])
def test_vagen_demos_on_the_mujoco_and_svg_envs(tmp_path, env, options):
    out = tmp_path / env
    r = run_cli("demos", env, "--n", "3", "--out", str(out), *options)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["success_rate"] == 1.0
    for line in (out / "samples.jsonl").read_text().splitlines():
        s = json.loads(line)
        assert s["success"] and all(parse_response(m["content"], "grounding_worldmodeling").format_ok
                                    for m in s["messages"] if m["role"] == "assistant")
        # the oracle's beliefs are right: full world-modeling reward on every turn
        assert all(p["world_model"] == pytest.approx(1.0) for p in s["reward_parts"])
