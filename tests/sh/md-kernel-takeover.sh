#!/bin/bash
# md-kernel-takeover.sh — md's level changes that move no data, both ways
# with the Linux kernel (one linux-peer VM boot, tests/linux-peer):
# Ours: uraid creates each array, writes the pattern, and `uraid grow
#   --level` converts it (1->5, 5->1, 5->6 with Q rebuilt on a new device,
#   6->5 from left-symmetric-6, 0->5 with parity rebuilt on a new device,
#   5->0 from parity-last, 10->0); the kernel assembles each, reads the
#   same sha256, and its check finds no mismatch where there is
#   redundancy.
# Theirs: mdadm --grow --level makes the same conversions in the guest
#   (the kernel's takeovers), on the same images once ours are read; uraid
#   reads each (sha256, and `uraid check`
#   where there is redundancy).
# And --size: a raid5 whose member files grew, grown with `uraid grow
#   --size max` (the new region recorded for resync): the kernel resyncs
#   it, reads the pattern and checks 0 mismatches; mdadm --grow --size=max
#   in the guest on a raid5 made smaller than its devices: uraid reads it
#   and its check agrees.  Both use every whole chunk the devices hold.
# Then the superblocks, field by field as mdadm --examine prints them
#   (level, devices, layout, chunk, feature map, array state, the roles
#   of the devices that stay): ours as uraid wrote them, theirs as the
#   kernel wrote them, must agree.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=4
. "$(dirname "$0")/peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }

# name: create options, members, grow options (a NEW given as +)
ours=("15|--level=1|2|--level=5"
      "51|--level=5|2|--level=1"
      "56|--level=5|3|--level=6 +"
      "65|--level=6 --layout=left-symmetric-6|4|--level=5"
      "05|--level=0|2|--level=5 +"
      "50|--level=5 --layout=parity-last|3|--level=0"
      "100|--level=10|4|--level=0")
for spec in "${ours[@]}"; do
    IFS='|' read -r t copts n gopts <<< "$spec"
    add_images "o$t" "$n"
    $URAID create $copts --name="o$t" ${files[o$t]} >/dev/null
    $URAID serve --run "nbdcopy '$D/pat' \"\$uri\"" ${files[o$t]} 2>/dev/null
    if [ "${gopts: -1}" = + ]; then
        add_images "o${t}n" 1
        gopts="${gopts%+}--add ${files[o${t}n]}"
    fi
    $URAID grow $gopts ${files[o$t]} > "$D/o$t.log" 2>&1 ||
        { echo "FAIL: uraid grow $gopts on o$t"; cat "$D/o$t.log"; exit 1; }
done
add_images osz 3 12M
$URAID create --level=5 --chunk=64 --name=osz ${files[osz]} >/dev/null
$URAID serve --run "nbdcopy '$D/pat' \"\$uri\"" ${files[osz]} 2>/dev/null
# the new space holds garbage: its parity agrees only once resynced
for f in ${files[osz]}; do dd if=/dev/urandom of="$f" bs=1M seek=12 count=4 conv=notrunc 2>/dev/null; done
$URAID grow --size max ${files[osz]} > "$D/osz.log" 2>&1 ||
    { echo "FAIL: uraid grow --size max"; cat "$D/osz.log"; exit 1; }
devs[ksz]=${devs[osz]} files[ksz]=${files[osz]}
# whole_chunks FILE: the used size is every whole 64K chunk the device holds
whole_chunks() {
    local kib avail
    kib=$(mdadm --examine "$1" | sed -n 's/^ *Array Size : \([0-9]*\) .*/\1/p')
    avail=$(mdadm --examine "$1" | sed -n 's/^ *Avail Dev Size : \([0-9]*\) .*/\1/p')
    [ "$kib" = $((avail / 128 * 128)) ] # KiB over two data devices = sectors of one
}
whole_chunks ${files[osz]%% *} || { echo "FAIL: uraid grow --size max left space unused"; mdadm --examine ${files[osz]%% *}; exit 1; }

# Theirs: the same arrays made by mdadm in the guest on the same images
# (the VM has room for one set), once the kernel has read ours.
for t in 15 51 56 65 05 50 100; do
    devs[k$t]=${devs[o$t]} files[k$t]=${files[o$t]}
    [ -z "${files[o${t}n]:-}" ] || { devs[k${t}n]=${devs[o${t}n]} files[k${t}n]=${files[o${t}n]}; }
done

declare -A devof # host file -> guest device
for j in "${!imgs[@]}"; do devof[${imgs[$j]}]=$(peer_dev "$j"); done
# members NAME: the files of array NAME and its new device, if any
members() { echo ${files[$1]} ${files[${1}n]:-}; }
# kept LEVEL FILES...: the files whose superblock says LEVEL (the devices
# an array keeps after its conversion); active LEVEL FILES...: those of
# them in a role (not spares)
kept() {
    local level=$1 f
    shift
    for f in "$@"; do
        mdadm --examine "$f" 2>/dev/null | grep -q "Raid Level : $level$" && echo "$f"
    done
    return 0
}
active() {
    local f
    for f in $(kept "$@"); do
        mdadm --examine "$f" | grep -q "Device Role : Active" && echo "$f"
    done
    return 0
}
# summary LEVEL FILES...: the fields compared, one line per device with LEVEL, sorted
summary() {
    local level=$1 f
    shift
    for f in $(kept "$level" "$@"); do
        mdadm --examine "$f" | sed -n 's/^ *\(Raid Level\|Raid Devices\|Layout\|Chunk Size\|Feature Map\|Array State\|Device Role\) : \(.*\)/\1=\2/p' | tr '\n' ';'
        echo
    done | sort
}
declare -A newlevel=([15]=raid5 [51]=raid1 [56]=raid6 [65]=raid5 [05]=raid5 [50]=raid0 [100]=raid0)
for t in "${!newlevel[@]}"; do summary "${newlevel[$t]}" $(members o$t) > "$D/o$t.sum"; done

{
    guest_header
    i=0
    # ours: assembled from the devices that stay (65: with its spare)
    for t in 15 51 56 65 05 50 100; do
        keep=""
        for f in $(kept "${newlevel[$t]}" $(members o$t)); do keep+="${devof[$f]} "; done
        check=1
        [ "${newlevel[$t]}" = raid0 ] && check=0
        guest_read_ours "o$t" $i $check $keep
        i=$((i + 1))
    done
    # osz: the kernel resyncs the region --size added, then reads and checks
    echo "mdadm --assemble /dev/md$i ${devs[osz]} >/dev/null 2>&1 || echo 'ours osz assemble-failed'"
    echo "mdadm --wait /dev/md$i >/dev/null 2>&1"
    guest_read_ours osz $i 1 ${devs[osz]} | tail -n +2
    i=$((i + 1))
    # theirs: --assume-clean on zeroed members (consistent), the pattern,
    # then mdadm's conversion
    C="mdadm --create --run --metadata=1.2 --assume-clean" # no bitmap: the members are far below mdadm's 100G
    mk() { # NAME MD OPTS...
        local name=$1 md=$2
        shift 2
        echo "for d in ${devs[$name]} ${devs[${name}n]:-}; do dd if=/dev/zero of=\$d bs=1M oflag=direct 2>/dev/null; done"
        echo "$C /dev/md$md --name=$name $* ${devs[$name]} >/tmp/c.log 2>&1 || { echo 'theirs $name create-failed'; cat /tmp/c.log; }"
        echo "pattern | dd of=/dev/md$md bs=1M iflag=fullblock oflag=direct 2>/dev/null; sync"
    }
    conv() { # NAME MD [GROW-OPTS...]: convert, wait, stop
        local name=$1 md=$2
        shift 2
        [ $# = 0 ] || echo "mdadm --grow /dev/md$md $* >/tmp/g.log 2>&1 || { echo 'theirs $name grow-failed'; cat /tmp/g.log; }"
        # mdadm --grow and --add return before the kernel starts the
        # recovery or reshape they ask for, and --wait waits only for one
        # running: until the array is idle and whole (60 s at most), so
        # that it is not stopped half-way under a slow VM
        echo "for _ in \$(seq 120); do mdadm --wait /dev/md$md >/dev/null 2>&1; [ -e /sys/block/md$md/md/sync_action ] || break; [ \"\$(cat /sys/block/md$md/md/sync_action)\" = idle ] && [ \"\$(cat /sys/block/md$md/md/degraded)\" = 0 ] && break; sleep 0.5; done"
        echo "echo \"theirs $name \$(cat /sys/block/md$md/md/level)\""
        echo "mdadm --stop /dev/md$md >/dev/null 2>&1"
    }
    mk k15 $i -l1 -n2; conv k15 $i --level=5; i=$((i + 1))
    mk k51 $i -l5 -n2; conv k51 $i --level=1; i=$((i + 1))
    mk k56 $i -l5 -n3
    echo "mdadm /dev/md$i --add ${devs[k56n]} >/dev/null 2>&1"
    conv k56 $i --level=6 --layout=preserve; i=$((i + 1))
    mk k65 $i -l6 -n4 --layout=left-symmetric-6; conv k65 $i --level=5; i=$((i + 1))
    # raid0 -> raid5: mdadm makes it degraded (--force: no spare can be
    # added to a raid0), then the parity device is added and rebuilt
    mk k05 $i -l0 -n2
    echo "mdadm --grow /dev/md$i --level=5 --layout=parity-last --force >/tmp/g.log 2>&1 || { echo 'theirs k05 grow-failed'; cat /tmp/g.log; }"
    echo "mdadm /dev/md$i --add ${devs[k05n]} >/dev/null 2>&1; sleep 1"
    conv k05 $i; i=$((i + 1))
    mk k50 $i -l5 -n3 --layout=parity-last; conv k50 $i --level=0; i=$((i + 1))
    mk k100 $i -l10 -n4 --layout=n2; conv k100 $i --level=0; i=$((i + 1))
    mk ksz $i -l5 -n3 --chunk=64 --size=6M
    conv ksz $i --size=max; i=$((i + 1))
    echo 'exit 0'
} > "$D/job.sh"

LINUX_PEER_SMP=${LINUX_PEER_SMP:-1} run_peer "${imgs[@]}"
fail=0
for t in 15 51 56 65 05; do host_check_ours "o$t" 1 "raid ${t:0:1} -> ${t:1} conversion"; done
for t in 50 100; do host_check_ours "o$t" 0 "raid ${t%0} -> 0 conversion"; done
host_check_ours osz 1 "raid5 grown with --size max (resynced by the kernel)"

read_sha() { # what uraid serve says goes to $D/read.err (a refusal, say)
    $URAID serve --readonly "$@" --run 'nbdcopy "$uri" - | head -c '$((MB << 20))' | sha256sum' \
        2>"$D/read.err" | cut -d' ' -f1 || true
}
for t in 15 51 56 65 05 50 100; do
    name=k$t
    grep -q "^theirs $name ${newlevel[$t]}$" <<< "$out" ||
        { echo "FAIL: the kernel did not convert $name: $(grep "^theirs $name" <<< "$out")"; fail=1; continue; }
    got=$(read_sha $(kept "${newlevel[$t]}" $(members $name)))
    if [ "$got" = "$want" ]; then echo "ok: uraid reads the kernel's $name (${newlevel[$t]})"; else
        echo "FAIL: uraid read of the kernel's $name: '$got' (want $want): $(cat "$D/read.err")"; fail=1; fi
    if [ "${newlevel[$t]}" != raid0 ]; then
        c=$($URAID check $(active "${newlevel[$t]}" $(members $name)) 2>&1) ||
            { echo "FAIL: uraid check of the kernel's $name: $c"; fail=1; }
        grep -q "agree" <<< "$c" || { echo "FAIL: uraid check of the kernel's $name: $c"; fail=1; }
    fi
    summary "${newlevel[$t]}" $(members $name) > "$D/k$t.sum"
    if diff "$D/o$t.sum" "$D/k$t.sum" > "$D/diff"; then
        echo "ok: $name: uraid's superblocks say what the kernel's do ($(wc -l < "$D/k$t.sum") devices)"
    else
        echo "FAIL: o$t (uraid) and k$t (kernel) superblocks differ:"; cat "$D/diff"; fail=1
    fi
done
if grep -q "^theirs ksz raid5$" <<< "$out"; then
    got=$(read_sha ${files[ksz]})
    c=$($URAID check ${files[ksz]} 2>&1) || true
    if [ "$got" = "$want" ] && grep -q agree <<< "$c" && whole_chunks ${files[ksz]%% *}; then
        echo "ok: uraid reads and checks the raid5 the kernel grew with --size=max, every chunk used as ours"
    else
        echo "FAIL: the kernel's --size=max raid5: read $got (want $want), check: $c"; fail=1
    fi
else
    echo "FAIL: the kernel did not grow ksz: $(grep "^theirs ksz" <<< "$out")"; fail=1
fi
exit $fail
