# bitmap-lib.sh — what the md write-intent bitmap tests share (md-bitmap.sh,
# md-bitmap-grow.sh): `examine_bitmap FILE AT`, mdadm -X of a member (through
# a read-only loop device when we may make one, so that mdadm finds the
# bitmap from the superblock, else of a copy of the 8 sectors at sector AT,
# which mdadm reads as a bitmap file); `bm_field NAME`, a number from -X or
# -E output on stdin; `dirty_chunks FILE AT`, the set bits (chunk numbers)
# of the bitmap at byte AT, from its first 8 bytes.
examine_bitmap() {
    local l
    if l=$(losetup -f --show -r "$1" 2>/dev/null); then
        mdadm -X "$l" 2>&1 || true
        losetup -d "$l"
    else
        dd if="$1" of="$tmp/bm.img" bs=512 skip="$2" count=8 2>/dev/null
        mdadm -X "$tmp/bm.img" 2>&1 || true
    fi
}
bm_field() { sed -n "s/^ *$1 : \([0-9]*\).*/\1/p"; }
dirty_chunks() {
    local i=0 b k
    for b in $(od -An -tu1 -j $(($2 + 256)) -N 8 "$1"); do
        for k in 0 1 2 3 4 5 6 7; do
            (( (b >> k) & 1 )) && printf '%s ' $((i * 8 + k))
        done
        i=$((i + 1))
    done
    echo
}
