"""Helpers shared by backends (the contract itself is documented in `__init__.py`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from runner.errors import UserInputError


def unknown_id(
    backend: str, env_id: str, known: Iterable[str], *, limit: int = 12
) -> UserInputError:
    known = sorted(set(known), key=lambda i: ("/" in i, i))  # plain ids before namespaced ones
    close = difflib.get_close_matches(env_id, known, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    shown = ", ".join(known[:limit]) + (
        f", ... ({len(known)} in all)" if len(known) > limit else ""
    )
    return UserInputError(
        f"env.id: '{env_id}' is not an id the {backend} backend knows.{hint} Known ids: {shown}."
    )


def split_envs(n_envs: int, workers: int) -> list[int]:
    """Spread n_envs over workers as evenly as possible (first workers take the remainder)."""
    base, extra = divmod(n_envs, workers)
    return [base + (1 if i < extra else 0) for i in range(workers)]
