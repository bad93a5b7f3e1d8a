# Sourced by images/godot/lock.sh and install.sh: apt working on Debian's unstable suite (sid) in a
# private folder ($SID_APT), beside the machine's own apt (its sources, state and cache untouched).
#
# The archive is the machine's own Debian source (the first `URIs:` or `deb` line of its apt
# sources naming a Debian archive), unless RLCRATE_DEBIAN_URI names another: a mirror, a proxy, or
# Debian's snapshot archive of the day images/godot/godot4.lock was made, once unstable has moved
# on from the pinned versions. Nothing else is read from the machine's apt configuration.
#
# Unstable's Release file can be past its Valid-Until date on a mirror that is not updated every
# day (a frozen mirror, a snapshot), which apt refuses by default; signatures are still checked
# (Signed-By: the Debian archive keyring), only the date is not.

sid_uri() {
    if [ -n "${RLCRATE_DEBIAN_URI:-}" ]; then printf '%s\n' "$RLCRATE_DEBIAN_URI"; return; fi
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }' "$f"
    done | head -n 1 | grep . && return
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
        | awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\/.*\/debian\/?$/) { print $i; exit } }' \
        | head -n 1 | grep . && return
    echo "no Debian archive in this machine's apt sources: set RLCRATE_DEBIAN_URI to one" >&2
    return 1
}

sid_apt_init() {  # $1: the private folder
    SID_APT=$1
    keyring=${RLCRATE_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
    [ -f "$keyring" ] || { echo "no Debian archive keyring at $keyring (apt-get install debian-archive-keyring, or set RLCRATE_DEBIAN_KEYRING)" >&2; return 1; }
    uri=$(sid_uri) || return 1
    mkdir -p "$SID_APT/lists/partial" "$SID_APT/archives/partial" "$SID_APT/log"
    : > "$SID_APT/status"
    printf 'deb [signed-by=%s] %s sid main\n' "$keyring" "$uri" > "$SID_APT/sources.list"
    SID_APT_OPTS="-o Dir::Etc::SourceList=$SID_APT/sources.list -o Dir::Etc::SourceParts=/nonexistent
        -o Dir::Etc::Preferences=/nonexistent -o Dir::Etc::PreferencesParts=/nonexistent
        -o Dir::State::Lists=$SID_APT/lists -o Dir::State::status=$SID_APT/status
        -o Dir::Cache=$SID_APT -o Dir::Cache::Archives=$SID_APT/archives -o Dir::Log=$SID_APT/log
        -o Debug::NoLocking=1 -o APT::Sandbox::User=$(id -un)
        -o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false
        -o APT::Install-Suggests=false -o APT::Architecture=amd64 -o APT::Architectures=amd64"
    # shellcheck disable=SC2086
    apt-get -q $SID_APT_OPTS update >"$SID_APT/log/update.log" 2>&1 \
        || { tail -n 5 "$SID_APT/log/update.log" >&2; echo "apt-get update of Debian unstable at $uri failed" >&2; return 1; }
}

sid_apt_get() {  # apt-get with the private folder's options, then the arguments
    # shellcheck disable=SC2086
    apt-get -q $SID_APT_OPTS "$@"
}
