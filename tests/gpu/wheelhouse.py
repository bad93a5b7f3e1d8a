"""The GPU check's wheelhouse: every wheel `tests/gpu/check_gpu.py` needs beyond what a lent GPU
machine has (Python 3.12 with its own torch and JAX and their dependencies, numpy, onnxruntime,
and no package index), small enough to travel beside the working tree (64 MiB at most).

    .venv/bin/python tests/gpu/wheelhouse.py build [--python 3.12] [--out .cache/gpu-wheels]
    python3 tests/gpu/wheelhouse.py install WHEELS TARGET      (check_gpu.py's first step does this)

`build` (`make gpu-wheels`) downloads the manylinux wheels of NEEDS for that Python at the pins
and hashes of images/cuda/requirements.lock (the CUDA image's lock: torch 2.11, as the machine
has), builds rlcrate's own wheel from this checkout, and writes `wheelhouse.json`: the files,
their sizes, what was left out and why; over LIMIT it fails, after listing the wheels largest
first. `install` puts them into TARGET with
`pip install --no-index --no-deps --target`, except a distribution the machine has at the same or
a newer version (its own copy stays in use); it refuses a wheelhouse whose rlcrate was built from
other sources than the tree beside it (`stale`). Standard library only: `install` runs in the
machine's Python before anything is installed.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.metadata as md
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "images" / "cuda" / "requirements.lock"
LIMIT = 60 * 2**20  # the machine takes 64 MiB of ignored files beside the tree
# torch 2.11's own wheels are manylinux_2_28, so the machine's glibc is at least 2.28.
PLATFORMS = [f"manylinux_2_{v}_x86_64" for v in range(28, 4, -1)] + [
    "manylinux2014_x86_64",
    "manylinux2010_x86_64",
    "manylinux1_x86_64",
]

# What the check imports beyond the machine's own packages, each with why (the lock's pins).
NEEDS = {
    "typer": "rlcrate's command line",
    "click": "Typer's",
    "shellingham": "Typer's",
    "annotated-doc": "Typer's",
    "rich": "rlcrate's output",
    "markdown-it-py": "Rich's",
    "mdurl": "Rich's",
    "pygments": "Rich's",
    "pydantic": "the manifest schema",
    "pydantic-core": "pydantic's",
    "annotated-types": "pydantic's",
    "typing-inspection": "pydantic's",
    "typing-extensions": "pydantic's (torch brings one: the newer stays in use)",
    "pyyaml": "manifests and resolved.yaml",
    "stable-baselines3": "the SB3 steps (PPO, SAC)",
    "gymnasium": "the envs they train on (classic control, MuJoCo)",
    "cloudpickle": "Gymnasium's and SB3's",
    "farama-notifications": "Gymnasium's",
    "tensorboard": "TensorBoard files: torch's SummaryWriter writes them, rlcrate's report reads",
    "protobuf": "TensorBoard's event files",
    "packaging": "TensorBoard's",
    "absl-py": "TensorBoard's (its flags)",
    "mujoco": "the MuJoCo env of the eval.video step and its EGL renderer",
    "pyopengl": "MuJoCo's EGL context (MUJOCO_GL=egl)",
    "glfw": "Gymnasium's MuJoCo renderer imports it (unused with EGL)",
    "imageio": "eval.video's writer",
    "pillow": "eval.video's GIF encoder",
}

# Left out, and why: wheels the check could use but that do not travel or are not needed.
LEFT_OUT = {
    "torch, jax, jaxlib, JAX's CUDA 13 plugin, numpy, scipy and their dependencies": (
        "the machine's own (torch 2.11.0+cu130, JAX 0.11.2): the check uses them"
    ),
    "isaaclab, isaacsim, rsl-rl-lib, newton, warp-lang": (
        "cannot travel: Isaac Lab 3 with Newton and Warp is gigabytes, Isaac Sim's wheels come "
        "only from NVIDIA's own index; the isaaclab and rsl_rl steps run where `make gpu-env` "
        "has built the GPU environment, and say so elsewhere"
    ),
    "brax, flax, optax, orbax-checkpoint, tensorstore, mujoco-mjx": (
        "32 MB together (tensorstore 21, mujoco-mjx 7), over what fits beside the rest; and "
        "rlcrate pins brax 0.14.2 with jax 0.9.2 (brax's PPO calls jax.device_put_replicated, "
        "gone since JAX 0.10), so the machine's JAX 0.11.2 could not train it: the brax step "
        "says which pin does not fit"
    ),
    "envpool, godot-rl (and the Godot binary)": (
        "the scaling step's: env-only rates on the CPU, not a GPU figure; it runs where the "
        "checkout's .venv is"
    ),
    "imageio-ffmpeg": "30 MB of ffmpeg for MP4: the eval.video step writes a GIF (Pillow)",
    "matplotlib, pandas": "report.md's plots, SB3's CSV reader: the check's runs pass --no-report",
    "grpcio, tensorboard-data-server, werkzeug, markdown": (
        "TensorBoard's web server, not the writer and the reader the check uses"
    ),
}


def record_hash(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def stale(wheel: Path, root: Path = ROOT) -> str:
    """Why rlcrate's `wheel` does not hold the package sources of the tree at `root` (a file of
    runner/ changed or gone, a module added), or "" when it does. Read from the wheel's RECORD,
    so what is not in the package (caches, logs) does not count."""
    with zipfile.ZipFile(wheel) as z:
        record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
        rows = [ln.split(",") for ln in z.read(record).decode().splitlines() if ln]
    held = {row[0]: row[1].removeprefix("sha256=") for row in rows if row[0].startswith("runner/")}
    for path, digest in sorted(held.items()):
        file = root / path
        if not file.is_file() or record_hash(file.read_bytes()) != digest:
            return f"{path} is not the wheel's"
    for file in sorted((root / "runner").rglob("*.py")):
        if file.relative_to(root).as_posix() not in held:
            return f"{file.relative_to(root).as_posix()} is not in the wheel"
    return ""


def _pip_here() -> list[str]:
    """How this Python runs pip: its own, else the wheel of it ensurepip bundles, run in place (a
    Python that uv made has no pip); nothing is installed into this Python either way."""
    if importlib.util.find_spec("pip"):
        return [sys.executable, "-m", "pip"]
    import ensurepip

    bundled = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))
    if not bundled:
        raise RuntimeError(f"{sys.executable} has no pip, nor ensurepip's wheel of it")
    return [sys.executable, f"{bundled[-1]}/pip"]


def _pip(*args: str) -> None:
    subprocess.run([*_pip_here(), "--disable-pip-version-check", *args], check=True)


def _own_wheel(src: Path, out: Path) -> None:
    """rlcrate's wheel, built from a copy of the package (setuptools' build/ in the checkout can
    hold modules since removed), checked against the tree."""
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "runner", src / "runner", ignore=shutil.ignore_patterns("__pycache__"))
    _pip("wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(src))
    (wheel,) = out.glob("rlcrate-*.whl")
    if why := stale(wheel):
        raise RuntimeError(f"{wheel.name} does not hold this tree's package: {why}")


def build(out: Path, python: str) -> dict:
    """The wheelhouse for `python` (X.Y) in `out` (emptied first); its wheelhouse.json."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "requirements.txt"
        sel = [str(ROOT / "images" / "lock-select.sh"), str(LOCK), *NEEDS]
        req.write_text(subprocess.run(sel, check=True, capture_output=True, text=True).stdout)
        abi = "cp" + python.replace(".", "")
        plats = [a for p in PLATFORMS for a in ("--platform", p)]
        _pip("download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", python,
             "--implementation", "cp", "--abi", abi, *plats,
             "--require-hashes", "-r", str(req), "-d", str(out))  # fmt: skip
        _own_wheel(Path(tmp) / "src", out)
    wheels = {p.name: p.stat().st_size for p in sorted(out.glob("*.whl"))}
    record = {
        "python": python,
        "wheels": wheels,
        "total_bytes": sum(wheels.values()),
        "limit_bytes": LIMIT,
        "pyproject_sha256": hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest(),
        "needs": NEEDS,
        "left_out": LEFT_OUT,
    }
    (out / "wheelhouse.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def _dist(wheel: str) -> tuple[str, str]:
    """A wheel file's distribution name (normalized) and version (PEP 427)."""
    name, version = wheel.split("-")[:2]
    return re.sub(r"[-_.]+", "-", name).lower(), version


def _release(version: str) -> tuple[int, ...]:
    m = re.match(r"\d+(\.\d+)*", version)
    return tuple(int(x) for x in m.group(0).split(".")) if m else ()


def _machine_has(name: str, version: str) -> str | None:
    """The machine's own version of `name` when it is the same or newer than `version`."""
    try:
        have = md.version(name)
    except md.PackageNotFoundError:
        return None
    return have if _release(have) >= _release(version) else None


def install(wheels: Path, target: Path) -> dict:
    """Install the wheelhouse into `target` (emptied first) for this Python; what it did.
    Raises RuntimeError with one sentence when the wheelhouse does not fit this Python or tree."""
    t0 = time.monotonic()
    meta = json.loads((wheels / "wheelhouse.json").read_text())
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if meta["python"] != here:
        raise RuntimeError(f"{wheels} holds wheels for Python {meta['python']}, this is {here}")
    (ours,) = (w for w in meta["wheels"] if w.startswith("rlcrate-"))
    pyproject = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    why = stale(wheels / ours) or (
        "pyproject.toml is not the one it was built with"
        if pyproject != meta["pyproject_sha256"]
        else ""
    )
    if why:
        raise RuntimeError(f"{wheels}: {ours} was not built from this tree ({why}): "
                           "run `make gpu-wheels` again")  # fmt: skip
    own, chosen = {}, []
    for wheel in meta["wheels"]:
        name, version = _dist(wheel)
        have = _machine_has(name, version) if name != "rlcrate" else None
        if have:
            own[name] = have
        else:
            chosen.append(str(wheels / wheel))
    shutil.rmtree(target, ignore_errors=True)
    _pip("install", "-q", "--no-index", "--no-deps", "--no-compile", "--target", str(target),
         *chosen)  # fmt: skip
    return {
        "pip": " ".join(_pip_here()[1:]),
        "target": str(target),
        "installed": sorted(Path(w).name for w in chosen),
        "machine_has": own,
        "wheelhouse_bytes": meta["total_bytes"],
        "seconds": round(time.monotonic() - t0, 1),
    }


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="download and build the wheels (make gpu-wheels)")
    b.add_argument("--python", default="3.12", help="the machine's Python, X.Y")
    b.add_argument("--out", type=Path, default=ROOT / ".cache" / "gpu-wheels")
    i = sub.add_parser("install", help="install them into TARGET for this Python")
    i.add_argument("wheels", type=Path)
    i.add_argument("target", type=Path)
    a = ap.parse_args()
    if a.cmd == "install":
        print(json.dumps(install(a.wheels, a.target), indent=2))
        return
    record = build(a.out, a.python)
    for name, size in sorted(record["wheels"].items(), key=lambda kv: -kv[1]):
        print(f"{_mib(size):>10}  {name}")
    total = record["total_bytes"]
    print(f"{_mib(total):>10}  in all, {len(record['wheels'])} wheels, in {a.out}")
    for what, why in LEFT_OUT.items():
        print(f"left out: {what}: {why}")
    if total > LIMIT:
        sys.exit(f"the wheelhouse is {_mib(total)}, over {_mib(LIMIT)}: trim NEEDS")


if __name__ == "__main__":
    main()
