#!/bin/sh
# Fail in one line when images/<variant>/requirements.lock no longer matches the sha256 that
# images/<variant>/versions.toml records (images/lock.sh writes both; so does Dockerfile.<variant>'s
# LOCK_SHA256, which the image build checks the same way).
#
#   images/check-lock.sh cpu|cuda
set -eu
variant=${1:?usage: images/check-lock.sh cpu|cuda}
cd "$(dirname "$0")/.."
lock=images/$variant/requirements.lock
want=$(sed -n 's/^lock_sha256 = "\([0-9a-f]*\)".*/\1/p' "images/$variant/versions.toml")
have=$(sha256sum "$lock" | cut -d' ' -f1)
if [ "$want" != "$have" ]; then
    echo "$lock does not match the sha256 recorded in images/$variant/versions.toml ($want); regenerate it with 'make lock-$variant' or restore it" >&2
    exit 2
fi
