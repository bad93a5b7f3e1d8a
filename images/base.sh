#!/bin/sh
# Make a local stand-in for debian:bookworm-slim where no registry is reachable:
# debootstrap a minbase Debian 12 once, cache the tarball, import it into the
# containers storage shared by podman and buildah, and print its digest.
#
#   images/base.sh            -> prints e.g. localhost/rlcrate-base:bookworm@sha256:...
#
# RLCRATE_BASE_CACHE   where the rootfs tarball is kept (default /var/cache/rlcrate)
# RLCRATE_BASE_TAG     the local tag (default localhost/rlcrate-base:bookworm)
# DEBIAN_MIRROR        the Debian archive to bootstrap from (default: debootstrap's own)
# DEBIAN_SECURITY_MIRROR  the security archive for the image's apt sources (default: the archive's
#                      address with /debian-security in place of /debian, Debian's own layout)
set -eu

cache=${RLCRATE_BASE_CACHE:-/var/cache/rlcrate}
tag=${RLCRATE_BASE_TAG:-localhost/rlcrate-base:bookworm}
tarball="$cache/debian-bookworm-minbase.tar"

if ! podman image exists "$tag" 2>/dev/null; then
    if [ ! -s "$tarball" ]; then
        mkdir -p "$cache"
        root=$(mktemp -d "$cache/rootfs.XXXXXX")
        # The rest of the image is pinned by the Dockerfile; the base only needs apt.
        debootstrap --variant=minbase bookworm "$root" ${DEBIAN_MIRROR:+"$DEBIAN_MIRROR"} >&2
        # The suites of the official debian:bookworm-slim image, from the archive debootstrap used.
        mirror=$(awk '$1 == "deb" { print $2; exit }' "$root/etc/apt/sources.list")
        security=${DEBIAN_SECURITY_MIRROR:-$(printf '%s' "$mirror" | sed 's#/debian/*$#/debian-security#')}
        rm -f "$root/etc/apt/sources.list"
        cat > "$root/etc/apt/sources.list.d/debian.sources" <<SRC
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
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
