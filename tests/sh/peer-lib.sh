# peer-lib.sh — what the tests that boot the Linux kernel in a linux-peer
# VM (tests/linux-peer) share: skip (77) when the harness, a package it
# needs (peer-check.sh) or nbdcopy is missing; a scratch dir $D; the test pattern of
# $MB MiB (set MB before sourcing) in $D/pat, its sha256 in $want, and
# pattern() to make it again inside the guest (its job prints
# `pattern_def` first).
set -euo pipefail

. "$SRCDIR/tests/sh/peer-check.sh"
. "$SRCDIR/tests/sh/wait-lib.sh"   # wait_until, wait_log
command -v nbdcopy >/dev/null || { echo "skip: nbdcopy missing (libnbd-bin)"; exit 77; }

D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
pattern() { awk -v n=$((MB * 65536)) 'BEGIN { for (i = 0; i < n; i++) printf "%015d\n", i }'; }
pattern > "$D/pat"
want=$(sha256sum < "$D/pat" | cut -d' ' -f1)

# The VM's disks: imgs[] in the order run_peer attaches them, and per
# array NAME its image files (files[NAME]) and their names in the guest
# (devs[NAME]: /dev/vda, /dev/vdb ...).
imgs=()
declare -A devs files
# In a batch (tests/linux-peer/batch.sh) the test's first disk is not vda but the one
# LINUX_PEER_DEV_BASE names.
peer_dev() { # the guest's name for image index $1: vda ... vdz, vdaa ...
    local i=$(($1 + ${LINUX_PEER_DEV_BASE:-0})) s=""
    while :; do s=$(printf "\\$(printf %o $((97 + i % 26)))")$s; i=$((i / 26 - 1)); [ $i -ge 0 ] || break; done
    echo "/dev/vd$s"
}
# add_images NAME N [SIZE]: N blank images of SIZE (16M) for array NAME.
add_images() {
    local j f
    for ((j = 0; j < $2; j++)); do
        f="$D/$1.$j.img"
        truncate -s "${3:-16M}" "$f"
        devs[$1]+="$(peer_dev ${#imgs[@]}) "
        files[$1]+="$f "
        imgs+=("$f")
    done
}

# The guest job's first lines: the shell, and pattern() for the guest.
guest_header() {
    echo '#!/bin/sh'
    echo "MB=$MB"
    # awk takes ~8 s for 4 MiB under TCG: make it once (tmpfs), then copy it.
    echo 'pattern() { [ -s /tmp/.pat ] || awk -v n=$((MB * 65536)) '"'"'BEGIN { for (i = 0; i < n; i++) printf "%015d\n", i }'"'"' > /tmp/.pat; cat /tmp/.pat; }'
}

# guest_read_ours NAME MD CHECK DEVS...: guest lines that assemble one of
# our arrays as /dev/mdMD, print "ours NAME SHA256 LEVEL" of its first MB
# MiB and, with CHECK=1, run md's check and print "mismatch NAME COUNT".
guest_read_ours() {
    local name=$1 md=$2 check=$3
    shift 3
    echo "mdadm --assemble /dev/md$md $* >/dev/null 2>&1 || { echo 'ours $name assemble-failed'; mdadm --examine $*; }"
    echo "echo \"ours $name \$(dd if=/dev/md$md bs=1M count=\$MB 2>/dev/null | sha256sum | cut -d' ' -f1) \$(cat /sys/block/md$md/md/level 2>/dev/null)\""
    [ "$check" = 1 ] && echo "echo check > /sys/block/md$md/md/sync_action
while [ \"\$(cat /sys/block/md$md/md/sync_action)\" != idle ]; do sleep 0.2; done
echo \"mismatch $name \$(cat /sys/block/md$md/md/mismatch_cnt)\""
    echo "mdadm --stop /dev/md$md >/dev/null 2>&1"
}

# guest_make_theirs NAME MD METADATA OPTS... N: guest lines in which
# mdadm creates array NAME as /dev/mdMD (--metadata=METADATA, OPTS, N
# devices: devs[NAME]), fills it with the pattern, prints "theirs NAME
# SHA256" of its first MB MiB (or "theirs NAME create-failed") and stops it.
guest_make_theirs() {
    local name=$1 md=$2 meta=$3
    shift 3
    echo "mdadm --create /dev/md$md --run --metadata=$meta ${*:1:$#-1} --raid-devices=${!#} ${devs[$name]} >/tmp/c.log 2>&1 || { echo 'theirs $name create-failed'; cat /tmp/c.log; }"
    echo "pattern | dd of=/dev/md$md bs=1M iflag=fullblock oflag=direct 2>/dev/null; sync"
    echo "echo \"theirs $name \$(dd if=/dev/md$md bs=1M count=\$MB 2>/dev/null | sha256sum | cut -d' ' -f1)\""
    echo "mdadm --stop /dev/md$md >/dev/null 2>&1"
}

# guest_resume_recovery NAME MD DEVS...: guest lines that assemble an
# array whose recovery we stopped part-way as /dev/mdMD, hold the kernel's
# recovery at 1 KiB/s long enough to print "resume NAME ACTION DONE/TOTAL"
# (where it starts), then let it finish and print "degraded NAME N".
guest_resume_recovery() {
    local name=$1 md=$2
    shift 2
    echo "echo 1 > /proc/sys/dev/raid/speed_limit_min; echo 1 > /proc/sys/dev/raid/speed_limit_max"
    echo "mdadm --assemble /dev/md$md $* >/dev/null 2>&1 || echo 'half $name assemble-failed'"
    echo "mdadm --readwrite /dev/md$md >/dev/null 2>&1"
    echo "for t in \$(seq 100); do [ \"\$(cat /sys/block/md$md/md/sync_action)\" = recover ] && break; sleep 0.2; done; sleep 1"
    echo "echo \"resume $name \$(cat /sys/block/md$md/md/sync_action) \$(cat /sys/block/md$md/md/sync_completed)\""
    echo "echo 1000 > /proc/sys/dev/raid/speed_limit_min; echo 200000 > /proc/sys/dev/raid/speed_limit_max"
    echo "for t in \$(seq 600); do [ \"\$(cat /sys/block/md$md/md/sync_action)\" = idle ] && break; sleep 0.2; done"
    echo "echo \"degraded $name \$(cat /sys/block/md$md/md/degraded)\""
    echo "mdadm --stop /dev/md$md >/dev/null 2>&1"
}

# host_check_resumed NAME OFFSET WHO: did the kernel's recovery of NAME
# start at or after OFFSET, the sector WHO stopped at?  Sets fail=1 if not.
host_check_resumed() {
    local line action done
    line=$(grep "^resume $1 " <<< "$out" || true)
    read -r _ _ action done _ <<< "$line"
    if [ "$action" = recover ] && [ "${done:-0}" -ge "$2" ]; then
        echo "ok: the kernel continues $1's recovery from $3's offset ($2): $line"
    else
        echo "FAIL: $1: the kernel's recovery did not start at $2: '$line'"; fail=1
    fi
    return 0
}

# run_peer IMAGES...: run $D/job.sh in the VM; its output in $out.
run_peer() {
    out=$(LINUX_PEER_TIMEOUT=${LINUX_PEER_TIMEOUT:-300} "$PEER/run.sh" "$D/job.sh" "$@" 2>&1) || {
        echo "$out"; echo "FAIL: the linux-peer job did not finish"; exit 1; }
}

# host_check_ours NAME CHECK DESCRIPTION: did the kernel read $want from our
# array (and, with CHECK=1, find no mismatch)?  Sets fail=1 if not.
host_check_ours() {
    local name=$1 check=$2 line
    line=$(grep "^ours $name " <<< "$out" || true)
    if [ "$(cut -d' ' -f3 <<< "$line")" != "$want" ]; then
        echo "FAIL: kernel md read of our $name array: '$line' (want $want)"; fail=1
    else
        echo "ok: kernel md reads our $3 ($(cut -d' ' -f4 <<< "$line"))"
    fi
    if [ "$check" = 1 ]; then
        grep -q "^mismatch $name 0$" <<< "$out" ||
            { echo "FAIL: kernel check of our $name: $(grep "^mismatch $name" <<< "$out")"; fail=1; }
    fi
    return 0
}
