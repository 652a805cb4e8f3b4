#!/bin/bash
# md-raid4.sh — md level 4 (raid4) on files: served by the RAID5 engine's
# parity-last map, whatever its layout word.
#   - `uraid create --level=4`: mdadm --examine reads raid4, no layout (md
#     shows none for it), the chunk, the size of two data members, and the
#     layout word mdadm --create writes (0);
#   - the data a client wrote lies where md's raid4 puts it: array chunk c
#     on member c % (n-1) at stripe c / (n-1), the last member the XOR of
#     the others (python here, not uraid, reads the members);
#   - a member lost: served degraded, written, then a blank one added and
#     rebuilt (uraid add): check agrees, mdadm --examine sees AAA on every
#     member at one events count, the data reads back, the rebuilt member
#     holds what the stripes say;
#   - takeovers: raid0 -> raid4 (parity rebuilt on --add NEW) -> raid5
#     (parity-last) -> raid4 (layout 0, as the kernel writes) -> raid0;
#   - a reshape of the raid4 to 4 devices stopped part-way (--stop-at),
#     read while under way, continued by a writable serve; it stays raid4;
#   - grown again to 5 while served (uraid grow -n 5 --add NEW CONTROL).
# tests/sh/md-kernel-raid4.sh runs raid4 against the kernel.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo mdadm cmp python3

SIZE=8M

# word FILE OFFSET: the 32-bit little-endian field of FILE's v1.2 superblock
word() {
    python3 -c 'import struct,sys; f=open(sys.argv[1],"rb"); f.seek(4096+int(sys.argv[2])); print(struct.unpack("<I", f.read(4))[0])' "$1" "$2"
}
exam() { mdadm --examine "$1" 2>&1 | sed -n "s/^ *$2 : //p"; }

# placed DATA CHUNK_KIB MEMBERS...: the members hold DATA as md's raid4
# lays it out (data offset from mdadm --examine), parity the XOR
placed() {
    local data=$1 chunk=$(($2 * 1024))
    shift 2
    local off
    off=$(exam "$1" "Data Offset" | cut -d' ' -f1)
    python3 - "$data" "$chunk" "$((off * 512))" "$@" <<'PY' || fail "the members do not hold the data as md's raid4 lays it out"
import sys
data = open(sys.argv[1], "rb").read()
chunk, off = int(sys.argv[2]), int(sys.argv[3])
mem = [open(p, "rb") for p in sys.argv[4:]]
nd = len(mem) - 1
for s in range(len(data) // (chunk * nd)):
    par = 0
    for d in range(nd):
        mem[d].seek(off + s * chunk)
        got = mem[d].read(chunk)
        c = s * nd + d
        if got != data[c * chunk:(c + 1) * chunk]:
            sys.exit("chunk %d is not on member %d at stripe %d" % (c, d, s))
        par ^= int.from_bytes(got, "little")
    mem[nd].seek(off + s * chunk)
    if mem[nd].read(chunk) != par.to_bytes(chunk, "little"):
        sys.exit("stripe %d: the last member is not the parity" % s)
PY
}

# --- create, as mdadm writes it ---
make_array r 4 3 --chunk=64
r=("${files[@]}")
for f in "${r[@]}"; do
    [ "$(exam "$f" "Raid Level")" = raid4 ] || fail "$f: mdadm reads level '$(exam "$f" "Raid Level")'"
    [ -z "$(exam "$f" Layout)" ] || fail "$f: mdadm shows a layout for a raid4: $(exam "$f" Layout)"
    [ "$(word "$f" 76)" = 0 ] || fail "$f: layout word $(word "$f" 76), mdadm --create writes 0"
    [ "$(exam "$f" "Chunk Size")" = 64K ] || fail "$f: chunk $(exam "$f" "Chunk Size")"
    mdadm --examine "$f" | grep -q "Checksum : .* - correct" || fail "$f: mdadm checksum"
done
avail=$(exam "${r[0]}" "Avail Dev Size" | cut -d' ' -f1)
[ "$(exam "${r[0]}" "Array Size" | cut -d' ' -f1)" = "$((avail / 128 * 128))" ] ||
    fail "array size $(exam "${r[0]}" "Array Size"), want two members' $avail sectors in whole chunks"
placed "$tmp/r.data" 64 "${r[@]}"
verify r "$tmp/r.data" "${r[@]}"
echo "ok: create --level=4: raid4 as mdadm reads it, parity on the last member"

# --- a member lost, written degraded, rebuilt ---
mv "${r[1]}" "$tmp/r.1.gone"
truncate -s $SIZE "${r[1]}"
"$URAID" serve --degraded --run "nbdcopy \"\$uri\" - | cmp - $tmp/r.data" "${r[0]}" "${r[2]}" 2>/dev/null ||
    fail "degraded: the raid4 without member 1 reads other data"
head -c 1M /dev/urandom > "$tmp/patch"
"$URAID" serve --degraded --run "nbdcopy $tmp/patch \"\$uri\"" "${r[0]}" "${r[2]}" 2>/dev/null ||
    fail "degraded: write"
dd if="$tmp/patch" of="$tmp/r.data" conv=notrunc 2>/dev/null
out=$("$URAID" add "${r[1]}" "${r[0]}" "${r[2]}" 2>&1) || fail "add: $out"
verify r "$tmp/r.data" "${r[@]}"
placed "$tmp/r.data" 64 "${r[@]}"
echo "ok: raid4 degraded: read, written, a new member rebuilt (mdadm sees it whole)"

# --- takeovers ---
make_array z 0 2 --chunk=64
z=("${files[@]}")
truncate -s $SIZE "$tmp/z.p"
out=$("$URAID" grow --level=4 --add "$tmp/z.p" "${z[@]}" 2>&1) || fail "0 -> 4: $out"
z+=("$tmp/z.p")
for f in "${z[@]}"; do
    [ "$(exam "$f" "Raid Level")|$(exam "$f" "Raid Devices")|$(word "$f" 76)" = "raid4|3|5" ] ||
        fail "0 -> 4: $f: mdadm reads $(exam "$f" "Raid Level") of $(exam "$f" "Raid Devices"), layout word $(word "$f" 76) (the kernel writes 5)"
done
verify z "$tmp/z.data" "${z[@]}"
placed "$tmp/z.data" 64 "${z[@]}"
out=$("$URAID" grow --level=5 "${z[@]}" 2>&1) || fail "4 -> 5: $out"
[ "$(exam "${z[0]}" "Raid Level")|$(exam "${z[0]}" Layout)" = "raid5|parity-last" ] ||
    fail "4 -> 5: $(exam "${z[0]}" "Raid Level") $(exam "${z[0]}" Layout)"
verify z "$tmp/z.data" "${z[@]}"
out=$("$URAID" grow --level=4 "${z[@]}" 2>&1) || fail "5 -> 4: $out"
[ "$(exam "${z[0]}" "Raid Level")|$(word "${z[0]}" 76)" = "raid4|0" ] ||
    fail "5 -> 4: $(exam "${z[0]}" "Raid Level"), layout word $(word "${z[0]}" 76)"
verify z "$tmp/z.data" "${z[@]}"
out=$("$URAID" grow --level=0 "${z[@]}" 2>&1) || fail "4 -> 0: $out"
[ "$(exam "${z[0]}" "Raid Level")|$(exam "${z[0]}" "Raid Devices")" = "raid0|2" ] ||
    fail "4 -> 0: $(exam "${z[0]}" "Raid Level") of $(exam "${z[0]}" "Raid Devices")"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" - | cmp - $tmp/z.data" "${z[@]:0:2}" 2>/dev/null ||
    fail "4 -> 0: the raid0 reads other data"
echo "ok: raid0 -> raid4 -> raid5 -> raid4 -> raid0, the data in place"

# --- a reshape of the raid4, stopped part-way and continued ---
truncate -s $SIZE "$tmp/r.3"
out=$("$URAID" grow --raid-devices=4 --add "$tmp/r.3" --stop-at 4096 "${r[@]}" 2>&1) || fail "grow -n 4: $out"
r+=("$tmp/r.3")
exam "${r[0]}" "Reshape pos'n" | grep -q . || fail "no reshape recorded after --stop-at"
[ "$(exam "${r[0]}" "Raid Level")" = raid4 ] || fail "the reshape recorded level $(exam "${r[0]}" "Raid Level")"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" - | head -c $(stat -c %s "$tmp/r.data") | cmp - $tmp/r.data" "${r[@]}" 2>/dev/null ||
    fail "the raid4 under reshape reads other data"
# a writable serve goes on with it in the background, as with a raid5
start_server "$tmp/r.sock" --control "$tmp/r.ctl" "${r[@]}" 2>"$tmp/serve.log"
detail_until_gone "$tmp/r.ctl" "Reshape Status" || fail "the served reshape did not end: $out"
stop_server "$server_pid" || fail "serve: $(tail -5 "$tmp/serve.log")"
[ "$(exam "${r[0]}" "Raid Level")|$(exam "${r[0]}" "Raid Devices")" = "raid4|4" ] ||
    fail "after the reshape: $(exam "${r[0]}" "Raid Level") of $(exam "${r[0]}" "Raid Devices")"
exam "${r[0]}" "Reshape pos'n" | grep -q . && fail "a reshape is still recorded"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" $tmp/r4" "${r[@]}" 2>/dev/null || fail "read the raid4 of 4"
cmp -s <(head -c "$(stat -c %s "$tmp/r.data")" "$tmp/r4") "$tmp/r.data" || fail "the raid4 of 4 reads other data"
placed "$tmp/r4" 64 "${r[@]}"
out=$("$URAID" check "${r[@]}" 2>&1) || fail "check: $out"
grep -q "the copies agree" <<<"$out" || fail "check: $out"
echo "ok: raid4 3 -> 4 devices: stopped part-way, read, continued by serve, still raid4"

# --- grown while served ---
truncate -s $SIZE "$tmp/r.4"
start_server "$tmp/r.sock" --control "$tmp/r.ctl" "${r[@]}" 2>"$tmp/serve.log"
out=$("$URAID" grow -n 5 --add "$tmp/r.4" "$tmp/r.ctl" 2>&1) || fail "online grow -n 5: $out"
detail_until_gone "$tmp/r.ctl" "Reshape Status" || fail "the online reshape did not end: $out"
stop_server "$server_pid" || fail "serve: $(tail -5 "$tmp/serve.log")"
r+=("$tmp/r.4")
[ "$(exam "${r[0]}" "Raid Level")|$(exam "${r[0]}" "Raid Devices")" = "raid4|5" ] ||
    fail "after the online reshape: $(exam "${r[0]}" "Raid Level") of $(exam "${r[0]}" "Raid Devices")"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" $tmp/r5" "${r[@]}" 2>/dev/null || fail "read the raid4 of 5"
cmp -s <(head -c "$(stat -c %s "$tmp/r4")" "$tmp/r5") "$tmp/r4" || fail "the raid4 of 5 reads other data"
placed "$tmp/r5" 64 "${r[@]}"
echo "ok: raid4 4 -> 5 devices while served"
