#!/bin/bash
# md-ppl.sh — md's partial parity log on a uraid RAID5
# (--consistency-policy=ppl):
#  1. mdadm --examine reads the PPL area create laid out (mdadm's: 2048
#     sectors 8 after the 1.2 superblock, feature 0x400);
#  2. `uraid serve` killed with SIGKILL in the middle of random writes:
#     the restart replays the PPL instead of resyncing, and the parity
#     agrees (uraid check) — and so does mdadm --examine's clean mark after
#     a clean stop;
#  3. the write hole, closed: a 4 KiB write to stripe 0's first chunk
#     whose data never reached its member (the kill came between the
#     member writes: its old bytes put back), then the member holding the
#     stripe's second chunk lost.  Degraded, that chunk is rebuilt from
#     parity: with PPL it reads as written before; the same steps on an
#     array without PPL (started with --force) read garbage there, which
#     shows the hole the test would miss;
#  4. the same hole after member 2 (stripe 0's parity) was replaced by a
#     blank one and rebuilt online: the new member takes the log too;
#  5. v1.0 and v1.1 superblocks: mdadm finds the PPL where mdadm puts it
#     (before a 1.0 superblock, after a 1.1 one), and a SIGKILL after a
#     partial write replays it.
. "$(dirname "$0")/nbd-lib.sh"
requires nbdcopy nbdinfo fio mdadm cmp

mk() { # mk NAME POLICY: a 3-member raid5, 64K chunks
    files=()
    for i in 0 1 2; do truncate -s 24M "$tmp/$1.$i"; files+=("$tmp/$1.$i"); done
    "$URAID" create --level=5 --chunk=64 ${2:+--consistency-policy=$2} "${files[@]}" \
        >/dev/null 2>&1 || fail "create $1"
}

# 1. mdadm sees the PPL.
mk a ppl
ex=$(mdadm --examine "${files[0]}" 2>&1) || fail "mdadm --examine: $ex"
grep -q "Feature Map : 0x400" <<<"$ex" || fail "mdadm: no PPL feature: $ex"
grep -q "PPL : 2048 sectors at offset 8 sectors from superblock" <<<"$ex" ||
    fail "mdadm: no PPL area: $ex"
"$URAID" examine "${files[0]}" | grep -q "Consistency Policy : ppl" ||
    fail "uraid examine: no Consistency Policy : ppl"

# 2. SIGKILL mid-write: replay, no resync.
sock=$tmp/a.sock
uri="nbd+unix:///?socket=$sock"
start_server "$sock" "${files[@]}" 2>/dev/null
size=$(nbdinfo --size "$uri")
kill_mid_writes "$server_pid" "$sock" "${files[0]}" --bs=12k --size="$size"
mdadm --examine "${files[0]}" 2>/dev/null | grep -q "State : active" ||
    fail "not marked active after the crash"
start_server "$sock" "${files[@]}" 2>"$tmp/serve.log"
grep -q "replayed [1-9][0-9]* PPL entries" "$tmp/serve.log" ||
    fail "no PPL replay at the restart: $(cat "$tmp/serve.log")"
grep -q "resyncing" "$tmp/serve.log" && fail "resynced although the PPL replayed"
stop_server "$server_pid"
out=$("$URAID" check "${files[@]}" 2>/dev/null) || fail "check after replay: $out"
grep -q "agree" <<<"$out" || fail "check after replay: $out"
for f in "${files[@]}"; do
    mdadm --examine "$f" 2>/dev/null | grep -q "State : clean" || fail "$f not clean after a stop"
done

# 3. The hole: stripe 0 is chunk 0 on member 0, chunk 1 on member 1,
# parity on member 2 (left-symmetric).
hole() { # hole NAME POLICY [rebuilt] -> prints sha256 of chunk 1 as read degraded, and as written
    mk "$1" "$2"
    local off sock=$tmp/$1.sock
    local uri="nbd+unix:///?socket=$sock"
    off=$("$URAID" examine "${files[0]}" | sed -n 's/ *Data Offset : \([0-9]*\) sectors/\1/p')
    start_server "$sock" "${files[@]}" 2>/dev/null
    head -c 131072 /dev/urandom >"$tmp/$1.old"
    nbdcopy --flush "$tmp/$1.old" "$uri" || fail "$1: nbdcopy"
    if [ "${3:-}" = rebuilt ]; then
        stop_server "$server_pid" >&2
        rm "${files[2]}"
        truncate -s 24M "${files[2]}"
        "$URAID" add --no-rebuild "${files[2]}" "${files[0]}" "${files[1]}" >/dev/null 2>&1 ||
            fail "$1: add"
        start_server "$sock" "${files[@]}" 2>/dev/null
        for _ in $(seq 600); do
            "$URAID" examine "${files[2]}" 2>/dev/null | grep -q "Recovery Offset" || break
            sleep 0.05
        done
        "$URAID" examine "${files[2]}" 2>/dev/null | grep -q "Recovery Offset" && fail "$1: no rebuild"
    fi
    dd if="${files[0]}" of="$tmp/$1.m0" bs=512 skip="$off" count=8 2>/dev/null
    head -c 4096 /dev/urandom >"$tmp/$1.new"
    nbdcopy --flush "$tmp/$1.new" "$uri" || fail "$1: nbdcopy new"
    kill -KILL "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    rm -f "$sock"
    # The data write that did not land: member 0's old bytes back.
    dd if="$tmp/$1.m0" of="${files[0]}" bs=512 seek="$off" conv=notrunc 2>/dev/null
    start_server "$sock" --degraded --force "${files[0]}" "${files[2]}" 2>"$tmp/$1.log"
    nbdcopy "$uri" "$tmp/$1.out" || fail "$1: nbdcopy out"
    dd if="$tmp/$1.out" bs=65536 skip=1 count=1 2>/dev/null | sha256sum | cut -d' ' -f1
    stop_server "$server_pid" >&2
    tail -c 65536 "$tmp/$1.old" | sha256sum | cut -d' ' -f1
}
mapfile -t with < <(hole p ppl)
[ "${with[0]}" = "${with[1]}" ] ||
    fail "PPL: chunk 1 rebuilt wrong after the torn write: $(cat "$tmp/p.log")"
grep -q "replayed 1 PPL entries" "$tmp/p.log" || fail "PPL: no replay: $(cat "$tmp/p.log")"
mapfile -t without < <(hole r resync)
[ "${without[0]}" != "${without[1]}" ] ||
    fail "without PPL the torn write left no hole: the test shows nothing"
mapfile -t re < <(hole q ppl rebuilt)
[ "${re[0]}" = "${re[1]}" ] ||
    fail "PPL on a rebuilt parity member: chunk 1 rebuilt wrong: $(cat "$tmp/q.log")"
grep -q "replayed 1 PPL entries" "$tmp/q.log" || fail "PPL, rebuilt member: no replay: $(cat "$tmp/q.log")"
for v in "1.0 -2056" "1.1 8"; do
    read -r ver at <<<"$v"
    files=()
    for i in 0 1 2; do truncate -s 24M "$tmp/v$ver.$i"; files+=("$tmp/v$ver.$i"); done
    "$URAID" create --metadata="$ver" --level=5 --chunk=64 --consistency-policy=ppl \
        "${files[@]}" >/dev/null 2>&1 || fail "create v$ver"
    mdadm --examine "${files[0]}" 2>/dev/null |
        grep -q "PPL : 2048 sectors at offset $at sectors from superblock" ||
        fail "v$ver: mdadm does not find the PPL at $at"
    sock=$tmp/v$ver.sock
    start_server "$sock" "${files[@]}" 2>/dev/null
    head -c 12288 /dev/urandom >"$tmp/v$ver.w"
    nbdcopy --flush "$tmp/v$ver.w" "nbd+unix:///?socket=$sock" || fail "v$ver: nbdcopy"
    kill -KILL "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    rm -f "$sock"
    out=$("$URAID" serve --run true "${files[@]}" 2>&1) || fail "v$ver: restart: $out"
    grep -q "replayed 1 PPL entries" <<<"$out" || fail "v$ver: no replay: $out"
    out=$("$URAID" check "${files[@]}" 2>&1) && grep -q agree <<<"$out" || fail "v$ver: check: $out"
done
echo "ok: PPL seen by mdadm, replayed after SIGKILL, closes the write hole (also on a rebuilt member; v1.0, v1.1)"
