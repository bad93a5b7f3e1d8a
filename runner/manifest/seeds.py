"""The command line's seeds: `--seeds` names them (`3`, `0,2`, `0-4`, `0-2,7`), `--num-seeds N`
counts them (seeds 0 to N-1). Both are bounded by the manifest's own limits on seeds before
anything is made of them, and anything else is refused in one line that says what to write.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from runner.errors import UserInputError
from runner.manifest.problems import shorten
from runner.manifest.schema import MAX_SEED, MAX_SEEDS

SEEDS_HELP = "write seeds as 0, 0,2 or 0-4, or --num-seeds N for seeds 0 to N-1"


def _seed_range(part: str, option: str) -> range:
    """One item of `--seeds`: `3` or `0-4`, bounded before anything is made of it."""
    lo, dash, hi = part.partition("-")
    if not all(s.isascii() and s.isdigit() and len(s) <= 20 for s in (lo, *([hi] if dash else []))):
        raise UserInputError(f"{option}: {shorten(part)!r} is not a seed; {SEEDS_HELP}")
    first, last = int(lo), int(hi) if dash else int(lo)
    if max(first, last) > MAX_SEED:
        raise UserInputError(
            f"{option}: seed {max(first, last)} is above the largest seed, {MAX_SEED:,}"
        )
    if last < first:
        raise UserInputError(f"{option}: {part!r} counts down; write {last}-{first}")
    return range(first, last + 1)


def parse_seeds(text: str, option: str = "--seeds") -> list[int]:
    """`3` (seed 3), `0,2` (these seeds), `0-4` (seeds 0 to 4), or a mix (`0-2,7`); a trailing
    comma is allowed (`3,`). UserInputError, one line, on anything else."""
    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        found = _seed_range(part, option)
        if len(seeds) + len(found) > MAX_SEEDS:
            raise UserInputError(
                f"{option}: more than {MAX_SEEDS:,} seeds (the manifest's limit); a run needs "
                "far fewer"
            )
        seeds.extend(found)
    if not seeds:
        raise UserInputError(
            f"{option}: expected at least one seed, got {shorten(text)!r}; {SEEDS_HELP}"
        )
    repeated = sorted(s for s, n in Counter(seeds).items() if n > 1)
    if repeated:
        raise UserInputError(f"{option}: seed {repeated[0]} is given more than once")
    return seeds


def parse_num_seeds(text: str) -> list[int]:
    """`--num-seeds N`: seeds 0 to N-1."""
    count = text.strip()
    if not (
        count.isascii() and count.isdigit() and len(count) <= 9 and 1 <= int(count) <= MAX_SEEDS
    ):
        raise UserInputError(
            f"--num-seeds: expected a count of seeds from 1 to {MAX_SEEDS:,}, got "
            f"{shorten(text)!r}; to name seeds, use --seeds (0, 0,2 or 0-4)"
        )
    return list(range(int(count)))


def seeds_text(seeds: Sequence[int]) -> str:
    """Seeds as `--seeds` takes them, runs of consecutive seeds as ranges (`0-4,7`)."""
    out: list[str] = []
    i = 0
    while i < len(seeds):
        j = i
        while j + 1 < len(seeds) and seeds[j + 1] == seeds[j] + 1:
            j += 1
        out.append(str(seeds[i]) if i == j else f"{seeds[i]}-{seeds[j]}")
        i = j + 1
    return ",".join(out)
