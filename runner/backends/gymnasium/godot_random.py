"""Godot's random numbers in NumPy, one stream per array element (the BallChase surrogate's).

RandomNumberGenerator is PCG32 (`thirdparty/misc/pcg.h`, default increment), the same in Godot
3.2+ and 4; `randf` draws twice; sync.gd seeds instance i with `env_seed * 65536 + i`. Checked
against godot3-server 3.2.3 and Godot 4.6.3.
"""

from __future__ import annotations

import numpy as np

f32 = np.float32
_MUL = np.uint64(6364136223846793005)
_INC = np.uint64((1442695040888963407 << 1 | 1) & (2**64 - 1))  # PCG_DEFAULT_INC_64


def _pcg_next(state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """pcg32_random_r over an array of states: (new states, uint32 outputs)."""
    new = state * _MUL + _INC
    xorshifted = (((state >> np.uint64(18)) ^ state) >> np.uint64(27)).astype(np.uint32)
    rot = (state >> np.uint64(59)).astype(np.uint32)
    out = (xorshifted >> rot) | (xorshifted << ((np.uint32(32) - rot) & np.uint32(31)))
    return new, out


def pcg_seed(seeds: np.ndarray) -> np.ndarray:
    """pcg32_srandom_r(seed, DEFAULT_INC) for each seed: RandomNumberGenerator.seed = s."""
    state, _ = _pcg_next(np.zeros(len(seeds), dtype=np.uint64))
    state, _ = _pcg_next(state + np.asarray(seeds, dtype=np.uint64))
    return state


def arena_seeds(seed: int, n: int) -> np.ndarray:
    """The seeds sync.gd gives n instances of one Godot process launched for run seed `seed`
    by the godot backend: env_seed from SeedSequence (launch_argvs), then env_seed * 65536 + i."""
    env_seed = int(np.random.SeedSequence(seed).generate_state(1)[0]) & 0x7FFFFFFF
    return np.array([env_seed * 65536 + i for i in range(n)], dtype=np.uint64)


def randf(state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """RandomPCG::randf of Godot 3.2+: one draw sets the exponent (its leading zeros), a second
    the significand: ldexpf((float)(r2 | 0x80000001), -32 - clz(r1)); 0 if r1 == 0 (one draw)."""
    after1, r1 = _pcg_next(state)
    after2, r2 = _pcg_next(after1)
    bits = np.frexp(r1.astype(np.float64))[1]  # bit length of r1 = 32 - clz(r1)
    value = np.ldexp((r2 | np.uint32(0x80000001)).astype(f32), bits - 64).astype(f32)
    zero = r1 == 0
    return np.where(zero, after1, after2), np.where(zero, f32(0.0), value)
