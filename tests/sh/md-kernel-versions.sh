#!/bin/bash
# md-kernel-versions.sh — md superblock versions 1.0 (at the member's end,
# the data from sector 0) and 1.1 (at its start): the Linux kernel's md and
# uraid read each other's arrays of every level uraid serves.  One
# linux-peer VM boot for both versions, each on its own 15 images:
#   ours:   `uraid create --metadata=V` (linear, raid0, raid1 with an
#           internal bitmap, raid10, raid5, raid6), a known pattern written
#           through `uraid serve`; in the guest mdadm --examine reports
#           version V, the kernel assembles each array and reads the same
#           sha256, and its check of the redundant ones counts no mismatch.
#   theirs: then, on the same disks, mdadm --create --metadata=V of the
#           same levels (raid1 with an internal bitmap), a second pattern
#           written with dd, its sha256 printed by the guest; on the host
#           uraid examines each (Version : V), serves it read-only and must
#           read that sha256, and the images stay byte for byte unchanged;
#           the raid1, served writable, keeps its bitmap (up to date, all
#           clean after a clean stop) where the kernel put it.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=4
. "$(dirname "$0")/peer-lib.sh"

# name level-options disks (the arrays of one version)
arrays=("lin --level=linear 2" "r0 --level=0 --chunk=64 2" "r1 --level=1 --bitmap=internal 2"
        "r10 --level=10 --chunk=64 2" "r5 --level=5 --chunk=64 3" "r6 --level=6 --chunk=64 4")
# theirs: a pattern that is not ours, so that a leftover of ours cannot pass
pattern2() { pattern | tr '0-9' 'a-j'; }
pattern2 > "$D/pat2"
want2=$(sha256sum < "$D/pat2" | cut -d' ' -f1)
redundant() { case "$1" in *--level=[156]* | *--level=10*) return 0 ;; esac; return 1; }

fail=0
# Each version's arrays are named V-NAME (its own images and guest lines).
versions=(1.0 1.1)
for V in "${versions[@]}"; do
    for spec in "${arrays[@]}"; do
        set -- $spec
        add_images "$V-$1" "${!#}" 16M
    done

    # ours, made and filled on the host
    for spec in "${arrays[@]}"; do
        set -- $spec
        name=$V-$1; shift
        $URAID create --metadata=$V "${@:1:$#-1}" --name="${name#*-}" ${files[$name]} >/dev/null
        $URAID serve --run "nbdcopy '$D/pat' \"\$uri\"" ${files[$name]} 2>/dev/null
        first=${files[$name]%% *}
        $URAID examine "$first" | grep -q "Version : $V\$" ||
            { echo "FAIL: uraid examine of our $V ${name#*-} does not say Version : $V"; fail=1; }
    done
done

{
    guest_header
    echo 'pattern | tr "0-9" "a-j" > /tmp/pat2'  # once: awk is slow under TCG
    i=0
    for V in "${versions[@]}"; do
        for spec in "${arrays[@]}"; do
            set -- $spec
            check=0
            redundant "$spec" && check=1
            first=${devs[$V-$1]%% *}
            echo "echo \"version $V-$1 \$(mdadm --examine $first | awk '/ Version :/ { print \$3 }')\""
            guest_read_ours "$V-$1" $i $check ${devs[$V-$1]}
            i=$((i + 1))
        done
    done
    i=0
    for V in "${versions[@]}"; do
        for spec in "${arrays[@]}"; do
            set -- $spec
            name=$V-$1; shift
            n=${!#}
            opts="${*:1:$#-1}"
            redundant "$opts" && opts+=" --assume-clean"
            echo "mdadm --zero-superblock ${devs[$name]} >/dev/null 2>&1"
            echo "mdadm --create /dev/md$i --run --metadata=$V --name=${name#*-} $opts --raid-devices=$n ${devs[$name]} >/tmp/c.log 2>&1 || { echo 'theirs $name create-failed'; cat /tmp/c.log; }"
            echo "dd if=/tmp/pat2 of=/dev/md$i bs=1M oflag=direct 2>/dev/null; sync"
            echo "echo \"theirs $name \$(dd if=/dev/md$i bs=1M count=\$MB 2>/dev/null | sha256sum | cut -d' ' -f1)\""
            echo "mdadm --stop /dev/md$i >/dev/null 2>&1 && echo 'stopped $name'"
            i=$((i + 1))
        done
    done
    echo 'exit 0'
} > "$D/job.sh"
LINUX_PEER_TIMEOUT=${LINUX_PEER_TIMEOUT:-600} run_peer "${imgs[@]}"

for V in "${versions[@]}"; do
    for spec in "${arrays[@]}"; do
        set -- $spec
        name=$V-$1
        check=0
        redundant "$spec" && check=1
        grep -q "^version $name $V\$" <<< "$out" ||
            { echo "FAIL: mdadm --examine of our $V $1: '$(grep "^version $name" <<< "$out")'"; fail=1; }
        host_check_ours "$name" $check "v$V $*"
    done
    for spec in "${arrays[@]}"; do
        set -- $spec
        name=$V-$1
        line=$(grep "^theirs $name " <<< "$out" || true)
        if [ "$(cut -d' ' -f3 <<< "$line")" != "$want2" ] || ! grep -q "^stopped $name" <<< "$out"; then
            echo "FAIL: the kernel could not make and fill a $V $1: '$line'"
            echo "$out" | grep -A5 "theirs $name create-failed" || true
            fail=1
            continue
        fi
        first=${files[$name]%% *}
        $URAID examine "$first" > "$D/ex" 2>&1 || true
        grep -q "Version : $V\$" "$D/ex" && grep -q 'Checksum : .* - correct' "$D/ex" ||
            { echo "FAIL: uraid examine of the kernel's $V $1:"; cat "$D/ex"; fail=1; }
        before=$(sha256sum ${files[$name]})
        got=$($URAID serve --readonly --run 'nbdcopy "$uri" - | head -c '$((MB << 20))' | sha256sum' ${files[$name]} 2>"$D/serve.log" | cut -d' ' -f1)
        after=$(sha256sum ${files[$name]})
        if [ "$got" = "$want2" ]; then echo "ok: uraid reads the kernel's v$V $*"; else
            echo "FAIL: uraid read of the kernel's v$V $1: '$got' (want $want2)"; cat "$D/serve.log"; fail=1; fi
        [ "$before" = "$after" ] || { echo "FAIL: a read-only serve of the kernel's v$V $1 changed a member"; fail=1; }
    done
    # the kernel's raid1 with its bitmap (below a 1.0 superblock, after a
    # 1.1 one), served writable: uraid keeps that bitmap where it is
    r1=${files[$V-r1]}
    $URAID serve --run "nbdcopy '$D/pat' \"\$uri\"" $r1 2>"$D/serve.log" || true
    grep -q "keeping its write-intent bitmap" "$D/serve.log" ||
        { echo "FAIL: uraid did not keep the kernel's v$V raid1 bitmap:"; cat "$D/serve.log"; fail=1; }
    for f in $r1; do
        $URAID examine "$f" | grep -q "Bitmap Status : 0 of .* up to date" ||
            { echo "FAIL: $f: bitmap after a writable serve: $($URAID examine "$f" | grep Bitmap)"; fail=1; }
    done
    got=$($URAID serve --readonly --run 'nbdcopy "$uri" - | head -c '$((MB << 20))' | sha256sum' $r1 2>/dev/null | cut -d' ' -f1)
    [ "$got" = "$want" ] && echo "ok: uraid writes the kernel's v$V raid1 and keeps its bitmap" ||
        { echo "FAIL: the kernel's v$V raid1 after a writable serve: $got"; fail=1; }
done
exit $fail
