#!/bin/bash
# md-bitmap-grow.sh — `uraid grow --bitmap=internal|none` on an existing
# array (mdadm --grow --bitmap's), offline, read back with mdadm:
#  - a RAID5 made without a bitmap and filled gets one (1 MiB chunks):
#    mdadm -E shows it 8 sectors after the superblock, mdadm -X its chunk,
#    0 dirty, events equal to the superblock's (raised by one);
#  - it is kept: three writes, SIGKILL, exactly those chunks dirty, the
#    restart resyncs those 3 only, check agrees, the data is the client's;
#  - --bitmap=none takes it away (mdadm -E: no bitmap), the data stays;
#  - a 1.0 RAID1 gets it below the superblock (negative offset), with
#    --write-behind=100 (mdadm -X: "Allow write behind, max 100"), kept;
#  - an array left active (not clean) gets every bit set;
#  - on a served RAID1 (through its control socket): added while it
#    serves, one write after, SIGKILL: that chunk alone dirty and resynced;
#    removed while it serves the next time (mdadm -E: none);
#  - refused, no file changed: raid0, a member left out, a bitmap already
#    there, none to remove, write-behind on raid5, --bitmap with -n.
. "$(dirname "$0")/md-lib.sh"
. "$(dirname "$0")/bitmap-lib.sh"
requires mdadm qemu-io nbdinfo nbdcopy od
SIZE=32M

# RAID5 on 3, 64 KiB chunks: array MiB 2k is member MiB k (bitmap chunk k).
make_array r5 5 3 --chunk=64 --bitmap=none
r5=("${files[@]}")
ev0=$(mdadm --examine "${r5[0]}" | bm_field Events)
out=$("$URAID" grow --bitmap=internal --bitmap-chunk=1M "${r5[@]}" 2>&1) || fail "r5: grow: $out"
grep -q "bitmap added" <<<"$out" || fail "r5: grow said: $out"
for f in "${r5[@]}"; do
    e=$(mdadm --examine "$f")
    grep -q "Internal Bitmap : 8 sectors from superblock" <<<"$e" || fail "r5: $f: mdadm -E: $e"
    [ "$(bm_field Events <<<"$e")" = $((ev0 + 1)) ] || fail "r5: $f: events not raised by one"
    x=$(examine_bitmap "$f" 16)
    grep -q "Chunksize : 1 MB" <<<"$x" || fail "r5: $f: mdadm -X: $x"
    grep -q " 0 dirty" <<<"$x" || fail "r5: $f: dirty after grow: $x"
    [ "$(bm_field Events <<<"$x")" = $((ev0 + 1)) ] || fail "r5: $f: bitmap events: $x"
done
sock=$tmp/s.sock
start_server "$sock" "${r5[@]}" 2>"$tmp/serve.log"
qemu-io -f raw -c "write -P 0x41 6M 64k" -c "write -P 0x42 20M 64k" -c "write -P 0x43 40M 64k" \
    -c flush "nbd+unix:///?socket=$sock" >/dev/null || fail "r5: qemu-io"
kill -KILL "$server_pid"
wait "$server_pid" 2>/dev/null || true
rm -f "$sock"
for f in "${r5[@]}"; do
    [ "$(dirty_chunks "$f" 8192)" = "3 10 20 " ] ||
        fail "r5: $f: dirty chunks '$(dirty_chunks "$f" 8192)', expected 3 10 20"
done
for p in "6M:41" "20M:42" "40M:43"; do
    printf "\\x${p#*:}%.0s" $(seq 65536) |
        dd of="$tmp/r5.data" bs=1M seek="${p%M:*}" conv=notrunc 2>/dev/null
done
start_server "$sock" "${r5[@]}" 2>"$tmp/serve.log"
stop_server "$server_pid" || fail "r5: stop"
rm -f "$sock"
grep -q "resyncing the 3 of [0-9]* write-intent bitmap chunks" "$tmp/serve.log" ||
    fail "r5: not a bitmap resync of 3 chunks: $(cat "$tmp/serve.log")"
verify r5 "$tmp/r5.data" "${r5[@]}"
out=$("$URAID" grow --bitmap=none "${r5[@]}" 2>&1) || fail "r5: --bitmap=none: $out"
mdadm --examine "${r5[0]}" | grep -q "Internal Bitmap" && fail "r5: bitmap still there after none"
"$URAID" serve --run true "${r5[@]}" 2>"$tmp/serve.log" || fail "r5: serve after none"
grep -q "bitmap" "$tmp/serve.log" && fail "r5: serve after none: $(cat "$tmp/serve.log")"
verify r5 "$tmp/r5.data" "${r5[@]}"
echo "ok: RAID5: a bitmap added (mdadm -E/-X), kept through a crash (3 chunks resynced), removed"

# v1.0 RAID1: below the superblock; write-behind in its header.
truncate -s "$SIZE" "$tmp/e.0" "$tmp/e.1"
"$URAID" create --level=1 --metadata=1.0 --bitmap=none "$tmp/e.0" "$tmp/e.1" >/dev/null 2>&1 ||
    fail "v1.0: create"
out=$("$URAID" grow --bitmap=internal --write-behind=100 "$tmp/e.0" "$tmp/e.1" 2>&1) ||
    fail "v1.0: grow: $out"
e=$(mdadm --examine "$tmp/e.0")
grep -q "Internal Bitmap : -[0-9]* sectors from superblock" <<<"$e" || fail "v1.0: mdadm -E: $e"
at=$(( $(field "$tmp/e.0" "Super Offset") + $(sed -n 's/.*Internal Bitmap : \(-[0-9]*\) .*/\1/p' <<<"$e") ))
x=$(examine_bitmap "$tmp/e.0" "$at")
grep -q "Allow write behind, max 100" <<<"$x" || fail "v1.0: mdadm -X: $x"
grep -q " 0 dirty" <<<"$x" || fail "v1.0: mdadm -X: $x"
"$URAID" serve --run "head -c \$(nbdinfo --size \"\$uri\") /dev/urandom > $tmp/e.data &&
    nbdcopy $tmp/e.data \"\$uri\"" "$tmp/e.0" "$tmp/e.1" 2>"$tmp/e.log" || fail "v1.0: serve"
grep -q "keeping its write-intent bitmap" "$tmp/e.log" || fail "v1.0: not kept: $(cat "$tmp/e.log")"
verify v1.0 "$tmp/e.data" "$tmp/e.0" "$tmp/e.1"
echo "ok: v1.0 RAID1: bitmap added below the superblock with write-behind 100, kept"

# Not clean: every bit set.
truncate -s "$SIZE" "$tmp/d.0" "$tmp/d.1"
"$URAID" create --level=1 --bitmap=none "$tmp/d.0" "$tmp/d.1" >/dev/null 2>&1 || fail "dirty: create"
start_server "$sock" "$tmp/d.0" "$tmp/d.1" 2>/dev/null
qemu-io -f raw -c "write 0 64k" -c flush "nbd+unix:///?socket=$sock" >/dev/null || fail "dirty: qemu-io"
kill -KILL "$server_pid"
wait "$server_pid" 2>/dev/null || true
rm -f "$sock"
"$URAID" grow --bitmap=internal --bitmap-chunk=1M "$tmp/d.0" "$tmp/d.1" >/dev/null 2>&1 ||
    fail "dirty: grow"
x=$(examine_bitmap "$tmp/d.0" 16)
n=$(sed -n 's/.*Bitmap : \([0-9]*\) bits.*/\1/p' <<<"$x")
grep -q "Bitmap : $n bits (chunks), $n dirty" <<<"$x" || fail "dirty: not every bit set: $x"
echo "ok: an array not shut down cleanly gets every bit set"

# Served: through the control socket.
truncate -s "$SIZE" "$tmp/o.0" "$tmp/o.1"
"$URAID" create --level=1 --bitmap=none "$tmp/o.0" "$tmp/o.1" >/dev/null 2>&1 || fail "served: create"
start_server "$sock" --control "$tmp/o.ctl" "$tmp/o.0" "$tmp/o.1" 2>"$tmp/o.log"
qemu-io -f raw -c "write -P 0x51 0 1M" "nbd+unix:///?socket=$sock" >/dev/null || fail "served: qemu-io"
out=$("$URAID" grow --bitmap=internal --bitmap-chunk=1M "$tmp/o.ctl" 2>&1) || fail "served: grow: $out"
qemu-io -f raw -c "write -P 0x52 5M 64k" -c flush "nbd+unix:///?socket=$sock" >/dev/null ||
    fail "served: qemu-io after"
kill -KILL "$server_pid"
wait "$server_pid" 2>/dev/null || true
rm -f "$sock" "$tmp/o.ctl"
for f in "$tmp/o.0" "$tmp/o.1"; do
    [ "$(dirty_chunks "$f" 8192)" = "5 " ] || fail "served: $f: dirty '$(dirty_chunks "$f" 8192)', expected 5"
done
start_server "$sock" --control "$tmp/o.ctl" "$tmp/o.0" "$tmp/o.1" 2>"$tmp/o.log"
out=$("$URAID" grow --bitmap=none "$tmp/o.ctl" 2>&1) || fail "served: --bitmap=none: $out"
stop_server "$server_pid" || fail "served: stop"
grep -q "resyncing the 1 of [0-9]* write-intent bitmap chunks" "$tmp/o.log" ||
    fail "served: not a resync of the one dirty chunk: $(cat "$tmp/o.log")"
rm -f "$sock" "$tmp/o.ctl"
mdadm --examine "$tmp/o.0" | grep -q "Internal Bitmap" && fail "served: bitmap left after none"
out=$("$URAID" check "$tmp/o.0" "$tmp/o.1" 2>&1) || fail "served: check: $out"
grep -q "agree" <<<"$out" || fail "served: check: $out"
echo "ok: served RAID1: added and removed through the control socket; a crash after resyncs the one chunk written"

# Refusals.
truncate -s "$SIZE" "$tmp/z.0" "$tmp/z.1"
"$URAID" create --level=0 "$tmp/z.0" "$tmp/z.1" >/dev/null 2>&1 || fail "raid0: create"
refuse "needs raid1, 10, 4, 5 or 6" grow --bitmap=internal "$tmp/z.0" "$tmp/z.1"
refuse "give every member" grow --bitmap=internal "${r5[0]}" "${r5[1]}"
refuse "no write-intent bitmap to remove" grow --bitmap=none "${r5[@]}"
refuse "already" grow --bitmap=internal "$tmp/e.0" "$tmp/e.1"
refuse "write-behind needs raid1" grow --bitmap=internal --write-behind "${r5[@]}"
refuse "changes nothing else" grow --bitmap=internal -n 4 "${r5[@]}"
refuse "go with --bitmap=internal" grow --bitmap=none --bitmap-chunk=1M "$tmp/e.0" "$tmp/e.1"
echo "ok: refusals (raid0, a member left out, none to remove, one already, write-behind on raid5, with -n) change nothing"
