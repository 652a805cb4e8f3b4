#!/bin/bash
# md-crash.sh — `uraid serve` killed with SIGKILL in the middle of random
# writes, on RAID1, RAID5, RAID6 and RAID10.  What must hold afterwards, as
# after a power cut under md:
#  - the superblocks say the array was in use (mdadm --examine: active);
#  - the next writable start resyncs before it serves, so the copies (the
#    parity) agree again: a 4-byte change planted on one member after the
#    crash, where a torn write would leave one, stands for the writes that
#    were in flight, and `uraid check` must find everything consistent;
#  - what was written and flushed before the crash (nbdcopy --flush) reads
#    back unchanged;
#  - after a clean stop the members are marked clean.
. "$(dirname "$0")/nbd-lib.sh"
requires nbdcopy nbdinfo fio mdadm cmp

n=0
for geometry in "1 2" "5 3 --chunk=64" "6 4 --chunk=64" "10 4 --chunk=64 --layout=n2"; do
    read -r level disks opts <<<"$geometry"
    n=$((n + 1))
    files=()
    for i in $(seq "$disks"); do truncate -s 24M "$tmp/c$n.$i"; files+=("$tmp/c$n.$i"); done
    # shellcheck disable=SC2086
    "$URAID" create --level="$level" $opts "${files[@]}" >/dev/null 2>&1 ||
        fail "create $geometry"
    sock=$tmp/s$n.sock
    uri="nbd+unix:///?socket=$sock"
    start_server "$sock" "${files[@]}" 2>/dev/null
    size=$(nbdinfo --size "$uri")
    half=$((size / 2 / 65536 * 65536))
    head -c "$half" /dev/urandom > "$tmp/pattern"
    nbdcopy --flush "$tmp/pattern" "$uri" || fail "$geometry: nbdcopy"

    # Random writes over the second half until the server is killed.
    kill_mid_writes "$server_pid" "$sock" "${files[0]}" --offset="$half" --size=$((size - half))
    mdadm --examine "${files[0]}" 2>/dev/null | grep -q "State : active" ||
        fail "$geometry: not marked active after the crash"

    # A torn write: 4 bytes of one member's data area changed, in the
    # region the random writes covered (7/8 of the way through it).
    ex=$("$URAID" examine "${files[0]}" 2>/dev/null)
    off=$(sed -n 's/ *Data Offset : \([0-9]*\) sectors/\1/p' <<<"$ex")
    avail=$(sed -n 's/ *Avail Dev Size : \([0-9]*\) sectors.*/\1/p' <<<"$ex")
    printf 'XXXX' | dd of="${files[0]}" bs=1 seek=$(( (off + avail * 7 / 8) * 512 + 100 )) \
        conv=notrunc 2>/dev/null

    start_server "$sock" "${files[@]}" 2>"$tmp/serve.log"
    grep -q "not shut down cleanly; resyncing" "$tmp/serve.log" ||
        fail "$geometry: no resync at the restart: $(cat "$tmp/serve.log")"
    nbdcopy "$uri" "$tmp/out" || fail "$geometry: nbdcopy out"
    stop_server "$server_pid"
    cmp -n "$half" "$tmp/pattern" "$tmp/out" || fail "$geometry: flushed data lost"

    out=$("$URAID" check "${files[@]}" 2>/dev/null) || fail "$geometry: check after resync: $out"
    grep -q "agree" <<<"$out" || fail "$geometry: check after resync: $out"
    for f in "${files[@]}"; do
        mdadm --examine "$f" 2>/dev/null | grep -q "State : clean" ||
            fail "$geometry: $f not clean after a clean stop"
    done
    rm -f "${files[@]}" "$tmp/pattern" "$tmp/out"
done
echo "ok: RAID1, RAID5, RAID6 and RAID10 resync after SIGKILL; flushed data kept"
