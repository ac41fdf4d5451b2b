"""Safe image loading: bad bytes, bombs, huge images, every colour mode, EXIF orientation."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from biastest.errors import DataError
from biastest.models import images as I


def _bytes(img: Image.Image, fmt: str = "PNG", **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header declares width × height pixels (no real pixel data)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b"")


def test_rgb_png_round_trip():
    arr = np.random.default_rng(0).integers(0, 256, size=(20, 30, 3), dtype=np.uint8)
    img = I.load_image(_bytes(Image.fromarray(arr, "RGB")))
    assert img.mode == "RGB" and img.size == (30, 20)
    assert np.array_equal(np.asarray(img), arr)


def test_grayscale_becomes_rgb_with_equal_channels():
    arr = np.arange(0, 200, dtype=np.uint8).reshape(10, 20)
    img = I.load_image(_bytes(Image.fromarray(arr, "L")))
    out = np.asarray(img)
    assert img.mode == "RGB"
    for c in range(3):
        assert np.array_equal(out[:, :, c], arr)


def test_one_bit_image():
    img = I.load_image(_bytes(Image.new("1", (8, 8), 1)))
    assert img.mode == "RGB" and np.asarray(img).min() == 255


def test_sixteen_bit_grayscale_is_rescaled():
    arr = np.array([[0, 1000], [30000, 65535]], dtype=np.uint16)
    src = Image.fromarray(arr.astype(np.int32), "I")
    img = I.to_rgb(src)
    out = np.asarray(img)[:, :, 0]
    assert out[0, 0] == 0 and out[1, 1] == 255
    assert out[1, 0] == round(30000 / 65535 * 255)
    img2 = I.load_image(_bytes(Image.fromarray(arr, "I;16")))
    assert img2.mode == "RGB" and np.asarray(img2)[1, 1, 0] == 255


def test_float_image_within_byte_range_is_kept():
    arr = np.array([[0.0, 100.0], [200.0, 255.0]], dtype=np.float32)
    out = np.asarray(I.to_rgb(Image.fromarray(arr, "F")))[:, :, 0]
    assert out.tolist() == [[0, 100], [200, 255]]


def test_rgba_transparency_composited_on_white():
    arr = np.zeros((4, 4, 4), dtype=np.uint8)
    arr[..., 0] = 255  # red
    arr[:2, :, 3] = 0  # top half fully transparent
    arr[2:, :, 3] = 255
    out = np.asarray(I.load_image(_bytes(Image.fromarray(arr, "RGBA"))))
    assert out[0, 0].tolist() == [255, 255, 255]
    assert out[3, 3].tolist() == [255, 0, 0]


def test_la_half_transparent_black_is_gray():
    src = Image.new("LA", (2, 2), (0, 128))
    out = np.asarray(I.load_image(_bytes(src)))
    assert 125 <= out[0, 0, 0] <= 129


def test_palette_with_and_without_transparency():
    pal = Image.new("P", (4, 4), 1)
    pal.putpalette([0, 0, 0, 10, 200, 30] + [0] * 762)
    out = np.asarray(I.load_image(_bytes(pal)))
    assert out[0, 0].tolist() == [10, 200, 30]
    pal.info["transparency"] = 1
    out_t = np.asarray(I.load_image(_bytes(pal, transparency=1)))
    assert out_t[0, 0].tolist() == [255, 255, 255]


def test_cmyk_jpeg_becomes_rgb():
    src = Image.new("CMYK", (16, 16), (0, 255, 255, 0))  # pure red in CMYK
    img = I.load_image(_bytes(src, "JPEG", quality=95))
    r, g, b = np.asarray(img)[8, 8].tolist()
    assert img.mode == "RGB" and r > 200 and g < 60 and b < 60


def test_exif_orientation_is_applied():
    src = Image.new("RGB", (40, 20), (0, 0, 255))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise on display
    data = _bytes(src, "JPEG", exif=exif.tobytes())
    assert Image.open(io.BytesIO(data)).size == (40, 20)
    assert I.load_image(data).size == (20, 40)


def test_animated_gif_first_frame():
    frames = [Image.new("P", (8, 8), i) for i in range(3)]
    for f in frames:
        f.putpalette([255, 0, 0, 0, 255, 0, 0, 0, 255] + [0] * 759)
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=10)
    assert np.asarray(I.load_image(buf.getvalue()))[0, 0].tolist() == [255, 0, 0]


def test_large_image_is_downscaled_keeping_aspect():
    img = I.load_image(_bytes(Image.new("RGB", (2000, 1000), (9, 9, 9))))
    assert img.size == (1024, 512)
    small = I.load_image(_bytes(Image.new("RGB", (2000, 1000))), max_side=100)
    assert small.size == (100, 50)


def test_large_jpeg_uses_reduced_decoding():
    img = I.load_image(_bytes(Image.new("RGB", (3000, 1500), (200, 10, 10)), "JPEG"), max_side=256)
    assert img.size == (256, 128)
    assert np.asarray(img)[64, 128, 0] > 150


def test_too_many_pixels_refused_from_header():
    data = _png_header_only(20_000, 5_000)  # 100 MP, header only: refused before decoding
    with pytest.raises(DataError) as e:
        I.load_image(data, name="big.png")
    assert e.value.message == I.MSG_IMAGE_TOO_MANY_PIXELS.format(
        name="big.png", width=20_000, height=5_000, megapixels=100.0, limit=64.0
    )
    with pytest.raises(DataError) as e2:
        I.probe_image(_bytes(Image.new("RGB", (200, 100))), name="x.png", max_pixels=10_000)
    assert e2.value.message == I.MSG_IMAGE_TOO_MANY_PIXELS.format(
        name="x.png", width=200, height=100, megapixels=0.02, limit=0.01
    )


def test_decompression_bomb_refused():
    data = _png_header_only(100_000, 100_000)  # 10 gigapixels: Pillow's own guard fires at open
    with pytest.raises(DataError) as e:
        I.load_image(data, name="bomb.png", max_pixels=10**12)
    assert e.value.message == I.MSG_IMAGE_BOMB.format(name="bomb.png")


@pytest.mark.parametrize(
    "payload",
    [b"hello, this is text, not an image\n" * 5, bytes(range(256)) * 4, b"%PDF-1.4\n%...\n", b"GIF89a"],
)
def test_not_an_image(payload):
    with pytest.raises(DataError) as e:
        I.load_image(payload, name="upload.bin")
    # Unrecognised bytes are "not an image"; bytes with an image signature but nothing after are "damaged".
    assert e.value.message == I.MSG_NOT_AN_IMAGE.format(name="upload.bin") or e.value.message.startswith(
        "The image 'upload.bin' is damaged or incomplete and cannot be decoded ("
    )


def test_plain_text_is_not_an_image_exactly():
    with pytest.raises(DataError) as e:
        I.load_image(b"name,value\n1,2\n", name="data.csv")
    assert e.value.message == I.MSG_NOT_AN_IMAGE.format(name="data.csv")


def test_truncated_png_is_corrupt():
    data = _bytes(Image.fromarray(np.random.default_rng(1).integers(0, 256, (64, 64, 3), dtype=np.uint8)))
    with pytest.raises(DataError) as e:
        I.load_image(data[: len(data) // 2], name="cut.png")
    assert e.value.message.startswith("The image 'cut.png' is damaged or incomplete and cannot be decoded (")
    assert e.value.message.endswith("). Save or download it again and upload the new file.")


def test_empty_missing_and_oversized_files(tmp_path):
    with pytest.raises(DataError) as e:
        I.load_image(b"", name="e.png")
    assert e.value.message == I.MSG_IMAGE_EMPTY.format(name="e.png")
    with pytest.raises(DataError) as e:
        I.load_image(tmp_path / "nope.png")
    assert e.value.message == I.MSG_IMAGE_NOT_FOUND.format(name="nope.png")
    path = tmp_path / "a.png"
    path.write_bytes(_bytes(Image.fromarray(np.random.default_rng(2).integers(0, 256, (64, 64, 3), dtype=np.uint8))))
    size = path.stat().st_size
    with pytest.raises(DataError) as e:
        I.load_image(path, max_bytes=100)
    assert e.value.message == I.MSG_IMAGE_FILE_TOO_LARGE.format(
        name="a.png", size_mb=size / 2**20, limit_mb=100 / 2**20
    )
    with pytest.raises(DataError):
        I.load_image(io.BytesIO(path.read_bytes()), max_bytes=100)
    assert I.load_image(io.BytesIO(path.read_bytes())).size == (64, 64)


def test_bad_max_side():
    with pytest.raises(DataError) as e:
        I.load_image(b"x", max_side=4)
    assert e.value.message == I.MSG_BAD_MAX_SIDE.format(value=4)


def test_probe_reads_header_only():
    info = I.probe_image(_bytes(Image.new("CMYK", (30, 10)), "JPEG"))
    assert (info.width, info.height, info.format, info.mode) == (30, 10, "JPEG", "CMYK")
    assert info.to_dict()["n_bytes"] == info.n_bytes > 0


def test_normalise_upload_to_png_drops_exif():
    src = Image.new("RGBA", (3000, 1500), (0, 255, 0, 255))
    exif = Image.Exif()
    exif[0x010F] = "PhoneMaker"
    png, w, h = I.normalise_image_bytes(_bytes(src, "PNG", exif=exif.tobytes()))
    back = Image.open(io.BytesIO(png))
    assert back.format == "PNG" and back.mode == "RGB" and (w, h) == back.size == (1024, 512)
    assert not back.getexif()
    with pytest.raises(DataError):
        I.normalise_image_bytes(b"not an image")


def test_constant_wide_range_image_maps_to_black():
    arr = np.full((3, 3), 5000, dtype=np.int32)
    assert np.asarray(I.to_rgb(Image.fromarray(arr, "I"))).max() == 0
