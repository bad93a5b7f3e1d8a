#!/bin/sh
# Build flags for a machine like rlcrate's CI sandbox: no registry, a TLS-intercepting proxy, a
# local wheel folder. Prints `rlcrate image build` options: a debootstrapped local base (images/
# base.sh, cached), this machine's CA bundle and wheel folder mounted read-only for the build
# only, and pip pointed at them through build arguments. Nothing of this lands in the image.
#
#   rlcrate image build cpu --engine buildah $(images/sandbox-flags.sh)
set -eu
here=$(dirname "$0")
ca=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}
wheels=${PIP_FIND_LINKS:-/opt/wheels}
printf '%s ' --base "$("$here/base.sh")" \
    --volume "$ca:/run/rlcrate-build/ca.crt:ro" --build-arg PIP_CERT=/run/rlcrate-build/ca.crt \
    --build-arg PIP_EXTRA_INDEX_URL=https://pypi.org/simple
if [ -d "$wheels" ]; then
    printf '%s ' --volume "$wheels:/run/rlcrate-build/wheels:ro" \
        --build-arg PIP_FIND_LINKS=/run/rlcrate-build/wheels
fi
echo
