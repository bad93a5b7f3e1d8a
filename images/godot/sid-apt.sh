# Sourced by images/godot/lock.sh and install.sh, and images/apptainer/'s: apt working on Debian's
# unstable suite (sid) in a private folder ($SID_APT), beside the machine's own apt (its sources,
# state and cache untouched); a lock of the packages resolved there written (sid_write_lock), its
# packages fetched, checked and unpacked (sid_unpack_lock), and the programs among them pointed at
# their own dynamic loader and libraries (sid_bundle), so that they run on Debian 12.
#
# The archive is the machine's own Debian source (the first `URIs:` or `deb` line of its apt
# sources naming a Debian archive), unless RLCRATE_DEBIAN_URI names another: a mirror, a proxy, or
# Debian's snapshot archive of the day a lock (images/godot/godot4.lock) was made, once unstable has moved
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

sid_write_lock() {  # $1: the lock file, $2: its first comment line; then the packages to resolve
    out=$1; title=$2; shift 2
    sid_apt_get install -y --download-only "$@" >"$SID_APT/log/install.log" 2>&1 \
        || { tail -n 20 "$SID_APT/log/install.log" >&2; return 1; }
    date=$(sed -n 's/^Date: //p' "$SID_APT"/lists/*_sid_InRelease | head -n 1)
    {
        echo "# $title: Debian unstable's packages as resolved"
        echo "# by images/$(basename "$(cd "$(dirname "$0")" && pwd)")/$(basename "$0") for: $*"
        echo "# from the archive's index of $date (amd64), one .deb a line: package version sha256."
        echo "# Once unstable has moved on, these versions are in Debian's snapshot archive of that day."
        for deb in "$SID_APT"/archives/*.deb; do
            printf '%s %s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
                "$(sha256sum "$deb" | cut -d' ' -f1)"
        done | sort
    } > "$out.new"
    mv "$out.new" "$out"
    echo "wrote $out: $(grep -vc '^#' "$out") packages"
}

sid_unpack_lock() {  # $1: a lock, $2: the folder to unpack into, $3: what it pins (for messages)
    lock=$1; root=$2
    pins=$(awk '!/^#/ && NF == 3 { printf "%s=%s ", $1, $2 }' "$lock")
    # shellcheck disable=SC2086
    sid_apt_get install -y --download-only $pins >"$SID_APT/log/install.log" 2>&1 || {
        tail -n 5 "$SID_APT/log/install.log" >&2
        echo "the pinned $3 packages could not be downloaded from Debian unstable; if it has moved on, set RLCRATE_DEBIAN_URI to Debian's snapshot archive of the day in $lock" >&2
        return 1
    }
    mkdir -p "$root"
    for deb in "$SID_APT"/archives/*.deb; do
        name=$(dpkg-deb -f "$deb" Package); ver=$(dpkg-deb -f "$deb" Version)
        want=$(awk -v p="$name" -v v="$ver" '$1 == p && $2 == v { print $3 }' "$lock")
        got=$(sha256sum "$deb" | cut -d' ' -f1)
        [ -n "$want" ] || { echo "$name $ver was downloaded but is not in $lock" >&2; return 1; }
        [ "$want" = "$got" ] || { echo "$name $ver: SHA-256 $got, the lock says $want" >&2; return 1; }
        dpkg-deb -x "$deb" "$root"
    done
    [ "$(ls "$SID_APT"/archives/*.deb | wc -l)" = "$(grep -vc '^#' "$lock")" ] \
        || { echo "the download does not hold every package of $lock" >&2; return 1; }
    rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/locale" \
        "$root/usr/share/lintian" "$root/usr/share/bug"
}

# $1: an unpacked root (sid_unpack_lock), $2: the path it will have once installed; then its
# programs (paths inside it). Each gets the root's dynamic loader as its interpreter and the root's
# library folders as its RPATH, written as final paths; a library's own RUNPATH would stop the
# program's from applying to what it loads (libpulse's names /usr/lib/...), so it is removed and
# every library is found in the root first. Sets SID_LOADER and SID_LIBDIRS (the final paths).
sid_bundle() {
    root=$1; final=$2; shift 2
    SID_LOADER="$final/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    dirs=$(cd "$root" && find usr/lib -name '*.so*' \( -type f -o -type l \) ! -path '*/gconv/*' -printf '%h\n' | sort -u)
    SID_LIBDIRS=$(for d in $dirs; do printf '%s ' "$final/$d"; done)
    rpath=$(for d in $SID_LIBDIRS; do printf '%s:' "$d"; done | sed 's/:$//')
    find "$root/usr/lib" -name '*.so*' -type f ! -path '*/gconv/*' | while read -r so; do
        [ -n "$(patchelf --print-rpath "$so" 2>/dev/null)" ] && patchelf --remove-rpath "$so"
        true
    done
    for program in "$@"; do
        patchelf --set-interpreter "$SID_LOADER" --force-rpath --set-rpath "$rpath" "$root/$program" || return 1
    done
}
