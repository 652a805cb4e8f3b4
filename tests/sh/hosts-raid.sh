#!/bin/bash
# hosts-raid.sh — arrays whose members are on other hosts (network
# namespaces, hosts-lib.sh), one host cut off mid-run.
#
# A RAID1 over hosts 1 (uraid serve) and 2 (nbdkit), then a RAID10 (n2,
# four members) over hosts 1-4: created by uraid on nbd:// members with
# timeout=3, served by uraid over a Unix socket, written and verified by
# fio (crc32c) while one host's link goes down.  Shown:
#  - fio sees no error and its data verifies: the array served on;
#  - the cut member is failed (`uraid detail`: faulty or removed), the time from
#    the cut is printed, not asserted;
#  - the link restored, the member reconnects by itself (the serve log's
#    "reconnected", the member's own word that its requests work again);
#  - md re-adds it from the write-intent bitmap by itself and resyncs only the
#    bitmap chunks written while the host was away (fio's, and a burst at
#    known offsets: `uraid detail --json`'s readd object counts them), the
#    data verifies (fio --verify_only, the burst read back) and `uraid
#    check` finds the copies agree.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hosts-lib.sh"
requires fio nbdkit python3
hosts_require

timeout_s=3
opts="timeout=$timeout_s&reconnect=0.5"
fio_mib=24         # fio writes the array's first fio_mib MiB
bm_chunk_mib=4     # the write-intent bitmap's chunk
burst_at=(36 44 52) # MiB: the burst while the host is away
bm="--bitmap=internal --bitmap-chunk=${bm_chunk_mib}M"

now() { date +%s.%N; }
secs() { python3 -c "print('%.1f' % ($2 - $1))"; }

# readd_json CTL — the array's `readd` object in `uraid detail --json` as
# "count chunks bytes last_chunks last_bytes" (zeros before any).
readd_json() {
    "$URAID" detail --json "$1" | python3 -c '
import json, sys
ra = json.load(sys.stdin)["arrays"][0].get("readd", {})
print(*(ra.get(k, 0) for k in ("count", "chunks", "bytes", "last_chunks", "last_bytes")))'
}

# burst SOCK — while the host is away: one 64 KiB write of a known pattern at
# each of $burst_at (MiB), past fio's first $fio_mib MiB, each in a bitmap
# chunk of its own.
burst() {
    local off
    for off in "${burst_at[@]}"; do
        qemu-io -f raw -c "write -P 0x5a ${off}M 64k" "nbd+unix:///?socket=$1" >/dev/null ||
            fail "burst: write at ${off} MiB failed"
    done
}

# readd_check NAME CUT ROLE CTL SOCK LOG — the link is back: md takes the
# member back from the bitmap by itself; it resyncs the chunks written while
# the host was away and no others (fio's region, all of whose bitmap chunks
# fio wrote after the cut, and the burst's), the data verifies and `uraid
# check` finds 0.
readd_check() {
    local name=$1 cut=$2 role=$3 ctl=$4 sock=$5 log=$6 st="" t0 ra
    t0=$(now)
    for _ in $(seq 600); do
        st=$(role_state "$ctl" "$role")
        [ "$st" = "active sync" ] && break
        sleep 0.1
    done
    [ "$st" = "active sync" ] ||
        fail "$name: host $cut's member is '$st', not re-added: $(grep -i re-add "$log")"
    echo "measure: $name: host $cut's member in sync again $(secs "$t0" "$(now)") s after it reconnected"
    grep -q "re-added to role $role and in sync" "$log" ||
        fail "$name: no re-add in the serve log: $(cat "$log")"
    read -r -a ra <<<"$(readd_json "$ctl")"
    local want=$(( fio_mib / bm_chunk_mib + ${#burst_at[@]} ))
    [ "${ra[0]}" = 1 ] || fail "$name: $((ra[0])) re-adds, not 1"
    [ "${ra[3]}" = "$want" ] ||
        fail "$name: re-add resynced ${ra[3]} bitmap chunks, not the $want written while host $cut was away"
    local size
    size=$("$URAID" detail --json "$ctl" | python3 -c '
import json, sys; print(json.load(sys.stdin)["arrays"][0]["dev_size"])')
    (( ra[4] > 0 && ra[4] < size )) ||
        fail "$name: re-add resynced ${ra[4]} bytes of a ${size}-byte member"
    echo "measure: $name: re-add resynced ${ra[3]} bitmap chunks, ${ra[4]} bytes of a $size-byte member"
    local off
    for off in "${burst_at[@]}"; do
        qemu-io -f raw -c "read -P 0x5a ${off}M 64k" "nbd+unix:///?socket=$sock" |
            grep -q "read 65536" || fail "$name: the burst at ${off} MiB does not read back"
    done
    fio --name="$name" --ioengine=nbd --uri="nbd+unix:///?socket=$sock" \
        --rw=randwrite --bs=64k --size=${fio_mib}M --iodepth=8 \
        --verify=crc32c --verify_fatal=1 --verify_only --output="$tmp/$name.verify" ||
        fail "$name: fio's data does not verify after the re-add: $(cat "$tmp/$name.verify")"
    "$URAID" check --wait "$ctl" >"$tmp/$name.check" 2>&1 ||
        fail "$name: uraid check: $(cat "$tmp/$name.check")"
    grep -q "the copies agree" "$tmp/$name.check" ||
        fail "$name: uraid check after the re-add: $(cat "$tmp/$name.check")"
}

# run_cut NAME CUT_HOST CUT_ROLE "CREATE_OPTS" MEMBER... — create, serve,
# fio verify with CUT_HOST's link cut a second in, the checks above.
run_cut() {
    local name=$1 cut=$2 role=$3 copts=$4
    shift 4
    local sock=$tmp/$name.sock ctl=$tmp/$name.ctl log=$tmp/$name.log
    # shellcheck disable=SC2086 # CREATE_OPTS are words
    "$URAID" create $copts --name="$name" "$@" >/dev/null 2>"$tmp/create.log" ||
        fail "$name: create on remote members: $(cat "$tmp/create.log")"
    "$URAID" serve -f --socket "$sock" --control "$ctl" "$@" 2>"$log" &
    local pid=$!
    hosts_pids+=("$pid")
    for _ in $(seq 200); do [ -S "$sock" ] && [ -S "$ctl" ] && break; sleep 0.05; done
    [ -S "$sock" ] || fail "$name: serve did not start: $(cat "$log")"

    fio --name="$name" --ioengine=nbd --uri="nbd+unix:///?socket=$sock" \
        --rw=randwrite --bs=64k --size=${fio_mib}M --iodepth=8 --rate=6m \
        --verify=crc32c --verify_fatal=1 --output="$tmp/$name.fio" &
    local fio_pid=$!
    sleep 1
    local t0
    t0=$(now)
    host_link_down "$cut"
    local st=""
    for _ in $(seq 600); do
        st=$(role_state "$ctl" "$role")
        [[ "$st" == *faulty* || "$st" == removed ]] && break
        sleep 0.1
    done
    [[ "$st" == *faulty* || "$st" == removed ]] || fail "$name: host $cut cut off, its member is still '$st'"
    echo "measure: $name: host $cut's member failed $(secs "$t0" "$(now)") s after its link went down (timeout=$timeout_s)"
    wait "$fio_pid" || fail "$name: fio failed while host $cut was away: $(cat "$tmp/$name.fio")"
    grep -q "err= 0" "$tmp/$name.fio" || fail "$name: fio reported errors: $(cat "$tmp/$name.fio")"
    "$URAID" detail "$ctl" | grep -q "degraded" ||
        fail "$name: the array is not degraded: $("$URAID" detail "$ctl")"
    burst "$sock"

    t0=$(now)
    host_link_up "$cut"
    wait_log "$log" "$(host_addr "$cut").*reconnected" ||
        fail "$name: host $cut's member did not reconnect: $(cat "$log")"
    echo "measure: $name: host $cut's member reconnected $(secs "$t0" "$(now)") s after the link came back"

    readd_check "$name" "$cut" "$role" "$ctl" "$sock" "$log"

    kill -TERM "$pid"
    wait "$pid" || fail "$name: serve exited with $? after SIGTERM"
}

for i in 1 2 3 4; do
    host_add "$i"
    mkdir -p "$tmp/h$i"
    truncate -s 64M "$tmp/h$i/r1.img" "$tmp/h$i/r10.img"
done
host_serve_uraid 1 "$tmp/h1" r1.img r10.img
for i in 2 3 4; do host_serve_nbdkit "$i" "$tmp/h$i"; done

run_cut r1 2 1 "--level=1 $bm" "$(host_uri 1 r1.img)?$opts" "$(host_uri 2 r1.img)?$opts"
r10=()
for i in 1 2 3 4; do r10+=("$(host_uri "$i" r10.img)?$opts"); done
run_cut r10 3 2 "--level=10 --layout=n2 --raid-devices=4 $bm" "${r10[@]}"
echo "ok: RAID1 and RAID10 over remote members served on with a host cut off; it reconnected"
