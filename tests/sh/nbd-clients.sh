#!/bin/bash
# nbd-clients.sh — real NBD clients against `uraid serve` on mem:, file and
# null: members: nbdinfo (size, flags, block sizes, --list, export names),
# an nbdcopy round trip of random data, qemu-img convert + compare, and
# qemu-io pattern writes, reads, zeroes and discards.
. "$(dirname "$0")/nbd-lib.sh"
requires nbdinfo nbdcopy qemu-img qemu-io

# mem: with a named export.
s=$tmp/mem.sock
start_server "$s" --export-name disk0 mem:64M
uri="nbd+unix:///disk0?socket=$s"
[ "$(nbdinfo --size "$uri")" = 67108864 ] || fail "mem size"
[ "$(nbdinfo --size "nbd+unix:///?socket=$s")" = 67108864 ] || fail "default export"
if nbdinfo --size "nbd+unix:///other?socket=$s" 2>/dev/null; then fail "unknown export accepted"; fi
nbdinfo --list "nbd+unix:///?socket=$s" | grep -q 'export="disk0"' || fail "--list"
info=$(nbdinfo "$uri")
for want in "is_read_only: false" "can_trim: true" "can_zero: true" "can_fast_zero: true" \
            "can_multi_conn: true" "can_cache: true" "block_size_minimum: 1" \
            "block_size_maximum: 33554432"; do
    grep -q "$want" <<<"$info" || fail "nbdinfo lacks '$want'"
done

# nbdcopy round trip.
head -c 64M /dev/urandom > "$tmp/rand"
nbdcopy "$tmp/rand" "$uri"
nbdcopy "$uri" "$tmp/back"
cmp "$tmp/rand" "$tmp/back" || fail "nbdcopy round trip"

# qemu-io: patterns, zeroes, discard.
qemu-io -f raw "$uri" -c 'write -P 0x5a 1M 1M' -c 'write -P 0xa5 3000 5000' >/dev/null
out=$(qemu-io -f raw "$uri" -c 'read -P 0x5a 1M 1M' -c 'read -P 0xa5 3000 5000')
grep -q "Pattern verification failed" <<<"$out" && fail "qemu-io read -P"
qemu-io -f raw "$uri" -c 'write -z 1M 64k' -c 'discard 2M 1M' -c 'flush' >/dev/null
out=$(qemu-io -f raw "$uri" -c 'read -P 0 1M 64k' -c 'read -P 0x5a 1088k 960k')
grep -q "Pattern verification failed" <<<"$out" && fail "qemu-io after write -z"
stop_server "$server_pid"

# file member: qemu-img convert in, compare, convert out.
truncate -s 64M "$tmp/disk.img"
s=$tmp/file.sock
start_server "$s" "$tmp/disk.img"
uri="nbd+unix:///?socket=$s"
nbdinfo "$uri" | grep -q "can_flush: true" || fail "file member must offer flush"
qemu-img convert -n -f raw -O raw "$tmp/rand" "$uri"
qemu-img compare -f raw -F raw "$tmp/rand" "$uri" >/dev/null || fail "qemu-img compare"
qemu-img convert -f raw -O raw "$uri" "$tmp/out.img"
cmp "$tmp/rand" "$tmp/out.img" || fail "qemu-img convert out"
stop_server "$server_pid"
cmp "$tmp/rand" "$tmp/disk.img" || fail "file member contents after shutdown"

# null: reads zeros, size is right.
s=$tmp/null.sock
start_server "$s" null:1G
[ "$(nbdinfo --size "nbd+unix:///?socket=$s")" = 1073741824 ] || fail "null size"
out=$(qemu-io -f raw "nbd+unix:///?socket=$s" -c 'read -P 0 0 1M' -c 'read -P 0 1023M 1M')
grep -q "Pattern verification failed" <<<"$out" && fail "null reads"
stop_server "$server_pid"
echo PASS
