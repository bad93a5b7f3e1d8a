"""rlcrate: reproducible reinforcement-learning experiments.

Importing this package must stay cheap: no torch, jax, envpool, godot_rl or ray here.
"""

__version__ = "0.1.0"
