#!/bin/bash
# md-kernel-090.sh — uraid serves the kernel's md 0.90 arrays (old Linux
# servers, a Synology NAS's system partition).  Two linux-peer VM boots:
#   1. mdadm -e 0.90 creates raid1 (internal bitmap), raid10, raid5,
#      raid6 and linear arrays (not raid0: mdadm 4.2, Debian 12's, refuses
#      to make a 0.90 raid0, "0.90 metadata does not support layouts for
#      RAID0", a regression of its commit 329dfc28; older ones made many), writes a known pattern to each and
#      prints its sha256; on the host uraid examines every member
#      (Version 0.90.00, checksum correct), serves each read-only as
#      md/N (N the preferred minor), reads the same sha256, and leaves
#      every image unchanged.  Then uraid writes: new data to the raid1
#      (its bitmap kept), and to the raid5 both before and after
#      `uraid fail` of a member.
#   2. the kernel assembles both again: the raid1 reads uraid's data and
#      its check finds no mismatch, its bitmap in date; the raid5 starts
#      without the member uraid failed, reads uraid's data, and once
#      mdadm has added that member back and recovered it, its check finds
#      no mismatch.  mdadm --examine (host and guest) is happy throughout.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=4
. "$(dirname "$0")/peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }

# name mdadm-options disks: the arrays mdadm makes, /dev/md0 ... in order.
theirs=("k1 --level=1 --bitmap=internal 2"
        "k10 --level=10 --layout=n2 --chunk=64 3" "k5 --level=5 --chunk=64 3"
        "k6 --level=6 --chunk=64 4" "klin --level=linear 2")
for spec in "${theirs[@]}"; do
    set -- $spec
    add_images "$1" "${!#}" 8M
done
md_of() { # the /dev/mdN mdadm made NAME as
    local i=0 spec
    for spec in "${theirs[@]}"; do [ "${spec%% *}" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done
}

{
    guest_header
    i=0
    for spec in "${theirs[@]}"; do
        set -- $spec
        name=$1; shift
        guest_make_theirs "$name" $i 0.90 --assume-clean "$@"
        i=$((i + 1))
    done
    echo 'exit 0'
} > "$D/job.sh"
run_peer "${imgs[@]}"

fail=0
sha_of() { $URAID serve --readonly --run 'nbdcopy "$uri" - | head -c '$((MB << 20))' | sha256sum' "$@" 2>"$D/serve.log" | cut -d' ' -f1; }
sha256sum "${imgs[@]}" > "$D/before"
for spec in "${theirs[@]}"; do
    set -- $spec
    name=$1
    line=$(grep "^theirs $name " <<< "$out" || true)
    [ "$(cut -d' ' -f3 <<< "$line")" = "$want" ] || { echo "FAIL: guest could not make $name: $line"; echo "$out" | tail -20; fail=1; continue; }
    for f in ${files[$name]}; do
        ex=$($URAID examine "$f" 2>&1) || { echo "FAIL: uraid examine $name $f: $ex"; fail=1; }
        grep -q 'Version : 0.90.00' <<< "$ex" && grep -q 'Checksum : .* - correct' <<< "$ex" ||
            { echo "FAIL: uraid examine $name: $ex"; fail=1; }
    done
    got=$(sha_of ${files[$name]} || true)
    if [ "$got" = "$want" ]; then echo "ok: uraid reads the kernel's 0.90 $*"; else
        echo "FAIL: uraid read of 0.90 $name: $got (want $want): $(cat "$D/serve.log")"; fail=1; fi
    grep -q "md/$(md_of "$name"): assembled" "$D/serve.log" ||
        { echo "FAIL: $name not named md/$(md_of "$name"): $(cat "$D/serve.log")"; fail=1; }
done
sha256sum --quiet -c "$D/before" || { echo "FAIL: a read-only serve changed an image"; fail=1; }

# Writable: the raid1 with its bitmap; the raid5 through a failure.
tr 0-9 a-j < "$D/pat" > "$D/pat2"
tr 0-9 k-t < "$D/pat" > "$D/pat3"
want2=$(sha256sum < "$D/pat2" | cut -d' ' -f1)
want3=$(sha256sum < "$D/pat3" | cut -d' ' -f1)
$URAID serve --run "nbdcopy '$D/pat2' \"\$uri\"" ${files[k1]} 2> "$D/k1.log" ||
    { echo "FAIL: uraid write to the 0.90 raid1: $(cat "$D/k1.log")"; fail=1; }
grep -q "keeping its write-intent bitmap" "$D/k1.log" || { echo "FAIL: k1 bitmap not kept: $(cat "$D/k1.log")"; fail=1; }
k5=(${files[k5]})
$URAID serve --control "$D/k5.ctl" --run "nbdcopy '$D/pat2' \"\$uri\" && '$URAID' fail '$D/k5.ctl' '${k5[2]}' && nbdcopy '$D/pat3' \"\$uri\"" \
    "${k5[@]}" 2> "$D/k5.log" || { echo "FAIL: uraid write and fail on the 0.90 raid5: $(cat "$D/k5.log")"; fail=1; }
ex=$(mdadm --examine "${k5[0]}" 2>&1)
grep -q 'Checksum : .* - correct' <<< "$ex" && grep -Eq '^ +2 +2 .*faulty' <<< "$ex" ||
    { echo "FAIL: mdadm --examine of k5 after uraid's failure: $ex"; fail=1; }
grep -q 'Checksum : .* - correct' <<< "$(mdadm --examine "${files[k1]%% *}" 2>&1)" ||
    { echo "FAIL: mdadm --examine of k1 after uraid's writes"; fail=1; }

k1=$(md_of k1); k5m=$(md_of k5)
k5d=(${devs[k5]})
{
    guest_header
    echo "mdadm --assemble /dev/md$k1 ${devs[k1]} >/dev/null 2>&1 || echo 'k1 assemble-failed'"
    echo "echo \"w k1 \$(dd if=/dev/md$k1 bs=1M count=\$MB 2>/dev/null | sha256sum | cut -d' ' -f1)\""
    echo "echo check > /sys/block/md$k1/md/sync_action; mdadm --wait /dev/md$k1 >/dev/null 2>&1"
    echo "echo \"mismatch k1 \$(cat /sys/block/md$k1/md/mismatch_cnt)\""
    echo "mdadm --stop /dev/md$k1 >/dev/null 2>&1"
    echo "mdadm --examine ${k5d[0]} | grep -E 'Checksum|Events|faulty'"
    echo "mdadm --assemble --run /dev/md$k5m ${devs[k5]} >/dev/null 2>&1 || echo 'k5 assemble-failed'"
    echo "echo \"degraded k5 \$(cat /sys/block/md$k5m/md/degraded)\""
    echo "echo \"w k5 \$(dd if=/dev/md$k5m bs=1M count=\$MB 2>/dev/null | sha256sum | cut -d' ' -f1)\""
    echo "mdadm --zero-superblock ${k5d[2]} >/dev/null 2>&1; mdadm /dev/md$k5m --add ${k5d[2]} >/dev/null 2>&1 || echo 'k5 add-failed'"
    echo "sleep 1; mdadm --wait /dev/md$k5m >/dev/null 2>&1"
    echo "echo check > /sys/block/md$k5m/md/sync_action; sleep 1; mdadm --wait /dev/md$k5m >/dev/null 2>&1"
    echo "echo \"mismatch k5 \$(cat /sys/block/md$k5m/md/mismatch_cnt) \$(cat /sys/block/md$k5m/md/degraded)\""
    echo "echo \"r k5 \$(dd if=/dev/md$k5m bs=1M count=\$MB 2>/dev/null | sha256sum | cut -d' ' -f1)\""
    echo "mdadm --stop /dev/md$k5m >/dev/null 2>&1"
    echo "dmesg | grep -i 'bitmap.*out of date' || true"
    echo 'exit 0'
} > "$D/job.sh"
run_peer "${imgs[@]}"
expect() { # PATTERN WHAT: a line of the second boot's output
    if grep -q "$1" <<< "$out"; then echo "ok: $2"; else echo "FAIL: $2: $(grep -E '^(w|r|mismatch|degraded|k1|k5) ' <<< "$out")"; fail=1; fi
}
expect "^w k1 $want2\$" "the kernel reads what uraid wrote to the 0.90 raid1"
expect "^mismatch k1 0\$" "the kernel's check of the 0.90 raid1 uraid wrote finds no mismatch"
expect "^degraded k5 1\$" "the kernel starts the 0.90 raid5 without the member uraid failed"
expect "^w k5 $want3\$" "the kernel reads what uraid wrote to the degraded 0.90 raid5"
expect "^mismatch k5 0 0\$" "the kernel recovers that member and its check finds no mismatch"
expect "^r k5 $want3\$" "and reads the same data after the recovery"
if grep -qi 'out of date' <<< "$out"; then echo "FAIL: the kernel found k1's bitmap out of date"; fail=1; fi
exit $fail
