"""Godot processes under supervision, driven through godot-rl's Python protocol code.

`supervisor` owns the OS side (ports, processes, logs, cleanup), `connection` subclasses
godot-rl's `GodotEnv` to add timeouts and clear errors, `vec_env` is the SB3 VecEnv over them.
Nothing here is imported by `runner/__init__.py`; godot_rl and SB3 load only when an env is made.
"""
