#!/bin/bash
# nbd-extents.sh — base:allocation (NBD_CMD_BLOCK_STATUS) as real clients
# use it: nbdinfo --map (libnbd) and qemu-img map (qemu's NBD client) see
# the holes of a sparse file, of RAID0 and RAID1 over sparse members (an
# md array's data area) and of mem:, where data was written and nowhere
# else; a LUKS volume is all data (its holes would decrypt to garbage, not
# zeros); and nbdcopy out of an export keeps the copy sparse.
. "$(dirname "$0")/nbd-lib.sh"
requires nbdinfo nbdcopy qemu-img qemu-io python3 du

MiB=$((1 << 20))
# map URI: "offset length data|zero" lines as nbdinfo --map reports them,
# with neighbours of the same kind joined.
map() {
    nbdinfo --map "$1" | awk '{ k = ($3 == 0) ? "data" : "zero";
        if (k == last) { len += $2 } else { if (last != "") print off, len, last; off = $1; len = $2; last = k } }
        END { print off, len, last }'
}
# qemu_map URI: the same from qemu-img's own NBD client.
qemu_map() {
    qemu-img map --output=json -f raw "$1" | python3 -c '
import json, sys
out = []
for e in json.load(sys.stdin):
    k = "data" if e["data"] else "zero"
    if out and out[-1][2] == k:
        out[-1][1] += e["length"]
    else:
        out.append([e["start"], e["length"], k])
for o, n, k in out:
    print(o, n, k)'
}
# check NAME URI EXPECTED: both clients see EXPECTED
check() {
    local got
    got=$(map "$2")
    [ "$got" = "$3" ] || fail "$1: nbdinfo --map: $got (want $3)"
    got=$(qemu_map "$2")
    [ "$got" = "$3" ] || fail "$1: qemu-img map: $got (want $3)"
}

# A sparse file: 2 MiB of data at 10 MiB, 1 MiB at 40 MiB.
truncate -s 64M "$tmp/sparse.img"
head -c $((2 * MiB)) /dev/urandom | dd of="$tmp/sparse.img" bs=1M seek=10 conv=notrunc 2>/dev/null
head -c $MiB /dev/urandom | dd of="$tmp/sparse.img" bs=1M seek=40 conv=notrunc 2>/dev/null
start_server "$tmp/f.sock" "$tmp/sparse.img" 2>/dev/null
check file "nbd+unix:///?socket=$tmp/f.sock" "0 $((10 * MiB)) zero
$((10 * MiB)) $((2 * MiB)) data
$((12 * MiB)) $((28 * MiB)) zero
$((40 * MiB)) $MiB data
$((41 * MiB)) $((23 * MiB)) zero"
# A copy out keeps the holes: nbdcopy skips what the map calls zero.
nbdcopy "nbd+unix:///?socket=$tmp/f.sock" "$tmp/copy.img"
cmp "$tmp/sparse.img" "$tmp/copy.img" || fail "nbdcopy copy differs"
used=$(du -k "$tmp/copy.img" | cut -f1)
[ "$used" -lt $((8 * 1024)) ] || fail "nbdcopy's copy is not sparse: ${used} KiB used"
stop_server "$server_pid"

# mem: holes where nothing was written.
start_server "$tmp/m.sock" mem:32M 2>/dev/null
uri="nbd+unix:///?socket=$tmp/m.sock"
head -c $MiB /dev/urandom > "$tmp/one"
nbdcopy "$tmp/one" "$uri" || fail "mem: nbdcopy" # [0, 1 MiB); the rest stays a hole
nbdinfo --map "$uri" | awk 'NR == 1 && !($1 == 0 && $3 == 0) { exit 1 }' ||
    fail "mem: the first MiB, written, is not data: $(nbdinfo --map "$uri")"
[ "$(map "$uri" | tail -1 | cut -d' ' -f3)" = zero ] || fail "mem: the unwritten end is not a hole"
stop_server "$server_pid"

# RAID0 and RAID1 over sparse members: 1 MiB written at 5 MiB.
for level in 0 1; do
    truncate -s 24M "$tmp/r$level.a" "$tmp/r$level.b"
    "$URAID" create --level=$level "$tmp/r$level.a" "$tmp/r$level.b" >/dev/null 2>&1 ||
        fail "create raid$level"
    start_server "$tmp/r$level.sock" "$tmp/r$level.a" "$tmp/r$level.b" 2>/dev/null
    uri="nbd+unix:///?socket=$tmp/r$level.sock"
    size=$(nbdinfo --size "$uri")
    qemu-io -f raw -c "write -P 0x77 $((5 * MiB)) $MiB" -c flush "$uri" >/dev/null ||
        fail "raid$level: write"
    check "raid$level" "$uri" "0 $((5 * MiB)) zero
$((5 * MiB)) $MiB data
$((6 * MiB)) $((size - 6 * MiB)) zero"
    stop_server "$server_pid"
done

# LUKS: everything is data.
truncate -s 32M "$tmp/luks.img"
printf 'pw' > "$tmp/key"
"$URAID" luks-format --batch --key-file "$tmp/key" --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
    "$tmp/luks.img" >/dev/null 2>&1 || fail "luks-format"
start_server "$tmp/l.sock" --key-file "$tmp/key" "$tmp/luks.img" 2>/dev/null
uri="nbd+unix:///?socket=$tmp/l.sock"
size=$(nbdinfo --size "$uri")
check luks "$uri" "0 $size data"
stop_server "$server_pid"
echo "ok: nbdinfo and qemu-img see the holes of files, mem:, RAID0 and RAID1; LUKS is data"
