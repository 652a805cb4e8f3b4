#!/bin/bash
# md-takeover-online-sb.sh — the superblocks a level change while serving
# (`uraid grow --level L CONTROL`) leaves are those of the same change
# offline (`uraid grow --level L MEMBER...`, which md-kernel-takeover.sh
# holds to what the kernel's takeover writes), as mdadm --examine reads
# them, field by field but the times, checksums, events and device UUIDs:
# raid1 -> raid5, raid1 -> raid0, raid10 -> raid0, raid5 parity-last ->
# raid0, raid5 -> raid6 --add NEW and raid0 -> raid5 --add NEW (each NEW
# rebuilt: by the serve, and by the offline grow).
. "$(dirname "$0")/nbd-lib.sh"
requires mdadm

sock=$tmp/s.sock ctl=$tmp/s.ctl
examine() { mdadm --examine "$1" | grep -v "^/\|Update Time\|Checksum\|Events\|Device UUID"; }
# row CREATE-OPTS GROW-OPTS N [NEW]: an array of N members made twice, one
# copy changed offline, the other while served; NEW: --add the member after
row() {
    local n=$3 new=${4:-} a=() b=() i out
    rm -rf "$tmp/a" "$tmp/b"
    mkdir "$tmp/a" "$tmp/b"
    for i in $(seq 0 $((n - 1))); do a+=("$tmp/a/m$i"); b+=("$tmp/b/m$i"); done
    for f in "${a[@]}" "$tmp/a/new"; do truncate -s 8M "$f"; done
    # shellcheck disable=SC2086
    "$URAID" create $1 "${a[@]}" >/dev/null 2>&1 || fail "create $1"
    cp --sparse=always "$tmp/a"/m* "$tmp/b/"
    truncate -s 8M "$tmp/b/new"
    # shellcheck disable=SC2086
    out=$("$URAID" grow $2 ${new:+--add "$tmp/b/new"} "${b[@]}" 2>&1) || fail "offline grow $2: $out"
    start_server "$sock" --control "$ctl" "${a[@]}" 2>"$tmp/serve.log"
    # shellcheck disable=SC2086
    out=$("$URAID" grow $2 ${new:+--add "$tmp/a/new"} "$ctl" 2>&1) || fail "grow $2 while serving: $out"
    for _ in $(seq 600); do
        out=$("$URAID" detail "$ctl") || fail "detail"
        grep -q "degraded\|recovering" <<<"$out" || break
        sleep 0.1
    done
    grep -q "degraded\|recovering" <<<"$out" && fail "grow $2 while serving: not whole: $out"
    stop_server "$server_pid" || fail "serve did not stop cleanly: $(tail -5 "$tmp/serve.log")"
    [ -n "$new" ] && a+=("$tmp/a/new") && b+=("$tmp/b/new")
    for i in "${!a[@]}"; do
        diff <(examine "${a[$i]}") <(examine "${b[$i]}") >"$tmp/diff" ||
            fail "$1, grow $2: ${a[$i]##*/}: served and offline differ: $(cat "$tmp/diff")"
    done
    echo "ok: $1 -> grow $2${new:+ --add NEW}: the superblocks of the served change are the offline ones"
}
row "--level=1" "--level 5" 2
row "--level=1" "--level 0" 2
row "--level=10 --layout=n2" "--level 0" 4
row "--level=5 --layout=parity-last" "--level 0" 3
row "--level=5" "--level 6" 3 new
row "--level=0" "--level 5" 3 new
