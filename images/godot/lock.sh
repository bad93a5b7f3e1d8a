#!/bin/sh
# Pin Godot 4 again: resolve Debian unstable's `godot` (the engine, run headless) and
# `godot-template-release` (the export template) with every package they need, download them and
# write images/godot/godot4.lock: one line per .deb, "package version sha256". install.sh installs
# exactly that list. Run it when moving to a newer Godot; then update the version in
# images/godot/versions.toml, Dockerfile.cpu and Dockerfile.cuda (tests/test_dockerfiles.py checks).
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
sid_apt_get install -y --download-only "$@" >"$work/log/install.log" 2>&1 \
    || { tail -n 20 "$work/log/install.log" >&2; exit 1; }
date=$(sed -n 's/^Date: //p' "$work"/lists/*_sid_InRelease | head -n 1)
{
    echo "# Godot 4 for rlcrate (images/godot/install.sh): Debian unstable's packages as resolved"
    echo "# by images/godot/lock.sh for: $*"
    echo "# from the archive's index of $date (amd64), one .deb a line: package version sha256."
    echo "# Once unstable has moved on, these versions are in Debian's snapshot archive of that day."
    for deb in "$work"/archives/*.deb; do
        printf '%s %s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
            "$(sha256sum "$deb" | cut -d' ' -f1)"
    done | sort
} > "$here/godot4.lock.new"
mv "$here/godot4.lock.new" "$here/godot4.lock"
echo "wrote $here/godot4.lock: $(grep -vc '^#' "$here/godot4.lock") packages"
