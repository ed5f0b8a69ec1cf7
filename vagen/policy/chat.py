"""Chat normalisation shared by every backend: images in any accepted form become PIL
images, content becomes the part list that chat templates and OpenAI servers expect."""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

from vagen.policy.base import Chat, PolicyRequestError

ROLES = ("system", "user", "assistant")
#: Largest decoded image accepted from a data URL (bytes); keeps a hostile request from
#: exhausting memory through a decompression bomb or a huge upload.
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_IMAGE_PIXELS = 64 * 1024 * 1024


class ChatFormatError(PolicyRequestError):
    """A chat that does not follow the message/part format; the message says where."""

    def __init__(self, message: str):
        super().__init__(message, status_code=400)


def image_to_data_url(image: Any, fmt: str = "PNG") -> str:
    """Encode an image (PIL, array or data URL) as a base64 data URL."""
    img = load_image(image)
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    return f"data:image/{fmt.lower()};base64," + base64.b64encode(buf.getvalue()).decode()


def load_image(obj: Any, where: str = "image"):
    """Turn a PIL image, an HxWx3 uint8 array or a base64 data URL into an RGB PIL image.

    Remote URLs and file paths are refused on purpose: a chat must carry its pixels,
    so a server never fetches or reads anything a client names.
    """
    from PIL import Image

    if isinstance(obj, Image.Image):
        return obj.convert("RGB") if obj.mode != "RGB" else obj
    if hasattr(obj, "__array_interface__") or type(obj).__module__ == "numpy":
        import numpy as np

        arr = np.asarray(obj)
        if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] not in (3, 4):
            raise ChatFormatError(f"{where}: arrays must be HxWx3 (or 4) uint8, got {arr.dtype} {arr.shape}")
        return Image.fromarray(arr[..., :3])
    if isinstance(obj, str):
        if not obj.startswith("data:"):
            raise ChatFormatError(f"{where}: only base64 data URLs are accepted (data:image/png;base64,...), "
                                  f"got {obj[:40]!r}")
        header, _, payload = obj.partition(",")
        if ";base64" not in header or not header[5:].startswith("image/"):
            raise ChatFormatError(f"{where}: data URL must be data:image/<fmt>;base64,..., got {header[:40]!r}")
        if len(payload) > MAX_IMAGE_BYTES * 4 // 3 + 4:
            raise ChatFormatError(f"{where}: image larger than {MAX_IMAGE_BYTES} bytes")
        try:
            raw = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError) as e:
            raise ChatFormatError(f"{where}: invalid base64 image data ({e})") from None
        try:
            img = Image.open(io.BytesIO(raw))
            if img.width * img.height > MAX_IMAGE_PIXELS:
                raise ChatFormatError(f"{where}: image of {img.width}x{img.height} pixels is too large")
            img.load()
        except ChatFormatError:
            raise
        except Exception as e:  # PIL raises many types for corrupt data
            raise ChatFormatError(f"{where}: cannot decode image ({type(e).__name__}: {e})") from None
        return img.convert("RGB")
    raise ChatFormatError(f"{where}: unsupported image type {type(obj).__name__}")


def normalize_chat(chat: Chat, index: int = 0) -> tuple[list[dict], list]:
    """Validate a chat and split it into template-ready messages and its images.

    Returns ``(messages, images)``: messages whose content is a string or a list of
    ``{"type": "text", "text"}`` / ``{"type": "image"}`` parts, and the PIL images in
    order of appearance (one per image part).
    """
    if not isinstance(chat, list) or not chat:
        raise ChatFormatError(f"chat {index}: must be a non-empty list of messages")
    messages, images = [], []
    for m_i, msg in enumerate(chat):
        where = f"chat {index} message {m_i}"
        if not isinstance(msg, dict):
            raise ChatFormatError(f"{where}: must be an object with 'role' and 'content'")
        role = msg.get("role")
        if role not in ROLES:
            raise ChatFormatError(f"{where}: role must be one of {', '.join(ROLES)}, got {role!r}")
        content = msg.get("content")
        if isinstance(content, str):
            messages.append({"role": role, "content": content})
            continue
        if not isinstance(content, list):
            raise ChatFormatError(f"{where}: content must be a string or a list of parts")
        parts = []
        for p_i, part in enumerate(content):
            pw = f"{where} part {p_i}"
            if isinstance(part, str):
                parts.append({"type": "text", "text": part})
                continue
            if not isinstance(part, dict):
                raise ChatFormatError(f"{pw}: must be an object with a 'type'")
            kind = part.get("type")
            if kind == "text":
                if not isinstance(part.get("text"), str):
                    raise ChatFormatError(f"{pw}: text part needs a string 'text'")
                parts.append({"type": "text", "text": part["text"]})
            elif kind == "image":
                if "image" not in part:
                    raise ChatFormatError(f"{pw}: image part needs an 'image'")
                images.append(load_image(part["image"], pw))
                parts.append({"type": "image"})
            elif kind == "image_url":
                url = part.get("image_url")
                url = url.get("url") if isinstance(url, dict) else url
                if not isinstance(url, str):
                    raise ChatFormatError(f"{pw}: image_url part needs image_url.url")
                images.append(load_image(url, pw))
                parts.append({"type": "image"})
            else:
                raise ChatFormatError(f"{pw}: unknown part type {kind!r}; allowed: text, image, image_url")
        messages.append({"role": role, "content": parts})
    return messages, images


def to_openai_messages(chat: Chat, index: int = 0) -> list[dict]:
    """The chat in OpenAI wire format: images become ``image_url`` parts with data URLs."""
    messages, images = normalize_chat(chat, index)
    it = iter(images)
    out = []
    for msg in messages:
        if isinstance(msg["content"], str):
            out.append(msg)
            continue
        parts = []
        for part in msg["content"]:
            if part["type"] == "image":
                parts.append({"type": "image_url", "image_url": {"url": image_to_data_url(next(it))}})
            else:
                parts.append(part)
        out.append({"role": msg["role"], "content": parts})
    return out
