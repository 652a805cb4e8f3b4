#!/bin/bash
# md-examine.sh — mdadm reads what `uraid create` writes: for raid0, raid1,
# raid10 (n2, f2, o2) and linear, `mdadm --examine` of every member (through
# a read-only loop device) reports our level, layout, chunk, device count
# and array UUID, and a correct checksum; and it agrees with
# `uraid examine` line for line on the fields both print.
# Skips (77) without mdadm or loop devices.
set -euo pipefail

command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }
command -v losetup >/dev/null || { echo "skip: losetup missing"; exit 77; }

D=$(mktemp -d)
loops=()
cleanup() {
    for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null || true; done
    rm -rf "$D"
}
trap cleanup EXIT

truncate -s 16M "$D/probe.img"
L=$(losetup -f --show -r "$D/probe.img" 2>/dev/null) || { echo "skip: cannot set up a loop device"; exit 77; }
losetup -d "$L"

# level-options | raid level | layout line | chunk line
cases=(
    "--level=0 --chunk=64|raid0||Chunk Size : 64K"
    "--level=1|raid1||"
    "--level=10 --chunk=128|raid10|Layout : near=2|Chunk Size : 128K"
    "--level=10 --layout=f2|raid10|Layout : far=2|Chunk Size : 512K"
    "--level=10 --layout=o2 --chunk=32|raid10|Layout : offset=2|Chunk Size : 32K"
    "--level=linear|linear||"
)
fields='Magic|Version|Feature Map|Array UUID|Raid Level|Raid Devices|Avail Dev Size|Array Size|Data Offset|Super Offset|State|Device UUID|Checksum|Events|Layout|Chunk Size|Device Role|Array State'
fail=0
for c in "${cases[@]}"; do
    IFS='|' read -r opts level layout chunk <<< "$c"
    n=3
    files=()
    for ((i = 0; i < n; i++)); do
        rm -f "$D/m$i.img"; truncate -s 24M "$D/m$i.img"; files+=("$D/m$i.img")
    done
    $URAID create $opts --name=t "${files[@]}" > /dev/null
    uuid=$($URAID examine "${files[0]}" | sed -n 's/^ *Array UUID : //p')
    for ((i = 0; i < n; i++)); do
        l=$(losetup -f --show -r "${files[i]}"); loops=("$l")
        theirs=$(mdadm --examine "$l")
        ours=$($URAID examine "${files[i]}")
        # Forgotten once detached: the exit trap must not detach a loop
        # device another test has taken since.
        losetup -d "$l"; loops=()
        for want in "Raid Level : $level" "Raid Devices : $n" "Array UUID : $uuid" \
                    "Device Role : Active device $i" "$layout" "$chunk"; do
            [ -z "$want" ] && continue
            grep -q -- "$want" <<< "$theirs" || { echo "FAIL ($opts) m$i: mdadm lacks '$want'"; fail=1; }
        done
        grep -Eq 'Checksum : [0-9a-f]+ - correct' <<< "$theirs" ||
            { echo "FAIL ($opts) m$i: mdadm checksum: $(grep Checksum <<< "$theirs")"; fail=1; }
        a=$(grep -E "^ *($fields) :" <<< "$theirs" | sed 's/ *(local to host.*//')
        b=$(grep -E "^ *($fields) :" <<< "$ours")
        if [ "$a" != "$b" ]; then
            echo "FAIL ($opts) m$i: mdadm and uraid examine differ:"; diff <(echo "$a") <(echo "$b") || true; fail=1
        fi
    done
    [ $fail = 0 ] && echo "ok: $opts"
done
exit $fail
