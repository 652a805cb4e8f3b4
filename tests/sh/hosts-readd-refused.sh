#!/bin/bash
# hosts-readd-refused.sh — a host that comes back with a different disk is
# not re-added silently (md's rule, md_readd_check): its member stays
# failed, the serve log says why, `uraid detail --json` counts the refusal,
# and the disk it came back with is not written.
#
# A RAID1 with a write-intent bitmap over hosts 1 and 2 (nbdkit, network
# namespaces, hosts-lib.sh); host 2's link is cut, a write fails its member,
# its file is swapped (rename: nbdkit's next connection opens the new one)
# and the link restored.  Two disks it comes back with:
#  - other: a member of another array (another set UUID);
#  - old:   the same disk as it was before the array's last clean stop
#           (lower events than the bitmap's events_cleared: the bitmap no
#           longer covers what it missed).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hosts-lib.sh"
requires nbdkit python3 qemu-io
hosts_require

opts="timeout=2&reconnect=0.3"
bm=(--bitmap=internal --bitmap-chunk=1M)

refusals() {
    "$URAID" detail --json "$1" | python3 -c '
import json, sys
print(json.load(sys.stdin)["arrays"][0].get("readd", {}).get("refusals", 0))'
}

# write_at SOCK MIB — one 64 KiB write through the array.
write_at() {
    qemu-io -f raw -c "write -P 0x33 ${2}M 64k" "nbd+unix:///?socket=$1" >/dev/null ||
        fail "write at $2 MiB through the array failed"
}

# serve_array NAME — serve NAME's RAID1 over hosts 1 and 2; sets pid, sock, ctl, log.
serve_array() {
    sock=$tmp/$1.sock ctl=$tmp/$1.ctl log=$tmp/$1.log
    rm -f "$sock" "$ctl"
    "$URAID" serve -f --socket "$sock" --control "$ctl" \
        "$(host_uri 1 "$1.img")?$opts" "$(host_uri 2 "$1.img")?$opts" 2>>"$log" &
    pid=$!
    hosts_pids+=("$pid")
    for _ in $(seq 200); do [ -S "$sock" ] && [ -S "$ctl" ] && break; sleep 0.05; done
    [ -S "$ctl" ] || fail "$1: serve did not start: $(cat "$log")"
}

# come_back NAME DISK WHY — host 2 cut, its member failed by a write, its
# file swapped for DISK, the link back: refused for WHY (a log pattern).
come_back() {
    local name=$1 disk=$2 why=$3 st sum
    host_link_down 2
    write_at "$sock" 5
    st=$(role_state "$ctl" 1)
    [[ "$st" == faulty* || "$st" == removed ]] ||
        fail "$name: host 2 cut off and written past, its member is '$st'"
    mv "$disk" "$tmp/h2/$name.img"
    sum=$(md5sum <"$tmp/h2/$name.img")
    host_link_up 2
    wait_log "$log" "$(host_addr 2).*reconnected" ||
        fail "$name: host 2's member did not reconnect: $(cat "$log")"
    wait_log "$log" "$why" || fail "$name: no refusal ('$why') in the log: $(cat "$log")"
    # Past the refusal, the thread tries no more: still failed a while on.
    sleep 1
    st=$(role_state "$ctl" 1)
    [[ "$st" == faulty* || "$st" == removed ]] ||
        fail "$name: the other disk on host 2 was taken in: '$st': $(cat "$log")"
    [ "$(refusals "$ctl")" = 1 ] || fail "$name: $(refusals "$ctl") refusals in detail, not 1"
    grep -q "re-added to role" "$log" && fail "$name: re-added: $(cat "$log")"
    write_at "$sock" 6
    kill -TERM "$pid"
    wait "$pid" || fail "$name: serve exited with $? after SIGTERM: $(cat "$log")"
    [ "$(md5sum <"$tmp/h2/$name.img")" = "$sum" ] ||
        fail "$name: the disk host 2 came back with was written"
    echo "ok: $name: $(grep -o "$why.*" "$log" | head -1)"
}

for i in 1 2; do
    host_add "$i"
    mkdir -p "$tmp/h$i"
    truncate -s 32M "$tmp/h$i/other.img" "$tmp/h$i/old.img"
    host_serve_nbdkit "$i" "$tmp/h$i"
done

# other: host 2 comes back with a member of another array (local files).
"$URAID" create --level=1 "${bm[@]}" --name=other \
    "$(host_uri 1 other.img)?$opts" "$(host_uri 2 other.img)?$opts" >/dev/null 2>"$tmp/c.log" ||
    fail "create other: $(cat "$tmp/c.log")"
truncate -s 32M "$tmp/x1.img" "$tmp/x2.img"
"$URAID" create --level=1 "${bm[@]}" --name=stranger "$tmp/x1.img" "$tmp/x2.img" >/dev/null 2>"$tmp/c.log" ||
    fail "create stranger: $(cat "$tmp/c.log")"
serve_array other
write_at "$sock" 1
come_back other "$tmp/x2.img" "belongs to another array"

# old: host 2's own disk as it was before a clean stop.
"$URAID" create --level=1 "${bm[@]}" --name=old \
    "$(host_uri 1 old.img)?$opts" "$(host_uri 2 old.img)?$opts" >/dev/null 2>"$tmp/c.log" ||
    fail "create old: $(cat "$tmp/c.log")"
cp "$tmp/h2/old.img" "$tmp/old-copy.img"
serve_array old
write_at "$sock" 1
kill -TERM "$pid"
wait "$pid" || fail "old: serve exited with $? after SIGTERM: $(cat "$log")"
serve_array old
write_at "$sock" 2
come_back old "$tmp/old-copy.img" "older than the bitmap's"
