#!/bin/bash
# md-rules.sh — each md rule has one answer, whichever command asks it:
#   - a superblock with a feature uraid refuses (here CLUSTERED) is
#     refused by serve, add, rebuild, grow and examine with one message;
#   - members that disagree on the geometry (level, layout, chunk, size,
#     device count) are refused by serve, rebuild and grow alike;
#   - an array whose set name is empty is called md/<first 8 hex digits of
#     its UUID> by serve, detail, rebuild and grow alike;
#   - a level md does not know (3) is refused by serve, rebuild and
#     examine with one message.
# Every refusal changes no file.  Superblock fields are patched in place
# (checksum recomputed) with `sbpatch FILE OFFSET WIDTH VALUE`.
. "$(dirname "$0")/md-lib.sh"
requires python3 md5sum

SIZE=8M

# sbpatch FILE OFFSET WIDTH VALUE: set the WIDTH-byte little-endian field
# at OFFSET of FILE's v1.2 superblock (a bytes field for WIDTH 32 is
# zeroed: VALUE is ignored) and fix the checksum as md computes it
sbpatch() {
    python3 - "$@" <<'PY'
import struct, sys
path, off, width, val = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4], 0)
with open(path, "r+b") as f:
    f.seek(4096)
    sb = bytearray(f.read(4096))
    if width == 32:
        sb[off:off + 32] = bytes(32)
    else:
        sb[off:off + width] = val.to_bytes(width, "little")
    max_dev = struct.unpack_from("<I", sb, 220)[0]
    size = 256 + 2 * max_dev
    struct.pack_into("<I", sb, 216, 0)
    total = sum(struct.unpack_from("<%dI" % (size // 4), sb))
    if size % 4:
        total += struct.unpack_from("<H", sb, size - 2)[0]
    struct.pack_into("<I", sb, 216, (total & 0xffffffff) + (total >> 32) & 0xffffffff)
    f.seek(4096)
    f.write(sb)
PY
}
# md_sb1 field offsets
F_FEATURES=8 F_NAME=32 F_LEVEL=72 F_SIZE=80 F_CHUNK=88

blank() { truncate -s "$SIZE" "$@"; }
mkarray() { # mkarray NAME LEVEL DISKS OPTS...
    local name=$1 level=$2 disks=$3 i
    shift 3
    files=()
    for i in $(seq 0 $((disks - 1))); do
        rm -f "$tmp/$name.$i"
        blank "$tmp/$name.$i"
        files+=("$tmp/$name.$i")
    done
    "$URAID" create --level="$level" "$@" "${files[@]}" >/dev/null 2>&1 || fail "$name: create"
}

# --- a refused feature: one message from every path ---
mkarray rep 1 3
sbpatch "$tmp/rep.2" $F_FEATURES 4 0x100
blank "$tmp/new"
want="rep.2: md superblock uses features 0x100"
refuse "$want" serve --run true "${files[@]}"
refuse "$want" serve --readonly --run true "${files[@]}"
refuse "$want" add "$tmp/new" "${files[@]}"
refuse "$want" rebuild "${files[@]}"
refuse "$want" grow --raid-devices 4 --add "$tmp/new" "${files[@]}"
refuse "$want" examine "$tmp/rep.2"

# --- a geometry disagreement: size alone, chunk alone ---
# geometry OFFSET WIDTH VALUE: a raid1 pair whose second member's field
# is patched is refused by serve, rebuild and grow with one message
geometry() {
    local want="disagree on level, layout, chunk, size or device count"
    mkarray geo 1 2
    sbpatch "$tmp/geo.1" "$@"
    refuse "$want" serve --run true "${files[@]}"
    refuse "$want" rebuild "${files[@]}"
    refuse "$want" grow --raid-devices 3 "${files[@]}"
}
mkarray geo 1 2
sz=$(field "$tmp/geo.1" "Used Dev Size")
[ -n "$sz" ] || sz=$(field "$tmp/geo.1" "Avail Dev Size")
geometry $F_SIZE 8 $((sz - 128))
geometry $F_CHUNK 4 128

# --- an empty set name: named by its UUID everywhere ---
# anonymous NAME LEVEL: an array of two with its set name blanked; $uuid
# is the first 8 hex digits of its UUID
anonymous() {
    mkarray "$1" "$2" 2
    for f in "${files[@]}"; do sbpatch "$f" $F_NAME 32 0; done
    uuid=$("$URAID" examine "$tmp/$1.0" | sed -n 's/^ *Array UUID : \(........\).*/\1/p')
    [ -n "$uuid" ] || fail "no Array UUID in examine"
}
anonymous anon 0
refuse "md/$uuid: raid0 needs all 2 members" serve --run true "$tmp/anon.0"
refuse "md/$uuid is raid0" rebuild "${files[@]}"
refuse "md/$uuid: 2 -> 3 devices takes 1 new members" grow --raid-devices 3 "${files[@]}"
anonymous anon1 1
start_server "$tmp/anon1.sock" --readonly --control "$tmp/anon1.ctl" "${files[@]}" 2>"$tmp/anon1.log"
name=$("$URAID" detail --json "$tmp/anon1.ctl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["arrays"][0]["name"])') ||
    fail "detail --json: $(cat "$tmp/anon1.log")"
[ "$name" = "md/$uuid" ] || fail "detail names the array '$name', not md/$uuid"
grep -q "md/$uuid: assembled" "$tmp/anon1.log" || fail "serve: $(cat "$tmp/anon1.log")"
stop_server "$server_pid"

# --- an unknown level: one refusal ---
want="md level 3 is unknown"
mkarray l3 5 3
for f in "${files[@]}"; do sbpatch "$f" $F_LEVEL 4 3; done
refuse "l3.0: $want" serve --run true "${files[@]}"
refuse "l3.0: $want" serve --readonly --run true "${files[@]}"
refuse "l3.0: $want" rebuild "${files[@]}"
refuse "l3.0: $want" examine "$tmp/l3.0"
echo "ok: every path gives each rule's one answer"
