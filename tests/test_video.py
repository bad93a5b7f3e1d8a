"""`eval.video`: the evaluation's own episodes recorded as videos through the console script,
decoded here (one frame per agent step, not blank, moving), the same returns with and without
recording, a video that cannot be written failing its unit but not its eval.json, and the
backends that cannot render refused by `validate` in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.helpers import rlcrate, run_dir_of, tiny_manifest

iio = pytest.importorskip("imageio.v3")


def _copy(run: Path, tmp_path: Path) -> Path:
    """A copy of the shared finished run (`tiny_run`), for a test that changes it."""
    return Path(shutil.copytree(run, tmp_path / run.name, ignore=shutil.ignore_patterns(".lock")))


def _units(run: Path) -> list[Path]:
    return sorted(run.glob("units/*/seed-*"))


def _eval(unit: Path) -> dict:
    return json.loads((unit / "eval.json").read_text())


def _moving_pictures(frames: np.ndarray) -> None:
    """Not blank (each frame has contrast), and the picture moves: between the first and the
    last frame, pixels change far more than compression noise would change them."""
    assert all(f.std() > 5 for f in frames), "a blank frame"
    moved = (np.abs(frames[0].astype(int) - frames[-1]).max(axis=2) > 64).sum()
    assert moved > 10, f"only {moved} pixels changed over the episode"


@pytest.mark.slow
@pytest.mark.gymnasium
def test_eval_video_records_the_scored_episodes_and_changes_no_return(tiny_run, tmp_path):
    run = _copy(tiny_run, tmp_path)
    before = {u.relative_to(run): _eval(u) for u in _units(run)}
    res = rlcrate("eval", str(run), "--video")
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    for unit in _units(run):
        after = _eval(unit)
        assert after["episodes"] == before[unit.relative_to(run)]["episodes"]  # bit for bit
        record = json.loads((unit / "video/video.json").read_text())
        assert [c["file"] for c in record["clips"]] == ["episode-0.mp4"]  # --video: one episode
        frames = iio.imread(unit / "video/episode-0.mp4")
        assert len(frames) == after["episodes"][0]["length"] == record["clips"][0]["frames"]
        assert frames.shape[1:] == (400, 600, 3)  # CartPole's own frame size
        _moving_pictures(frames)
    report = (run / "report.md").read_text()
    poster = "units/default/seed-0/video/episode-0.png"
    assert f"]({poster})](units/default/seed-0/video/episode-0.mp4)" in report
    assert (run / poster).is_file()


@pytest.mark.slow
@pytest.mark.gymnasium
def test_a_video_that_cannot_be_written_fails_the_unit_and_keeps_its_eval(tiny_run, tmp_path):
    run = _copy(tiny_run, tmp_path)
    unit = _units(run)[0]
    want = _eval(unit)["episodes"]
    (unit / "eval.json").unlink()  # so the one found after is this evaluation's
    res = rlcrate(
        "eval", str(run), "--video", env_extra={"IMAGEIO_FFMPEG_EXE": str(tmp_path / "no-ffmpeg")}
    )
    assert res.returncode == 1, res.stdout[-2000:] + res.stderr[-2000:]
    assert "eval.video: cannot write" in res.stdout + res.stderr
    assert "no-ffmpeg" in json.loads((unit / "status.json").read_text())["error"]
    assert _eval(unit)["episodes"] == want


@pytest.mark.slow
@pytest.mark.gymnasium
def test_a_manifests_gif_is_in_the_report(tmp_path):
    video = {"episodes": 2, "fps": 25, "format": "gif", "size": [64, 48]}
    m = tiny_manifest(name="gif", train__timesteps=128, eval={"episodes": 2, "video": video})
    path = tmp_path / "gif.yaml"
    path.write_text(yaml.safe_dump(m, sort_keys=False))
    res = rlcrate("run", str(path), "--out", str(tmp_path / "runs"), report=True)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    run = run_dir_of(tmp_path / "runs", "gif")
    unit = run / "units/default/seed-0"
    lengths = [e["length"] for e in _eval(unit)["episodes"]]
    for i, length in enumerate(lengths):
        gif = unit / f"video/episode-{i}.gif"
        frames = iio.imread(gif)
        assert frames.shape[1:] == (48, 64, 3)
        # a GIF merges a frame identical to the one before it into that one's duration: the
        # running time is one frame (40 ms at 25 fps) per agent step
        ms = [iio.immeta(gif, index=k)["duration"] for k in range(len(frames))]
        assert sum(ms) == 40 * length and len(frames) <= length
        _moving_pictures(frames)
        assert f"](units/default/seed-0/video/episode-{i}.gif)" in (run / "report.md").read_text()


def test_video_refused_in_one_line(write_manifest):
    isaac = {"backend": "isaaclab", "id": "Isaac-Cartpole-Direct"}
    m = tiny_manifest(env=isaac, eval={"episodes": 2, "video": {}})
    m["parallel"] = {"envs": 2, "workers": 1}
    path = write_manifest(m)
    res = rlcrate("validate", str(path))
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert f"{path.name}:" in lines[0] and "eval.video:" in lines[0]
    assert "Isaac Sim's RTX renderer" in lines[0]


@pytest.mark.parametrize(
    ("env", "video", "says"),
    [
        ({"id": "rlcrate/BallChaseSim-v0"}, {}, "eval.video: rlcrate/BallChaseSim-v0 "),
        ({}, {"episodes": 3}, "video.episodes (3) exceeds episodes (2)"),
        ({}, {"format": "webm"}, "eval.video.format: Input should be 'mp4' or 'gif'"),
        ({}, {"size": [4, 1]}, "eval.video.size: expected [width, height], each from 2"),
        ({"kwargs": {"render_mode": "human"}}, {}, "env.kwargs.render_mode: eval.video renders"),
    ],
    ids=["surrogate", "more-than-eval", "format", "size", "render-mode"],
)
def test_bad_video_input_is_one_line_at_its_field(write_manifest, env, video, says):
    from runner.checks.load import load_manifest
    from runner.errors import ManifestError

    base = {"backend": "gymnasium", "id": "CartPole-v1"}
    path = write_manifest(tiny_manifest(env={**base, **env}, eval={"episodes": 2, "video": video}))
    with pytest.raises(ManifestError) as caught:
        load_manifest(path)
    lines = [str(p) for p in caught.value.problems]
    assert len(lines) == 1 and says in lines[0] and f"{path.name}:" in lines[0], lines
