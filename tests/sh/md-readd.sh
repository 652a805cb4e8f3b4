#!/bin/bash
# md-readd.sh — `uraid add --re-add` on a running `uraid serve` (mdadm
# --re-add): a RAID1 with a write-intent bitmap of 64 KiB chunks; one
# member failed by request, a client writes three chunks' worth at three
# places, and the re-add resyncs exactly those chunks (`uraid detail`
# counts them), not the array; then the copies agree (`uraid check`),
# the data reads back, and mdadm finds both members in sync with no dirty
# bitmap bit.  A member failed and removed is re-added the same way (one
# chunk written meanwhile, one resynced).  Refused with the reason: a
# member in sync, and a blank file.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo mdadm cmp python3
# libnbd's Python module, for writes at offsets (Debian's python3-libnbd)
/usr/bin/python3 -c 'import nbd' 2>/dev/null || { echo "SKIP: python3-libnbd not installed"; exit 77; }

SIZE=20M
ctl=$tmp/r.ctl
uri="nbd+unix:///?socket=$tmp/r.sock"

jfield() {
    "$URAID" detail --json "$ctl" > "$tmp/j" || fail "detail --json"
    python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['arrays'][0]; print($1)" "$tmp/j"
}

make_array r 1 2 --bitmap=internal --bitmap-chunk=64
start_server "$tmp/r.sock" --control "$ctl" "${files[@]}" 2> "$tmp/r.log"

out=$("$URAID" add --re-add "$ctl" "$tmp/r.1" 2>&1) && fail "re-add of a member in sync: $out"
grep -q "in sync" <<<"$out" || fail "re-add of a member in sync: unclear: $out"
truncate -s $SIZE "$tmp/blank"
out=$("$URAID" add --re-add "$ctl" "$tmp/blank" 2>&1) && fail "re-add of a blank file: $out"
grep -q "superblock" <<<"$out" || fail "re-add of a blank file: unclear: $out"

"$URAID" fail "$ctl" "$tmp/r.1" > /dev/null || fail "fail"
[ "$(jfield "j['degraded']")" = True ] || fail "not degraded after fail"
# Three writes: 4 KiB in chunk 16, 4 KiB in chunk 49, 64 KiB over chunks 80-81.
python3 - "$tmp/r.data" <<'PY'
import os, sys
with open(sys.argv[1], 'r+b') as f:
    for off, n in ((1 << 20, 4096), ((3 << 20) + (100 << 10), 4096), ((5 << 20) + (32 << 10), 65536)):
        f.seek(off); f.write(os.urandom(n))
PY
/usr/bin/python3 - "$uri" "$tmp/r.data" <<'PY' || fail "client writes"
import nbd, sys
h = nbd.NBD()
h.connect_uri(sys.argv[1])
d = open(sys.argv[2], 'rb').read()
for off, n in ((1 << 20, 4096), ((3 << 20) + (100 << 10), 4096), ((5 << 20) + (32 << 10), 65536)):
    h.pwrite(d[off:off + n], off)
h.flush()
h.shutdown()
PY
# A member failed by request is not taken back on its own: asked for.
[ "$(jfield "j['degraded']")" = True ] || fail "re-added without being asked"
out=$("$URAID" add --re-add "$ctl" "$tmp/r.1" 2>&1) || fail "re-add: $out"
for _ in $(seq 300); do
    [ "$(jfield "j['degraded']")" = False ] && break
    sleep 0.1
done
[ "$(jfield "j['degraded']")" = False ] || fail "still degraded after the re-add: $(tail -5 "$tmp/r.log")"
# the log says where the recovery starts: from the bitmap, not an offset
grep -q "is being recovered from its write-intent bitmap" "$tmp/r.log" ||
    fail "re-add: the log names no bitmap: $(grep "being recovered" "$tmp/r.log")"
chunks=$(jfield "j['readd']['last_chunks']")
bytes=$(jfield "j['readd']['last_bytes']")
[ "$chunks" = 4 ] || fail "re-add resynced $chunks bitmap chunks, 4 were written"
[ "$bytes" = $((4 * 65536)) ] || fail "re-add resynced $bytes bytes, not the 4 chunks written"
"$URAID" detail "$ctl" | grep -q "Re-adds : 1, 4 bitmap chunks and 256 KiB" ||
    fail "detail: $("$URAID" detail "$ctl" | grep Re-add)"
echo "re-add: 72 KiB written while away in 4 bitmap chunks; $bytes bytes resynced"

# A member failed and removed (closed) comes back the same way: its own
# superblock names its role.  After a restart (a clean stop clears the
# bitmap) 4 KiB written meanwhile: one chunk.
stop_server "$server_pid"
start_server "$tmp/r.sock" --control "$ctl" "${files[@]}" 2>> "$tmp/r.log"
"$URAID" fail "$ctl" "$tmp/r.1" > /dev/null || fail "fail again"
"$URAID" remove "$ctl" "$tmp/r.1" > /dev/null || fail "remove"
python3 - "$tmp/r.data" <<'PY'
import os, sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(9 << 20); f.write(os.urandom(4096))
PY
/usr/bin/python3 - "$uri" "$tmp/r.data" <<'PY' || fail "client write"
import nbd, sys
h = nbd.NBD()
h.connect_uri(sys.argv[1])
h.pwrite(open(sys.argv[2], 'rb').read()[9 << 20:(9 << 20) + 4096], 9 << 20)
h.flush()
h.shutdown()
PY
out=$("$URAID" add --re-add "$ctl" "$tmp/r.1" 2>&1) || fail "re-add of a removed member: $out"
for _ in $(seq 300); do
    [ "$(jfield "j['degraded']")" = False ] && break
    sleep 0.1
done
[ "$(jfield "j['degraded']")" = False ] || fail "removed member not re-added: $(tail -5 "$tmp/r.log")"
[ "$(jfield "j['readd']['last_chunks']")" = 1 ] ||
    fail "removed member: $(jfield "j['readd']['last_chunks']") chunks resynced, 1 was written"
stop_server "$server_pid"

verify r "$tmp/r.data" "${files[@]}"
for f in "${files[@]}"; do
    # the bitmap area (8 sectors after the v1.2 superblock), which mdadm
    # reads as a bitmap file
    dd if="$f" of="$tmp/bm.img" bs=512 skip=16 count=8 2>/dev/null
    out=$(mdadm --examine-bitmap "$tmp/bm.img" 2>&1) || fail "mdadm --examine-bitmap $f: $out"
    grep -q "Bitmap : .* 0 dirty" <<<"$out" || fail "$f: bitmap: $(grep dirty <<<"$out")"
done
echo "md-readd: ok"
