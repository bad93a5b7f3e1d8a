"""brax_ppo's model.zip: the trained parameters (params.npz: arrays, no pickle) and what rebuilds
the policy's networks (config.json, for people to read: loading builds it again from the
manifest, never reads it)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import zipfile
from pathlib import Path
from typing import Any

from runner.backends.base import JaxEnv
from runner.manifest.schema import Manifest


def _networks(config: dict[str, Any]) -> Any:
    from brax.training.acme import running_statistics
    from brax.training.agents.ppo import networks as ppo_networks

    preprocess = (
        running_statistics.normalize
        if config["normalize_observations"]
        else (lambda obs, _params: obs)
    )
    return ppo_networks.make_ppo_networks(
        config["observation_size"],
        config["action_size"],
        preprocess_observations_fn=preprocess,
        **_tuples(config["network"]),
    )


PARAMS_MEMBER = "params.npz"
CONFIG_MEMBER = "config.json"


def save_params(path: Path, params: Any, config: dict[str, Any]) -> None:
    """model.zip: the parameters as named arrays (params.npz, one array per leaf, named by its
    path in the (normalizer, policy, value) tree) and config.json; atomically."""
    import io

    import jax
    import numpy as np

    leaves, _ = jax.tree_util.tree_flatten_with_path(params)
    buf = io.BytesIO()
    named = {jax.tree_util.keystr(k): np.asarray(v) for k, v in leaves}
    np.savez(buf, allow_pickle=False, **named)  # numbers only
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}.zip")
    try:
        with zipfile.ZipFile(tmp, "w") as z:
            z.writestr(PARAMS_MEMBER, buf.getvalue())
            z.writestr(CONFIG_MEMBER, json.dumps(config, indent=2))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _template(config: dict[str, Any]) -> Any:
    """A (normalizer, policy, value) tree of the shapes `config` builds, to read arrays into."""
    import jax
    import jax.numpy as jnp
    from brax.training.acme import running_statistics, specs

    nets = _networks(config)
    key = jax.random.PRNGKey(0)
    size = config["observation_size"]
    obs = (
        {k: specs.Array(tuple(v)[-1:], jnp.dtype("float32")) for k, v in size.items()
         if not k.startswith("pixels/")}
        if isinstance(size, dict)
        else specs.Array((int(size),), jnp.dtype("float32"))
    )  # fmt: skip
    normalizer = running_statistics.init_state(obs)
    return (normalizer, nets.policy_network.init(key), nets.value_network.init(key))


def load_params(path: Path, config: dict[str, Any]) -> Any:
    """model.zip's parameters, as data: the zip's members checked first, the arrays read
    without pickles and fitted into the tree that `config` (built from the manifest, never
    read from the file) makes; RunFileError otherwise."""
    import io

    import jax
    import numpy as np

    from runner.errors import RunFileError
    from runner.record.datafiles import LegacyPickle, check_zip

    with contextlib.suppress(OSError, zipfile.BadZipFile), zipfile.ZipFile(path) as z:
        if "params.pkl" in z.namelist():
            raise LegacyPickle(path, "Brax parameters")
    check_zip(path, {PARAMS_MEMBER, CONFIG_MEMBER}, what="model")
    try:
        with zipfile.ZipFile(path) as z:
            data = z.read(PARAMS_MEMBER)
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            saved = {name: arrays[name] for name in arrays.files}
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise RunFileError(f"{path}: its parameters are not readable as arrays ({exc})") from None
    # the tree's shapes only (jax.eval_shape): building it would run each initializer
    leaves, tree = jax.tree_util.tree_flatten_with_path(jax.eval_shape(lambda: _template(config)))
    out = []
    for keys, like in leaves:
        name = jax.tree_util.keystr(keys)
        arr = saved.pop(name, None)
        if arr is None or arr.shape != tuple(like.shape) or arr.dtype.kind not in "biuf":
            raise RunFileError(f"{path}: its parameter {name} is missing or not {like.shape}")
        out.append(arr)
    if saved:
        raise RunFileError(f"{path}: it holds parameters this network has not: {sorted(saved)[:3]}")
    return jax.tree_util.tree_unflatten(tree, out)


def model_config(cfg: Manifest, task: JaxEnv) -> dict[str, Any]:
    """What builds the policy's networks, from the manifest and its env (saved beside the
    parameters for people to read; loading builds it again, never reads it)."""
    params = dict(cfg.algo.params)
    network = dict(params.pop("network", {}) or {})
    return {
        "env": cfg.env.id, "observation_size": task.observation_size(),
        "action_size": task.action_size, "network": network,
        "normalize_observations": bool(params.get("normalize_observations", False)),
    }  # fmt: skip


def network_factory(network: dict[str, Any]) -> Any:
    """`ppo.train`'s network_factory for the manifest's `network` sizes."""
    from brax.training.agents.ppo import networks as ppo_networks

    return functools.partial(ppo_networks.make_ppo_networks, **_tuples(network))


def _tuples(network: dict[str, Any]) -> dict[str, Any]:
    """Layer sizes come from YAML as lists; Flax wants tuples."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in network.items()}
