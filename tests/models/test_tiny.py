import hashlib
import json

import pytest

from tests.conftest import run_cli
from vagen.models import ARCHES, build_tiny_model, resolve_model_path, tiny_model_path
from vagen.models.tiny import QWEN_SPECIAL_TOKENS


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("arch", ARCHES)
def test_cli_writes_checkpoint_loadable_offline(tmp_path, arch, rgb_image):
    import torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    out = tmp_path / "tiny"
    r = run_cli("models", "tiny", str(out), "--arch", arch)
    assert r.returncode == 0, r.stderr
    assert "parameters" in r.stdout
    processor = AutoProcessor.from_pretrained(out)
    model = AutoModelForImageTextToText.from_pretrained(out)
    assert model.config.model_type == arch
    assert sum(p.numel() for p in model.parameters()) < 1_000_000
    tok = processor.tokenizer
    for t in QWEN_SPECIAL_TOKENS:
        ids = tok.encode(t, add_special_tokens=False)
        assert len(ids) == 1, t
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "where is the box?"}]}]
    text = processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    assert text.endswith("<|im_start|>assistant\n") and "<|vision_start|><|image_pad|><|vision_end|>" in text
    inputs = processor(text=[text], images=[Image.fromarray(rgb_image)], return_tensors="pt")
    n_pad = int((inputs["input_ids"] == model.config.image_token_id).sum())
    assert n_pad > 1  # the placeholder expanded to one token per merged patch
    with torch.no_grad():
        logits = model(**inputs).logits
    assert logits.shape[-1] == len(tok) and torch.isfinite(logits).all()


def test_refuses_nonempty_dir(tmp_path):
    (tmp_path / "x").write_text("keep me")
    r = run_cli("models", "tiny", str(tmp_path))
    assert r.returncode != 0 and "not empty" in r.stderr
    assert (tmp_path / "x").read_text() == "keep me"


def test_unknown_arch_is_rejected(tmp_path):
    r = run_cli("models", "tiny", str(tmp_path / "o"), "--arch", "llama")
    assert r.returncode != 0 and "qwen2_5_vl" in r.stderr


def test_deterministic_for_a_seed(tmp_path):
    a = build_tiny_model(tmp_path / "a", seed=3)
    b = build_tiny_model(tmp_path / "b", seed=3)
    c = build_tiny_model(tmp_path / "c", seed=4)
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert _digest(a / name) == _digest(b / name), name
    assert _digest(a / "model.safetensors") != _digest(c / "model.safetensors")


def test_cached_copy_is_built_once():
    p1 = tiny_model_path()
    stamp = (p1 / "model.safetensors").stat().st_mtime_ns
    p2 = tiny_model_path()
    assert p1 == p2 and (p2 / "model.safetensors").stat().st_mtime_ns == stamp
    assert json.loads((p1 / "vagen_tiny.json").read_text())["arch"] == "qwen2_5_vl"


def test_an_incomplete_cached_copy_is_rebuilt_and_other_ranks_wait_for_rank_0(tmp_path, monkeypatch):
    import vagen.models.tiny as tiny

    monkeypatch.setenv("VAGEN_CACHE_DIR", str(tmp_path))
    # Ranks > 0 never build (transformers saves weights on rank 0 only): they wait, with a limit.
    monkeypatch.setattr(tiny, "_nonzero_rank", lambda: True)
    with pytest.raises(TimeoutError, match="rank 0 did not build"):
        tiny_model_path(wait_s=0.3)
    monkeypatch.setattr(tiny, "_nonzero_rank", lambda: False)
    good = tiny_model_path()
    # what an older version's rank-1 build left: tokenizer files and our marker, no config/weights
    (good / "config.json").unlink()
    (good / "model.safetensors").unlink()
    again = tiny_model_path()
    assert again == good and (again / "config.json").is_file() and (again / "model.safetensors").is_file()
    monkeypatch.setattr(tiny, "_nonzero_rank", lambda: True)
    assert tiny_model_path(wait_s=0.3) == good  # built: a waiting rank returns at once


def test_resolve_model_path():
    assert resolve_model_path("tiny") == str(tiny_model_path())
    assert resolve_model_path("tiny:qwen3_vl") == str(tiny_model_path("qwen3_vl"))
    assert resolve_model_path("/some/dir") == "/some/dir"
    with pytest.raises(ValueError, match="allowed"):
        resolve_model_path("tiny:gpt")


@pytest.mark.parametrize("arch", ARCHES)
def test_wider_deeper_variant_builds_and_generates(tmp_path, arch, rgb_image):
    """``hidden`` / ``layers`` give a bigger model of the same family (same tokenizer), e.g. for
    the learning demo's capacity experiments; bad sizes are refused."""
    from vagen.policy import SamplingParams
    from vagen.policy.hf import HFPolicy

    path = build_tiny_model(tmp_path / "w", arch=arch, hidden=128, layers=3)
    info = json.loads((path / "vagen_tiny.json").read_text())
    assert (info["hidden"], info["layers"]) == (128, 3)
    policy = HFPolicy(path, device="cpu")
    text = policy.model.config.text_config
    assert (text.hidden_size, text.num_hidden_layers) == (128, 3)
    chat = [{"role": "user", "content": [{"type": "image", "image": rgb_image}, {"type": "text", "text": "hi"}]}]
    gen = policy.generate([chat], SamplingParams(max_tokens=5, seed=0))[0]
    assert gen.token_ids and len(gen.logprobs) == len(gen.token_ids)
    with pytest.raises(ValueError, match="multiple of 32"):
        build_tiny_model(tmp_path / "bad", arch=arch, hidden=100)
