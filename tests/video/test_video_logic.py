"""The settings and checks of `runner.video` in process, no episode recorded: the ffmpeg stall
bound read from RLCRATE_FFMPEG_TIMEOUT, and what this Python lacks for a video format. Recording
is tests/video/test_video.py's."""

from __future__ import annotations

import pytest

from runner import video
from runner.errors import SettingError
from runner.manifest.schema import VideoSpec
from runner.video.ffmpeg import STALL_S, stall_s


@pytest.mark.parametrize(("text", "want"), [(None, STALL_S), ("0.5", 0.5), ("3600", 3600.0)])
def test_the_stall_bound_is_the_setting_or_its_default(monkeypatch, text, want):
    if text is None:
        monkeypatch.delenv("RLCRATE_FFMPEG_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("RLCRATE_FFMPEG_TIMEOUT", text)
    assert stall_s() == want


@pytest.mark.parametrize("text", ["", "soon", "0.1", "3601", "nan", "-5"])
def test_a_stall_bound_out_of_range_is_one_line_naming_the_setting(monkeypatch, text):
    monkeypatch.setenv("RLCRATE_FFMPEG_TIMEOUT", text)
    with pytest.raises(SettingError) as err:
        stall_s()
    assert str(err.value) == (
        f"RLCRATE_FFMPEG_TIMEOUT={text!r}: expected seconds between 0.5 and 3600"
    )


@pytest.mark.parametrize("fmt", ["mp4", "gif"])
def test_an_installed_writer_is_no_problem(fmt):
    pytest.importorskip("imageio")
    pytest.importorskip(video.WRITERS[fmt])
    assert video.problems(VideoSpec(format=fmt)) == []


def test_a_missing_writer_is_a_problem_at_the_format_field(monkeypatch):
    """A module that is not installed anywhere stands in for the format's writer."""
    monkeypatch.setitem(video.WRITERS, "gif", "rlcrate_no_such_writer")
    (problem,) = video.problems(VideoSpec(format="gif"))
    assert problem.path == ("eval", "video", "format")
    assert problem.message == (
        "needs rlcrate_no_such_writer, which is not installed (pip install 'rlcrate[video]')"
    )
