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
        one = r["n_seeds"] < 2  # a single seed has no spread and no interval: print none
        spread = "" if one else rf" $\pm$ {fmt(r['std'])}"
        ci = "" if one else f" [{fmt(lo)}, {fmt(hi)}]"
        lines.append(
            rf"{esc(r['variant'])} & {fmt(r['mean'])}{spread} & "
            rf"{fmt(r['iqm'])}{ci} & {r['n_seeds']} \\"
        )
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    from runner.record.rundir import write_text_atomic

    write_text_atomic(path, "\n".join(lines), durable=False)
    return path
