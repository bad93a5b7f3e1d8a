"""The evaluation table as LaTeX (booktabs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.report.markdown import fmt


def write_latex(rows: list[dict[str, Any]], path: Path, caption: str) -> Path:
    """A booktabs table of the evaluation results, ready to \\input into a paper."""

    def esc(s: str) -> str:
        for a, b in (
            ("\\", r"\textbackslash{}"),
            ("&", r"\&"),
            ("%", r"\%"),
            ("$", r"\$"),
            ("#", r"\#"),
            ("_", r"\_"),
            ("{", r"\{"),
            ("}", r"\}"),
        ):
            s = s.replace(a, b)
        return s

    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{esc(caption)}}}",
        r"\begin{tabular}{lrrc}",
        r"\toprule",
        r"Variant & Mean $\pm$ std & IQM [95\% CI] & Seeds \\",
        r"\midrule",
    ]
    for r in rows:
        lo, hi = r["iqm_ci95"]
        lines.append(
            rf"{esc(r['variant'])} & {fmt(r['mean'])} $\pm$ {fmt(r['std'])} & "
            rf"{fmt(r['iqm'])} [{fmt(lo)}, {fmt(hi)}] & {r['n_seeds']} \\"
        )
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    from runner.rundir import write_text_atomic

    write_text_atomic(path, "\n".join(lines), durable=False)
    return path
