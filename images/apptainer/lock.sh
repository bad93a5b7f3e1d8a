#!/bin/sh
# Pin Apptainer again: resolve Debian unstable's `apptainer` (with squashfs-tools, which builds and
# unpacks a .sif) and `squashfuse` (which mounts one without root) with every package they need,
# download them and write images/apptainer/apptainer.lock: one line per .deb, "package version
# sha256". install.sh installs exactly that list. Run it when moving to a newer Apptainer.
#
#   images/apptainer/lock.sh [PACKAGE=VERSION ...]   (default: apptainer and squashfuse,
#                                                     unstable's current versions)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../godot/sid-apt.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sid_apt_init "$work"
[ $# -gt 0 ] || set -- apptainer squashfuse
sid_write_lock "$here/apptainer.lock" "Apptainer for rlcrate (images/apptainer/install.sh)" "$@"
