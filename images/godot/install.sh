#!/bin/sh
# Install Godot 4 as images/godot/godot4.lock pins it: Debian unstable's engine and export
# template with every library they need, beside their own dynamic loader, into one folder that
# runs on Debian 12 (and any x86_64 Linux): the packages need a newer C library than Debian 12's,
# so the engine's loader and library path are set in the binary itself (patchelf), for that
# process alone; nothing of the system's changes, and a program the game starts runs as usual.
#
#   images/godot/install.sh [PREFIX]
#
# PREFIX   default /opt/rlcrate/godot-<version> as root, else ~/.local/share/rlcrate/godot-<version>
# Leaves   PREFIX/bin/godot4 (the engine), PREFIX/templates/<version>.stable/linux_release.x86_64
#          (the export template, as Godot names it), PREFIX/install.json (what rlcrate reads: the
#          loader and library folders an exported game needs beside it), and a link
#          $RLCRATE_GODOT_LINK_DIR/godot4 (default /usr/local/bin as root, else ~/.local/bin).
# Needs    apt-get, dpkg-deb, patchelf, sha256sum; a Debian archive (see sid-apt.sh).
# Every .deb is checked against the lock's SHA-256 before anything is unpacked; the folder is
# built beside PREFIX and moved into place whole; an install of the same lock is a no-op.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lock="$here/godot4.lock"
[ "$(uname -m)" = x86_64 ] || { echo "images/godot/install.sh: the lock pins amd64 packages; on $(uname -m), install Godot 4.6 from Godot's own releases and set RLCRATE_GODOT" >&2; exit 2; }
for tool in apt-get dpkg-deb patchelf sha256sum; do
    command -v "$tool" >/dev/null || { echo "images/godot/install.sh needs $tool (apt-get install ${tool%-get})" >&2; exit 2; }
done
version=$(awk '$1 == "godot" { v = $2; sub(/\+.*/, "", v); print v }' "$lock")
lock_sha=$(sha256sum "$lock" | cut -d' ' -f1)
# What made an install: the lock and these scripts (a changed script installs again).
made_by=$(cat "$lock" "$0" "$here/sid-apt.sh" | sha256sum | cut -d' ' -f1)
if [ "$(id -u)" = 0 ]; then
    prefix=${1:-/opt/rlcrate/godot-$version}; links=${RLCRATE_GODOT_LINK_DIR:-/usr/local/bin}
else
    prefix=${1:-$HOME/.local/share/rlcrate/godot-$version}; links=${RLCRATE_GODOT_LINK_DIR:-$HOME/.local/bin}
fi
link() { mkdir -p "$links" && ln -sfn "$prefix/bin/godot4" "$links/godot4"; }
if grep -q "\"made_by\": \"$made_by\"" "$prefix/install.json" 2>/dev/null; then
    link; echo "Godot $version is installed in $prefix ($links/godot4)"; exit 0
fi

. "$here/sid-apt.sh"
mkdir -p "$(dirname "$prefix")"
work=$(mktemp -d "$prefix.new.XXXXXX")
trap 'rm -rf "$work"' EXIT
sid_apt_init "$work/apt"
root="$work/root"
sid_unpack_lock "$lock" "$root" Godot
rm -rf "$work/apt"
# Mesa's drivers (LLVM, gallium, its GBM backend and video drivers, 220 MB) come as dependencies
# but are reached only through GBM/EGL on a DRM display: headless Godot draws nothing, and under
# Xvfb the system's own GL driver draws (GLX). They are left out.
lib="$root/usr/lib/x86_64-linux-gnu"
rm -rf "$lib"/libLLVM* "$lib"/libgallium* "$lib"/libz3.so* "$lib/dri" "$lib/gbm"

# The paths written into the binaries are the final ones (PREFIX), not this folder's.
sid_bundle "$root" "$prefix/root" usr/bin/godot
mkdir -p "$work/bin" "$work/templates/$version.stable"
mv "$root/usr/bin/godot" "$work/bin/godot4"
ln -s "../../root/usr/bin/godot-template-release" "$work/templates/$version.stable/linux_release.x86_64"
libs=$(for d in $SID_LIBDIRS; do printf '"%s", ' "$d"; done | sed 's/, $//')
cat > "$work/install.json" <<JSON
{
  "godot": "$version",
  "lock_sha256": "$lock_sha",
  "made_by": "$made_by",
  "engine": "$prefix/bin/godot4",
  "template": "$prefix/templates/$version.stable/linux_release.x86_64",
  "loader": "$SID_LOADER",
  "library_path": [$libs]
}
JSON
chmod -R a+rX "$work"
rm -rf "$prefix.old"
[ -e "$prefix" ] && mv "$prefix" "$prefix.old"
mv "$work" "$prefix"
trap - EXIT
rm -rf "$prefix.old"
"$prefix/bin/godot4" --version >/dev/null || { echo "the installed $prefix/bin/godot4 does not start" >&2; exit 1; }
link
echo "installed Godot $("$prefix/bin/godot4" --version) in $prefix ($links/godot4)"
