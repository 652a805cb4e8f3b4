#!/bin/bash
# md-write-behind.sh — md's write-behind from the command line: `uraid
# create --level=1 --write-behind=64 A --write-mostly B` keeps 64 in the
# bitmap superblock, where mdadm --examine-bitmap reads it ("Allow write
# behind, max 64"); --write-behind is refused off raid1 and without a
# bitmap.  Then the array is served with B behind nbdkit's delay filter
# (each write 20 ms late: a far mirror), fio writes and verifies through
# uraid (end_fsync: the FLUSH), and after the server stopped `uraid check`
# finds the two copies equal and `cmp` of their data areas agrees.
# fio's write completion latency is printed beside B's 20 ms (not asserted:
# the unit test test_raid_behind shows the acknowledgement order).
. "$(dirname "$0")/md-lib.sh"
requires mdadm nbdkit fio cmp

SIZE=64M
truncate -s $SIZE "$tmp/a" "$tmp/b"
refuse_create() {
    "$URAID" create "$@" >"$tmp/refused" 2>&1 && fail "create $*: not refused"
    grep -q "write-behind" "$tmp/refused" || fail "create $*: $(cat "$tmp/refused")"
}
refuse_create --level=5 --write-behind=64 "$tmp/a" "$tmp/b" "$tmp/a"
refuse_create --level=1 --bitmap=none --write-behind "$tmp/a" --write-mostly "$tmp/b"
refuse_create --level=1 --write-behind=16384 "$tmp/a" --write-mostly "$tmp/b"
cmp -s "$tmp/a" <(head -c $SIZE /dev/zero) || fail "a refused create wrote a member"

"$URAID" create --level=1 --write-behind=64 "$tmp/a" --write-mostly "$tmp/b" >/dev/null ||
    fail "create"
# mdadm -X reads the bitmap of a file as a bitmap file: a copy of the
# member's (8 sectors after the 1.2 superblock, as md-bitmap.sh does).
for m in a b; do
    dd if="$tmp/$m" of="$tmp/bm.img" bs=512 skip=16 count=8 2>/dev/null
    mdadm -X "$tmp/bm.img" 2>&1 | grep -q "Allow write behind, max 64" ||
        fail "mdadm -X $m: $(mdadm -X "$tmp/bm.img" 2>&1)"
    "$URAID" examine "$tmp/$m" | grep -q "Allow write behind, max 64" ||
        fail "uraid examine $m: no write-behind line"
done

nbdkit -f -U "$tmp/b.sock" --filter=delay file "$tmp/b" wdelay=20ms 2>"$tmp/nbdkit.log" &
nbdkit_pid=$!
for _ in $(seq 100); do [ -S "$tmp/b.sock" ] && break; sleep 0.05; done
"$URAID" serve -f --socket "$tmp/s.sock" "$tmp/a" "nbd+unix:///?socket=$tmp/b.sock" \
    2>"$tmp/serve.log" &
serve_pid=$!
for _ in $(seq 100); do [ -S "$tmp/s.sock" ] && break; sleep 0.05; done
[ -S "$tmp/s.sock" ] || fail "serve did not start: $(cat "$tmp/serve.log")"
fio --name=wb --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/s.sock" --rw=randwrite \
    --bs=64k --size=16M --iodepth=4 --verify=crc32c --verify_fatal=1 --end_fsync=1 \
    --output-format=json --output="$tmp/fio.json" || fail "fio: $(cat "$tmp/fio.json")"
python3 - "$tmp/fio.json" <<'PY' || fail "fio reported errors"
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
print("md-write-behind: fio 64 KiB writes qd4, median completion %.1f ms (the far copy: 20 ms)"
      % (j["write"]["clat_ns"]["percentile"]["50.000000"] / 1e6))
sys.exit(1 if j["error"] else 0)
PY
kill "$serve_pid"
wait "$serve_pid" || fail "serve exited with $? after SIGTERM: $(cat "$tmp/serve.log")"
kill "$nbdkit_pid"
wait "$nbdkit_pid" 2>/dev/null
out=$("$URAID" check "$tmp/a" "$tmp/b" 2>&1) || fail "check: $out"
grep -q "the copies agree" <<<"$out" || fail "check: $out"
off=$(( $(field "$tmp/a" "Data Offset") * 512 ))
cmp -s <(tail -c +$((off + 1)) "$tmp/a") <(tail -c +$((off + 1)) "$tmp/b") ||
    fail "the data areas differ"
echo "md-write-behind: ok"
