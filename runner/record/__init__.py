"""The run directory and what is recorded in it: atomic file IO, seeds, the run lock, and what the
machine is. The lowest layer: it imports nothing of rlcrate but its errors."""
