#!/bin/sh
# Install Apptainer as images/apptainer/apptainer.lock pins it: Debian unstable's apptainer, with
# squashfs-tools (builds and unpacks a .sif) and squashfuse (mounts one without root) and every
# library they need, beside their own dynamic loader, into one folder that runs on Debian 12 (the
# packages need a newer C library than Debian 12's: patchelf sets each program's loader and
# library path, for that process alone). Nothing of the system's changes; `rlcrate image export
# --format sif` and `rlcrate run --image FILE.sif` use it through the link on PATH.
#
#   images/apptainer/install.sh [PREFIX]
#
# PREFIX   default /opt/rlcrate/apptainer-<version> as root, else
#          ~/.local/share/rlcrate/apptainer-<version>
# Leaves   PREFIX/root/usr/bin/apptainer, PREFIX/install.json, and a link
#          $RLCRATE_APPTAINER_LINK_DIR/apptainer (default /usr/local/bin as root, else ~/.local/bin).
# Needs    apt-get, dpkg-deb, patchelf, sha256sum; a Debian archive (see ../godot/sid-apt.sh).
#
# Debian builds Apptainer without its setuid starter, which makes it relocatable: the binary
# finds its configuration (apptainer.conf, unchanged from Debian's) and helpers from where it
# lies, PREFIX/root/usr/etc/apptainer and PREFIX/root/usr/lib/x86_64-linux-gnu/apptainer/bin
# (mksquashfs, unsquashfs and squashfuse go there, so Apptainer finds these before any on PATH).
# Its starter looks one folder higher for etc/ and var/ (Debian's libexec is lib/<triplet>):
# two links say where they are. As root, Apptainer mounts a .sif through a loop device; anyone
# else needs unprivileged user namespaces (and squashfuse). No file is setuid.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lock="$here/apptainer.lock"
[ "$(uname -m)" = x86_64 ] || { echo "images/apptainer/install.sh: the lock pins amd64 packages; on $(uname -m), install Apptainer >= 1.2 from its own releases" >&2; exit 2; }
for tool in apt-get dpkg-deb patchelf sha256sum; do
    command -v "$tool" >/dev/null || { echo "images/apptainer/install.sh needs $tool (apt-get install ${tool%-get})" >&2; exit 2; }
done
version=$(awk '$1 == "apptainer" { v = $2; sub(/-[^-]*$/, "", v); print v }' "$lock")
lock_sha=$(sha256sum "$lock" | cut -d' ' -f1)
# What made an install: the lock and these scripts (a changed script installs again).
made_by=$(cat "$lock" "$0" "$here/../godot/sid-apt.sh" | sha256sum | cut -d' ' -f1)
if [ "$(id -u)" = 0 ]; then
    prefix=${1:-/opt/rlcrate/apptainer-$version}; links=${RLCRATE_APPTAINER_LINK_DIR:-/usr/local/bin}
else
    prefix=${1:-$HOME/.local/share/rlcrate/apptainer-$version}
    links=${RLCRATE_APPTAINER_LINK_DIR:-$HOME/.local/bin}
fi
binary="$prefix/root/usr/bin/apptainer"
link() { mkdir -p "$links" && ln -sfn "$binary" "$links/apptainer"; }
if grep -q "\"made_by\": \"$made_by\"" "$prefix/install.json" 2>/dev/null; then
    link; echo "Apptainer $version is installed in $prefix ($links/apptainer)"; exit 0
fi

. "$here/../godot/sid-apt.sh"
mkdir -p "$(dirname "$prefix")"
work=$(mktemp -d "$prefix.new.XXXXXX")
trap 'rm -rf "$work"' EXIT
sid_apt_init "$work/apt"
root="$work/root"
sid_unpack_lock "$lock" "$root" Apptainer
rm -rf "$work/apt"

usr="$root/usr"
internal=lib/x86_64-linux-gnu/apptainer/bin
for tool in mksquashfs unsquashfs squashfuse squashfuse_ll; do
    mv "$usr/bin/$tool" "$usr/$internal/$tool"
done
# The paths written into the programs are the final ones (PREFIX), not this folder's.
sid_bundle "$root" "$prefix/root" usr/bin/apptainer \
    $(for tool in starter mksquashfs unsquashfs squashfuse squashfuse_ll; do echo "usr/$internal/$tool"; done)
mkdir -p "$usr/etc"
mv "$root/etc/apptainer" "$usr/etc/apptainer"
mkdir -p "$usr/var/lib/apptainer/mnt/session"
ln -s ../etc "$usr/lib/etc"
ln -s ../var "$usr/lib/var"
find "$root" -type f -perm /6000 -exec chmod ug-s {} +
cat > "$work/install.json" <<JSON
{
  "apptainer": "$version",
  "lock_sha256": "$lock_sha",
  "made_by": "$made_by",
  "binary": "$binary",
  "config": "$prefix/root/usr/etc/apptainer/apptainer.conf"
}
JSON
chmod -R a+rX "$work"
rm -rf "$prefix.old"
[ -e "$prefix" ] && mv "$prefix" "$prefix.old"
mv "$work" "$prefix"
trap - EXIT
rm -rf "$prefix.old"
"$binary" --version >/dev/null || { echo "the installed $binary does not start" >&2; exit 1; }
"$binary" buildcfg | grep -qx "APPTAINER_CONF_FILE=$prefix/root/usr/etc/apptainer/apptainer.conf" \
    || { echo "the installed $binary does not find its configuration in $prefix" >&2; exit 1; }
link
echo "installed $("$binary" --version) in $prefix ($links/apptainer)"
