#!/bin/bash
# crash-serve.sh — a power cut under `uraid serve`, made by crash members
# (fault:crash=GROUP,cut-after=N: the N-th member write cuts the power of
# the whole group, and each write since a member's last flush is kept,
# dropped or torn), on RAID5 and RAID6, with fio writing at random and
# flushing.  What must hold afterwards, as after a power cut under md:
#  - the members are marked active (dirty), as mdadm --examine reads them;
#  - a writable start without one member is refused, naming the write
#    hole, and changes no byte;
#  - the next writable start with every member resyncs, what was written
#    and flushed in an earlier session reads back, and `uraid check` finds
#    the parity consistent, and mdadm --examine finds them clean after it;
#  - after it, the array read degraded (a member left out, so that its
#    blocks come from parity) still reads that data.
. "$(dirname "$0")/nbd-lib.sh"
requires nbdcopy nbdinfo fio mdadm cmp sha256sum

n=0
for geometry in "5 4 300 7" "6 5 400 11"; do
    read -r level disks cut seed <<<"$geometry"
    # a soak's other seeds (docs/testing.md): another cut, other fates
    base=${URAID_TEST_SEED_BASE:-0}
    seed=$((seed + base)) cut=$((cut + base * 37 % 400))
    n=$((n + 1))
    name=raid$level
    files=() crash=()
    for i in $(seq "$disks"); do
        truncate -s 16M "$tmp/c$n.$i"
        files+=("$tmp/c$n.$i")
        opts=crash=g$n,seed=$seed
        [ "$i" != 1 ] || opts+=,cut-after=$cut # one member says it for the group
        crash+=("fault:$opts:$tmp/c$n.$i")
    done
    "$URAID" create --level="$level" --chunk=64 "${files[@]}" >/dev/null 2>&1 ||
        fail "$name: create"
    sock=$tmp/s$n.sock
    uri="nbd+unix:///?socket=$sock"

    # A clean session: the first 8 MiB written and flushed.
    start_server "$sock" "${files[@]}" 2>/dev/null
    half=$((8 << 20))
    head -c "$half" /dev/urandom > "$tmp/pattern"
    nbdcopy --flush "$tmp/pattern" "$uri" || fail "$name: nbdcopy"
    stop_server "$server_pid" || fail "$name: clean stop"

    # The crash session: random writes past it, a flush every 8, until the
    # cut-after'th member write takes the power away.
    start_server "$sock" "${crash[@]}" 2>/dev/null
    size=$(nbdinfo --size "$uri")
    rc=0
    fio --name=w --ioengine=nbd --uri="$uri" --rw=randwrite --bs=16k --iodepth=8 --fsync=8 \
        --offset="$half" --size=$((size - half)) --time_based --runtime=60 \
        --output=/dev/null >"$tmp/fio.log" 2>&1 || rc=$?
    [ "$rc" != 0 ] || fail "$name: fio ran 60 s through a power cut"
    grep -q "Input/output error" "$tmp/fio.log" || fail "$name: fio: $(tail -3 "$tmp/fio.log")"
    kill -TERM "$server_pid"
    wait "$server_pid" 2>/dev/null || true # it cannot mark the array clean
    rm -f "$sock"
    mdadm --examine "${files[0]}" 2>/dev/null | grep -q "State : active" ||
        fail "$name: not marked active after the power cut"

    # Dirty and degraded: refused writable, naming the hole, nothing written.
    before=$(sha256sum "${files[@]}")
    rc=0
    out=$("$URAID" serve --degraded --run true "${files[@]:1}" 2>&1) || rc=$?
    [ "$rc" != 0 ] || fail "$name: a dirty degraded $name started writable: $out"
    grep -q "write hole" <<<"$out" || fail "$name: the refusal does not name the write hole: $out"
    [ "$(sha256sum "${files[@]}")" = "$before" ] || fail "$name: the refused start wrote"

    # Every member: resynced, the flushed data there, parity consistent.
    start_server "$sock" "${files[@]}" 2>"$tmp/serve.log"
    grep -q "not shut down cleanly; resyncing" "$tmp/serve.log" ||
        fail "$name: no resync at the restart: $(cat "$tmp/serve.log")"
    nbdcopy "$uri" "$tmp/out" || fail "$name: nbdcopy out"
    stop_server "$server_pid" || fail "$name: stop after the resync"
    cmp -n "$half" "$tmp/pattern" "$tmp/out" || fail "$name: flushed data lost"
    out=$("$URAID" check "${files[@]}" 2>&1) || fail "$name: check after the resync: $out"
    grep -q "agree" <<<"$out" || fail "$name: check after the resync: $out"
    for f in "${files[@]}"; do
        mdadm --examine "$f" 2>/dev/null | grep -q "State : clean" ||
            fail "$name: $f not clean after the resync and a clean stop"
    done

    # Degraded, clean now: the first member's blocks come from parity.
    out=$("$URAID" serve --readonly --degraded --run "nbdcopy \"\$uri\" $tmp/out" \
        "${files[@]:1}" 2>&1) || fail "$name: degraded read: $out"
    cmp -n "$half" "$tmp/pattern" "$tmp/out" || fail "$name: degraded read differs"
    rm -f "${files[@]}" "$tmp/pattern" "$tmp/out"
done
echo "ok: RAID5 and RAID6 after a power cut of crash members: refused degraded, resynced, consistent"
