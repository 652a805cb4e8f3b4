# reshape-peer-lib.sh — what the kernel reshape tests (md-kernel-reshape.sh,
# md-kernel-reshape10.sh) share, on top of peer-lib.sh: the guest lines
# that make an array with mdadm and hold the kernel's reshape of it
# part-way (guest_half, guest_hold), assemble one and let the kernel
# finish (guest_after), and on the host uraid's hash of an array
# (sha_of) and mdadm --examine's agreement over its members
# (examine_all), uraid finishing what the kernel held (continue_kernels) and
# boot 2's verdict on each array (kernel_reads_same).
# An array's bytes are compared by $sum (md5sum, in the guest and here:
# busybox's sha256sum takes twice as long under TCG, and equal bytes are
# all these checks ask of it).
# The caller declares create_opts (mdadm --create options
# per array) and sets hold_min (the sectors sync_completed must reach
# before the array is stopped; 4096, md's sync_max, by default).

sum=md5sum

# guest_half NAME MD LEVEL CHUNK N GROW...: guest lines in which mdadm
# makes NAME (the first N of its devices), fills it, prints "before NAME
# SHA256 BYTES", starts `mdadm --grow GROW...` crawling, holds it at 4096
# sectors (md's sync_max), stops it and prints "held NAME RESHAPE_POSITION
# FEATURES" from the superblock.
guest_half() {
    local name=$1 md=$2 level=$3 chunk=$4 n=$5
    shift 5
    local all=(${devs[$name]})
    echo "mdadm --create /dev/md$md --run --metadata=1.2 --level=$level --chunk=$chunk ${create_opts[$name]:-} --raid-devices=$n ${all[*]:0:$n} >/tmp/c.log 2>&1 || { echo 'before $name create-failed'; cat /tmp/c.log; }"
    echo "while [ \"\$(cat /sys/block/md$md/md/sync_action)\" != idle ]; do sleep 0.2; done"
    echo "dd if=/dev/urandom of=/dev/md$md bs=64k oflag=direct 2>/dev/null; sync"
    echo "echo \"before $name \$($sum < /dev/md$md | cut -d' ' -f1) \$(blockdev --getsize64 /dev/md$md)\""
    echo "echo 10 > /proc/sys/dev/raid/speed_limit_min; echo 10 > /proc/sys/dev/raid/speed_limit_max"
    guest_hold $name $md ${all[0]} "$*"
}

# guest_hold NAME MD DEV GROW: guest lines that start `mdadm --grow
# /dev/mdMD GROW`, hold the reshape at 4096 sectors (md's sync_max), stop
# the array there and print "held NAME RESHAPE_POSITION FEATURES" from
# DEV's superblock.
guest_hold() {
    local name=$1 md=$2 dev=$3
    echo "mdadm --grow /dev/md$md $4 >/tmp/g.log 2>&1 || { echo 'held $name grow-failed'; cat /tmp/g.log; }"
    echo "for t in \$(seq 100); do [ \"\$(cat /sys/block/md$md/md/sync_action)\" = reshape ] && break; sleep 0.1; done"
    # md lowers sync_max only while the reshape is frozen (as mdadm --stop does)
    echo "echo frozen > /sys/block/md$md/md/sync_action; echo 4096 > /sys/block/md$md/md/sync_max; echo idle > /sys/block/md$md/md/sync_action"
    echo "echo 1000 > /proc/sys/dev/raid/speed_limit_min; echo 200000 > /proc/sys/dev/raid/speed_limit_max"
    echo "for t in \$(seq 300); do [ \"\$(cut -d' ' -f1 /sys/block/md$md/md/sync_completed)\" -ge ${hold_min:-4096} ] 2>/dev/null && break; sleep 0.1; done"
    echo "mdadm --stop /dev/md$md >/dev/null 2>&1"
    echo "echo \"held $name \$(mdadm --examine $dev | sed -n 's/.*Reshape pos.n : \\([0-9]*\\).*/\\1/p') \$(mdadm --examine $dev | sed -n 's/.*Feature Map : //p')\""
}

# guest_after NAME MD BYTES: guest lines that assemble NAME as /dev/mdMD,
# let the kernel finish any reshape it records, print "after NAME SHA256
# (of the first BYTES) SIZE DISKS CHUNK LAYOUT" and "mismatch NAME COUNT"
# (md's check).  BYTES is whole 64 KiB chunks (dd reads them: busybox's
# head -c takes three times dd's CPU); short of them it reads less and fails.
guest_after() {
    local name=$1 md=$2 bytes=$3
    echo "mdadm --assemble /dev/md$md ${devs[$name]} >/tmp/a.log 2>&1 || { echo 'after $name assemble-failed'; cat /tmp/a.log; }"
    echo "dmesg | grep -q 'md$md: bitmap file is out of date' && echo 'stale $name'"
    echo "for t in \$(seq 1500); do [ \"\$(cat /sys/block/md$md/md/reshape_position)\" = none ] && [ \"\$(cat /sys/block/md$md/md/sync_action)\" = idle ] && break; sleep 0.2; done"
    echo "echo \"after $name \$(dd if=/dev/md$md bs=64k count=$((bytes / 65536)) 2>/dev/null | $sum | cut -d' ' -f1) \$(blockdev --getsize64 /dev/md$md) \$(cat /sys/block/md$md/md/raid_disks) \$(cat /sys/block/md$md/md/chunk_size) \$(cat /sys/block/md$md/md/layout)\""
    echo "echo check > /sys/block/md$md/md/sync_action"
    echo "while [ \"\$(cat /sys/block/md$md/md/sync_action)\" != idle ]; do sleep 0.2; done"
    echo "echo \"mismatch $name \$(cat /sys/block/md$md/md/mismatch_cnt)\""
    echo "mdadm --stop /dev/md$md >/dev/null 2>&1"
}

# sha_of NAME BYTES: uraid's $sum of the first BYTES of NAME's array
sha_of() {
    $URAID serve --readonly --run "nbdcopy \"\$uri\" - | head -c $2 | $sum" ${files[$1]} 2>"$D/$1.err" | cut -d' ' -f1 || true
}
# examine_all NAME WHAT REGEX: mdadm --examine reads each of NAME's
# members and finds REGEX in each (a reshape's position, the same on
# all, or the count it ended at).  Sets fail=1 if not.
examine_all() {
    local f seen="" line
    for f in ${files[$1]}; do
        line=$(mdadm --examine "$f" 2>&1 | grep -E "$3" | sort | tr -s ' ' | tr '\n' ' ') || line=""
        [ -n "$line" ] && { [ -z "$seen" ] || [ "$seen" = "$line" ]; } ||
            { echo "FAIL: $1: mdadm --examine $f: want $2 ('$3'), got '$line' (others: '$seen')"; fail=1; return 0; }
        seen=$line
    done
    echo "ok: $1: mdadm --examine agrees on every member: $2 ($seen)"
}

# continue_kernels NAME...: for each array whose reshape the kernel held
# part-way in boot 1 (its "before" and "held" lines in $out), uraid reads
# the kernel's hash read-only from the two geometries, finishes the
# reshape with `grow --continue`, reads the same again, and mdadm
# --examine finds no reshape left on any member.  Fills want_sha and
# want_size (the caller declares them); sets fail=1 on a mismatch.
continue_kernels() {
    local name held pos got
    for name; do
        read -r _ _ want_sha[$name] want_size[$name] <<< "$(grep "^before $name " <<< "$out")" || true
        held=$(grep "^held $name " <<< "$out" || true)
        pos=$(cut -d' ' -f3 <<< "$held")
        if ! [[ "$pos" =~ ^[0-9]+$ ]] || [ "$pos" = 0 ] || [ -z "${want_size[$name]}" ]; then
            echo "FAIL: $name: the kernel's reshape was not held part-way: '$held'"
            fail=1
            continue
        fi
        got=$(sha_of $name "${want_size[$name]}")
        if [ "$got" = "${want_sha[$name]}" ]; then
            echo "ok: $name: uraid reads the kernel's half-reshaped array (held at $pos KiB)"
        else
            echo "FAIL: $name: uraid read '$got', the kernel wrote '${want_sha[$name]}' (held: $held)"
            cat "$D/$name.err"
            fail=1
        fi
        if ! $URAID grow --continue ${files[$name]} >"$D/$name.cont" 2>&1; then
            echo "FAIL: $name: uraid grow --continue: $(cat "$D/$name.cont")"
            fail=1
            continue
        fi
        got=$(sha_of $name "${want_size[$name]}")
        [ "$got" = "${want_sha[$name]}" ] && echo "ok: $name: uraid finished the kernel's reshape and reads the same" ||
            { echo "FAIL: $name: after uraid's --continue it reads '$got'"; fail=1; }
        examine_all $name "no reshape left" "Raid Devices|Reshape|Feature Map"
    done
}

# kernel_reads_same NAME WHO [MISMATCHES]: boot 2's "after NAME" line in $out
# has want_sha[NAME], and md's check found MISMATCHES (0 unless given)
# sectors apart; prints ok or FAIL (and sets fail=1), WHO saying whose
# reshape the kernel ended with.
kernel_reads_same() {
    local line mis=${3-0}
    line=$(grep "^after $1 " <<< "$out" || true)
    if [ "$(cut -d' ' -f3 <<< "$line")" = "${want_sha[$1]}" ] && grep -q "^mismatch $1 $mis$" <<< "$out"; then
        echo "ok: $1: $2 reshape; the kernel reads the same, check $mis ($(cut -d' ' -f4- <<< "$line"))"
    else
        echo "FAIL: $1: $2 reshape: kernel '$line', want ${want_sha[$1]}; $(grep "^mismatch $1" <<< "$out")"
        fail=1
    fi
}
