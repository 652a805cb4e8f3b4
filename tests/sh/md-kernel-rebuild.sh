#!/bin/bash
# md-kernel-rebuild.sh — the Linux kernel's md takes the arrays `uraid add`
# and `uraid rebuild` leave behind (in a linux-peer VM,
# tests/linux-peer).
#   rebuilt: RAID5, RAID6 (two members) and RAID10 n2 with lost members
#            rebuilt by uraid; the kernel assembles each, reads the pattern
#            written before the loss and its check finds no mismatch.
#   halfway: RAID1 and RAID5 whose rebuild uraid was stopped (SIGTERM) with
#            its recovery offset saved; the kernel assembles them, its
#            recovery starts at that offset (sync_completed, read while
#            the recovery is held at 1 KiB/s), finishes, reads the pattern
#            and its check finds no mismatch; back on the host uraid reads
#            them, whole, with the superblocks the kernel wrote.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=6
. "$(dirname "$0")/peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }

# name level members lost-roles(comma) full|half options
arrays=("f5 5 3 1 full --chunk=64" "f6 6 4 0,3 full --chunk=32"
        "f10 10 4 2 full --layout=n2 --chunk=64" "h1 1 2 1 half" "h5 5 3 2 half --chunk=64")
declare -A offset
field() { $URAID examine "$1" 2>/dev/null | sed -n "s/^ *$2 : \([0-9]*\).*/\1/p"; }
for spec in "${arrays[@]}"; do
    set -- $spec
    name=$1 level=$2 n=$3 lost=$4 mode=$5
    shift 5
    add_images "$name" "$n"
    $URAID create --level="$level" "$@" --name="$name" ${files[$name]} >/dev/null
    $URAID serve --run "nbdcopy '$D/pat' \"\$uri\"" ${files[$name]} 2>/dev/null
    # Lose the members, then add blanks in their place: the first ones
    # without rebuilding, the last one rebuilding them all.
    news=() rest=()
    for ((j = 0; j < n; j++)); do
        if [[ ",$lost," == *",$j,"* ]]; then
            rm "$D/$name.$j.img"
            truncate -s 16M "$D/$name.$j.img"
            news+=("$D/$name.$j.img")
        else
            rest+=("$D/$name.$j.img")
        fi
    done
    for ((k = 0; k < ${#news[@]}; k++)); do
        opt=()
        [ $k -lt $((${#news[@]} - 1)) ] || [ "$mode" = half ] && opt=(--no-rebuild)
        $URAID add "${opt[@]}" "${news[k]}" "${news[@]:0:k}" "${rest[@]}" >/dev/null 2>&1 ||
            { echo "FAIL: uraid add for $name"; exit 1; }
    done
    if [ "$mode" = half ]; then
        # a slowed new member, stopped once a few MiB are on it
        $URAID rebuild "sim:2M:${news[0]}" "${rest[@]}" >/dev/null 2>&1 &
        pid=$!
        for _ in $(seq 400); do
            [ "$(du -k "${news[0]}" | cut -f1)" -ge 3072 ] && break
            sleep 0.05
        done
        kill -TERM $pid 2>/dev/null || true
        wait $pid || true
        offset[$name]=$(field "${news[0]}" "Recovery Offset")
        [ "${offset[$name]:-0}" -gt 0 ] || { echo "FAIL: $name: no recovery offset saved"; exit 1; }
        echo "$name: uraid stopped its rebuild at sector ${offset[$name]}"
    fi
done

{
    guest_header
    i=0
    for spec in "${arrays[@]}"; do
        set -- $spec
        name=$1
        if [ "$5" = half ]; then
            guest_resume_recovery "$name" $i ${devs[$name]}
        fi
        guest_read_ours "$name" $i 1 ${devs[$name]}
        i=$((i + 1))
    done
    echo 'exit 0'
} > "$D/job.sh"

run_peer "${imgs[@]}"
fail=0
for spec in "${arrays[@]}"; do
    set -- $spec
    name=$1
    host_check_ours "$name" 1 "$* rebuilt"
    [ "$5" = half ] || continue
    host_check_resumed "$name" "${offset[$name]}" "uraid"
    grep -q "^degraded $name 0$" <<< "$out" || { echo "FAIL: $name not whole after the kernel's recovery: $(grep "^degraded $name" <<< "$out")"; fail=1; }
    # Back on the host: the kernel's superblocks, whole, read by uraid.
    for f in ${files[$name]}; do
        $URAID examine "$f" | grep -q "Recovery Offset" && { echo "FAIL: $name: $f still recovering"; fail=1; }
    done
    got=$($URAID serve --readonly --run 'nbdcopy "$uri" - | head -c '$((MB << 20))' | sha256sum' ${files[$name]} 2>/dev/null | cut -d' ' -f1)
    [ "$got" = "$want" ] || { echo "FAIL: uraid re-read of $name after the kernel: $got"; fail=1; }
    $URAID check ${files[$name]} >/dev/null 2>&1 || { echo "FAIL: uraid check of $name after the kernel"; fail=1; }
done
exit $fail
