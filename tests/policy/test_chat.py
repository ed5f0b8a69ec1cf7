import base64
import io

import numpy as np
import pytest
from PIL import Image

from vagen.policy.chat import (
    ChatFormatError,
    image_to_data_url,
    load_image,
    normalize_chat,
    to_openai_messages,
)


def test_images_in_every_accepted_form_become_rgb(rgb_image):
    pil = Image.fromarray(rgb_image)
    url = image_to_data_url(pil)
    for form in (pil, rgb_image, url, pil.convert("RGBA"), np.dstack([rgb_image, rgb_image[..., :1]])):
        img = load_image(form)
        assert img.mode == "RGB" and img.size == (96, 72)
    assert np.array_equal(np.asarray(load_image(url)), rgb_image)  # PNG is lossless


@pytest.mark.parametrize("bad, needle", [
    ("/etc/passwd", "data URL"),
    ("http://127.0.0.1/x.png", "data URL"),
    ("data:text/plain;base64,aGk=", "data:image"),
    ("data:image/png;base64,!!!", "base64"),
    ("data:image/png;base64," + base64.b64encode(b"not a png").decode(), "cannot decode"),
    (np.zeros((4, 4), dtype=np.uint8), "HxWx3"),
    (np.zeros((4, 4, 3), dtype=np.float32), "uint8"),
    (42, "unsupported"),
])
def test_bad_images_are_refused(bad, needle):
    with pytest.raises(ChatFormatError, match=needle):
        load_image(bad)


def test_decompression_bomb_is_refused():
    buf = io.BytesIO()
    Image.new("L", (9000, 9000)).save(buf, format="PNG")  # 81 Mpx, tiny file
    url = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
    with pytest.raises(ChatFormatError, match="too large"):
        load_image(url)


def test_normalize_chat_orders_images(rgb_image):
    second = np.zeros_like(rgb_image)
    chat = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "image", "image": rgb_image}, "plain string part",
                                     {"type": "image_url", "image_url": {"url": image_to_data_url(second)}},
                                     {"type": "text", "text": "which is darker?"}]},
    ]
    messages, images = normalize_chat(chat)
    assert [p["type"] for p in messages[1]["content"]] == ["image", "text", "image", "text"]
    assert len(images) == 2 and np.asarray(images[1]).max() == 0


@pytest.mark.parametrize("chat, needle", [
    ([], "non-empty"),
    ("hello", "non-empty"),
    ([{"content": "x"}], "role"),
    ([{"role": "user", "content": 3}], "content"),
    ([{"role": "user", "content": [{"type": "audio"}]}], "unknown part type"),
    ([{"role": "user", "content": [{"type": "text"}]}], "text"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}], "image_url.url"),
])
def test_malformed_chats_name_the_problem(chat, needle):
    with pytest.raises(ChatFormatError, match=needle):
        normalize_chat(chat)


def test_to_openai_messages_uses_data_urls(rgb_image):
    out = to_openai_messages([{"role": "user", "content": [{"type": "image", "image": rgb_image},
                                                           {"type": "text", "text": "hi"}]}])
    part = out[0]["content"][0]
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith("data:image/png;base64,")
    assert np.array_equal(np.asarray(load_image(part["image_url"]["url"])), rgb_image)
