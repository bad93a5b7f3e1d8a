"""report.md's Videos section: each unit's recorded evaluation episodes (`eval.video`), a GIF
inline, an MP4 as its poster frame linking the file."""

from __future__ import annotations

from runner.record.rundir import UnitRef
from runner.record.video import VIDEO_DIR, read_video
from runner.report.load import Run
from runner.report.markdown import fmt

EQUIVALENT = (
    "Recorded on an equivalent env (the backend's own envs render nothing: EnvPool's task on "
    "Gymnasium, with the same preprocessing): the same policy, deterministic, but not the "
    "episodes eval.json scores."
)


def videos_section(run: Run) -> list[str]:
    """Empty when no unit recorded a video."""
    body: list[str] = []
    for (variant, seed), unit in run.units.items():
        folder = UnitRef(variant, seed).dir(run.path) / VIDEO_DIR
        record = read_video(folder.parent)
        if record is None or not record.clips:
            continue
        body += [f"### {variant}, seed {seed}", ""]
        returns = unit.eval.returns() if unit.eval is not None else []
        if record.equivalent is not None:  # not eval.json's episodes: no return shown
            # a fixed sentence: the record's own text is data from a file, never shown as-is
            body += [EQUIVALENT, ""]
            returns = []
        for clip in record.clips:
            rel = folder.relative_to(run.path).as_posix()
            score = f"return {fmt(returns[clip.episode])}, " if clip.episode < len(returns) else ""
            caption = f"episode {clip.episode} ({score}{clip.frames} frames)"
            if clip.poster is None:  # a GIF plays inline
                body += [f"![{caption}]({rel}/{clip.file})", ""]
            else:
                body += [f"[![{caption}]({rel}/{clip.poster})]({rel}/{clip.file})", ""]
                body += [f"{caption}: [{clip.file}]({rel}/{clip.file})", ""]
    if not body:
        return []
    intro = (
        "The first evaluation episodes of each unit, recorded as they were scored (eval.json's "
        "episodes, deterministic actions as `eval.deterministic` says), unless a unit says "
        "otherwise."
    )
    return ["## Videos", "", intro, "", *body]
