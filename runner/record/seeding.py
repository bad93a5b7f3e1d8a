"""One master seed per unit derives every lower seed, with NumPy's SeedSequence.

The variant does not enter the derivation: seed 3 of every variant sees the same env seeds and
network initialisation, which is what makes comparisons across variants paired.
"""

from __future__ import annotations

import random

import numpy as np

STREAMS = ("python", "numpy", "torch", "model", "env", "eval_env")


def derive(master: int) -> dict[str, int]:
    state = np.random.SeedSequence(master).generate_state(len(STREAMS), dtype=np.uint32)
    return {name: int(v) & 0x7FFFFFFF for name, v in zip(STREAMS, state, strict=True)}


def seed_everything(
    seeds: dict[str, int], *, torch_threads: int = 1, with_torch: bool = True
) -> None:
    """Seed Python's and NumPy's generators, and torch's (with its thread count) unless the
    trainer runs no torch (`with_torch=False`: nothing imports it)."""
    random.seed(seeds["python"])
    np.random.seed(seeds["numpy"])
    if not with_torch:
        return
    import torch

    torch.manual_seed(seeds["torch"])
    torch.set_num_threads(torch_threads)
