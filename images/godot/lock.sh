#!/bin/sh
# Pin Godot 4 again: resolve Debian unstable's `godot` (the engine, run headless) and
# `godot-template-release` (the export template) with every package they need, download them and
# write images/godot/godot4.lock: one line per .deb, "package version sha256". install.sh installs
# exactly that list. Run it when moving to a newer Godot; then update the version in
# images/godot/versions.toml, Dockerfile.cpu and Dockerfile.cuda (tests/images/test_dockerfiles.py
# checks).
#
#   images/godot/lock.sh [PACKAGE=VERSION ...]     (default: godot and godot-template-release,
#                                                   unstable's current versions)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sid-apt.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sid_apt_init "$work"
[ $# -gt 0 ] || set -- godot godot-template-release
sid_write_lock "$here/godot4.lock" "Godot 4 for rlcrate (images/godot/install.sh)" "$@"
