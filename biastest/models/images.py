"""Safe image loading and normalisation for the vision-language test.

Every image a model sees goes through :func:`load_image` (or
:func:`normalise_image_bytes` for an upload before it is stored), which:

* refuses what is not an image: a missing or empty file, text or other bytes,
  a truncated or corrupt image (:class:`~biastest.errors.DataError` with one
  of the ``MSG_*`` messages below, never a Pillow traceback);
* guards against decompression bombs: the pixel count is read from the file
  header *before* any pixel is decoded, and more than ``max_pixels`` pixels
  (default 64 megapixels) is refused; files larger than ``max_bytes`` are
  refused unread;
* applies the EXIF orientation (photos from phones are stored sideways);
* converts every mode to 8-bit RGB: grayscale (``L``, ``1``, ``I;16``, ``I``,
  ``F``), palette (``P``), ``CMYK``, ``YCbCr``, ``LAB``, ``HSV``; transparent
  images (``RGBA``, ``LA``, ``PA``, palette with transparency) are composited on
  white, so a transparent background does not turn black;
* takes the first frame of animated images;
* downscales so that the longer side is at most ``max_side`` pixels (default
  1024, aspect ratio kept; JPEG files are decoded at reduced size directly).

Pillow's own global bomb limit (``Image.MAX_IMAGE_PIXELS``) is left untouched.
"""

from __future__ import annotations

import io
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from biastest.errors import DataError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_MAX_SIDE",
    "ImageInfo",
    "load_image",
    "normalise_image_bytes",
    "probe_image",
    "to_rgb",
]

DEFAULT_MAX_PIXELS = 64_000_000
DEFAULT_MAX_SIDE = 1024
DEFAULT_MAX_BYTES = 50 * 1024 * 1024

MSG_IMAGE_NOT_FOUND = "The image file '{name}' does not exist. Check the path, or upload the image again."
MSG_IMAGE_EMPTY = "The file '{name}' is empty (0 bytes), so it holds no image. Upload the image again."
MSG_NOT_AN_IMAGE = (
    "The file '{name}' is not an image that can be read (supported: PNG, JPEG, WebP, GIF, BMP, TIFF). "
    "Upload a picture file instead."
)
MSG_IMAGE_CORRUPT = (
    "The image '{name}' is damaged or incomplete and cannot be decoded ({problem}). "
    "Save or download it again and upload the new file."
)
MSG_IMAGE_TOO_MANY_PIXELS = (
    "The image '{name}' is {width} × {height} pixels ({megapixels:.0f} megapixels); at most {limit:.0f} megapixels "
    "are accepted. Make the picture smaller (for example 1024 pixels wide) and upload it again."
)
MSG_IMAGE_FILE_TOO_LARGE = (
    "The file '{name}' is {size_mb:.1f} MB; images of at most {limit_mb:.0f} MB are accepted. "
    "Save it in a smaller size or as JPEG and upload it again."
)
MSG_IMAGE_ZERO_SIZE = "The image '{name}' has no pixels ({width} × {height}). Upload a real picture."
MSG_IMAGE_BOMB = (
    "The image '{name}' declares so many pixels that opening it could exhaust the memory of this machine "
    "(a 'decompression bomb'). Make the picture smaller and upload it again."
)
MSG_BAD_MAX_SIDE = "The largest image side must be a whole number of at least 16 pixels, got {value!r}."

_OPEN_ERRORS = (OSError, ValueError, SyntaxError, EOFError, IndexError, TypeError, KeyError, ZeroDivisionError)


@dataclass(frozen=True)
class ImageInfo:
    """What the file header says about an image (read without decoding pixels).

    Attributes
    ----------
    width, height : int
        Size as stored (before EXIF rotation).
    format : str
        ``PNG``, ``JPEG`` ...
    mode : str
        Pillow mode as stored (``RGB``, ``L``, ``RGBA``, ``CMYK``, ``P`` ...).
    n_bytes : int
        File size.
    """

    width: int
    height: int
    format: str
    mode: str
    n_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "width": self.width,
            "height": self.height,
            "format": self.format,
            "mode": self.mode,
            "n_bytes": self.n_bytes,
        }


def _read_source(
    source: str | os.PathLike[str] | bytes | BinaryIO, name: str | None, max_bytes: int
) -> tuple[bytes, str]:
    """Return the raw bytes and a display name; refuse missing, empty or oversized files."""
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        label = name or "uploaded image"
    elif isinstance(source, str | os.PathLike):
        path = Path(source)
        label = name or path.name or str(path)
        if not path.is_file():
            raise DataError(MSG_IMAGE_NOT_FOUND.format(name=label), path=str(path))
        size = path.stat().st_size
        if size > max_bytes:
            raise DataError(
                MSG_IMAGE_FILE_TOO_LARGE.format(name=label, size_mb=size / 2**20, limit_mb=max_bytes / 2**20),
                n_bytes=size,
            )
        data = path.read_bytes()
    else:
        label = name or str(getattr(source, "name", "") or "uploaded image")
        data = source.read(max_bytes + 1)
    if len(data) == 0:
        raise DataError(MSG_IMAGE_EMPTY.format(name=label))
    if len(data) > max_bytes:
        raise DataError(
            MSG_IMAGE_FILE_TOO_LARGE.format(name=label, size_mb=len(data) / 2**20, limit_mb=max_bytes / 2**20),
            n_bytes=len(data),
        )
    return data, label


def _open(data: bytes, label: str, max_pixels: int):
    """Open (lazily) and check the header: format, size, pixel count."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
    except UnidentifiedImageError:
        raise DataError(MSG_NOT_AN_IMAGE.format(name=label)) from None
    except Image.DecompressionBombError:
        raise DataError(MSG_IMAGE_BOMB.format(name=label)) from None
    except _OPEN_ERRORS as exc:
        raise DataError(MSG_IMAGE_CORRUPT.format(name=label, problem=_problem(exc))) from None
    width, height = img.size
    if width <= 0 or height <= 0:
        raise DataError(MSG_IMAGE_ZERO_SIZE.format(name=label, width=width, height=height))
    if width * height > max_pixels:
        raise DataError(
            MSG_IMAGE_TOO_MANY_PIXELS.format(
                name=label, width=width, height=height, megapixels=width * height / 1e6, limit=max_pixels / 1e6
            ),
            width=width,
            height=height,
        )
    return img


def _problem(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:120]


def probe_image(
    source: str | os.PathLike[str] | bytes | BinaryIO,
    *,
    name: str | None = None,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ImageInfo:
    """Read an image's header (size, format, mode) without decoding its pixels.

    Raises
    ------
    DataError
        As :func:`load_image`, except for damage that only shows when the pixels
        are decoded.
    """
    data, label = _read_source(source, name, max_bytes)
    img = _open(data, label, max_pixels)
    return ImageInfo(
        width=img.size[0], height=img.size[1], format=str(img.format or ""), mode=img.mode, n_bytes=len(data)
    )


def to_rgb(img):
    """Convert a decoded Pillow image of any mode to 8-bit RGB.

    Transparency is composited on white. 16/32-bit and float grayscale already
    within 0–255 is kept as is; otherwise it is rescaled to 0–255 by its own
    minimum and maximum (a constant image outside 0–255 becomes black).
    """
    mode = img.mode
    if mode == "RGB":
        return img
    if mode == "P" and "transparency" in img.info:
        img = img.convert("RGBA")
        mode = "RGBA"
    if mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    if mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        arr = np.asarray(img, dtype=np.float64)
        lo, hi = float(arr.min()), float(arr.max())
        if lo >= 0.0 and hi <= 255.0:
            scaled = arr
        elif hi > lo:
            scaled = (arr - lo) / (hi - lo) * 255.0
        else:
            scaled = np.zeros_like(arr)
        gray = Image.fromarray(np.clip(np.round(scaled), 0, 255).astype(np.uint8), mode="L")
        return gray.convert("RGB")
    return img.convert("RGB")


def load_image(
    source: str | os.PathLike[str] | bytes | BinaryIO,
    *,
    name: str | None = None,
    max_side: int = DEFAULT_MAX_SIDE,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_bytes: int = DEFAULT_MAX_BYTES,
):
    """Load an image as an 8-bit RGB Pillow image, safely.

    Parameters
    ----------
    source : path, bytes or binary file
        The image.
    name : str, optional
        How to call the image in messages (default: the file name).
    max_side : int
        The longer side is downscaled to at most this many pixels (aspect ratio
        kept; models resize to far less anyway).
    max_pixels : int
        Images with more pixels (by their header) are refused before decoding.
    max_bytes : int
        Files larger than this are refused unread.

    Returns
    -------
    PIL.Image.Image
        Mode ``RGB``, EXIF orientation applied, first frame of an animation.

    Raises
    ------
    DataError
        :data:`MSG_IMAGE_NOT_FOUND`, :data:`MSG_IMAGE_EMPTY`, :data:`MSG_NOT_AN_IMAGE`,
        :data:`MSG_IMAGE_CORRUPT`, :data:`MSG_IMAGE_TOO_MANY_PIXELS`,
        :data:`MSG_IMAGE_FILE_TOO_LARGE`, :data:`MSG_IMAGE_ZERO_SIZE`.
    """
    if isinstance(max_side, bool) or not isinstance(max_side, int) or max_side < 16:
        raise DataError(MSG_BAD_MAX_SIDE.format(value=max_side))
    data, label = _read_source(source, name, max_bytes)
    img = _open(data, label, max_pixels)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            if getattr(img, "is_animated", False):
                img.seek(0)
            if img.format == "JPEG" and max(img.size) > 2 * max_side:
                img.draft("RGB", (max_side, max_side))  # decode at 1/2, 1/4 or 1/8 size directly
            img.load()
            img = ImageOps.exif_transpose(img) or img
            img = to_rgb(img)
            if max(img.size) > max_side:
                img = img.copy()
                img.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
            else:
                img = img.copy()
    except Image.DecompressionBombError:  # a frame or tile larger than the header said
        raise DataError(MSG_IMAGE_BOMB.format(name=label)) from None
    except _OPEN_ERRORS as exc:
        raise DataError(MSG_IMAGE_CORRUPT.format(name=label, problem=_problem(exc))) from None
    return img


def normalise_image_bytes(
    source: str | os.PathLike[str] | bytes | BinaryIO,
    *,
    name: str | None = None,
    max_side: int = DEFAULT_MAX_SIDE,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> tuple[bytes, int, int]:
    """Validate and normalise an upload to PNG bytes before it is stored.

    The image is fully decoded (so a damaged file is refused *before* anything
    is written), converted to RGB, oriented and downscaled as by
    :func:`load_image`, and re-encoded as PNG (which drops EXIF and other
    metadata, such as GPS positions).

    Returns
    -------
    png : bytes
    width, height : int
        Size of the normalised image.

    Raises
    ------
    DataError
        As :func:`load_image`.
    """
    img = load_image(source, name=name, max_side=max_side, max_pixels=max_pixels, max_bytes=max_bytes)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    return buf.getvalue(), img.size[0], img.size[1]
