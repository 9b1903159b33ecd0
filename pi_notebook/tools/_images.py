"""Images for ``read``: Pi's type sniffing (``utils/mime.ts``) and inline-image preparation (``image-process.ts``).

A file is an image when its first bytes say JPEG, PNG (not animated), GIF, WebP or BMP, whatever its name.
It is sent as it is when it fits: at most 2000×2000 pixels (after EXIF orientation) and under 4.5 MB once
base64-encoded. Otherwise it is resized to fit 2000×2000 and encoded as PNG or JPEG (quality 80, 85, 70, 55,
40), the first under the size limit, shrinking by 3/4 until one fits. BMP is converted to PNG first. Pi uses
Photon (Rust/WASM) where we use Pillow, so resized bytes differ from Pi's; sizes, types and notes are Pi's.
"""

from __future__ import annotations

import base64
import io
import math
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._common import js_to_fixed

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = ["ProcessedImage", "detect_image_mime_type", "process_image"]

SNIFF_BYTES = 4100
MAX_WIDTH = MAX_HEIGHT = 2000
MAX_BASE64_BYTES = int(4.5 * 1024 * 1024)
JPEG_QUALITIES = (80, 85, 70, 55, 40)
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NOT_CONVERTED = "[Image omitted: could not be converted to a supported inline image format.]"
NOT_RESIZED = "[Image omitted: could not be resized below the inline image size limit.]"


def _is_png(data: bytes) -> bool:
    return len(data) >= 16 and struct.unpack(">I", data[8:12])[0] == 13 and data[12:16] == b"IHDR"


def _is_animated_png(data: bytes) -> bool:
    offset = len(_PNG_SIGNATURE)
    while offset + 8 <= len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        if kind == b"acTL":
            return True
        if kind == b"IDAT":
            return False
        following = offset + 8 + length + 4
        if following <= offset or following > len(data):
            return False
        offset = following
    return False


def _u16(data: bytes, offset: int) -> int:
    return int.from_bytes(data[offset : offset + 2].ljust(2, b"\0"), "little")


def _u32(data: bytes, offset: int) -> int:
    return int.from_bytes(data[offset : offset + 4].ljust(4, b"\0"), "little")


def _is_bmp(data: bytes) -> bool:
    if len(data) < 26:
        return False
    declared, pixels, header = _u32(data, 2), _u32(data, 10), _u32(data, 14)
    if (declared != 0 and declared < 26) or pixels < 14 + header or (declared != 0 and pixels >= declared):
        return False
    if header == 12:
        planes, bits = _u16(data, 22), _u16(data, 24)
    elif 40 <= header <= 124:
        if len(data) < 30:
            return False
        planes, bits = _u16(data, 26), _u16(data, 28)
    else:
        return False
    return planes == 1 and bits in (1, 4, 8, 16, 24, 32)


def detect_image_mime_type(head: bytes) -> str | None:
    """The image type the first bytes of a file announce (Pi's rules), or ``None``."""
    if head.startswith(b"\xff\xd8\xff"):
        return None if len(head) > 3 and head[3] == 0xF7 else "image/jpeg"
    if head.startswith(_PNG_SIGNATURE):
        return "image/png" if _is_png(head) and not _is_animated_png(head) else None
    if head.startswith(b"GIF"):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"BM") and _is_bmp(head):
        return "image/bmp"
    return None


@dataclass(frozen=True, slots=True)
class ProcessedImage:
    data: str | None
    """Base64 bytes to send, or ``None`` when the image is omitted (``notes`` then says why)."""
    mime_type: str
    notes: list[str]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _js_round(value: float) -> int:
    return math.floor(value + 0.5)


def _open(data: bytes) -> Image:
    import warnings

    from PIL import Image as PIL  # imported on first use: Pillow is heavy
    from PIL import ImageOps

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DecompressionBombWarning: an oversized image is refused below, not noisy
        image = PIL.open(io.BytesIO(data))
        image.load()
        return ImageOps.exif_transpose(image)


def _encode(image: Image, fmt: str, quality: int | None = None) -> bytes:
    buffer = io.BytesIO()
    if fmt == "JPEG":
        image = image.convert("RGB")
        image.save(buffer, fmt, quality=quality)
    else:
        image.save(buffer, fmt)
    return buffer.getvalue()


def _to_png(data: bytes) -> bytes | None:
    try:
        return _encode(_open(data), "PNG")
    except Exception:
        return None


def _resize(data: bytes, mime_type: str) -> tuple[str, str, str | None] | None:
    """``(base64, mime, dimension note)``, the original when it fits, else a smaller encoding; ``None`` if none fits."""
    from PIL.Image import Resampling

    try:
        image = _open(data)
        width, height = image.size
        if width <= MAX_WIDTH and height <= MAX_HEIGHT and math.ceil(len(data) / 3) * 4 < MAX_BASE64_BYTES:
            return _b64(data), mime_type, None
        target_w, target_h = width, height
        if target_w > MAX_WIDTH:
            target_h, target_w = _js_round(target_h * MAX_WIDTH / target_w), MAX_WIDTH
        if target_h > MAX_HEIGHT:
            target_w, target_h = _js_round(target_w * MAX_HEIGHT / target_h), MAX_HEIGHT
        while True:
            resized = image.resize((target_w, target_h), Resampling.LANCZOS)
            candidates = [("image/png", _encode(resized, "PNG"))]
            candidates += [("image/jpeg", _encode(resized, "JPEG", q)) for q in JPEG_QUALITIES]
            for mime, encoded in candidates:
                text = _b64(encoded)
                if len(text) < MAX_BASE64_BYTES:
                    scale = js_to_fixed(width / target_w, 2)
                    note = (
                        f"[Image: original {width}x{height}, displayed at {target_w}x{target_h}. "
                        f"Multiply coordinates by {scale} to map to original image.]"
                    )
                    return text, mime, note
            if target_w == 1 and target_h == 1:
                return None
            next_w = 1 if target_w == 1 else max(1, math.floor(target_w * 0.75))
            next_h = 1 if target_h == 1 else max(1, math.floor(target_h * 0.75))
            if (next_w, next_h) == (target_w, target_h):
                return None
            target_w, target_h = next_w, next_h
    except Exception:
        return None


def process_image(data: bytes, mime_type: str) -> ProcessedImage:
    """Pi's ``processImage`` with auto-resize on: what ``read`` sends for an image file."""
    converted_from = None
    if mime_type not in ("image/png", "image/jpeg", "image/gif", "image/webp"):
        png = _to_png(data)
        if png is None:
            return ProcessedImage(None, mime_type, [NOT_CONVERTED])
        data, converted_from, mime_type = png, mime_type, "image/png"
    resized = _resize(data, mime_type)
    if resized is None:
        return ProcessedImage(None, mime_type, [NOT_RESIZED])
    text, mime, note = resized
    notes = [f"[Image converted from {converted_from} to {mime}.]"] if converted_from and converted_from != mime else []
    if note:
        notes.append(note)
    return ProcessedImage(text, mime, notes)
