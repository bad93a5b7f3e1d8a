"""`eval.video`: the evaluation's own episodes recorded as videos through the console script,
decoded here (one frame per agent step, not blank, moving): CartPole after the fact
(`rlcrate eval RUN --video`, MP4) and BallChase drawn by Godot 4 under Xvfb (the manifest's
eval.video, GIF), a project of one's own and its real exports read off the screen; the same
returns with and without recording, a video that cannot be written failing its unit but not its
eval.json, and what cannot render refused in one line."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from runner.backends.godot import GAMES_DIR
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


def _fake_ffmpeg(folder: Path, body: str) -> Path:
    """An ffmpeg (IMAGEIO_FFMPEG_EXE) that misbehaves as `body` says (hangs, or dies mid-clip);
    its pid in `pids`."""
    fake = folder / "ffmpeg"
    fake.write_text(f'#!/bin/sh\necho $$ >> "{folder}/pids"\nfor last; do :; done\n{body}\n')
    fake.chmod(0o755)
    return fake


def _all_ended(pids: Path) -> bool:
    states = []
    for pid in pids.read_text().split():
        stat = Path(f"/proc/{pid}/stat")
        states.append(stat.read_text().rsplit(")", 1)[1].split()[0] if stat.exists() else "gone")
    return all(s in ("Z", "gone") for s in states)


@pytest.mark.slow
@pytest.mark.gymnasium
def test_a_hung_ffmpeg_fails_the_unit_in_time_and_leaves_no_file(tiny_run, tmp_path):
    run = _copy(tiny_run, tmp_path)
    env = {
        "IMAGEIO_FFMPEG_EXE": str(_fake_ffmpeg(tmp_path, "exec sleep 100000")),
        "RLCRATE_FFMPEG_TIMEOUT": "3",
    }
    res = rlcrate("eval", str(run), "--video", env_extra=env, timeout=300)
    assert res.returncode == 1, res.stdout[-2000:] + res.stderr[-2000:]
    says = "ffmpeg took no frame for 3 s (hung?) and was stopped"
    for unit in _units(run):
        error = json.loads((unit / "status.json").read_text())["error"]
        assert f"cannot write {unit / 'video/episode-0.mp4'}: {says}" in error, error
        assert _eval(unit)["episodes"], "the evaluation was not kept"
        assert not list((unit / "video").iterdir()), "a file of the failed clip was left"
    assert _all_ended(tmp_path / "pids"), "an ffmpeg was left running"


def test_a_clip_whose_ffmpeg_is_killed_is_not_kept_under_any_name(tmp_path, monkeypatch):
    from runner.manifest.schema import VideoSpec
    from runner.video.encode import EpisodeWriter

    body = 'printf partial > "$last"; head -c 100000 > /dev/null; kill -9 $$'
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", str(_fake_ffmpeg(tmp_path, body)))
    writer = EpisodeWriter(tmp_path / "video", 0, VideoSpec(episodes=1, format="mp4"))
    frame = np.random.default_rng(0).integers(0, 255, (64, 96, 3), dtype=np.uint8)
    with pytest.raises(RuntimeError, match="ffmpeg was killed by signal 9 before the file was "):
        for _ in range(100):  # 1.8 MB: more than the fake takes before it is killed
            writer.add(frame)
        writer.close()
    writer.abandon()  # what the capture does with a writer that failed
    assert not list((tmp_path / "video").iterdir()) and _all_ended(tmp_path / "pids")


def _drawing_godot() -> bool:
    from tests.backends.godot.test_godot import HAVE_GODOT

    if not HAVE_GODOT:
        return False
    from runner.backends.godot.frames import drawing_binary

    return drawing_binary(4) is not None and shutil.which("xvfb-run") is not None


@pytest.mark.slow
@pytest.mark.godot
@pytest.mark.skipif(not _drawing_godot(), reason="needs Godot 4, xvfb-run and godot-rl")
def test_ballchase_drawn_under_xvfb_scores_what_headless_godot_scores(tmp_path):
    """Two variants of one seed train alike (unpaced Godot is bitwise deterministic): one
    evaluates in a headless Godot 4, the other in Godot 4 drawing under Xvfb, recorded as a GIF
    from the manifest's eval.video; their returns must be the same."""
    video = {"episodes": 2, "fps": 20, "format": "gif", "size": [100, 100]}
    m = tiny_manifest(
        name="drawn",
        env={"backend": "godot", "id": "ballchase", "kwargs": {"episode_steps": 40}},
        parallel={"envs": 1, "workers": 1},
        train__timesteps=64,
        eval={"episodes": 2},
        matrix=[{"variant": "headless"}, {"variant": "drawn", "eval.video": video}],
    )
    path = tmp_path / "drawn.yaml"
    path.write_text(yaml.safe_dump(m, sort_keys=False))
    res = rlcrate("run", str(path), "--out", str(tmp_path / "runs"), report=True)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    run = run_dir_of(tmp_path / "runs", "drawn")
    drawn, headless = run / "units/drawn/seed-0", run / "units/headless/seed-0"
    episodes = _eval(drawn)["episodes"]
    assert episodes == _eval(headless)["episodes"]  # bit for bit
    assert not (headless / "video").exists()
    report = (run / "report.md").read_text()
    for i, episode in enumerate(episodes):
        gif = drawn / f"video/episode-{i}.gif"
        frames = iio.imread(gif)
        assert frames.shape[1:] == (100, 100, 3)
        # a GIF merges a frame identical to the one before it into that one's duration: the
        # running time is one frame (50 ms at 20 fps) per agent step
        ms = [iio.immeta(gif, index=k)["duration"] for k in range(len(frames))]
        assert sum(ms) == 50 * episode["length"] and len(frames) <= episode["length"]
        _moving_pictures(frames)
        assert f"](units/drawn/seed-0/video/episode-{i}.gif)" in report


SERVER_PRESET = """
[preset.1]

name="Server"
platform="Linux"
runnable=false
dedicated_server=true
custom_features=""
export_filter="all_resources"
include_filter=""
exclude_filter=""
export_path=""

[preset.1.options]

binary_format/embed_pck=false
binary_format/architecture="x86_64"
"""


def _game_of_ones_own(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The bundled BallChase copied as a project of one's own (it speaks godot-rl's protocol;
    its `frame` extension is not what records it), laid out as a game made for any window size
    (2D stretch from its 400x400 arena), and its two real exports: as a desktop game, and with
    Godot 4's "Dedicated Server" option, which draws nothing."""
    project = Path(shutil.copytree(GAMES_DIR / "ballchase", tmp_path / "my-game"))
    settings = project / "project.godot"
    settings.write_text(
        settings.read_text().replace(
            "window/size/viewport_width=408\nwindow/size/viewport_height=408\n",
            "window/size/viewport_width=400\nwindow/size/viewport_height=400\n"
            'window/stretch/mode="canvas_items"\nwindow/stretch/aspect="keep"\n',
        )
    )
    with (project / "export_presets.cfg").open("a") as f:
        f.write(SERVER_PRESET)
    games = []
    for name, preset in (("my-game.x86_64", "Linux"), ("my-game-server.x86_64", "Server")):
        games.append(tmp_path / name)
        out = rlcrate("godot", "export", str(project), "-o", str(games[-1]), "--preset", preset)
        assert out.returncode == 0, out.stdout + out.stderr
    return project, games[0], games[1]


@pytest.mark.slow
@pytest.mark.godot
@pytest.mark.skipif(not _drawing_godot(), reason="needs Godot 4, xvfb-run and godot-rl")
def test_a_godot_project_and_an_exported_game_of_ones_own_are_read_off_the_screen(tmp_path):
    """Four variants of one seed train alike: one evaluates headless, one records the project
    and one its export, each frame read off its Xvfb's framebuffer file (no `frame` message);
    the same returns, one frame per agent step, not blank, moving. The fourth is the game
    exported as a dedicated server: its screen stays black, which fails its unit in one line
    saying what to do, and keeps its eval.json."""
    project, binary, server = _game_of_ones_own(tmp_path)
    video = {"episodes": 1, "fps": 20, "format": "gif", "size": [64, 64]}
    m = tiny_manifest(
        name="own",
        env={"backend": "godot", "id": str(project), "kwargs": {"episode_steps": 24}},
        parallel={"envs": 1, "workers": 1},
        train__timesteps=64,
        eval={"episodes": 1},
        matrix=[
            {"variant": "headless"},
            {"variant": "project", "eval.video": video},
            {"variant": "binary", "env.id": str(binary), "eval.video": video},
            {"variant": "server", "env.id": str(server), "eval.video": video},
        ],
    )
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump(m, sort_keys=False))
    res = rlcrate("run", str(path), "--out", str(tmp_path / "runs"))
    assert res.returncode == 1, res.stdout[-2000:] + res.stderr[-2000:]
    run = run_dir_of(tmp_path / "runs", "own")
    episodes = _eval(run / "units/headless/seed-0")["episodes"]
    blank = run / "units/server/seed-0"
    error = json.loads((blank / "status.json").read_text())["error"]
    assert "every frame of episode-0.gif is one colour" in error and "Dedicated Server" in error
    assert "\n" not in error and _eval(blank)["episodes"] == episodes
    for variant in ("project", "binary"):
        unit = run / f"units/{variant}/seed-0"
        assert _eval(unit)["episodes"] == episodes  # bit for bit
        gif = unit / "video/episode-0.gif"
        frames = iio.imread(gif)
        assert frames.shape[1:] == (64, 64, 3)
        ms = [iio.immeta(gif, index=k)["duration"] for k in range(len(frames))]
        assert sum(ms) == 50 * episodes[0]["length"]  # one frame (50 ms) per agent step
        assert all(f.std() > 5 for f in frames), "a blank frame"
        assert len(frames) > episodes[0]["length"] // 2, "the picture stands still"
        assert not list(Path(tempfile.gettempdir()).glob("rlcrate-screen-*"))  # removed


def test_godot_video_without_xvfb_is_refused_in_one_line(write_manifest, tmp_path):
    """eval.video on a machine without xvfb-run: validate says so at eval.video, in one line."""
    bare = tmp_path / "bin"
    bare.mkdir()
    m = tiny_manifest(
        env={"backend": "godot", "id": "ballchase"},
        parallel={"envs": 1, "workers": 1},
        eval={"episodes": 1, "video": {}},
    )
    godot4 = shutil.which("godot4")
    if godot4:
        (bare / "godot4").symlink_to(godot4)
    res = rlcrate("validate", str(write_manifest(m)), env_extra={"PATH": str(bare)})
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "eval.video:" in lines[0] and "lacks" in lines[0], lines
    assert "xvfb-run" in lines[0]


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


def test_an_archive_holds_the_videos_unless_told_not_to(tmp_path):
    from runner.archive.pack import ArchiveOptions, run_files

    unit = tmp_path / "units/default/seed-0"
    (unit / "video").mkdir(parents=True)
    for name in ("eval.json", "video/episode-0.mp4", "video/video.json"):
        (unit / name).write_text("{}")
    clips = ["units/default/seed-0/video/episode-0.mp4", "units/default/seed-0/video/video.json"]
    assert set(clips) < set(run_files(tmp_path, ArchiveOptions()))
    assert run_files(tmp_path, ArchiveOptions(videos=False)) == ["units/default/seed-0/eval.json"]


def test_a_video_record_names_only_its_own_clips(tmp_path):
    from runner.record.video import read_video

    (tmp_path / "video").mkdir()
    clip = {"episode": 0, "frames": 3, "width": 4, "height": 4, "record_s": 0.1}
    for name, readable in (("episode-0.gif", True), ("../../model.zip", False), ("x)](y", False)):
        record = {"format": "gif", "fps": 30, "clips": [{**clip, "file": name}]}
        (tmp_path / "video/video.json").write_text(json.dumps(record))
        assert (read_video(tmp_path) is not None) is readable, name
