"""`compare_runs`: a paired comparison of two run directories (B − A) in compare.md, written into
a folder of its own, with the manifests' differences listed first."""

from __future__ import annotations

from pathlib import Path

from runner.errors import UserInputError
from runner.report import plots, stats
from runner.report.diff import diff_section
from runner.report.load import Run, load_run
from runner.report.markdown import rel_path, write_md
from runner.report.metrics import curve_groups, eval_rows
from runner.report.sections import eval_section, paired_section, problems_section


def default_compare_dir(run_a: Run, run_b: Run) -> Path:
    """`<runs>/comparisons/<A>--vs--<B>` beside A's run folders, never inside either run."""
    runs_root = run_a.path.resolve().parent.parent
    name = f"{run_a.name}-{run_a.run_id}--vs--{run_b.name}-{run_b.run_id}"
    return runs_root / "comparisons" / name


def run_labels(a: Run, b: Run) -> tuple[str, str]:
    """How the plot and compare.md name the two runs: by name, with the run id when the names are
    the same (a rerun of one manifest), by folder when even those match (a copied run)."""
    if a.name != b.name:
        return a.name, b.name
    if a.run_id != b.run_id:
        return f"{a.name} ({a.run_id})", f"{b.name} ({b.run_id})"
    if a.path.name != b.path.name:
        return f"{a.name} ({a.path.name})", f"{b.name} ({b.path.name})"
    return str(a.path), str(b.path)


def compare_runs(a: Path, b: Path, out: Path | None = None) -> Path:
    """Paired comparison of two run directories with the same seeds (B − A); returns compare.md."""
    run_a, run_b = load_run(a), load_run(b)
    if sorted(run_a.seeds) != sorted(run_b.seeds):
        raise UserInputError(
            f"Cannot compare {a} and {b}: their seeds differ ({run_a.seeds} vs {run_b.seeds}); "
            "a paired comparison needs the same seeds in both runs."
        )
    pairs = [(v, v) for v in run_a.variants if v in run_b.variants]
    if not pairs and len(run_a.variants) == 1 and len(run_b.variants) == 1:
        pairs = [(next(iter(run_a.variants)), next(iter(run_b.variants)))]
    if not pairs:
        raise UserInputError(
            f"Cannot compare {a} and {b}: they share no variant "
            f"({', '.join(run_a.variants)} vs {', '.join(run_b.variants)})."
        )
    out = Path(out) if out else default_compare_dir(run_a, run_b)
    if out.resolve() in (run_a.path.resolve(), run_b.path.resolve()):
        raise UserInputError(f"--out {out}: a comparison is not written into a run directory")
    rows_a = {r["name"]: r for r in eval_rows(run_a)}
    rows_b = {r["name"]: r for r in eval_rows(run_b)}
    name_a, name_b = run_labels(run_a, run_b)
    lines = [
        f"# {name_a} vs {name_b}",
        "",
        f"A = `{run_a.path}`, B = `{run_b.path}`; seeds {sorted(run_a.seeds)}.",
        "",
    ]
    lines += diff_section(run_a.manifest, run_b.manifest, run_a.path, run_b.path)
    renamed = [dict(rows_a[va], variant=f"A {name_a}: {rows_a[va]['variant']}") for va, _ in pairs]
    renamed += [dict(rows_b[vb], variant=f"B {name_b}: {rows_b[vb]['variant']}") for _, vb in pairs]
    lines += eval_section(run_a, renamed)
    for va, vb in pairs:
        diff = stats.paired_differences(rows_a[va]["per_seed"], rows_b[vb]["per_seed"])
        la, lb = rows_a[va]["variant"], rows_b[vb]["variant"]
        lines += paired_section(f"B − A: {lb}", f"A: {la}", [dict(diff, variant=f"B: {lb}")], {})
    groups = {f"A {name_a}: {rows_a[va]['variant']}": curve_groups(run_a)[va] for va, _ in pairs}
    groups |= {f"B {name_b}: {rows_b[vb]['variant']}": curve_groups(run_b)[vb] for _, vb in pairs}
    title = f"A {name_a} vs B {name_b}"
    lc = plots.learning_curves(groups, out / "learning_curves.png", title=title)
    lines += [f"![learning curves]({rel_path(lc, out)})", ""] if lc else []
    return write_md(out / "compare.md", lines + problems_section(run_a) + problems_section(run_b))
