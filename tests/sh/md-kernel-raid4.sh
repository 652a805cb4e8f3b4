#!/bin/bash
# md-kernel-raid4.sh — md level 4 (raid4) both ways with the Linux kernel
# (tests/linux-peer; two boots, 8 MiB members):
# Theirs: mdadm grows a 3-device raid0 to 4 (mdadm --grow -n 4 --add: the
#   kernel takes it over to a raid4 with its parity missing, 4 -> 5
#   devices, and reshapes); the reshape is stopped part-way (mdadm's
#   process killed, as a crash or power cut leaves it, then the array
#   stopped; mdadm's process, if let live, fails the new member on the
#   stop).  uraid serves it read-only with the sha256 the kernel wrote,
#   continues it (uraid grow --continue: it ends as the kernel ends such a
#   one, a raid4 of 5 with its parity missing, since going back to raid0
#   is mdadm's process's work), and a new member takes the parity (uraid
#   add).  The second boot: the kernel assembles it, reads the same and
#   its check finds 0 mismatches.
# Ours: a raid4 uraid creates and fills: the kernel assembles it, reads
#   the pattern, its check finds 0; then mdadm --create --level=4 on the
#   same devices, and its superblocks, field by field as mdadm --examine
#   prints them, and the layout word, must be ours; the kernel's raid4 ->
#   raid5 -> raid4 takeovers of it (second boot) write the level and layout
#   uraid's do.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=4
. "$(dirname "$0")/peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }

add_images k0 5 8M # 3 of raid0, the one the grow adds, the parity uraid adds
add_images o4 3 8M
k0=(${devs[k0]})
$URAID create --level=4 --chunk=64 --name=o4 ${files[o4]} >/dev/null
$URAID serve --run "nbdcopy '$D/pat' \"\$uri\"" ${files[o4]} 2>/dev/null
# summary FILES...: the fields compared, and the layout word, one line per device
summary() {
    local f
    for f in "$@"; do
        mdadm --examine "$f" | sed -n 's/^ *\(Raid Level\|Raid Devices\|Layout\|Chunk Size\|Feature Map\|Avail Dev Size\|Array Size\|Data Offset\|Super Offset\|State\|Array State\|Device Role\) : \(.*\)/\1=\2/p' | tr '\n' ';'
        od -A n -t u4 -j $((4096 + 76)) -N 4 "$f" | tr -d ' '
    done
}
summary ${files[o4]} > "$D/o4.sum"

{
    guest_header
    # theirs: the raid0 grow, stopped part-way
    echo "mdadm --create /dev/md0 --run --metadata=1.2 --level=0 --chunk=64 --raid-devices=3 ${k0[*]:0:3} >/tmp/c.log 2>&1 || { echo 'before k0 create-failed'; cat /tmp/c.log; }"
    echo "dd if=/dev/urandom of=/dev/md0 bs=64k oflag=direct 2>/dev/null; sync"
    echo "echo \"before k0 \$(sha256sum < /dev/md0 | cut -d' ' -f1) \$(blockdev --getsize64 /dev/md0)\""
    echo "echo 500 > /proc/sys/dev/raid/speed_limit_min; echo 500 > /proc/sys/dev/raid/speed_limit_max"
    echo "mdadm --grow /dev/md0 --raid-devices=4 --add ${k0[3]} >/tmp/g.log 2>&1 || { echo 'held k0 grow-failed'; cat /tmp/g.log; }"
    echo "for t in \$(seq 100); do [ \"\$(cat /sys/block/md0/md/sync_action)\" = reshape ] && break; sleep 0.1; done"
    echo "for t in \$(seq 300); do [ \"\$(cut -d' ' -f1 /sys/block/md0/md/sync_completed)\" -ge 1024 ] 2>/dev/null && break; sleep 0.1; done"
    echo "for p in \$(pidof mdadm); do kill -9 \$p; done; sleep 0.2"
    echo "mdadm --stop /dev/md0 >/dev/null 2>&1"
    echo "echo 1000 > /proc/sys/dev/raid/speed_limit_min; echo 200000 > /proc/sys/dev/raid/speed_limit_max"
    echo "echo \"held k0 \$(mdadm --examine ${k0[0]} | sed -n 's/.*Reshape pos.n : \\([0-9]*\\).*/\\1/p') \$(mdadm --examine ${k0[0]} | sed -n 's/.*Raid Level : //p')\""
    # ours: read and checked, then mdadm's own raid4 on the same devices
    guest_read_ours o4 1 1 ${devs[o4]}
    echo "mdadm --create /dev/md1 --run --metadata=1.2 --level=4 --chunk=64 --name=o4 --raid-devices=3 ${devs[o4]} >/tmp/c.log 2>&1 || { echo 'theirs o4 create-failed'; cat /tmp/c.log; }"
    echo "for t in \$(seq 300); do [ \"\$(cat /sys/block/md1/md/sync_action)\" = idle ] && break; sleep 0.2; done"
    echo "mdadm --stop /dev/md1 >/dev/null 2>&1"
    echo 'exit 0'
} > "$D/job.sh"

LINUX_PEER_SMP=${LINUX_PEER_SMP:-1} run_peer "${imgs[@]}"
fail=0
host_check_ours o4 1 "raid4 (uraid create --level=4)"
summary ${files[o4]} > "$D/t4.sum"
if grep -q "^theirs o4" <<< "$out"; then
    echo "FAIL: mdadm --create --level=4: $(grep "^theirs o4" <<< "$out")"; fail=1
elif diff "$D/o4.sum" "$D/t4.sum" > "$D/diff"; then
    echo "ok: uraid's raid4 superblocks say what mdadm --create --level=4 writes ($(head -1 "$D/t4.sum"))"
else
    echo "FAIL: uraid's (<) and mdadm's (>) raid4 superblocks differ:"; cat "$D/diff"; fail=1
fi

k=(${files[k0]})
read -r _ _ sha bytes <<< "$(grep "^before k0 " <<< "$out")" || true
read -r _ _ pos level <<< "$(grep "^held k0 " <<< "$out")" || true
if ! [[ "${pos:-}" =~ ^[0-9]+$ ]] || [ "$pos" = 0 ] || [ "${level:-}" != raid4 ] || [ -z "${bytes:-}" ]; then
    echo "FAIL: the kernel's raid0 grow was not held part-way as a raid4: '$(grep "^held k0" <<< "$out")'"
    echo "$out" | tail -20
    exit 1
fi
sha_of() { # the sha256 of the first $bytes uraid reads from FILES...
    $URAID serve --readonly --run "nbdcopy \"\$uri\" - | head -c $bytes | sha256sum" "$@" 2>"$D/k0.err" | cut -d' ' -f1 || true
}
got=$(sha_of "${k[@]:0:4}")
if [ "$got" = "$sha" ]; then
    echo "ok: uraid reads the kernel's raid0 -> raid4 grow held at $pos KiB"
else
    echo "FAIL: uraid read '$got' of the kernel's held raid4 grow, the kernel wrote '$sha'"; cat "$D/k0.err"; exit 1
fi
c=$($URAID grow --continue "${k[@]:0:4}" 2>&1) || { echo "FAIL: uraid grow --continue: $c"; exit 1; }
state=$(mdadm --examine "${k[0]}" | sed -n 's/^ *\(Raid Level\|Raid Devices\|Array State\) : \([^ ]*\).*/\2/p' | tr '\n' ' ')
if [ "$state" = "raid4 5 AAAA. " ] && ! mdadm --examine "${k[0]}" | grep -q "Reshape pos"; then
    echo "ok: uraid continued it to the end the kernel gives it: $state(the parity missing)"
else
    echo "FAIL: after uraid's --continue mdadm reads '$state': $(mdadm --examine "${k[0]}" | grep -i reshape)"; fail=1
fi
c=$($URAID add "${k[4]}" "${k[@]:0:4}" 2>&1) || { echo "FAIL: uraid add the parity: $c"; exit 1; }
got=$(sha_of "${k[@]}")
[ "$got" = "$sha" ] || { echo "FAIL: uraid reads '$got' after its continue, want '$sha'"; fail=1; }

{
    guest_header
    echo "mdadm --assemble /dev/md0 ${devs[k0]} >/tmp/a.log 2>&1 || { echo 'after k0 assemble-failed'; cat /tmp/a.log; }"
    echo "for t in \$(seq 300); do [ \"\$(cat /sys/block/md0/md/sync_action)\" = idle ] && break; sleep 0.2; done"
    echo "echo \"after k0 \$(head -c $bytes /dev/md0 | sha256sum | cut -d' ' -f1) \$(cat /sys/block/md0/md/level) \$(cat /sys/block/md0/md/raid_disks) \$(cat /sys/block/md0/md/degraded)\""
    echo "echo check > /sys/block/md0/md/sync_action"
    echo "while [ \"\$(cat /sys/block/md0/md/sync_action)\" != idle ]; do sleep 0.2; done"
    echo "echo \"mismatch k0 \$(cat /sys/block/md0/md/mismatch_cnt)\""
    echo "mdadm --stop /dev/md0 >/dev/null 2>&1"
    # the kernel's raid4 -> raid5 -> raid4 takeovers on mdadm's raid4 of boot 1
    echo "mdadm --assemble /dev/md1 ${devs[o4]} >/dev/null 2>&1 || echo 'k45 assemble-failed'"
    echo "mdadm --grow /dev/md1 --level=5 --layout=parity-last >/tmp/g.log 2>&1 || cat /tmp/g.log"
    echo "echo \"k45 \$(cat /sys/block/md1/md/level) \$(cat /sys/block/md1/md/layout)\""
    echo "mdadm --grow /dev/md1 --level=4 >/tmp/g.log 2>&1 || cat /tmp/g.log"
    echo "echo \"k54 \$(cat /sys/block/md1/md/level) \$(cat /sys/block/md1/md/layout)\""
    echo "mdadm --stop /dev/md1 >/dev/null 2>&1"
    echo 'exit 0'
} > "$D/job.sh"
LINUX_PEER_SMP=${LINUX_PEER_SMP:-1} run_peer "${imgs[@]}"
# uraid's own takeovers of a raid4 of its own (files beside the VM's)
t=("$D/t.0" "$D/t.1" "$D/t.2")
truncate -s 8M "${t[@]}"
$URAID create --level=4 --chunk=64 "${t[@]}" >/dev/null 2>&1
word() { echo "$(mdadm --examine "$1" | sed -n 's/^ *Raid Level : //p') $(od -A n -t u4 -j $((4096 + 76)) -N 4 "$1" | tr -d ' ')"; }
$URAID grow --level=5 "${t[@]}" >/dev/null 2>&1
u45=$(word "${t[0]}")
$URAID grow --level=4 "${t[@]}" >/dev/null 2>&1
u54=$(word "${t[0]}")
if [ "$(grep "^k45 " <<< "$out")" = "k45 $u45" ] && [ "$(grep "^k54 " <<< "$out")" = "k54 $u54" ]; then
    echo "ok: raid4 -> raid5 -> raid4: the kernel's level and layout are uraid's ($u45, $u54)"
else
    echo "FAIL: raid4 -> raid5 -> raid4: the kernel '$(grep "^k4\|^k5" <<< "$out" | tr '\n' ' ')', uraid '$u45', '$u54'"; fail=1
fi
line=$(grep "^after k0 " <<< "$out" || true)
if [ "$(cut -d' ' -f3- <<< "$line")" = "$sha raid4 5 0" ] && grep -q "^mismatch k0 0$" <<< "$out"; then
    echo "ok: the kernel assembles uraid's end of its raid4 grow (parity added), reads the same, check 0"
else
    echo "FAIL: the kernel after uraid's continue: '$line' (want $sha raid4 5 0), $(grep "^mismatch k0" <<< "$out" || true)"
    fail=1
fi
exit $fail
