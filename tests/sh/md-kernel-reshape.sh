#!/bin/bash
# md-kernel-reshape.sh — uraid reads the arrays the Linux kernel's md left
# half-reshaped (in one linux-peer VM boot, tests/linux-peer): mdadm
# creates each, fills it with random data (the kernel's sha256 of the whole
# array kept), starts a reshape, holds it with md's sync_max part-way and
# stops the array there; then `uraid serve --readonly` must read the same
# sha256 from the two geometries:
#   g5: raid5 3 -> 4 devices (--add), forwards, data offset moved;
#   g6: raid6 4 -> 5 devices (--add);
#   c5: raid5 of 4, chunk 64 -> 32 KiB (no device added).
# Each one's reshape must really have stopped part-way (0 < reshape_position
# < end, the md superblock saying a reshape is active), or the test fails.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=1
. "$(dirname "$0")/peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }

add_images g5 4 24M
add_images g6 5 24M
add_images c5 4 24M

# guest_half NAME MD LEVEL CHUNK N GROW...: guest lines in which mdadm
# makes NAME (the first N of its devices), fills it, prints "before NAME
# SHA256", starts `mdadm --grow GROW...` crawling, holds it at 4096
# sectors (md's sync_max), prints "held NAME RESHAPE_POSITION" and stops it.
guest_half() {
    local name=$1 md=$2 level=$3 chunk=$4 n=$5
    shift 5
    local all=(${devs[$name]})
    echo "mdadm --create /dev/md$md --run --metadata=1.2 --level=$level --chunk=$chunk --raid-devices=$n ${all[*]:0:$n} >/tmp/c.log 2>&1 || { echo 'before $name create-failed'; cat /tmp/c.log; }"
    echo "while [ \"\$(cat /sys/block/md$md/md/sync_action)\" != idle ]; do sleep 0.2; done"
    echo "dd if=/dev/urandom of=/dev/md$md bs=64k oflag=direct 2>/dev/null; sync"
    echo "echo \"before $name \$(sha256sum < /dev/md$md | cut -d' ' -f1)\""
    echo "echo 10 > /proc/sys/dev/raid/speed_limit_min; echo 10 > /proc/sys/dev/raid/speed_limit_max"
    echo "mdadm --grow /dev/md$md $* >/tmp/g.log 2>&1 || { echo 'held $name grow-failed'; cat /tmp/g.log; }"
    echo "for t in \$(seq 100); do [ \"\$(cat /sys/block/md$md/md/sync_action)\" = reshape ] && break; sleep 0.1; done"
    # md lowers sync_max only while the reshape is frozen (as mdadm --stop does)
    echo "echo frozen > /sys/block/md$md/md/sync_action; echo 4096 > /sys/block/md$md/md/sync_max; echo idle > /sys/block/md$md/md/sync_action"
    echo "echo 100000 > /proc/sys/dev/raid/speed_limit_min; echo 200000 > /proc/sys/dev/raid/speed_limit_max"
    echo "for t in \$(seq 300); do [ \"\$(cut -d' ' -f1 /sys/block/md$md/md/sync_completed)\" -ge 4096 ] 2>/dev/null && break; sleep 0.1; done"
    echo "mdadm --stop /dev/md$md >/dev/null 2>&1"
    # where the superblock says the reshape is (none once it finished)
    echo "echo \"held $name \$(mdadm --examine ${all[0]} | sed -n 's/.*Reshape pos.n : \\([0-9]*\\).*/\\1/p') \$(mdadm --examine ${all[0]} | sed -n 's/.*Feature Map : //p')\""
    echo "mdadm --examine ${all[0]} | grep -iE 'reshape|delta|new|offset|feature' | sed 's/^/examine $name /'"
}
{
    guest_header
    guest_half g5 0 5 64 3 --raid-devices=4 --add "$(cut -d' ' -f4 <<< "${devs[g5]}")"
    guest_half g6 1 6 64 4 --raid-devices=5 --add "$(cut -d' ' -f5 <<< "${devs[g6]}")"
    guest_half c5 2 5 64 4 --chunk=32
    echo 'exit 0'
} > "$D/job.sh"

LINUX_PEER_SMP=${LINUX_PEER_SMP:-1} run_peer "${imgs[@]}"
fail=0
for name in g5 g6 c5; do
    before=$(grep "^before $name " <<< "$out" | cut -d' ' -f3)
    held=$(grep "^held $name " <<< "$out" || true)
    pos=$(cut -d' ' -f3 <<< "$held")
    if ! [[ "$pos" =~ ^[0-9]+$ ]] || [ "$pos" = 0 ]; then
        echo "FAIL: $name: the kernel's reshape was not held part-way: '$held'"
        grep "^examine $name " <<< "$out" || true
        fail=1
        continue
    fi
    got=$($URAID serve --readonly --run 'nbdcopy "$uri" - | sha256sum' ${files[$name]} 2>"$D/$name.err" | cut -d' ' -f1) || true
    if [ -n "$before" ] && [ "$got" = "$before" ]; then
        echo "ok: $name: uraid reads the kernel's half-reshaped array (held at sector $pos)"
    else
        echo "FAIL: $name: uraid read '$got', the kernel wrote '$before' (held: $held)"
        cat "$D/$name.err"
        grep "^examine $name " <<< "$out" || true
        fail=1
    fi
done
exit $fail
