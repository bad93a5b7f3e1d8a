"""`expect:` claims as an exit status: a run whose claims do not hold exits with 3.

`summary.json` already says, per variant, whether each claim holds; this turns the unmet ones
into one line each and, unless `--no-expect`, into ExpectationsNotMet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.errors import RunnerError
from runner.record.summary import RunSummary, read_summary

EXIT_EXPECT = 3


class ExpectationsNotMet(RunnerError):
    """The run finished but some `expect:` claims do not hold. Exit status 3."""

    exit_code = EXIT_EXPECT


def _num(x: Any) -> str:
    if x is None:
        return "no value"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def unmet(summary: RunSummary | None) -> list[str]:
    """`variant: metric op value (got actual)` for every claim that does not hold."""
    return [
        f"expect not met: {name}: {c.metric} {c.op} {_num(c.value)} (got {_num(c.actual)})"
        for name, v in (summary.variants if summary else {}).items()
        for c in v.expect
        if c.met is False  # None: no result yet, which is no unmet claim
    ]


def n_claims(summary: RunSummary | None) -> int:
    return sum(len(v.expect) for v in summary.variants.values()) if summary else 0


def gate(run_dir: Path) -> None:
    """Raise ExpectationsNotMet, listing every unmet claim, if any claim of the run fails."""
    summary = read_summary(run_dir)
    lines = unmet(summary)
    if lines:
        total = n_claims(summary)
        raise ExpectationsNotMet(
            f"{len(lines)} of {total} expect: claim(s) not met (exit status {EXIT_EXPECT}; "
            "--no-expect reports without failing)\n" + "\n".join(lines)
        )
