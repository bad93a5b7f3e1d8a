"""The Xvfb framebuffer reader of eval.video for Godot games of one's own
(runner/backends/godot/screen.py): a real Xvfb's screen file, and the byte orders and masks an
XWD header can name."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from runner.backends.godot.screen import SCREEN_FILE, read_xwd, xwd_layout, xwd_rgb


@pytest.mark.skipif(
    not (shutil.which("xvfb-run") and shutil.which("xsetroot")), reason="needs xvfb-run, xsetroot"
)
def test_an_xvfb_screen_file_reads_as_the_colour_drawn(tmp_path):
    fbdir = tmp_path / "fb"
    fbdir.mkdir()
    copy = tmp_path / "screen.xwd"
    # -noreset: the root keeps its colour after xsetroot disconnects, until the copy is made
    script = f"xsetroot -solid '#ff8000' && cp {fbdir / SCREEN_FILE} {copy}"
    server = f"-screen 0 7x5x24 -noreset -fbdir {fbdir}"
    subprocess.run(
        ["xvfb-run", "--auto-servernum", "--server-args", server, "sh", "-c", script],
        check=True,
        timeout=30,
    )
    rgb = read_xwd(copy)
    assert rgb.shape == (5, 7, 3) and rgb.dtype == np.uint8  # an odd width: rows are padded
    assert (rgb == [255, 128, 0]).all()


def _xwd(pixels: list[int], *, width: int, big_endian: bool, masks: tuple[int, int, int]) -> bytes:
    """A one-row XWD file of 32-bit pixels, its row padded to 4 more bytes."""
    name = b"test\0\0\0\0"
    fields = [100 + len(name), 7, 2, 24, width, 1, 0, int(big_endian), 32, 0, 32, 32,
              4 * width + 4, 4, *masks, 8, 0, 1, width, 1, 0, 0, 0]  # fmt: skip
    colours = b"\0" * 12
    order = ">u4" if big_endian else "<u4"
    row = np.asarray([*pixels, 0xDEADBEEF], dtype=order).tobytes()
    return np.asarray(fields, dtype=">u4").tobytes() + name + colours + row


@pytest.mark.parametrize("big_endian", [False, True])
@pytest.mark.parametrize(
    ("masks", "pixel", "want"),
    [
        ((0xFF0000, 0xFF00, 0xFF), 0x00FF8000, [255, 128, 0]),
        ((0xFF, 0xFF00, 0xFF0000), 0x000080FF, [255, 128, 0]),
        ((0xF800, 0x7E0, 0x1F), 0xFC00, [255, 32 * 255 // 63, 0]),
    ],  # fmt: skip
    ids=["rgb", "bgr", "565"],
)
def test_xwd_pixels_honour_byte_order_masks_and_padding(big_endian, masks, pixel, want):
    data = _xwd([pixel, 0], width=2, big_endian=big_endian, masks=masks)
    rgb = xwd_rgb(data, xwd_layout(data[:100]))
    assert rgb.tolist() == [[want, [0, 0, 0]]]
