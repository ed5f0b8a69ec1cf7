import io
import random
import re

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envs
from envs.base import IMAGE_PLACEHOLDER, EnvInfraError
from envs.svg import KINDS, SVGEnv, edge_similarity, generate_icon, pixel_similarity, similarity, ssim
from envs.svg.render import SVGError, prepare_svg

H = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 128 128">'
BLANK = H + "</svg>"


def make(**kw) -> SVGEnv:
    return envs.make("svg", **kw)


def target_image(seed: int = 0, **kw) -> np.ndarray:
    env = make(**kw)
    obs, _ = env.reset(seed=seed)
    return obs["images"][0]


def run_oracle(env: SVGEnv, seed: int):
    obs, info = env.reset(seed=seed)
    done, steps = False, 0
    while not done:
        plan = env.solve_state(info["state"])  # re-plan from the state each turn
        obs, reward, term, trunc, info = env.step(plan[0])
        done, steps = term or trunc, steps + 1
    return reward, info, steps


# --------------------------------------------------------------------------- contract


def test_check_env_passes():
    check_env(make(), skip_render_check=False)


def test_check_env_passes_folder_mode(tmp_path):
    (tmp_path / "a.svg").write_text(generate_icon(1)["svg"])
    check_env(make(data=str(tmp_path)), skip_render_check=False)


def test_registry_and_class_attributes():
    assert envs.env_class("svg") is SVGEnv
    assert SVGEnv.action_names == ()
    names = [e.name for e in SVGEnv.state_schema.entities]
    assert names == list(KINDS)
    for spec in SVGEnv.state_schema.entities:
        assert spec.kind == "points" and not spec.dynamic and spec.aliases[0] in spec.name
    pieces = make().prompt_pieces()
    assert pieces.max_actions_per_turn == 1 and pieces.action_separator == ""
    assert 'viewBox="0 0 128 128"' in pieces.action_help and "ONE complete SVG document" in pieces.action_help
    assert pieces.example_action.startswith("<svg") and pieces.example_action.endswith("</svg>")


def test_observations_images_and_placeholders():
    env = make(image_size=(96, 112), max_turns=2)
    obs, info = env.reset(seed=3)
    assert obs["text"].count(IMAGE_PLACEHOLDER) == len(obs["images"]) == 1
    assert obs["images"][0].shape == (96, 112, 3) and obs["images"][0].dtype == np.uint8
    assert set(info) >= {"state", "action_valid", "action_effective", "success", "metrics", "executed_actions",
                         "feedback", "penalty"}
    obs, r, term, trunc, info = env.step(BLANK)
    assert obs["text"].count(IMAGE_PLACEHOLDER) == len(obs["images"]) == 2
    assert all(im.shape == (96, 112, 3) for im in obs["images"])
    assert "Similarity" in obs["text"] and not term and not trunc
    obs, r, term, trunc, info = env.step("no svg here")
    assert obs["text"].count(IMAGE_PLACEHOLDER) == len(obs["images"]) == 1
    assert trunc and not term
    assert env.observation_space.contains(obs)
    assert env.render().shape == (96, 224, 3)


def test_state_keys_and_entities_follow_the_shapes():
    env = make(grid_size=8)
    for seed in range(30):
        _, info = env.reset(seed=seed)
        st_ = info["state"]
        assert set(st_) >= {"entities", "target_svg", "shapes", "grid_size", "last_score", "best_score"}
        assert st_["grid_size"] == [8, 8] and 2 <= len(st_["shapes"]) <= 6
        assert set(st_["entities"]) == set(KINDS)
        cells = [tuple(s["cell"]) for s in st_["shapes"]]
        assert len(set(cells)) == len(cells)  # distinct centre cells
        for s in st_["shapes"]:
            x0, y0, x1, y1 = s["bbox"]
            cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
            assert s["cell"] == [min(7, int(cy * 8 / 128)), min(7, int(cx * 8 / 128))]
            assert s["cell"] in st_["entities"][s["kind"]]
            assert re.fullmatch(r"#[0-9a-f]{6}", s["colour"])
        assert sum(len(v) for v in st_["entities"].values()) == len(st_["shapes"])
        assert "\n" not in st_["target_svg"] and "," not in st_["target_svg"]


def test_all_shape_kinds_occur():
    seen = {s["kind"] for seed in range(40) for s in generate_icon(seed)["shapes"]}
    assert seen == set(KINDS)
    assert {s["element"] for seed in range(60) for s in generate_icon(seed)["shapes"]} >= {
        "circle", "ellipse", "rect", "polygon", "line", "polyline", "path"}


def test_determinism():
    a, b = make(), make()
    oa, ia = a.reset(seed=11)
    ob, ib = b.reset(seed=11)
    assert oa["text"] == ob["text"] and np.array_equal(oa["images"][0], ob["images"][0])
    assert ia["state"] == ib["state"]
    ra = a.step(BLANK)
    rb = b.step(BLANK)
    assert ra[1] == rb[1] and np.array_equal(ra[0]["images"][1], rb[0]["images"][1])
    oc, ic = a.reset(seed=12)
    assert ic["state"]["target_svg"] != ia["state"]["target_svg"]


def test_config_validation_errors_are_clear(tmp_path):
    with pytest.raises(ValueError, match="'colour'.*allowed"):
        make(colour="red")
    with pytest.raises(ValueError, match="image_size"):
        make(image_size=(4, 4))
    with pytest.raises(ValueError, match="format_penalty"):
        make(format_penalty=0.5)
    with pytest.raises(ValueError, match="reward must be one of"):
        make(reward="dense")
    with pytest.raises(ValueError, match="min_shapes"):
        make(min_shapes=5, max_shapes=2)
    with pytest.raises(ValueError, match="success_threshold"):
        make(success_threshold=0)
    with pytest.raises(ValueError, match="weight"):
        make(ssim_weight=0, edge_weight=0, pixel_weight=0)
    with pytest.raises(ValueError, match="render_timeout_s"):
        make(render_timeout_s=-1)
    with pytest.raises(ValueError, match="external_refs"):
        make(external_refs="allow")
    with pytest.raises(ValueError, match="background"):
        make(background="red")
    with pytest.raises(ValueError, match="does not exist"):
        make(data=str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="no \\*.svg files"):
        make(data=str(tmp_path))
    with pytest.raises(ValueError, match="learned_metric"):
        make(learned_metric="no_such_module_xyz:f")
    with pytest.raises(ValueError, match="learned_metric"):
        make(learned_metric="not-a-dir-nor-callable")


# --------------------------------------------------------------------------- oracle / random


def test_oracle_solves_every_seed_in_one_attempt():
    env = make()
    for seed in range(60):
        reward, info, steps = run_oracle(env, seed)
        assert info["success"] and steps == 1, seed
        assert reward >= 0.999 and info["metrics"]["episode/score"] >= 0.999
        assert info["state"]["best_score"] >= 0.999


@pytest.mark.slow
def test_oracle_solves_many_seeds_and_sizes():
    for kw in ({}, {"image_size": (64, 64)}, {"canvas": 256, "image_size": (200, 160)}, {"grid_size": 4}):
        env = make(**kw)
        for seed in range(300):
            reward, info, steps = run_oracle(env, seed)
            assert info["success"] and reward >= 0.999, (kw, seed)


def test_random_policy_scores_low():
    env = make()
    rng = random.Random(0)
    scores = []
    for seed in range(40):
        _, info = env.reset(seed=seed)
        action = env.random_actions(rng, 1, info["state"])[0]
        _, reward, term, _, info = env.step(action)
        scores.append(reward)
        assert not info["success"]
    assert np.mean(scores) < 0.4, np.mean(scores)


def test_predict_state_keeps_the_target():
    env = make()
    _, info = env.reset(seed=5)
    st_ = info["state"]
    nxt = env.predict_state(st_, env.solve_state(st_))
    assert nxt["entities"] == st_["entities"] and nxt["best_score"] == 1.0
    assert env.predict_state(st_, [BLANK])["entities"] == st_["entities"]


# --------------------------------------------------------------------------- episode / rewards


def test_multi_turn_rewards_scores_and_end_of_episode():
    env = make(max_turns=3)
    with pytest.raises(RuntimeError):
        env.step(BLANK)
    _, info = env.reset(seed=2)
    target = info["state"]["target_svg"]
    partial = target.replace("</svg>", "")
    partial = partial[: partial.rindex("<")] + "</svg>"  # the target without its last shape
    _, r1, term, trunc, info = env.step(BLANK)
    assert 0 <= r1 < 0.5 and not (term or trunc) and info["action_valid"]
    assert info["metrics"]["episode/score"] == pytest.approx(r1) == info["state"]["last_score"]
    _, r2, term, trunc, info = env.step(partial)
    assert r1 < r2 and info["metrics"]["episode/score"] == pytest.approx(r2)
    _, r3, term, trunc, info = env.step("garbage")
    assert r3 == -0.1 and info["penalty"] == -0.1 and not info["action_valid"]
    assert trunc and not term and info["metrics"]["episode/score"] == pytest.approx(r2)
    assert info["state"]["last_score"] == 0.0 and info["state"]["best_score"] == pytest.approx(r2)
    with pytest.raises(RuntimeError):
        env.step(target)


def test_improvement_reward_sums_to_the_best_score():
    env = make(reward="improvement", max_turns=3, success_threshold=1.0)
    _, info = env.reset(seed=4)
    target = info["state"]["target_svg"]
    partial = target.replace("</svg>", "")
    partial = partial[: partial.rindex("<")] + "</svg>"
    rewards = [env.step(a)[1] for a in (partial, BLANK)]
    _, r, _, _, info = env.step(target)
    rewards.append(r)
    assert rewards[1] == 0.0 and sum(rewards) == pytest.approx(1.0) and info["success"]


def test_success_threshold_is_configurable():
    env = make(success_threshold=0.2)
    env.reset(seed=0)
    _, r, term, _, info = env.step(H + '<rect width="128" height="128" fill="#e6beff"/></svg>')
    assert r >= 0.2 and term and info["success"]


# --------------------------------------------------------------------------- untrusted SVG


NASTY = {
    "unclosed": (H + '<rect width="10" height="10"', "could not be rendered"),
    "image file": (H + '<image href="file:///etc/passwd" width="9" height="9"/></svg>', "external reference"),
    "image xlink": (H + '<image xlink:href="/etc/passwd" width="9" height="9"/></svg>', "external reference"),
    "100k elements": (H + '<circle cx="5" cy="5" r="3"/>' * 100_000 + "</svg>", "too long"),
    "surrogate": (H + "<text>\udcff\udc80</text></svg>", "character XML does not allow"),
    "nul": (H + "\x00</svg>", "character XML does not allow"),
    "empty": ("", "empty answer"),
    "blank": ("   \n ", "empty answer"),
    "json": ('{"svg": [1, 2, {"a": null}], "answer": "circle"}', "no <svg"),
    "doctype": (H + '<!DOCTYPE svg [<!ENTITY x "<image href=\'/etc/passwd\'/>">]>&x;</svg>', "DOCTYPE"),
    "import": (H + '<style>@import url("http://example.com/x.css");</style></svg>', "external reference"),
    "spliced tag": (H + '<im<image/>age xlink:href="/etc/passwd"/></svg>', "external reference"),
    "not a string": (b"<svg></svg>", "must be text"),
    "zero size": ('<svg xmlns="http://www.w3.org/2000/svg" width="0" height="0"></svg>', "could not be rendered"),
}


@pytest.mark.parametrize("name", sorted(NASTY))
def test_nasty_svgs_are_penalised_with_clear_feedback(name):
    answer, expected = NASTY[name]
    env = make(max_turns=2)
    env.reset(seed=0)
    obs, reward, term, trunc, info = env.step(answer)
    assert reward == -0.1 and info["penalty"] == -0.1 and not info["action_valid"] and not info["success"]
    assert expected in info["feedback"] and expected in obs["text"]
    assert env.observation_space.contains(obs)
    assert info["metrics"]["svg/render_ok"] == 0.0


def test_element_cap(tmp_path):
    env = make(max_svg_chars=5_000_000, max_elements=500)
    env.reset(seed=0)
    _, r, *_, info = env.step(H + '<circle cx="5" cy="5" r="3"/>' * 100_000 + "</svg>")
    assert r == -0.1 and "elements > 500" in info["feedback"]


def test_slow_render_times_out_and_the_worker_recovers():
    env = make(render_timeout_s=0.5, max_turns=5)
    _, info = env.reset(seed=0)
    turbulence = (H + '<filter id="f" x="-10" y="-10" width="20" height="20"><feTurbulence baseFrequency="0.9" '
                  'numOctaves="1000000"/></filter>' + '<rect width="128" height="128" filter="url(#f)"/>' * 50
                  + "</svg>")
    _, r, *_, info = env.step(turbulence)
    assert r == -0.1 and "longer than 0.5 s" in info["feedback"]
    _, r, term, *_ = env.step(info["state"]["target_svg"])
    assert r == 1.0 and term


def test_in_process_rendering():
    env = make(render_timeout_s=0)
    for seed in range(10):
        assert run_oracle(env, seed)[0] == 1.0
    env.reset(seed=0)
    _, r, *_, info = env.step(NASTY["unclosed"][0])
    assert r == -0.1 and "could not be rendered" in info["feedback"]


def _red_png(tmp_path):
    from PIL import Image

    path = tmp_path / "red.png"
    Image.new("RGB", (16, 16), (255, 0, 0)).save(path)
    return path


def test_agent_svg_never_reads_files(tmp_path):
    import resvg_py
    from PIL import Image

    path = _red_png(tmp_path)
    answer = H + f'<image xlink:href="{path}" width="128" height="128"/></svg>'
    # Unsanitised, resvg would load the file (so this test means something) ...
    raw = np.asarray(Image.open(io.BytesIO(resvg_py.svg_to_bytes(svg_string=answer, width=64, height=64)))
                     .convert("RGB"))
    assert tuple(raw[32, 32]) == (255, 0, 0)
    # ... the env rejects it by default, and with external_refs="strip" renders it without the image.
    env = make(max_turns=5)
    env.reset(seed=0)
    assert env.step(answer)[1] == -0.1
    env = make(max_turns=5, external_refs="strip")
    env.reset(seed=0)
    for a in (answer, H + f'<filter id="f"><feImage xlink:href="{path}"/></filter>'
              '<rect width="128" height="128" filter="url(#f)"/></svg>',
              H + f'<use xlink:href="{path}#a"/><rect width="128" height="128" fill="url({path})"/></svg>'):
        obs, r, *_, info = env.step(a)
        assert info["action_valid"]
        img = obs["images"][1]
        assert not ((img[..., 0] > 200) & (img[..., 1] < 60) & (img[..., 2] < 60)).any()


def test_prepare_svg_extracts_from_fences_and_prose():
    inner = H + '<rect width="128" height="128" fill="#ff0000"/></svg>'
    for answer in (f"Sure!\n```svg\n{inner}\n```\nHope it helps.", f"```xml\n<?xml version='1.0'?>{inner}```",
                   f"text {inner} more text"):
        assert prepare_svg(answer, 20000, 100) == inner
    assert prepare_svg(H + '<use href="#a"/><rect fill="url(#g)"/></svg>', 20000, 100).count("#") == 2
    with pytest.raises(SVGError, match="no <svg"):
        prepare_svg("<svgfoo></svgfoo>", 20000, 100)
    env = make()
    env.reset(seed=0)
    _, r, *_, info = env.step(f"Here:\n```svg\n{inner}\n```")
    assert info["action_valid"] and r > 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(), st.text(alphabet="<>/=\"' svgrectcil#0123456789"), st.binary(), st.none(),
                 st.integers(), st.builds(lambda s: H + s + "</svg>", st.text())))
def test_fuzzed_actions_never_crash(action):
    env = _FUZZ_ENV
    if env._done or not env._ready:
        env.reset(seed=0)
    obs, reward, term, trunc, info = env.step(action)
    assert isinstance(reward, float) and np.isfinite(reward)
    assert env.observation_space.contains(obs)
    assert obs["text"].count(IMAGE_PLACEHOLDER) == len(obs["images"])


_FUZZ_ENV = make(max_turns=1000)


# --------------------------------------------------------------------------- similarity goldens


def _icon(seed):
    return target_image(seed)


def test_similarity_of_identical_images_is_one():
    for seed in range(5):
        img = _icon(seed)
        assert ssim(img, img) == 1.0 and ssim(img, img, "gray", pooling="mean") == 1.0
        assert edge_similarity(img, img) == 1.0 and pixel_similarity(img, img) == 1.0
        assert similarity(img, img)["score"] == 1.0
    flat = np.full((32, 32, 3), 77, np.uint8)
    assert similarity(flat, flat)["score"] == 1.0


def test_similarity_of_inverted_and_blank_images_is_low():
    for seed in range(5):
        img = _icon(seed)
        inv = 255 - img
        assert ssim(img, inv) < 0.2 and pixel_similarity(img, inv) < 0.5
        assert edge_similarity(img, inv) > 0.9  # edges ignore polarity (documented)
        assert similarity(img, inv)["score"] < 0.5
        blank = np.full_like(img, 255)
        assert edge_similarity(img, blank) == 0.0
        assert similarity(img, blank)["score"] < 0.5
    black, white = np.zeros((32, 32, 3), np.uint8), np.full((32, 32, 3), 255, np.uint8)
    assert pixel_similarity(black, white) == 0.0 and ssim(black, white) < 0.01


def test_similarity_is_symmetric_and_in_range():
    rng = np.random.default_rng(0)
    imgs = [_icon(s) for s in range(4)] + [rng.integers(0, 256, (128, 128, 3), dtype=np.uint8)]
    for a in imgs:
        for b in imgs:
            sa, sb = similarity(a, b, learned=lambda x, y: 0.5, learned_weight=0.1), similarity(b, a)
            for key in ("score", "ssim", "edge", "pixel"):
                assert 0.0 <= sa[key] <= 1.0
            for key in ("ssim", "edge", "pixel"):
                assert sa[key] == pytest.approx(sb[key], abs=1e-12)
    with pytest.raises(ValueError, match="shape"):
        similarity(imgs[0], imgs[0][:64])


def test_similarity_rewards_closer_attempts_more():
    env = make(max_turns=10)
    _, info = env.reset(seed=7)
    target = info["state"]["target_svg"]
    shifted = target.replace("<circle", '<circle transform="translate(2 2)"').replace(
        "<polygon", '<polygon transform="translate(2 2)"').replace("<rect x", '<rect transform="translate(2 2)" x')
    scores = [env.step(a)[1] for a in (BLANK, shifted, target)]
    assert scores[0] < scores[1] <= scores[2] == 1.0


# --------------------------------------------------------------------------- learned metric


def red_metric(a: np.ndarray, b: np.ndarray) -> float:
    """A stand-in learned metric: similarity of the red channels."""
    return 1.0 - float(np.mean(np.abs(a[..., 0].astype(float) - b[..., 0].astype(float)))) / 255.0


def broken_metric(a, b):
    raise RuntimeError("model exploded")


def test_learned_metric_callable_is_used():
    env = make(learned_metric=f"{__name__}:red_metric", learned_weight=1.0, ssim_weight=0, edge_weight=0,
               pixel_weight=0, max_turns=5)
    obs, info = env.reset(seed=1)
    target = obs["images"][0]
    obs, r, *_, info = env.step(BLANK)
    assert r == pytest.approx(red_metric(obs["images"][1], target))
    assert info["metrics"]["svg/learned"] == pytest.approx(r) and "learned" in obs["text"]
    _, r, term, _, info = env.step(info["state"]["target_svg"])
    assert r == 1.0 and term
    env = make(learned_metric=f"{__name__}:broken_metric")
    env.reset(seed=0)
    with pytest.raises(EnvInfraError, match="model exploded"):
        env.step(BLANK)


@pytest.mark.slow
def test_learned_metric_tiny_transformers_model(tmp_path):
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    cfg = ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37, image_size=32,
                    patch_size=8)
    ViTModel(cfg).save_pretrained(tmp_path)
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(tmp_path)
    env = make(learned_metric=str(tmp_path), learned_weight=0.5, max_turns=5)
    _, info = env.reset(seed=0)
    _, r, *_, info = env.step(BLANK)
    assert 0.0 <= info["metrics"]["svg/learned"] <= 1.0
    _, r, term, _, info = env.step(info["state"]["target_svg"])
    assert r == pytest.approx(1.0) and term


# --------------------------------------------------------------------------- folder targets


def test_folder_targets(tmp_path):
    svgs = {
        "b.svg": '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 32">\n'
                 '  <rect x="4" y="4" width="20" height="10" fill="rgb(10, 200, 30)"/>\n</svg>\n',
        "a.svg": generate_icon(3)["svg"],
        "c.svg": '<svg xmlns="http://www.w3.org/2000/svg" width="50" height="50"><circle cx="25" cy="25" r="9"/></svg>',
    }
    for name, text in svgs.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "notes.txt").write_text("not an svg")
    env = make(data=str(tmp_path))
    sources = []
    for seed in range(6):
        reward, info, steps = run_oracle(env, seed)
        assert info["success"] and reward >= 0.999 and steps == 1
        st_ = info["state"]
        assert all(v == [] for v in st_["entities"].values()) and st_["shapes"] == []
        sources.append(st_["source"])
    assert sources == ["a.svg", "b.svg", "c.svg"] * 2
    obs, info = env.reset(seed=1)
    assert info["state"]["viewbox"] == [0, 0, 64, 32] and 'viewBox="0 0 64 32"' in obs["text"]


def test_folder_limits_and_escapes(tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    (good / "big.svg").write_text(H + " " * 30_000 + "</svg>")
    with pytest.raises(ValueError, match="big.svg.*bytes"):
        make(data=str(good))
    (good / "big.svg").unlink()
    outside = tmp_path / "secret.svg"
    outside.write_text(BLANK)
    (good / "link.svg").symlink_to(outside)
    with pytest.raises(ValueError, match="outside"):
        make(data=str(good))
    (good / "link.svg").unlink()
    (good / "img.svg").write_text(H + '<image xlink:href="/etc/passwd"/></svg>')
    env = make(data=str(good))
    with pytest.raises(ValueError, match="img.svg.*external_refs='strip'"):
        env.reset(seed=0)
    env = make(data=str(good), external_refs="strip")
    assert run_oracle(env, 0)[0] == 1.0


# --------------------------------------------------------------------------- agent layer


@pytest.mark.parametrize("representation", ["structured", "natural", "symbolic"])
def test_agent_layer_with_oracle(representation):
    from vagen.prompts.agent_env import AgentConfig, AgentEnv
    from vagen.prompts.oracle import oracle_response

    env = AgentEnv(envs.make("svg"), AgentConfig(format="grounding_worldmodeling", representation=representation))
    assert "<svg" in env.system_prompt
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            msg = env.user_message(obs)
            resp = oracle_response(msg["oracle_context"])
            obs, r, term, trunc, info = env.step(resp)
            done = term or trunc
            assert info["format_ok"], info["parsed"]["errors"]
            assert info["reward_parts"]["world_model"] == pytest.approx(1.0)
        assert info["success"] and info["reward_parts"]["env"] == pytest.approx(1.0)
