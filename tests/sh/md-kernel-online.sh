#!/bin/bash
# md-kernel-online.sh — the Linux kernel's md takes what `uraid serve`'s
# online recovery leaves behind (in a linux-peer VM, tests/linux-peer).
#   whole: RAID5 whose lost member serve rebuilt in the
#          background while a client rewrote the data; the kernel
#          assembles it, reads the pattern, and its check finds no
#          mismatch.
#   half:  RAID1 and RAID5 whose online rebuild serve was stopped at
#          (SIGTERM, on a slowed member) with the recovery offset saved;
#          the kernel's recovery starts at that offset, finishes, reads the
#          pattern, and its check finds no mismatch.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=6
. "$(dirname "$0")/peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }

# name level members lost-role whole|half options
arrays=("w5 5 3 1 whole --chunk=64" "h1 1 2 1 half" "h5 5 3 2 half --chunk=64")
declare -A offset
field() { $URAID examine "$1" 2>/dev/null | sed -n "s/^ *$2 : \([0-9]*\).*/\1/p"; }
serve_pid=
stop_serve() { [ -z "$serve_pid" ] || kill "$serve_pid" 2>/dev/null || true; }
trap 'stop_serve; rm -rf "$D"' EXIT
for spec in "${arrays[@]}"; do
    set -- $spec
    name=$1 level=$2 n=$3 lost=$4 mode=$5
    shift 5
    add_images "$name" "$n"
    $URAID create --level="$level" "$@" --name="$name" ${files[$name]} >/dev/null
    $URAID serve --run "nbdcopy '$D/pat' \"\$uri\"" ${files[$name]} 2>/dev/null
    new="$D/$name.$lost.img" rest=() specs=()
    for ((j = 0; j < n; j++)); do [ $j = "$lost" ] || rest+=("$D/$name.$j.img"); done
    rm "$new"
    truncate -s 16M "$new"
    $URAID add --no-rebuild "$new" "${rest[@]}" >/dev/null 2>&1 ||
        { echo "FAIL: uraid add for $name"; exit 1; }
    for ((j = 0; j < n; j++)); do
        if [ $j = "$lost" ]; then
            [ "$mode" = half ] && specs+=("sim:2M:$new") || specs+=("sim:40M:$new")
        else
            specs+=("$D/$name.$j.img")
        fi
    done
    $URAID serve -f --socket "$D/$name.sock" "${specs[@]}" 2> "$D/$name.log" &
    serve_pid=$!
    for _ in $(seq 200); do [ -S "$D/$name.sock" ] && break; sleep 0.05; done
    if [ "$mode" = whole ]; then
        # the same pattern again, racing the rebuild
        nbdcopy "$D/pat" "nbd+unix:///?socket=$D/$name.sock" ||
            { echo "FAIL: $name: rewrite"; exit 1; }
        for _ in $(seq 600); do
            $URAID examine "$new" 2>/dev/null | grep -q "Recovery Offset" || break
            sleep 0.05
        done
    else
        for _ in $(seq 400); do
            [ "$(du -k "$new" | cut -f1)" -ge 3072 ] && break
            sleep 0.05
        done
    fi
    kill -TERM $serve_pid
    wait $serve_pid || { echo "FAIL: $name: serve: $(cat "$D/$name.log")"; exit 1; }
    serve_pid=
    ro=$(field "$new" "Recovery Offset")
    if [ "$mode" = whole ]; then
        [ -z "$ro" ] || { echo "FAIL: $name: still recovering at $ro: $(cat "$D/$name.log")"; exit 1; }
        echo "$name: rebuilt by uraid serve"
    else
        [ "${ro:-0}" -gt 0 ] || { echo "FAIL: $name: no recovery offset saved: $(cat "$D/$name.log")"; exit 1; }
        offset[$name]=$ro
        echo "$name: uraid serve stopped its rebuild at sector $ro"
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
        else
            echo "mdadm --assemble /dev/md$i ${devs[$name]} >/dev/null 2>&1 && echo \"degraded $name \$(cat /sys/block/md$i/md/degraded)\"; mdadm --stop /dev/md$i >/dev/null 2>&1"
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
    host_check_ours "$name" 1 "$* (online rebuild)"
    grep -q "^degraded $name 0$" <<< "$out" || { echo "FAIL: $name not whole in the kernel: $(grep "^degraded $name" <<< "$out")"; fail=1; }
    [ "$5" = half ] || continue
    host_check_resumed "$name" "${offset[$name]}" "uraid serve"
done
exit $fail
