#!/bin/bash
# md-kernel.sh — the Linux kernel's md and uraid read each other's arrays.
# One linux-peer VM boot (tests/linux-peer) does both directions:
#   ours:   `uraid create` on the host, a known pattern written through
#           `uraid serve`; the kernel assembles each array (raid0, raid1,
#           raid10 n2/f2/o2, linear) and must read the same sha256;
#           afterwards uraid reads the members again, superblocks now
#           rewritten by the kernel.
#           The kernel's check of every mirror finds no mismatch.
#   theirs: mdadm --create in the guest (raid0, raid1 with an internal
#           bitmap, raid10, linear),
#           the pattern written with dd; uraid examines and serves them
#           read-only and must read the same sha256.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=4
. "$(dirname "$0")/peer-lib.sh"

# name level-options disks: arrays uraid creates, then the kernel's.
ours=("o0 --level=0 --chunk=64 2" "o1 --level=1 2" "on2 --level=10 --chunk=64 3"
      "of2 --level=10 --layout=f2 2" "oo2 --level=10 --layout=o2 3" "olin --level=linear 2")
theirs=("k0 --level=0 --chunk=64 2" "k1 --level=1 --assume-clean --bitmap=internal 2"
        "k10 --level=10 --layout=n2 --assume-clean --bitmap=none 3" "klin --level=linear 2")

for spec in "${ours[@]}" "${theirs[@]}"; do
    set -- $spec
    add_images "$1" "${!#}" 24M
done

for spec in "${ours[@]}"; do
    set -- $spec
    name=$1; shift
    opts=("${@:1:$#-1}")
    $URAID create "${opts[@]}" --name="$name" ${files[$name]} >/dev/null
    $URAID serve --run "nbdcopy '$D/pat' \"\$uri\"" ${files[$name]} 2>/dev/null
done

# The guest job: assemble ours, create and fill theirs.
{
    guest_header
    i=0
    for spec in "${ours[@]}"; do
        set -- $spec
        # mirrors must agree: what create zeroed and what we wrote
        check=0
        case "$spec" in *--level=1*) check=1 ;; esac
        guest_read_ours "$1" $i $check ${devs[$1]}
        i=$((i + 1))
    done
    for spec in "${theirs[@]}"; do
        set -- $spec
        name=$1; shift
        n=${!#}
        echo "mdadm --create /dev/md$i --run --metadata=1.2 --name=$name ${*:1:$#-1} --raid-devices=$n ${devs[$name]} >/tmp/c.log 2>&1 || { echo 'theirs $name create-failed'; cat /tmp/c.log; }"
        echo "pattern | dd of=/dev/md$i bs=1M iflag=fullblock oflag=direct 2>/dev/null; sync"
        echo "mdadm --stop /dev/md$i >/dev/null 2>&1 && echo 'theirs $name written'"
        i=$((i + 1))
    done
    echo 'exit 0'
} > "$D/job.sh"

run_peer "${imgs[@]}"
fail=0
for spec in "${ours[@]}"; do
    set -- $spec
    check=0
    case "$*" in *--level=1*) check=1 ;; esac
    host_check_ours "$1" $check "$*"
    # and back: superblocks the kernel rewrote
    got=$($URAID serve --readonly --run 'nbdcopy "$uri" - | head -c '$((MB << 20))' | sha256sum' ${files[$1]} 2>/dev/null | cut -d' ' -f1)
    [ "$got" = "$want" ] || { echo "FAIL: uraid re-read of $1 after the kernel: $got"; fail=1; }
done
for spec in "${theirs[@]}"; do
    set -- $spec
    name=$1
    grep -q "^theirs $name written" <<< "$out" || { echo "FAIL: guest could not make $name"; echo "$out" | tail -20; fail=1; continue; }
    first=${files[$name]%% *}
    $URAID examine "$first" | grep -q 'Checksum : .* - correct' || { echo "FAIL: uraid examine $name"; fail=1; }
    got=$($URAID serve --readonly --run 'nbdcopy "$uri" - | head -c '$((MB << 20))' | sha256sum' ${files[$name]} 2>/dev/null | cut -d' ' -f1)
    if [ "$got" = "$want" ]; then echo "ok: uraid reads the kernel's $*"; else
        echo "FAIL: uraid read of kernel-made $name: $got (want $want)"; fail=1; fi
done
exit $fail
