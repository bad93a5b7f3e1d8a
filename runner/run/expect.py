"""`expect:` claims as an exit status: a run whose claims do not hold exits with 3.

`summary.json` already says, per variant, whether each claim holds; this turns the unmet ones
into one line each and, unless `--no-expect`, into ExpectationsNotMet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.errors import RunnerError

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


def unmet(summary: dict[str, Any]) -> list[str]:
    """`variant: metric op value (got actual)` for every claim that does not hold."""
    return [
        f"expect not met: {name}: {c['metric']} {c['op']} {_num(c['value'])} "
        f"(got {_num(c['actual'])})"
        for name, v in (summary.get("variants") or {}).items()
        for c in v.get("expect") or []
        if c.get("met") is False  # None: no result yet, which is no unmet claim
    ]


def n_claims(summary: dict[str, Any]) -> int:
    return sum(len(v.get("expect") or []) for v in (summary.get("variants") or {}).values())


def gate(run_dir: Path) -> None:
    """Raise ExpectationsNotMet, listing every unmet claim, if any claim of the run fails."""
    from runner.record.rundir import read_json

    lines = unmet(read_json(run_dir / "summary.json") or {})
    if lines:
        total = n_claims(read_json(run_dir / "summary.json") or {})
        raise ExpectationsNotMet(
            f"{len(lines)} of {total} expect: claim(s) not met (exit status {EXIT_EXPECT}; "
            "--no-expect reports without failing)\n" + "\n".join(lines)
        )
