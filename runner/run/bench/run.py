"""Running the bench job: plan, measure each point, analyse, write bench.json and
plots/scaling.png, print the table."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from runner.errors import UnitFailed
from runner.manifest.schema import Manifest
from runner.record.bench import BenchRecord
from runner.run.bench import profile_report
from runner.run.bench.analysis import FLATTEN_EFFICIENCY, RATES, add_overhead, analyse
from runner.run.bench.measure import host_info, run_point
from runner.run.bench.plan import Point, axis_info, plan


def print_table(bench: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    table = Table(
        title=f"bench: {bench['name']} ({bench['host']['cpu_model']}, "
        f"{bench['host']['cpu_usable']} cores)"
    )
    cols = ("point", "env-only steps/s", "env + inference steps/s", "training steps/s")
    for col in (*cols, "env time", "cold start", "× first (env/train)"):
        table.add_column(col, justify="left" if col == "point" else "right")
    for p in bench["points"]:
        if p["error"]:
            table.add_row(p["label"], f"[red]{p['error']}[/red]", "", "", "", "", "")
            continue
        cells = [_rate(p.get(k)) for k in RATES]
        frac = (p.get("train") or {}).get("env_fraction")
        frac = f"{100 * frac:.0f}%" if frac is not None else "–"
        sp = p.get("speedup", {})
        ratio = " / ".join(f"{sp[k]:.2f}" if k in sp else "–" for k in ("env_only", "train"))
        table.add_row(p["label"], *cells, frac, cold_text(p.get("cold_start")), ratio)
    console.print(table)
    for line in bench["findings"]:
        console.print(f"• {line}")


def cold_text(cold: dict[str, Any] | None) -> str:
    return f"{cold['seconds']:.1f} s" if cold else "–"


def _rate(m: dict[str, Any] | None) -> str:
    if not m:
        return "–"
    s = m["steps_per_s"]
    return f"{s['median']:,.0f} [{s['min']:,.0f}–{s['max']:,.0f}]"


def run_bench(manifest: Manifest, run_dir: Path, *, console: Any = None) -> BenchRecord:
    """Benchmark every point, write bench.json and plots/scaling.png, print the table.

    Raises ManifestError before running anything if a sweep point is invalid, and UnitFailed
    after writing the files if a point failed while running.
    """
    from rich.console import Console

    from runner.record.bench import write_bench
    from runner.report import plots

    console = console or Console()
    points = plan(manifest)
    bench = _header(manifest, points)
    results = []
    for i, point in enumerate(points, 1):
        console.print(f"bench {i}/{len(points)}: {point.label}")
        results.append(run_point(point))
    bench["points"] = results
    bench["host"]["load_avg_after"] = list(os.getloadavg())
    analyse(bench)
    bench["findings"] = list(dict.fromkeys(p.note for p in points if p.note)) + bench["findings"]
    costs = [p.pop("harness") for p in results if p.get("harness")]  # the trainers' harnesses
    if costs:
        add_overhead(bench, {k: max(c[k] for c in costs) for k in costs[0]})
    profile_report.add_findings(bench)
    run_dir = Path(run_dir)
    record = BenchRecord.model_validate(bench)
    write_bench(run_dir, record)
    plots.scaling(bench, run_dir / "plots" / "scaling.png")
    profile_report.plot(bench, run_dir / "plots" / "profile.png")
    profile_report.print_table(bench, console)
    print_table(bench, console)
    failed = [p for p in results if p["error"]]
    if failed:
        raise UnitFailed(f"bench: {len(failed)} of {len(results)} points failed; see bench.json")
    return record


def _header(manifest: Manifest, points: list[Point]) -> dict[str, Any]:
    """bench.json's fields known before measuring: the sweep, the settings, the host."""
    spec = manifest.bench
    return {
        "name": manifest.name,
        "axis": axis_info(manifest, points),
        "sweep": spec.sweep,
        "variants": sorted({p.variant for p in points}),
        "settings": {
            "steps": spec.steps,
            "warmup": spec.warmup,
            "repeats": spec.repeats,
            "train": spec.train,
            "flatten_efficiency": FLATTEN_EFFICIENCY,
        },
        "host": {**host_info(), "load_avg_before": list(os.getloadavg())},
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
