#!/bin/bash
# md-kernel-parity.sh — the Linux kernel's md and uraid read each other's
# RAID5 and RAID6 arrays (in a linux-peer VM, tests/linux-peer).
# Ours: `uraid create` and a pattern written through `uraid serve` as one
# stream (write-behind, whole stripes); the kernel reads the same sha256
# and its parity check finds no mismatch.
# Theirs: mdadm
# --create in the guest (RAID5 left-symmetric on 3 disks and left-asymmetric
# on 4, RAID6 left-symmetric on 4 and right-asymmetric on 5), a pattern
# written with dd; on the host uraid examines and serves each read-only and
# must read the same sha256, then again with members left out (one for
# RAID5, two for RAID6), their chunks rebuilt from P (and Q).
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=6
. "$(dirname "$0")/peer-lib.sh"

# Ours: uraid creates the array and writes the pattern through `uraid
# serve`; the kernel assembles it, reads the same sha256, and its parity
# check (sync_action=check) finds no stripe whose P or Q disagrees.
ours=("o5 --level=5 --chunk=64 3" "o6 --level=6 --layout=left-symmetric-6 --chunk=32 5")
# Theirs: name, mdadm options, members, how many to leave out on the
# degraded read.
arrays=("k5 --level=5 --chunk=64 3 1"
        "k5la --level=5 --layout=left-asymmetric --chunk=32 4 1"
        "k6 --level=6 --chunk=64 4 2"
        "k6ra --level=6 --layout=right-asymmetric --chunk=16 5 2")
for spec in "${ours[@]}"; do
    set -- $spec
    add_images "$1" "${*: -1}"
    name=$1
    shift
    $URAID create "${@:1:$#-1}" --name="$name" ${files[$name]} >/dev/null
    # One stream, one request in flight, on members wrapped in disk
    # models: write-behind takes it (whole stripes from its lanes, parity
    # computed once per stripe; o6's first piece starts mid-stripe, which
    # goes through the direct path), and that is the parity the kernel
    # checks.
    sims=()
    for f in ${files[$name]}; do sims+=("sim:400M:$f"); done
    $URAID serve --run "nbdcopy --connections=1 --requests=1 '$D/pat' \"\$uri\"" \
        "${sims[@]}" 2>"$D/$name.log"
    grep -q "writing a stream behind" "$D/$name.log" ||
        { echo "FAIL: the pattern was not written behind on $name"; cat "$D/$name.log"; exit 1; }
done
for spec in "${arrays[@]}"; do
    set -- $spec
    add_images "$1" "${*: -2:1}"
done

{
    guest_header
    i=0
    for spec in "${ours[@]}"; do
        set -- $spec
        guest_read_ours "$1" $i 1 ${devs[$1]}
        i=$((i + 1))
    done
    for spec in "${arrays[@]}"; do
        set -- $spec
        name=$1; shift
        n=${*: -2:1}
        opts=("${@:1:$#-2}")
        # --assume-clean on zeroed members: the parity of zeros is zero.
        echo "mdadm --create /dev/md$i --run --metadata=1.2 --name=$name ${opts[*]} --assume-clean --bitmap=none --raid-devices=$n ${devs[$name]} >/tmp/c.log 2>&1 || { echo 'create-failed $name'; cat /tmp/c.log; }"
        echo "pattern | dd of=/dev/md$i bs=1M iflag=fullblock oflag=direct 2>/dev/null; sync"
        echo "echo \"level $name \$(cat /sys/block/md$i/md/level) \$(cat /sys/block/md$i/md/layout)\""
        echo "mdadm --stop /dev/md$i >/dev/null 2>&1 && echo 'written $name'"
        i=$((i + 1))
    done
    echo 'exit 0'
} > "$D/job.sh"

run_peer "${imgs[@]}"
fail=0
for spec in "${ours[@]}"; do
    set -- $spec
    host_check_ours "$1" 1 "$*"
done
read_sha() { # serve ARGS... ; prints the sha256 of the first MB MiB
    $URAID serve --readonly "$@" --run 'nbdcopy "$uri" - | head -c '$((MB << 20))' | sha256sum' \
        2>/dev/null | cut -d' ' -f1
}
for spec in "${arrays[@]}"; do
    set -- $spec
    name=$1 gone=${*: -1}
    grep -q "^written $name" <<< "$out" || { echo "FAIL: the guest could not make $name"; echo "$out" | tail -20; fail=1; continue; }
    set -- ${files[$name]}
    $URAID examine "$1" | grep -q 'Checksum : .* - correct' || { echo "FAIL: uraid examine $name"; fail=1; }
    got=$(read_sha "$@")
    if [ "$got" = "$want" ]; then echo "ok: uraid reads the kernel's $spec ($(grep "^level $name" <<< "$out"))"; else
        echo "FAIL: uraid read of kernel-made $name: $got (want $want)"; fail=1; fi
    # Leave out members 2.. (the first stays, so roles are not just a prefix).
    left=("$1" "${@:$((gone + 2))}")
    got=$(read_sha --degraded "${left[@]}")
    if [ "$got" = "$want" ]; then echo "ok: uraid reads $name with $gone member(s) gone"; else
        echo "FAIL: uraid read of $name with $gone member(s) gone: $got (want $want)"; fail=1; fi
done
exit $fail
