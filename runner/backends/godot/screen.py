"""eval.video for a Godot game of one's own: its frames read off the virtual display itself.

A Godot project or exported game speaks godot-rl's protocol through godot-rl's plugin, which has
no message for a frame; so its process runs under an Xvfb of its own that keeps screen 0 in a
file (`Xvfb -fbdir DIR` writes `DIR/Xvfb_screen0`, memory-mapped and updated as X draws), and a
frame is that file read as pixels. The file is an XWD dump: a header of big-endian CARD32
fields, the window name (up to `header_size`), `ncolors` 12-byte colour entries, then the
pixels, `bytes_per_line` bytes a row, in the server's byte order, with the visual's masks.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from runner.errors import RunnerError

SCREEN_FILE = "Xvfb_screen0"
_FIELDS = 25  # CARD32s in an XWD header before the window name
_XWD_VERSION = 7
_ZPIXMAP = 2
_COLOUR_ENTRY = 12
# How long a grab waits for the screen to hold still, and how often it looks again.
SETTLE_S = 0.1
_LOOK_S = 0.002


class XwdLayout(NamedTuple):
    """Where and how an XWD file holds its pixels."""

    width: int
    height: int
    offset: int  # of the first pixel row
    bytes_per_line: int
    big_endian: bool
    masks: tuple[int, int, int]  # red, green, blue


def xwd_layout(head: bytes) -> XwdLayout:
    """The layout an XWD header describes; RunnerError for what this reader does not read (it
    reads what Xvfb writes at depth 24: 32-bit TrueColor pixels)."""
    if len(head) < 4 * _FIELDS:
        raise RunnerError(f"an XWD file of {len(head)} bytes has no whole header")
    f = np.frombuffer(head[: 4 * _FIELDS], dtype=">u4").tolist()
    header_size, version, pixmap_format, _depth, width, height = f[:6]
    byte_order, bits_per_pixel, bytes_per_line = f[7], f[11], f[12]
    red, green, blue, ncolors = f[14], f[15], f[16], f[19]
    if version != _XWD_VERSION or pixmap_format != _ZPIXMAP or bits_per_pixel != 32:
        raise RunnerError(
            f"the virtual screen is XWD version {version}, format {pixmap_format}, "
            f"{bits_per_pixel} bits a pixel; expected version 7, ZPixmap, 32 bits (Xvfb at "
            "depth 24)"
        )
    if bytes_per_line < 4 * width or not (red and green and blue):
        raise RunnerError(f"the virtual screen's XWD header is not consistent: {f[:20]}")
    return XwdLayout(
        width=width,
        height=height,
        offset=header_size + _COLOUR_ENTRY * ncolors,
        bytes_per_line=bytes_per_line,
        big_endian=byte_order == 1,
        masks=(red, green, blue),
    )


def xwd_rgb(data: Any, layout: XwdLayout) -> np.ndarray:
    """An (H, W, 3) uint8 RGB copy of the pixels in `data` (the whole file's bytes or memmap)."""
    size = layout.height * layout.bytes_per_line
    rows = np.frombuffer(data, dtype=np.uint8, count=size, offset=layout.offset)
    rows = rows.reshape(layout.height, layout.bytes_per_line)
    pixels = rows[:, : 4 * layout.width].reshape(layout.height, layout.width, 4)
    places = [_byte_of(mask, layout.big_endian) for mask in layout.masks]
    whole = [k for k in places if k is not None]
    if len(whole) == 3:  # each channel one whole byte (Xvfb's 0xff0000, 0xff00, 0xff)
        return np.ascontiguousarray(pixels[..., whole])
    words = pixels.view(">u4" if layout.big_endian else "<u4")[..., 0]
    return np.stack([_channel(words, mask) for mask in layout.masks], axis=-1)


def _byte_of(mask: int, big_endian: bool) -> int | None:
    """The byte of a 32-bit pixel that `mask` selects, when it selects exactly one byte."""
    for k in range(4):
        if mask == 0xFF << (8 * k):
            return 3 - k if big_endian else k
    return None


def _channel(words: np.ndarray, mask: int) -> np.ndarray:
    shift = (mask & -mask).bit_length() - 1
    top = mask >> shift
    values = (words >> np.uint32(shift)) & np.uint32(top)
    return (values.astype(np.uint32) * 255 // top).astype(np.uint8)


def read_xwd(path: Path) -> np.ndarray:
    """An XWD file's pixels as an (H, W, 3) uint8 RGB array."""
    data = path.read_bytes()
    return xwd_rgb(data, xwd_layout(data[: 4 * _FIELDS]))


class Screen:
    """The framebuffer file of one Godot process's Xvfb, in a private folder removed on close."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="rlcrate-screen-"))
        self._map: np.memmap | None = None
        self._layout: XwdLayout | None = None

    @property
    def file(self) -> Path:
        return self.dir / SCREEN_FILE

    def grab(self) -> np.ndarray:
        """The screen once it holds still: an (H, W, 3) uint8 RGB copy.

        Asked for when a step's reply has come. godot-rl's plugin sends the reply from inside a
        physics tick and then blocks there until the next action, so the whole engine waits and
        the screen holds the last frame it drew: the game at most one physics tick before the
        observation the agent acts on. The screen is read until two looks `_LOOK_S` apart agree
        (`SETTLE_S` at most), for a frame still on its way to the X server. A game that sends
        its reply at the end of a tick instead (rlcrate's own games) draws once more before it
        blocks: its frame is then often the one of the agent step before.
        """
        layout = self._open()
        frame = xwd_rgb(self._map, layout)
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            time.sleep(_LOOK_S)
            again = xwd_rgb(self._map, layout)
            if np.array_equal(again, frame):
                break
            frame = again
        return frame

    def _open(self) -> XwdLayout:
        if self._layout is None:
            if not self.file.is_file():
                raise RunnerError(f"the virtual display wrote no framebuffer file {self.file}")
            self._map = np.memmap(self.file, dtype=np.uint8, mode="r")
            self._layout = xwd_layout(bytes(self._map[: 4 * _FIELDS]))
        return self._layout

    def close(self) -> None:
        self._map = None  # numpy unmaps when the last view goes
        shutil.rmtree(self.dir, ignore_errors=True)
