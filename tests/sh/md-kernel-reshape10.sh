#!/bin/bash
# md-kernel-reshape10.sh — raid10 offset-2 reshapes between uraid and the
# Linux kernel's md, both ways, 8 MiB members, in two linux-peer boots:
# boot 1: mdadm makes ko2 (o2, 4 devices) and kb2 and kk2 (the same with
# a write-intent bitmap of 1 MiB chunks), fills each with random data (the
# kernel's hash kept), grows each to 5 devices (--add), holds the
# reshape with md's sync_max part-way and stops it there (the kernel
# resized kb2's bitmap to the new size at the start).
# host: `uraid serve --readonly` reads the same hash ($sum) from each (its two
# geometries), `uraid grow --continue` finishes each and it reads the same
# again, mdadm --examine finds no reshape left; uraid makes uo2 and ub2
# (the same two) with random data and stops its `uraid grow -n 5 --add
# NEW` of each a third of the way (--stop-at).
# boot 2: the kernel assembles them: the two uraid finished read the
# same and md's check finds 0 mismatches; the two uraid stopped the kernel
# continues to the end (5 devices) and reads the same, uo2 check 0, ub2
# apart only in the grown space and only as kk2 (the kernel's own grow with
# a bitmap, held and continued after a restart: below), none after a
# repair; no bitmap is called out of date (its events follow the
# superblock's).
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=1
. "$(dirname "$0")/peer-lib.sh"
. "$(dirname "$0")/reshape-peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }

for name in ko2 kb2 kk2 uo2 ub2; do add_images $name 5 8M; done
bm="--bitmap=internal --bitmap-chunk=1M"
declare -A create_opts=([ko2]="--layout=o2" [kb2]="--layout=o2 $bm" [kk2]="--layout=o2 $bm"
    [uo2]="--layout=o2" [ub2]="--layout=o2 $bm")
hold_min=2048 # an o2 reshape moves whole rows of far chunks: sync_max 4096 holds it at 3840

{
    guest_header
    guest_half ko2 0 10 64 4 --raid-devices=5 --add "$(cut -d' ' -f5 <<< "${devs[ko2]}")"
    guest_half kb2 1 10 64 4 --raid-devices=5 --add "$(cut -d' ' -f5 <<< "${devs[kb2]}")"
    guest_half kk2 2 10 64 4 --raid-devices=5 --add "$(cut -d' ' -f5 <<< "${devs[kk2]}")"
    echo 'exit 0'
} > "$D/job.sh"
LINUX_PEER_SMP=${LINUX_PEER_SMP:-1} run_peer "${imgs[@]}"
fail=0
declare -A want_sha want_size
continue_kernels ko2 kb2

read -r _ _ want_sha[kk2] want_size[kk2] <<< "$(grep "^before kk2 " <<< "$out")" || true
grep -q "^held kk2 [1-9]" <<< "$out" || { echo "FAIL: kk2: the kernel's reshape was not held part-way"; fail=1; }
for name in uo2 ub2; do
    all=(${files[$name]})
    # shellcheck disable=SC2086
    $URAID create --level=10 --chunk=64 ${create_opts[$name]} "${all[@]:0:4}" >/dev/null 2>&1 ||
        { echo "FAIL: create $name"; exit 1; }
    want_size[$name]=$($URAID serve --readonly --run 'nbdinfo --size "$uri"' "${all[@]:0:4}" 2>/dev/null)
    head -c "${want_size[$name]}" /dev/urandom > "$D/$name.data"
    want_sha[$name]=$($sum < "$D/$name.data" | cut -d' ' -f1)
    $URAID serve --run "nbdcopy '$D/$name.data' \"\$uri\"" "${all[@]:0:4}" 2>/dev/null
    $URAID grow -n 5 --add "${all[4]}" --stop-at $((want_size[$name] / 512 / 3)) "${all[@]:0:4}" \
        >"$D/$name.grow" 2>&1 || { echo "FAIL: $name: uraid grow: $(cat "$D/$name.grow")"; fail=1; continue; }
    if mdadm --examine "${all[0]}" 2>/dev/null | grep -q "Reshape pos'n"; then
        echo "ok: $name: uraid's o2 reshape stopped part-way ($(mdadm --examine "${all[0]}" | grep -E "Reshape pos'n|New Offset" | tr -s ' ' | tr '\n' ' '))"
    else
        echo "FAIL: $name: no reshape recorded after --stop-at: $(cat "$D/$name.grow")"; fail=1
    fi
    examine_all $name "the reshape stopped part-way" "Reshape pos|Delta Devices|Raid Level"
done

{
    guest_header
    md=0
    for name in ko2 kb2 kk2 uo2 ub2; do
        guest_after $name $md "${want_size[$name]:-0}"
        md=$((md + 1))
    done
    # ub2 once more: md's repair makes the grown space's copies agree
    echo "mdadm --assemble /dev/md9 ${devs[ub2]} >/dev/null 2>&1"
    echo "echo repair > /sys/block/md9/md/sync_action; sleep 1"
    echo "while [ \"\$(cat /sys/block/md9/md/sync_action)\" != idle ]; do sleep 0.2; done"
    echo "echo check > /sys/block/md9/md/sync_action; sleep 1"
    echo "while [ \"\$(cat /sys/block/md9/md/sync_action)\" != idle ]; do sleep 0.2; done"
    echo "echo \"repaired ub2 \$(cat /sys/block/md9/md/mismatch_cnt)\""
    echo "mdadm --stop /dev/md9 >/dev/null 2>&1"
    echo 'exit 0'
} > "$D/job.sh"
LINUX_PEER_SMP=${LINUX_PEER_SMP:-1} run_peer "${imgs[@]}"
grep "^stale " <<< "$out" && { echo "FAIL: the kernel found a bitmap out of date"; fail=1; }
for name in kb2 ub2; do
    mdadm --examine "$(cut -d' ' -f1 <<< "${files[$name]}")" | grep -q "Internal Bitmap" ||
        { echo "FAIL: $name: no bitmap left after the reshape"; fail=1; }
done
# The kernel continuing a raid10 grow with a bitmap after a restart sizes
# its bitmap to the old end (resync_max_sectors) and, once the reshape has
# ended, resyncs past the old end only where its bitmap reaches: the grown
# space, which holds no data, keeps whatever its copies held, apart where
# they differ; its own grow held, stopped and continued (kk2) as ours
# (ub2).  So ub2 may be apart only if kk2 is, and only in the grown space;
# after md's repair not at all (the guest lines below).
kk=$(sed -n 's/^mismatch kk2 //p' <<< "$out")
ub=$(sed -n 's/^mismatch ub2 //p' <<< "$out")
grown=$(( (want_size[ub2] / 4 * 5 - want_size[ub2]) / 512 ))
if [[ "$kk" =~ ^[0-9]+$ && "$ub" =~ ^[0-9]+$ ]] && { [ "$ub" = 0 ] || { [ "$kk" != 0 ] && [ "$ub" -le "$grown" ]; }; }; then
    echo "ok: ub2: the kernel finishes uraid's o2 grow with a bitmap as its own (kk2): $ub and $kk sectors apart, of the $grown grown"
else
    echo "FAIL: ub2: the kernel's check after finishing ours finds '$ub' sectors apart (of $grown grown), after its own (kk2) '$kk'"
    fail=1
fi
grep -q "^repaired ub2 0$" <<< "$out" || { echo "FAIL: ub2: after a repair: $(grep "^repaired ub2" <<< "$out")"; fail=1; }
for name in ko2 kb2 kk2 uo2 ub2; do
    line=$(grep "^after $name " <<< "$out" || true)
    case $name in kk2) who="the kernel restarted its own" ;; k*) who="uraid finished the kernel's" ;;
        *) who="the kernel finished uraid's" ;; esac
    want_mis=0
    case $name in kk2) want_mis=$kk ;; ub2) want_mis=$ub ;; esac
    if [ "$(cut -d' ' -f5 <<< "$line")" != 5 ] || [ "$(cut -d' ' -f7 <<< "$line")" != 66049 ]; then
        echo "FAIL: $name: the kernel ended at devices and layout '$(cut -d' ' -f5,7 <<< "$line")', want 5 66049 (o2)"
        fail=1
    fi
    kernel_reads_same $name "$who o2" "$want_mis"
done
exit $fail
