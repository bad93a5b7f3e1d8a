#!/bin/sh
# Build flags for a machine like rlcrate's CI sandbox: no registry, a TLS-intercepting proxy, a
# local wheel folder. Prints `rlcrate image build` options: a debootstrapped local base (images/
# base.sh, cached), and this machine's pip configuration carried into the build: its CA bundle
# and wheel folder (from `pip config list`, or PIP_CERT / PIP_FIND_LINKS) mounted read-only for
# the build only, pip pointed at them through build arguments, and an index URL passed on only
# where the user configured one. Nothing of this lands in the image.
#
#   rlcrate image build cpu --engine buildah $(images/sandbox-flags.sh)
set -eu
here=$(dirname "$0")
PIP=${PIP:-python3 -m pip}
# The value of one `pip config list` key (global.X, then :env:.X), quotes stripped.
pip_config() {
    $PIP config list 2>/dev/null | awk -F= -v k="$1" '
        $1 == "global." k || $1 == ":env:." k { sub(/^[^=]*=/, ""); gsub(/\047/, ""); print; exit }'
}
ca=${PIP_CERT:-$(pip_config cert)}
wheels=${PIP_FIND_LINKS:-$(pip_config find-links)}
index=${PIP_INDEX_URL:-$(pip_config index-url)}
base=$("$here/base.sh")
printf '%s ' --base "$base"
if [ -n "$ca" ] && [ -f "$ca" ]; then
    printf '%s ' --volume "$ca:/run/rlcrate-build/ca.crt:ro" \
        --build-arg PIP_CERT=/run/rlcrate-build/ca.crt
fi
case $index in
    http://* | https://*) printf '%s ' --build-arg "PIP_INDEX_URL=$index" ;;
esac
if [ -n "$wheels" ] && [ -d "$wheels" ]; then
    printf '%s ' --volume "$wheels:/run/rlcrate-build/wheels:ro" \
        --build-arg PIP_FIND_LINKS=/run/rlcrate-build/wheels
fi
echo
