#!/bin/bash
# md-write-behind.sh — md's write-behind from the command line: `uraid
# create --level=1 --write-behind=64 A --write-mostly B` keeps 64 in the
# bitmap superblock, where mdadm --examine-bitmap reads it ("Allow write
# behind, max 64"); --write-behind is refused off raid1 and without a
# bitmap.  Then the array is served with B behind nbdkit's delay filter
# (each write 20 ms late: a far mirror), fio writes and verifies through
# uraid (end_fsync: the FLUSH), and after the server stopped `uraid check`
# finds the two copies equal and `cmp` of their data areas agrees.
# Before that, B's server is stopped (SIGSTOP) under a write and a flush:
# the copies behind time out (timeout=1), B fails and the array serves on;
# resumed, B is re-added from the bitmap by itself.
# fio's write latency is printed beside B's 20 ms (not asserted: the unit
# test test_raid_behind shows the acknowledgement order).
. "$(dirname "$0")/md-lib.sh"
requires mdadm nbdkit fio cmp qemu-io

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
"$URAID" serve -f --socket "$tmp/s.sock" --control "$tmp/s.ctl" "$tmp/a" \
    "nbd+unix:///?socket=$tmp/b.sock&timeout=1&reconnect=0.2" 2>"$tmp/serve.log" &
serve_pid=$!
for _ in $(seq 100); do [ -S "$tmp/s.sock" ] && break; sleep 0.05; done
[ -S "$tmp/s.sock" ] || fail "serve did not start: $(cat "$tmp/serve.log")"
fio --name=wb --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/s.sock" --rw=randwrite \
    --bs=64k --size=16M --iodepth=4 --verify=crc32c --verify_fatal=1 --end_fsync=1 \
    --lat_percentiles=1 --output-format=json --output="$tmp/fio.json" ||
    fail "fio: $(cat "$tmp/fio.json")"
python3 - "$tmp/fio.json" <<'PY' || fail "fio reported errors"
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
print("md-write-behind: fio 64 KiB writes qd4, median latency %.1f ms (the far copy: 20 ms)"
      % (j["write"]["lat_ns"]["percentile"]["50.000000"] / 1e6))
sys.exit(1 if j["error"] else 0)
PY
kill -STOP "$nbdkit_pid"
qemu-io -f raw -c "write -P 0x5a 32M 4M" -c flush "nbd+unix:///?socket=$tmp/s.sock" \
    >"$tmp/qio" 2>&1 || fail "a write with B away failed: $(cat "$tmp/qio")"
grep -q "member 1 .* failed" "$tmp/serve.log" || fail "B did not fail: $(cat "$tmp/serve.log")"
kill -CONT "$nbdkit_pid"
for _ in $(seq 300); do grep -q "re-added to role 1 and in sync" "$tmp/serve.log" && break; sleep 0.1; done
grep -q "re-added to role 1 and in sync" "$tmp/serve.log" || fail "B not re-added: $(cat "$tmp/serve.log")"
grep -E "member 1 .* failed|re-added" "$tmp/serve.log" | sed 's/^/md-write-behind: /'
qemu-io -f raw -c "read -P 0x5a 32M 4M" "nbd+unix:///?socket=$tmp/s.sock" >"$tmp/qio" 2>&1 ||
    fail "read back: $(cat "$tmp/qio")"
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
