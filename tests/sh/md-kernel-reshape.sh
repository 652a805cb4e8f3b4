#!/bin/bash
# md-kernel-reshape.sh — reshapes between uraid and the Linux kernel's md,
# both ways, in two linux-peer VM boots (tests/linux-peer):
# boot 1: mdadm creates each of these, fills it with random data (the
# kernel's hash of the whole array kept), starts the reshape, holds it
# with md's sync_max part-way and stops the array there:
#   g5: raid5 3 -> 4 devices (--add), the data offset moved down;
#   g6: raid6 4 -> 5 devices (--add);
#   c5: raid5 of 4, chunk 64 -> 32 KiB (no device added);
#   g10: raid10 near-2 4 -> 5 devices (--add; raid10.c's reshape).
#   ks5: raid5 4 -> 3 devices (a shrink to --array-size, backwards, the data
#   offset moved up: guest_shrink).
# host: `uraid serve --readonly` reads the same hash ($sum) from each (its two
# geometries), then `uraid grow --continue` finishes each and it reads the
# same again; uraid makes u5 (raid5 3 -> 4) and u6 (raid6 4 -> 5) with
# random data and stops their `uraid grow -n N --add NEW` part-way
# (--stop-at), and uc5 (raid5 of 4, `uraid grow --chunk 32 --layout
# right-asymmetric`: chunk 64 -> 32 KiB and another layout at once) and
# us5 (a shrink, raid5 4 -> 3 devices with --array-size, backwards) and
# u10 (raid10 near-2 4 -> 5) and u0 (raid0 3 -> 4, stopped in its raid4
# with the parity missing, the new member rebuilt in the old parity's role
# as the reshape passes) too.  mdadm --examine reads every member of each
# after uraid stopped or finished it (the reshape, or none, on all).
# boot 2: the kernel assembles the ten: the four uraid finished read the
# same and md's check finds 0 mismatches; the six uraid stopped are
# continued by the kernel to the end, read the same, check 0 (uc5 at the
# new chunk and layout, us5 on 3 devices); ub5 (below), uraid's backwards
# chunk change, the kernel finishes too.
# g5 and u5 keep a write-intent bitmap (1 MiB chunks) through it: the
# kernel's reshape with one continued by uraid, uraid's finished by the
# kernel, which must not call the bitmap out of date (events follow).
# Each reshape must really have been stopped part-way (the superblock
# recording its position), or the test fails.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=1
. "$(dirname "$0")/peer-lib.sh"
. "$(dirname "$0")/reshape-peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }

# 8 MiB members: boot 2's time goes to each array's hash and check under TCG
add_images g5 4 8M
add_images g6 5 8M
add_images c5 4 8M
add_images u5 4 8M
add_images u6 5 8M
add_images uc5 4 8M
add_images us5 4 8M
add_images g10 5 8M
add_images u10 5 8M
add_images u0 4 8M
add_images ub5 4 8M # issue 19's backwards chunk change, below
declare -A create_opts=([g5]="--bitmap=internal --bitmap-chunk=1M" [u5]="--bitmap=internal --bitmap-chunk=1M")
# ks5: the kernel's own shrink (below), 6 of each member's 7 MiB used
add_images ks5 4 8M

# guest_shrink NAME MD: the kernel's own shrink, raid5 4 -> 3 devices with no
# backup file: mdadm makes NAME with --size 6M (1 MiB of each member left
# after the data), fills it, prints "before NAME SHA256 BYTES" of the 12 MiB
# that 3 devices hold, sets --array-size to it and shrinks, the kernel
# moving each data offset up (md's new_offset, backwards from the end), held
# at 4096 sectors and stopped: "held NAME RESHAPE_POSITION FEATURES".
# mdadm 4.2 alone asks for a backup file: for fewer devices it writes each
# member's larger new_offset before md knows the direction, which the kernel
# refuses (EINVAL: "Cannot set new_offset"); reshape_direction set to
# backwards first, mdadm's offset change goes through.
guest_shrink() {
    local name=$1 md=$2 all=(${devs[$1]})
    echo "mdadm --create /dev/md$md --run --metadata=1.2 --level=5 --chunk=64 --raid-devices=4 --size=6M ${all[*]} >/tmp/c.log 2>&1 || { echo 'before $name create-failed'; cat /tmp/c.log; }"
    echo "while [ \"\$(cat /sys/block/md$md/md/sync_action)\" != idle ]; do sleep 0.2; done"
    echo "dd if=/dev/urandom of=/dev/md$md bs=64k oflag=direct 2>/dev/null; sync"
    echo "echo \"before $name \$(dd if=/dev/md$md bs=64k count=192 2>/dev/null | $sum | cut -d' ' -f1) 12582912\""
    echo "mdadm --grow /dev/md$md --array-size=12M >/tmp/g.log 2>&1 || { echo 'held $name array-size-failed'; cat /tmp/g.log; }"
    echo "echo 10 > /proc/sys/dev/raid/speed_limit_min; echo 10 > /proc/sys/dev/raid/speed_limit_max"
    echo "echo backwards > /sys/block/md$md/md/reshape_direction"
    guest_hold $name $md ${all[0]} --raid-devices=3
}

{
    guest_header
    guest_half g5 0 5 64 3 --raid-devices=4 --add "$(cut -d' ' -f4 <<< "${devs[g5]}")"
    guest_half g6 1 6 64 4 --raid-devices=5 --add "$(cut -d' ' -f5 <<< "${devs[g6]}")"
    guest_half c5 2 5 64 4 --chunk=32
    # near-2 moves whole rows: sync_max 4096 holds it at 3456, short of the
    # 4096 the wait asks (which waited out its 30 s)
    hold_min=2048 guest_half g10 3 10 64 4 --raid-devices=5 --add "$(cut -d' ' -f5 <<< "${devs[g10]}")"
    guest_shrink ks5 7
    echo 'exit 0'
} > "$D/job.sh"

LINUX_PEER_SMP=${LINUX_PEER_SMP:-1} run_peer "${imgs[@]}"
fail=0
declare -A want_sha want_size
continue_kernels g5 g6 c5 g10 ks5

# u5, u6, uc5: ours, stopped part-way (N devices, M after)
# us5: 2 x 6912 KiB (of 7168 a member holds), leaving each 256 KiB after its data to move it up into
for spec in "u5 5 3 4" "u6 6 4 5" "uc5 5 4 4" "us5 5 4 3" "u10 10 4 5" "u0 0 3 4"; do
    read -r name level n m <<< "$spec"
    all=(${files[$name]})
    if [ "$m" -gt "$n" ]; then how=(-n "$m" --add "${all[$n]}")
    elif [ "$m" -lt "$n" ]; then how=(-n "$m" --array-size 13824K)
    else how=(--chunk 32 --layout right-asymmetric); fi
    # shellcheck disable=SC2086
    $URAID create --level=$level --chunk=64 ${create_opts[$name]:-} "${all[@]:0:$n}" >/dev/null 2>&1 || { echo "FAIL: create $name"; exit 1; }
    want_size[$name]=$($URAID serve --readonly --run 'nbdinfo --size "$uri"' "${all[@]:0:$n}" 2>/dev/null)
    head -c "${want_size[$name]}" /dev/urandom > "$D/$name.data"
    want_sha[$name]=$($sum < "$D/$name.data" | cut -d' ' -f1)
    $URAID serve --run "nbdcopy '$D/$name.data' \"\$uri\"" "${all[@]:0:$n}" 2>/dev/null
    # a third of the new array's sectors (level - 4 parity members; raid10
    # and raid0: a third of the old one's)
    p=$((level - 4))
    [ "$level" -le 0 ] || [ "$level" = 10 ] && stop=$((want_size[$name] / 512 / 3)) ||
        stop=$((want_size[$name] / (n - p) * (m - p) / 512 / 3))
    $URAID grow "${how[@]}" --stop-at $stop "${all[@]:0:$n}" >"$D/$name.grow" 2>&1 ||
        { echo "FAIL: $name: uraid grow: $(cat "$D/$name.grow")"; fail=1; continue; }
    if [ "$m" -lt "$n" ]; then # what is left: the shrunk array's bytes
        want_size[$name]=$((13824 * 1024))
        want_sha[$name]=$(head -c "${want_size[$name]}" "$D/$name.data" | $sum | cut -d' ' -f1)
    fi
    if mdadm --examine "${all[0]}" 2>/dev/null | grep -q "Reshape pos'n"; then
        echo "ok: $name: uraid's reshape stopped part-way ($(mdadm --examine "${all[0]}" | grep "Reshape pos'n" | sed 's/ *Reshape pos.n : //'))"
    else
        echo "FAIL: $name: no reshape recorded after --stop-at: $(cat "$D/$name.grow")"; fail=1
    fi
    examine_all $name "the reshape stopped part-way" "Reshape pos|Delta Devices|Raid Level"
done

# ub5: raid5 of 4 whose members use 6 MiB of the 7 their data areas hold
# (`uraid grow --size`): a chunk change 64 -> 128 KiB has too little room
# before the data to move it down by half and more after it, so the data
# offset moves up and the reshape runs backwards from the end (mdadm's
# choice); stopped once it came down to two thirds, the kernel finishes it.
ub=(${files[ub5]})
{ $URAID create --level=5 --chunk=64 "${ub[@]}" && $URAID grow --size 6M "${ub[@]}"; } >/dev/null 2>&1 ||
    { echo "FAIL: create ub5"; exit 1; }
want_size[ub5]=$($URAID serve --readonly --run 'nbdinfo --size "$uri"' "${ub[@]}" 2>/dev/null)
head -c "${want_size[ub5]}" /dev/urandom > "$D/ub5.data"
want_sha[ub5]=$($sum < "$D/ub5.data" | cut -d' ' -f1)
$URAID serve --run "nbdcopy '$D/ub5.data' \"\$uri\"" "${ub[@]}" 2>/dev/null
if ! $URAID grow --chunk 128 --stop-at $((want_size[ub5] / 512 * 2 / 3)) "${ub[@]}" >"$D/ub5.grow" 2>&1; then
    echo "FAIL: ub5: uraid grow: $(cat "$D/ub5.grow")"; fail=1
elif ! grep -q "backwards" "$D/ub5.grow" || ! mdadm --examine "${ub[0]}" | grep -q "Reshape pos'n"; then
    echo "FAIL: ub5: not a backwards reshape stopped part-way: $(cat "$D/ub5.grow")"; fail=1
else
    echo "ok: ub5: uraid's backwards chunk change stopped part-way ($(mdadm --examine "${ub[0]}" | grep -E "Reshape pos'n|New Offset" | tr -s ' ' | tr '\n' ' '))"
fi

{
    guest_header
    md=0
    for name in g5 g6 c5 g10 u5 u6 uc5 us5 ub5 u10 u0; do
        guest_after $name $md "${want_size[$name]:-0}"
        md=$((md + 1))
    done
    guest_after ks5 $md "${want_size[ks5]:-0}"
    echo 'exit 0'
} > "$D/job.sh"
LINUX_PEER_SMP=${LINUX_PEER_SMP:-1} run_peer "${imgs[@]}"
for name in g5 u5; do
    mdadm --examine "$(cut -d' ' -f1 <<< "${files[$name]}")" | grep -q "Internal Bitmap" ||
        { echo "FAIL: $name: no bitmap left after the reshape"; fail=1; }
done
grep "^stale " <<< "$out" && { echo "FAIL: the kernel found a bitmap out of date"; fail=1; }
line=$(grep "^after ub5 " <<< "$out" || true)
if [ "$(cut -d' ' -f4- <<< "$line")" != "${want_size[ub5]} 4 131072 2" ]; then
    echo "FAIL: ub5: the kernel ended at size, devices, chunk, layout '$(cut -d' ' -f4- <<< "$line")', want ${want_size[ub5]} 4 131072 2"
    fail=1
fi
for name in g5 g6 c5 g10 u5 u6 uc5 us5 ub5 u10 u0 ks5; do
    line=$(grep "^after $name " <<< "$out" || true)
    if [ $name = us5 ] && [ "$(cut -d' ' -f4-5 <<< "$line")" != "$((13824 * 1024)) 3" ]; then
        echo "FAIL: us5: the kernel ended at size and devices '$(cut -d' ' -f4-5 <<< "$line")', want $((13824 * 1024)) 3"
        fail=1
    fi
    if [ $name = u10 ] && [ "$(cut -d' ' -f5 <<< "$line")" != 5 ]; then
        echo "FAIL: u10: the kernel ended at '$(cut -d' ' -f5 <<< "$line")' devices, want 5"
        fail=1
    fi
    # u0: the raid4 (layout 5) with its parity missing, as mdadm's
    # raid4 ends before it goes back to raid0
    if [ $name = u0 ] && [ "$(cut -d' ' -f5- <<< "$line")" != "5 65536 5" ]; then
        echo "FAIL: u0: the kernel ended at '$(cut -d' ' -f5- <<< "$line")', want 5 65536 5"
        fail=1
    fi
    if [ $name = uc5 ] && [ "$(cut -d' ' -f6- <<< "$line")" != "32768 1" ]; then
        echo "FAIL: uc5: the kernel ended at chunk and layout '$(cut -d' ' -f6- <<< "$line")', want 32768 1"
        fail=1
    fi
    if [ $name = ks5 ] && [ "$(cut -d' ' -f4-5 <<< "$line")" != "12582912 3" ]; then
        echo "FAIL: ks5: the kernel assembled uraid's end of its shrink at size and devices '$(cut -d' ' -f4-5 <<< "$line")', want 12582912 3"
        fail=1
    fi
    case $name in g*|c*|k*) who="uraid finished" ;; *) who="the kernel finished uraid's" ;; esac
    kernel_reads_same $name "$who"
done
exit $fail
