#!/bin/sh
# Print the requirement blocks (the pin and its --hash lines) of the named packages from a lock
# made by images/lock.sh, for installing a few of its packages with hashes checked:
#
#   images/lock-select.sh images/cuda/requirements.lock setuptools wheel
set -eu
lock=${1:?usage: images/lock-select.sh LOCK NAME...}
shift
for name in "$@"; do
    awk -v n="$name" 'BEGIN { IGNORECASE = 1 }
        $0 ~ "^" n "==" { p = 1 }
        p { print }
        p && !/\\$/ { p = 0; found = 1 }
        END { if (!found) { print "images/lock-select.sh: " n " is not in the lock" > "/dev/stderr"; exit 2 } }' "$lock"
done
