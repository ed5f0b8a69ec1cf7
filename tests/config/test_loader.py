import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import run_cli
from vagen.config import ConfigError, TrainConfig, list_presets, load_config, to_yaml, validate
from vagen.config.loader import parse_override


@pytest.mark.parametrize("name", sorted(list_presets()))
def test_every_preset_loads_and_round_trips(name):
    cfg = load_config(name)
    again = validate(name.split("/")[0], yaml.safe_load(to_yaml(cfg)))
    assert again == cfg


def test_expected_presets_exist():
    assert {"train/sokoban", "train/frozenlake", "train/osworld"} <= set(list_presets())


def test_overrides_are_typed_and_applied():
    cfg = load_config("train/sokoban", ["algo.advantage=grpo", "trainer.lr=1e-6", "rollout.groups=3",
                                        "sampling.stop=['</answer>']", "env.params.num_boxes=2"])
    assert isinstance(cfg, TrainConfig)
    assert cfg.algo.advantage == "grpo"
    assert cfg.trainer.lr == pytest.approx(1e-6) and isinstance(cfg.trainer.lr, float)
    assert cfg.rollout.groups == 3
    assert cfg.sampling.stop == ["</answer>"]
    assert cfg.env.params["num_boxes"] == 2


def test_interpolation_resolves():
    cfg = load_config("train/frozenlake")
    assert cfg.trainer.out_dir == "runs/frozenlake"


@pytest.mark.parametrize(
    "override, needle",
    [
        ("trainer.lrr=1", "'trainer.lrr'"),
        ("trainr.lr=1", "'trainr'"),
        ("algo.advantage=ppo_magic", "'algo.advantage'"),
        ("trainer.steps=0", "'trainer.steps'"),
        ("sampling.top_p=abc", "'sampling.top_p'"),
        ("model.dtype=int3", "'model.dtype'"),
        ("sandbox.provider=remote", "sandbox.urls"),
    ],
)
def test_bad_keys_and_values_name_the_key(override, needle):
    with pytest.raises(ConfigError) as e:
        load_config("train/sokoban", [override])
    assert needle in str(e.value)


def test_unknown_key_suggests_and_lists_allowed():
    with pytest.raises(ConfigError) as e:
        load_config("train/sokoban", ["trainer.lrr=1"])
    msg = str(e.value)
    assert "did you mean 'lr'" in msg and "allowed:" in msg and "steps" in msg


def test_enum_error_lists_allowed_values():
    with pytest.raises(ConfigError) as e:
        load_config("train/sokoban", ["algo.advantage=foo"])
    assert "grpo" in str(e.value) and "bilevel_gae" in str(e.value)


def test_unknown_key_inside_yaml_file(tmp_path):
    d = tmp_path / "train"
    d.mkdir()
    (d / "x.yaml").write_text("env: {name: sokoban}\nalgo: {advantge: grpo}\n")
    with pytest.raises(ConfigError, match="'algo.advantge'.*did you mean 'advantage'"):
        load_config(str(d / "x.yaml"))


def test_missing_required_and_bad_yaml(tmp_path):
    d = tmp_path / "train"
    d.mkdir()
    (d / "a.yaml").write_text("model: {path: tiny}\n")
    with pytest.raises(ConfigError, match="missing required config key 'env'"):
        load_config(str(d / "a.yaml"))
    (d / "b.yaml").write_text("env: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(str(d / "b.yaml"))
    (d / "c.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(str(d / "c.yaml"))


def test_unknown_preset_suggests():
    with pytest.raises(ConfigError, match="did you mean 'train/sokoban'"):
        load_config("train/sokobn")


@pytest.mark.parametrize("bad", ["noequals", "=1", "a..b=1", "1a=2"])
def test_malformed_override(bad):
    with pytest.raises(ConfigError, match="bad override"):
        parse_override(bad)


@given(st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_override_floats_round_trip(x):
    _, value = parse_override(f"trainer.lr={x!r}")
    assert value == x


def test_cli_show_prints_resolved_yaml():
    r = run_cli("config", "show", "train/sokoban", "algo.advantage=grpo", "trainer.lr=1e-6")
    assert r.returncode == 0, r.stderr
    data = yaml.safe_load(r.stdout)
    assert data["algo"]["advantage"] == "grpo" and data["trainer"]["lr"] == 1e-6
    assert data["model"]["path"] == "tiny"


def test_cli_show_misspelled_key_fails_naming_it():
    r = run_cli("config", "show", "train/sokoban", "trainer.lrr=1e-6")
    assert r.returncode != 0
    assert "trainer.lrr" in r.stderr and r.stdout == ""


@pytest.mark.parametrize("name", sorted(n for n in list_presets() if n.startswith("train/")))
def test_train_presets_build_their_env_when_registered(name, tmp_path):
    import envs

    cfg = load_config(name)
    if cfg.env.name not in envs.list_envs():
        pytest.skip(f"env {cfg.env.name!r} is not registered yet")
    params = dict(cfg.env.params)
    if getattr(envs.env_class(cfg.env.name), "needs_data", False):  # the user's data folder: make a small one
        from tests.conftest import synth_gui

        params.update(data=str(synth_gui(tmp_path / "data", 4)), split="all")
    env = envs.make(cfg.env.name, **params)  # validates the preset's env options
    if getattr(env, "needs_sandbox", False) or getattr(env, "needs_browser", False):  # desktop/docker tiers
        env.close()
        return
    env.reset(seed=0)
