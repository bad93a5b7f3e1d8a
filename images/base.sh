#!/bin/sh
# Make a local stand-in for debian:bookworm-slim where no registry is reachable:
# debootstrap a minbase Debian 12 once, cache the tarball, import it into the
# containers storage shared by podman and buildah, and print its digest.
#
#   images/base.sh            -> prints e.g. localhost/rlcrate-base:bookworm@sha256:...
#
# RLCRATE_BASE_CACHE   where the rootfs tarball is kept (default /var/cache/rlcrate)
# RLCRATE_BASE_TAG     the local tag (default localhost/rlcrate-base:bookworm)
# DEBIAN_MIRROR        default http://deb.debian.org/debian
set -eu

cache=${RLCRATE_BASE_CACHE:-/var/cache/rlcrate}
tag=${RLCRATE_BASE_TAG:-localhost/rlcrate-base:bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
tarball="$cache/debian-bookworm-minbase.tar"

if ! podman image exists "$tag" 2>/dev/null; then
    if [ ! -s "$tarball" ]; then
        mkdir -p "$cache"
        root=$(mktemp -d "$cache/rootfs.XXXXXX")
        # The rest of the image is pinned by the Dockerfile; the base only needs apt.
        debootstrap --variant=minbase bookworm "$root" "$mirror" >&2
        # Same apt sources as the official debian:bookworm-slim image.
        rm -f "$root/etc/apt/sources.list"
        cat > "$root/etc/apt/sources.list.d/debian.sources" <<SRC
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
        rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
        tar -C "$root" --numeric-owner -cf "$tarball.tmp" .
        mv "$tarball.tmp" "$tarball"
        rm -rf "$root"
    fi
    podman import --change 'CMD ["/bin/bash"]' "$tarball" "$tag" >&2
fi
digest=$(podman image inspect --format '{{.Digest}}' "$tag")
echo "$tag@$digest"
