#!/bin/bash
# md-bitmap.sh — the internal write-intent bitmap kept by `uraid serve`, on
# a RAID1 and a RAID5 made with `uraid create --bitmap=internal` (1 MiB
# bitmap chunks), read back with mdadm:
#  - three 64 KiB writes land in bitmap chunks 3, 10 and 40; serve is
#    killed (SIGKILL): exactly those three bits are set, and the bitmap's
#    events equal the superblock's (`mdadm -X`, `mdadm -E`);
#  - a torn write planted in dirty chunk 10 on one member; the restart
#    resyncs only the 3 dirty chunks (its log), after which `uraid check`
#    finds the copies (the parity) agreeing;
#  - after a clean stop `mdadm -X` shows 0 dirty chunks, events equal.
# `uraid examine` agrees on the dirty count.
# (An mdadm-made array needs the kernel: md-kernel-bitmap.sh does that.)
. "$(dirname "$0")/md-lib.sh"
. "$(dirname "$0")/bitmap-lib.sh"
requires mdadm qemu-io od

for geometry in "1 2 1" "5 3 2 --chunk=64"; do
    read -r level disks step opts <<<"$geometry"
    files=()
    for i in $(seq "$disks"); do truncate -s 64M "$tmp/l$level.$i"; files+=("$tmp/l$level.$i"); done
    # shellcheck disable=SC2086
    "$URAID" create --level="$level" $opts --bitmap=internal --bitmap-chunk=1M "${files[@]}" \
        >/dev/null || fail "raid$level: create"
    out=$(examine_bitmap "${files[0]}" 16)
    grep -q "Chunksize : 1 MB" <<<"$out" || fail "raid$level: mdadm -X after create: $out"
    grep -q "0 dirty" <<<"$out" || fail "raid$level: dirty after create: $out"

    sock=$tmp/s$level.sock
    start_server "$sock" "${files[@]}" 2>"$tmp/serve.log"
    # Array offset k * step MiB lands in member MiB k: bitmap chunk k.
    qemu-io -f raw -c "write -P 0x41 $((3 * step))M 64k" -c "write -P 0x42 $((10 * step))M 64k" \
        -c "write -P 0x43 $((40 * step))M 64k" -c flush "nbd+unix:///?socket=$sock" >/dev/null ||
        fail "raid$level: qemu-io"
    kill -KILL "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    rm -f "$sock"
    for f in "${files[@]}"; do
        [ "$(dirty_chunks "$f" 8192)" = "3 10 40 " ] ||
            fail "raid$level: $f: dirty chunks '$(dirty_chunks "$f" 8192)', expected 3 10 40"
        out=$(examine_bitmap "$f" 16)
        grep -q "3 dirty" <<<"$out" || fail "raid$level: $f: mdadm -X: $out"
        "$URAID" examine "$f" | grep -q "Bitmap Status : 3 of [0-9]* chunks dirty, up to date" ||
            fail "raid$level: $f: uraid examine: $("$URAID" examine "$f" | grep Bitmap)"
        ev=$(mdadm --examine "$f" | bm_field Events)
        [ "$(bm_field Events <<<"$out")" = "$ev" ] ||
            fail "raid$level: $f: bitmap events $(bm_field Events <<<"$out"), superblock $ev"
    done

    # A torn write in dirty chunk 10 (member MiB 10) of the last member.
    off=$(field "${files[0]}" "Data Offset")
    printf 'XXXX' | dd of="${files[$((disks - 1))]}" bs=1 seek=$((off * 512 + (10 << 20) + 100)) \
        conv=notrunc 2>/dev/null
    start_server "$sock" "${files[@]}" 2>"$tmp/serve.log"
    grep -q "resyncing the 3 of [0-9]* write-intent bitmap chunks" "$tmp/serve.log" ||
        fail "raid$level: not a bitmap resync of 3 chunks: $(cat "$tmp/serve.log")"
    stop_server "$server_pid" || fail "raid$level: stop"
    rm -f "$sock"
    out=$("$URAID" check "${files[@]}" 2>&1) || fail "raid$level: check: $out"
    grep -q "agree" <<<"$out" || fail "raid$level: check: $out"
    for f in "${files[@]}"; do
        out=$(examine_bitmap "$f" 16)
        grep -q " 0 dirty" <<<"$out" || fail "raid$level: $f: after a clean stop: $out"
        ev=$(mdadm --examine "$f" | bm_field Events)
        [ "$(bm_field Events <<<"$out")" = "$ev" ] || fail "raid$level: $f: events after stop"
        [ "$(bm_field 'Events Cleared' <<<"$out")" = "$ev" ] ||
            fail "raid$level: $f: events cleared after stop"
        mdadm --examine "$f" | grep -q "State : clean" || fail "raid$level: $f not clean"
    done
    rm -f "${files[@]}"
done
# v1.0: each member's bitmap lies below its own superblock at its own end,
# so members of different sizes keep it at different offsets; serve must
# write each member's copy there, not into the other's data.
truncate -s 12M "$tmp/e.0"
truncate -s 16M "$tmp/e.1"
"$URAID" create --level=1 --metadata=1.0 --bitmap=internal --bitmap-chunk=1M \
    "$tmp/e.0" "$tmp/e.1" >/dev/null 2>&1 || fail "v1.0: create"
"$URAID" serve --run "head -c \$(nbdinfo --size \"\$uri\") /dev/urandom > $tmp/e.data &&
    nbdcopy $tmp/e.data \"\$uri\"" "$tmp/e.0" "$tmp/e.1" 2>"$tmp/e.log" || fail "v1.0: serve: $(cat "$tmp/e.log")"
grep -q "keeping its write-intent bitmap" "$tmp/e.log" || fail "v1.0: bitmap not kept: $(cat "$tmp/e.log")"
out=$("$URAID" check "$tmp/e.0" "$tmp/e.1" 2>&1) || fail "v1.0: check: $out"
grep -q "agree" <<<"$out" || fail "v1.0: check: $out"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" $tmp/e.out" "$tmp/e.0" "$tmp/e.1" 2>/dev/null
cmp -s "$tmp/e.out" "$tmp/e.data" || fail "v1.0: data read back differs"
for f in "$tmp/e.0" "$tmp/e.1"; do
    out=$("$URAID" examine "$f")
    grep -q "Bitmap Status : 0 of .* up to date" <<<"$out" || fail "v1.0: $f: $(grep Bitmap <<<"$out")"
    [ "$(bm_field 'Bitmap Events' <<<"$out")" = "$(bm_field Events <<<"$out")" ] ||
        fail "v1.0: $f: bitmap events behind the superblock's"
done
echo "ok: v1.0 members of two sizes each keep the bitmap below their own superblock"
echo "ok: RAID1 and RAID5 keep the bitmap: after SIGKILL exactly the written chunks are dirty, events match; the restart resyncs those 3 chunks only and repairs a torn write; a clean stop leaves 0 dirty"
