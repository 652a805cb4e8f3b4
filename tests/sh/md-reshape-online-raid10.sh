#!/bin/bash
# md-reshape-online-raid10.sh — RAID10 grows, 4 -> 5 devices, started
# through the control socket of a running `uraid serve` (`uraid grow -n 5
# --add NEW CONTROL`), while a client writes at random against a flat
# reference file: the same driver and reshape vol as RAID5/6 and as the
# offline RAID10 grow; near-2, then offset-2 with a write-intent bitmap of
# 64 KiB chunks (resized to the new size at the start, as the kernel's
# raid10_start_reshape does).  `uraid detail` shows the reshape (Delta
# Devices 1, (4->5)); once it ended new connections get the grown size
# (5/4 of it); after the serve stops mdadm --examine on every member (the
# new one too) shows 5 devices, the layout and no reshape, mdadm -X a
# bitmap whose bits cover the grown array, the array reads as the
# reference (the grown part as zeros), and `uraid check` finds the copies
# equal.
. "$(dirname "$0")/reshape-lib.sh"
. "$(dirname "$0")/bitmap-lib.sh"
requires nbdinfo nbdcopy mdadm cmp

grow_served() { # LAYOUT BITMAP MDADM_LAYOUT
    rm -f "$tmp"/m?
    for i in 0 1 2 3 4; do truncate -s 8M "$tmp/m$i"; done
    m=("$tmp/m0" "$tmp/m1" "$tmp/m2" "$tmp/m3")
    reshape_array --level=10 --layout="$1" --chunk=64 ${2:+--bitmap=internal --bitmap-chunk=64K} -- "${m[@]}"
    sock=$tmp/s$1.sock ctl=$tmp/s$1.ctl
    reshape_serve 1M "${m[@]}"
    out=$("$URAID" grow -n 5 --add "$tmp/m4" "$ctl" 2>&1) || fail "grow through the control socket: $out"
    grep -q "reshaping 4 -> 5 devices" <<<"$out" || fail "grow said: $out"
    out=$("$URAID" detail "$ctl") || fail "detail"
    grep -q "Reshape Status : [0-9]*% complete" <<<"$out" || fail "detail shows no reshape: $out"
    grep -q "Delta Devices : 1, (4->5)" <<<"$out" || fail "detail: no delta: $out"
    [ "$(nbdinfo --size "$uri")" = "$size" ] || fail "a new connection during the reshape: not the old size"
    echo "ok: $1: a raid10 grow started while serving; detail shows it"

    reshape_end "$ctl" "the raid10 reshape" $((size / 4 * 5))
    m+=("$tmp/m4")
    reshape_examined "Raid Devices : 5" "Layout : $3" '!Reshape\|Delta\|New Offset' -- "${m[@]}"
    if [ -n "$2" ]; then # the bits cover the grown array: 64 KiB chunks of it
        x=$(examine_bitmap "${m[0]}" 8)  # 1.2: 4 KiB after the superblock at 4 KiB
        grep -q "Bitmap : $((size / 4 * 5 / 65536)) bits" <<<"$x" || fail "mdadm -X: not $((size / 4 * 5 / 65536)) bits: $x"
    fi
    head -c $((size / 4)) /dev/zero >>"$tmp/ref"
    "$URAID" serve --readonly --run "nbdcopy \"\$uri\" - | cmp - '$tmp/ref'" "${m[@]}" 2>/dev/null ||
        fail "after the reshape the array differs from the reference"
    "$URAID" check "${m[@]}" >"$tmp/check.out" 2>&1 || fail "check: $(cat "$tmp/check.out")"
    grep -q "agree" "$tmp/check.out" || fail "check said: $(cat "$tmp/check.out")"
    echo "ok: $1${2:+ with a bitmap}: 4 -> 5 devices while serving under $(cat "$tmp/client.out") client writes; mdadm agrees, the data and the copies too"
}

grow_served n2 '' near=2
grow_served o2 1 offset=2
