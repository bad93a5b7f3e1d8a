"""The rollout profile in bench.json's findings, as a table and as plots/profile.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Stacking order, bottom to top, and how each part is named in tables and plots.
PARTS = {
    "env": "env step",
    "encode": "encode actions (Python)",
    "send": "send actions (Python)",
    "engine_tick": "engine tick (Godot-reported)",
    "engine_codec": "engine JSON (Godot-reported)",
    "wait_other": "socket wait beyond the engine",
    "decode": "decode messages (Python)",
    "inference": "policy inference",
    "update": "gradient update",
    "other": "rollout bookkeeping",
}
# What a part's dominance says about the course question (CPU, GPU or socket throughput?).
RESOURCE = {
    "env": "the env's CPU work",
    "encode": "the trainer's CPU (message encoding)",
    "send": "the socket send, or a busy host (the woken game takes the trainer's core)",
    "engine_tick": "the game's CPU (simulation)",
    "engine_codec": "the game's CPU (message encoding)",
    "wait_other": "not the game's simulation but the time around it: transport, the engine's "
    "frame loop, pacing, or the game waiting for a free core",
    "decode": "the trainer's CPU (message decoding)",
    "inference": "compute on the policy's device ({device})",
    "update": "compute on the policy's device ({device})",
    "other": "the trainer's CPU (rollout bookkeeping)",
}


# Table headers (the plot's legend has the long names).
SHORT = {
    "env": "env step",
    "encode": "encode",
    "send": "send",
    "engine_tick": "engine tick",
    "engine_codec": "engine JSON",
    "wait_other": "wait, rest",
    "decode": "decode",
    "inference": "inference",
    "update": "update",
    "other": "bookkeeping",
}


def profiled(bench: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in bench["points"] if not p["error"] and p.get("profile")]


def add_findings(bench: dict[str, Any]) -> None:
    """The profile's own overhead (each point's sentence naming its bottleneck comes from
    `split.sentence`, with the bench's other findings)."""
    points = profiled(bench)
    if not points:
        return
    worst = max(points, key=lambda p: p["profile"]["overhead"])
    bound = max(p["profile"]["overhead_bound"] for p in points)
    cpu = max(p["profile"]["overhead_cpu"] for p in points)
    bench["findings"].append(
        f"profile overhead on training steps/s: its timed calls cost at most "
        f"{100 * bound:.2f}% of a step; interleaved plain/profiled runs measured at most "
        f"{100 * cpu:+.1f}% trainer CPU time per step and at most "
        f"{-100 * worst['profile']['overhead']:+.1f}% steps/s ({worst['label']}; medians of "
        f"{len(worst['profile']['overhead_ratios'])} pairs; steps/s is as noisy as the host)"
    )
    for p in points:
        if p["profile"].get("env_stall"):  # Nagle's algorithm on a game's socket, say
            bench["findings"].append(f"{p['label']}: {p['profile']['env_stall']}")
    if any(not p["profile"]["engine_reported"] for p in points):
        bench["findings"].append(
            "some Godot games did not report tick_us/codec_us: their engine time is counted "
            "in the socket wait"
        )


def columns(points: list[dict[str, Any]]) -> list[str]:
    """The parts any point has, in stacking order."""
    present = {k for p in points for k in p["profile"]["share"]}
    return [k for k in PARTS if k in present]


def print_table(bench: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    points = profiled(bench)
    if not points:
        return
    cols = columns(points)
    table = Table(title=f"rollout profile: {bench['name']} (µs per training step, share)")
    table.add_column("point")
    for k in cols:
        table.add_column(SHORT[k], justify="right")
    table.add_column("steps/s", justify="right")
    table.add_column("overhead: steps/s, CPU (bound)", justify="right")
    for p in points:
        prof = p["profile"]
        cells = [
            f"{1e6 * prof['seconds_per_step'][k]:,.1f} ({100 * prof['share'][k]:.0f}%)"
            if k in prof["share"]
            else "–"
            for k in cols
        ]
        over = (
            f"{100 * prof['overhead']:.1f}%, {100 * prof['overhead_cpu']:.1f}% "
            f"({100 * prof['overhead_bound']:.2f}%)"
        )
        table.add_row(p["label"], *cells, f"{prof['steps_per_s']:,.0f}", over)
    console.print(table)


def plot(bench: dict[str, Any], path: Path) -> Path | None:
    """Stacked horizontal bars, one per point: µs per training step, split by part."""
    points = profiled(bench)
    if not points:
        return None
    from runner.report.plots import colormap, subplots

    cols = columns(points)
    labels = [p["label"] for p in points]
    fig, ax = subplots(figsize=(9, 1.2 + 0.55 * len(points)))
    left = [0.0] * len(points)
    colors = colormap("tab10")
    for i, k in enumerate(cols):
        widths = [1e6 * p["profile"]["seconds_per_step"].get(k, 0.0) for p in points]
        ax.barh(labels, widths, left=left, label=PARTS[k], color=colors(i))
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.invert_yaxis()
    ax.set_xlabel("µs per training step (one env step of one env)")
    ax.set_title(f"{bench['name']}: where a training step goes")
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.25 - 0.02 * len(points)),
        ncol=3,
        fontsize="small",
        frameon=False,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def bottleneck(point: dict[str, Any]) -> str:
    """One sentence naming the largest part of a point's training step.

    Env stepping counts as one part (its pieces run one after another on the same step), and
    when it is the largest, its own largest piece says where the env time goes.
    """
    prof = point["profile"]
    share = prof["share"]
    env_keys = [k for k in share if k not in ("inference", "update", "other")]
    groups = {"env": sum(share[k] for k in env_keys)}
    groups.update({k: share[k] for k in ("inference", "update", "other") if k in share})
    top = max(groups, key=lambda k: groups[k])
    head = f"{point['label']}: the bottleneck is "
    if top != "env":
        what = RESOURCE[top].format(device=prof["device"])
        return (
            f"{head}{PARTS[top]} ({100 * groups[top]:.0f}% of a training step; env stepping "
            f"{100 * groups['env']:.0f}%), i.e. {what}"
        )
    piece = max(env_keys, key=lambda k: share[k])
    detail = "" if piece == "env" else f", mostly {PARTS[piece]} ({100 * share[piece]:.0f}%)"
    return (
        f"{head}env stepping ({100 * groups['env']:.0f}% of a training step{detail}), i.e. "
        f"{RESOURCE[piece]}"
    )
