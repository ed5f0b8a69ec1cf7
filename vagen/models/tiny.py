"""A tiny random Qwen-VL checkpoint, built offline.

`build_tiny_model(out_dir)` writes a complete Hugging Face checkpoint directory —
config, safetensors weights, a byte-level BPE tokenizer trained here on a generated
corpus and carrying the Qwen special tokens, a chat template and an image processor —
so that `AutoProcessor.from_pretrained(out_dir)` and
`AutoModelForImageTextToText.from_pretrained(out_dir)` load it through exactly the code
path a real Qwen2.5-VL / Qwen3-VL checkpoint uses. No network is touched.

`tiny_model_path()` returns a cached copy under the user cache dir, built once; this is
what `model.path=tiny` resolves to everywhere.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Literal

logger = logging.getLogger(__name__)

Arch = Literal["qwen2_5_vl", "qwen3_vl"]
ARCHES: tuple[str, ...] = ("qwen2_5_vl", "qwen3_vl")

# Bump when the recipe below changes so stale caches are rebuilt, not reused.
TINY_RECIPE_VERSION = 2

# The Qwen2-VL family's special tokens, in the order Qwen's tokenizer lists them.
QWEN_SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
# Tokens a sampler must never emit: a generated image/video placeholder makes the
# re-forward (training, next turn) fail because no pixels back it.
VISION_SPECIAL_TOKENS: tuple[str, ...] = (
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

# Qwen2-VL style chat template: string or list-of-parts content, images/videos as
# vision placeholders that the processor expands to one <|image_pad|> per merged patch.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}"
    "{{ message['content'] }}"
    "{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or part['type'] == 'image_url' %}"
    "{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{% elif part['type'] == 'video' %}"
    "{{ '<|vision_start|><|video_pad|><|vision_end|>' }}"
    "{% elif part['type'] == 'text' %}"
    "{{ part['text'] }}"
    "{% endif %}"
    "{% endfor %}"
    "{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}"
)

_WORDS = (
    "the a an you are is to of and in on at up down left right forward backward rotate look "
    "click double_click right_click type press hotkey scroll drag move wait done fail "
    "pyautogui keyboard mouse button window screen desktop browser tab page file folder "
    "open close save edit copy paste select all text cell row column sheet chrome terminal "
    "player box target wall floor goal hole ice frozen lake sokoban push step action answer "
    "think observation prediction reasoning state position agent grid map image describe "
    "what next will be after this move I see then should can not yes no ok "
    "red green blue yellow black white gray object table chair door room kitchen "
    "navigation pick place stack cube drawer svg path circle rect line fill stroke"
).split()
# Common English and the words of our prompts, so the tokenizer compresses instructions
# into whole-word tokens the way a real one does (a fixed list: the tokenizer must not
# change when prompt wording does).
_ENGLISH = (
    "system user assistant you are a helpful playing game push every box onto target can but not pull "
    "cannot two boxes at once or into wall map symbols floor player on positions row col column from top "
    "left cell walk your position to goal without stepping hole falling ends episode ice slippery sometimes "
    "move sideways instead of where intended frozen actions may give up per turn separated by executed in "
    "order execution stops first invalid action only inside first think step then describe current state "
    "reason predict after response must look like example answer as most current view executed nothing "
    "changed valid no given ignored describe states plain sentences giving each object position row column "
    "relative symbolic one line per using json object mapping type list following shortest plan here takes "
    "moves take all them see that solves this try is it the of and with for as has have was were will be "
    "there here what which when who how why all any some more most other such only own same so than too very "
    "just now also back down over under again further once about above below between through during before "
    "after out off up near far next last new old good bad big small high low long short first second third "
    "screen window click type press key button open close save file folder browser tab page text field menu "
    "desktop terminal app settings search scroll drag drop select copy paste edit view help done fail wait "
    "task instruction success reward observation prediction reasoning grounding world model agent environment"
).split()
_TAGS = ("<think>", "</think>", "<observation>", "</observation>", "<prediction>", "</prediction>",
         "<answer>", "</answer>", "<|action_start|>", "<|action_end|>")


def _corpus(seed: int, lines: int = 6000) -> list[str]:
    """A generated English-like corpus of the words, tags and actions our envs use.

    Grid symbols appear only one at a time, so every map cell stays a single token
    (a small model reads a map far more easily that way).
    """
    rng = random.Random(seed)
    words = _WORDS + _ENGLISH
    out = []
    for _ in range(lines):
        kind = rng.random()
        if kind < 0.6:
            sentence = [rng.choice(words) for _ in range(rng.randint(3, 14))]
            sentence[0] = sentence[0].capitalize()
            tag = rng.choice(_TAGS[::2])
            out.append(f"{tag}{' '.join(sentence)}.{tag.replace('<', '</', 1)}")
        elif kind < 0.8:
            x, y = rng.randint(0, 1920), rng.randint(0, 1080)
            fn = rng.choice(["click", "moveTo", "doubleClick", "rightClick", "scroll"])
            out.append(f"pyautogui.{fn}({x}, {y})")
        else:
            out.append(f"{rng.choice(['player', 'box', 'target', 'goal', 'hole'])}: [{rng.randint(0, 9)}, "
                       f"{rng.randint(0, 9)}] " + ", ".join(rng.choice(["Up", "Down", "Left", "Right"])
                                                           for _ in range(rng.randint(1, 3))))
    return out


def _build_tokenizer(vocab_size: int, seed: int):
    """Train a byte-level BPE on the generated corpus and wrap it for transformers."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=list(QWEN_SPECIAL_TOKENS),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(seed), trainer=trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in QWEN_SPECIAL_TOKENS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        bos_token=None,
        model_max_length=32768,
        padding_side="left",
        chat_template=CHAT_TEMPLATE,
    )
    # The Qwen processors look these up by attribute name.
    for attr, token in (("image_token", "<|image_pad|>"), ("video_token", "<|video_pad|>"),
                        ("vision_start_token", "<|vision_start|>"), ("vision_end_token", "<|vision_end|>")):
        setattr(fast, attr, token)
    return fast


def _special_ids(tokenizer) -> dict[str, int]:
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in QWEN_SPECIAL_TOKENS}
    return ids


def _model_config(arch: Arch, vocab: int, ids: dict[str, int], hidden: int = 64, layers: int = 2):
    common_ids = dict(
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    text = dict(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=hidden // 32,  # head_dim 32 whatever the width
        num_key_value_heads=max(1, hidden // 64),
        max_position_embeddings=4096,
        rms_norm_eps=1e-6,
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
        # head_dim 32 -> rotary half-dim 16 = t + h + w sections.
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 6, 6]},
    )
    if arch == "qwen2_5_vl":
        from transformers import Qwen2_5_VLConfig

        vision = dict(depth=2, hidden_size=64, intermediate_size=128, num_heads=2, patch_size=14,
                      spatial_merge_size=2, temporal_patch_size=2, window_size=56, out_hidden_size=hidden,
                      fullatt_block_indexes=[1])
        return Qwen2_5_VLConfig(text_config=text, vision_config=vision, **common_ids)
    from transformers import Qwen3VLConfig

    text = dict(text, head_dim=32, rope_parameters=dict(text["rope_parameters"], mrope_interleaved=True))
    vision = dict(depth=2, hidden_size=64, intermediate_size=128, num_heads=2, patch_size=16,
                  spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=hidden,
                  num_position_embeddings=64, deepstack_visual_indexes=[1])
    return Qwen3VLConfig(text_config=text, vision_config=vision, **common_ids)


def _processor(arch: Arch, tokenizer):
    # Small pixel budgets keep images to a few dozen visual tokens on a CPU.
    if arch == "qwen2_5_vl":
        from transformers import Qwen2_5_VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor

        size = {"shortest_edge": 56 * 56, "longest_edge": 224 * 224}
        return Qwen2_5_VLProcessor(
            image_processor=Qwen2VLImageProcessor(size=size, patch_size=14, merge_size=2, temporal_patch_size=2),
            video_processor=Qwen2VLVideoProcessor(size=size, patch_size=14, merge_size=2, temporal_patch_size=2),
            tokenizer=tokenizer,
            chat_template=CHAT_TEMPLATE,
        )
    from transformers import Qwen2VLImageProcessor, Qwen3VLProcessor, Qwen3VLVideoProcessor

    size = {"shortest_edge": 64 * 64, "longest_edge": 256 * 256}
    return Qwen3VLProcessor(
        image_processor=Qwen2VLImageProcessor(size=size, patch_size=16, merge_size=2, temporal_patch_size=2),
        video_processor=Qwen3VLVideoProcessor(size=size, patch_size=16, merge_size=2, temporal_patch_size=2),
        tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE,
    )


def build_tiny_model(out_dir: str | os.PathLike, arch: Arch = "qwen2_5_vl", seed: int = 0,
                     vocab_size: int = 1024, hidden: int = 64, layers: int = 2) -> Path:
    """Write a tiny random Qwen-VL checkpoint to `out_dir` and return its path.

    Deterministic for a given (arch, seed, vocab_size, hidden, layers): the tokenizer is trained
    on a corpus generated from `seed` and the weights are drawn after `torch.manual_seed(seed)`.
    ``hidden`` / ``layers`` widen / deepen the text decoder (head dim stays 32) and the vision
    tower's output for experiments that need more capacity; the defaults are `tiny`.
    """
    if arch not in ARCHES:
        raise ValueError(f"unknown tiny arch {arch!r}; allowed: {', '.join(ARCHES)}")
    if hidden % 32 or hidden < 64 or layers < 1:
        raise ValueError("hidden must be a multiple of 32 (>= 64) and layers >= 1")
    import torch
    from transformers import AutoModelForImageTextToText, GenerationConfig

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _build_tokenizer(vocab_size, seed)
    ids = _special_ids(tokenizer)
    config = _model_config(arch, len(tokenizer), ids, hidden, layers)
    torch.manual_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = AutoModelForImageTextToText.from_config(config, dtype=torch.float32)
    model.generation_config = GenerationConfig(
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
        bos_token_id=ids["<|endoftext|>"],
        do_sample=True,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
    )
    model.save_pretrained(out)
    _processor(arch, tokenizer).save_pretrained(out)
    if not _is_complete(out, marker=False):
        # transformers writes weights on rank 0 only once torch.distributed is initialized
        raise RuntimeError(f"tiny {arch}: save_pretrained wrote no config/weights in {out} "
                           "(a torch.distributed rank other than 0? build on rank 0)")
    (out / "vagen_tiny.json").write_text(json.dumps(
        {"arch": arch, "seed": seed, "vocab_size": vocab_size, "recipe": TINY_RECIPE_VERSION,
         "hidden": hidden, "layers": layers,
         "parameters": sum(p.numel() for p in model.parameters())}, indent=2))
    return out


def default_cache_dir() -> Path:
    """Where cached tiny checkpoints live: $VAGEN_CACHE_DIR or the user cache dir."""
    if os.environ.get("VAGEN_CACHE_DIR"):
        return Path(os.environ["VAGEN_CACHE_DIR"])
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("vagen"))


def _is_complete(path: Path, marker: bool = True) -> bool:
    """A usable checkpoint: config, weights and (once finished) our marker file."""
    return ((path / "config.json").is_file() and any(path.glob("model*.safetensors"))
            and (not marker or (path / "vagen_tiny.json").is_file()))


def _nonzero_rank() -> bool:
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    return dist.is_available() and dist.is_initialized() and dist.get_rank() != 0


def tiny_model_path(arch: Arch = "qwen2_5_vl", seed: int = 0, wait_s: float = 600.0) -> Path:
    """Path of the cached tiny checkpoint for (arch, seed), built on first use.

    Concurrent callers are safe: each builds into its own temp dir and renames it into
    place atomically; the loser of the race discards its copy. Under an initialized
    torch.distributed job only rank 0 builds (transformers saves weights on rank 0 only);
    the other ranks wait for it. An incomplete folder left by an older version is rebuilt.
    """
    key = hashlib.sha1(f"{arch}-{seed}-{TINY_RECIPE_VERSION}".encode()).hexdigest()[:10]
    target = default_cache_dir() / "models" / f"tiny-{arch}-s{seed}-{key}"
    if _is_complete(target):
        return target
    if _nonzero_rank():
        deadline = time.monotonic() + wait_s
        while not _is_complete(target):
            if time.monotonic() > deadline:
                raise TimeoutError(f"tiny {arch}: rank 0 did not build {target} within {wait_s:.0f} s")
            time.sleep(0.2)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and not _is_complete(target):  # an interrupted or rank>0 build of an older version
        logger.warning("tiny %s checkpoint at %s is incomplete: rebuilding it", arch, target)
        shutil.rmtree(target, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        logger.info("building tiny %s checkpoint at %s", arch, target)
        build_tiny_model(tmp, arch=arch, seed=seed)
        try:
            os.rename(tmp, target)
        except OSError:
            if not _is_complete(target):
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
