"""`rlcrate export`: a trained unit's policy as an ONNX file, checked against the model it came
from before it is written.

Two layouts, by the unit's backend:
- `godot-rl`: what godot-rl's Godot plugin loads (its `ONNXModel` inference in the game): inputs
  `obs` (float32, [batch, obs]) and `state_ins` (float32, [batch], unused, kept for the plugin's
  signature), outputs `output` (the action head's raw values: one logit per discrete action, the
  means of continuous ones; the plugin takes the argmax or uses the means) and `state_outs`.
  godot-rl's own exporter (`godot_rl.wrappers.onnx.stable_baselines_export`) does not import with
  the gymnasium this project pins (it imports `gymnasium.vector.utils.spaces`, gone since
  gymnasium 1.0), so rlcrate writes the same graph itself.
- `sb3`: Stable-Baselines3's documented export: input `obs`, output `action`, the deterministic
  action (discrete: its index; continuous: squashed or clipped as `predict` would give it before
  rescaling).

A model trained with `algo.normalize` has its frozen observation statistics folded into the graph
(`(obs - mean) / sqrt(var + eps)`, clipped), so the game feeds raw observations. Nothing in the
run directory is unpickled: the unit's trainer rebuilds the model from `resolved.yaml` and gives
it the zip's weights (its `ExportsPolicy` ability: the sb3 trainer's `sb3/export`).
"""

from runner.export.onnx import LAYOUTS, export_unit

__all__ = ["LAYOUTS", "export_unit"]
