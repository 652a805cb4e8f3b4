#!/bin/bash
# reshape-kernel.sh — the kernel's RAID5 3 -> 4 reshape in a linux-peer VM
# (one boot, by hand, not in CI): mdadm makes a RAID5 of three SIZE images
# (chunk 512 KiB, --assume-clean), adds a fourth and grows to 4 devices (no
# backup file: mdadm moves the data offset down); each member's
# /sys/block/DEV/stat before and after gives what the kernel read and wrote
# per moved byte.  The VM is emulated (TCG), so its time says nothing: only
# bytes and requests per moved byte, beside uraid's from the sim members'
# counters (bench/reshape-rate.sh's -v -v lines).
#
#   bench/reshape-kernel.sh [SIZE]     (default 40M)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-40M}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for i in 0 1 2 3; do truncate -s "$size" "$dir/k$i.img"; done
cat > "$dir/job.sh" <<'JOB'
#!/bin/sh
echo 200000 > /proc/sys/dev/raid/speed_limit_min; echo 400000 > /proc/sys/dev/raid/speed_limit_max
mdadm --create /dev/md0 --run --metadata=1.2 --level=5 --chunk=512 --raid-devices=3 --assume-clean /dev/vda /dev/vdb /dev/vdc >/dev/null 2>&1
echo "old $(blockdev --getsize64 /dev/md0)"
mdadm /dev/md0 --add /dev/vdd >/dev/null 2>&1
for d in vda vdb vdc vdd; do echo "stat before $d $(cat /sys/block/$d/stat)"; done
mdadm --grow /dev/md0 --raid-devices=4 >/dev/null 2>&1
sleep 1
for t in $(seq 3000); do [ "$(cat /sys/block/md0/md/sync_action)" = idle ] && [ "$(cat /sys/block/md0/md/reshape_position)" = none ] && break; sleep 0.2; done
for d in vda vdb vdc vdd; do echo "stat after $d $(cat /sys/block/$d/stat)"; done
echo "offset $(mdadm --examine /dev/vda | sed -n 's/.*Data Offset : \([0-9]*\).*/\1/p') stripe_cache $(cat /sys/block/md0/md/stripe_cache_size)"
mdadm --stop /dev/md0 >/dev/null 2>&1
JOB
out=$(LINUX_PEER_SMP=1 tests/linux-peer/run.sh "$dir/job.sh" "$dir"/k{0,1,2,3}.img 2>&1)
grep -E "^(old|stat|offset)" <<< "$out"
# /sys/block/DEV/stat: reads, merged, sectors read, ms, writes, merged, sectors written, ...
awk '
    /^old/ { moved = $2 / 1048576 }   # the old array, in bytes
    /^stat before/ { r0[$3] = $4; rs0[$3] = $6; w0[$3] = $8; ws0[$3] = $10 }
    /^stat after/ { r += $4 - r0[$3]; rs += $6 - rs0[$3]; w += $8 - w0[$3]; ws += $10 - ws0[$3] }
    END {
        printf "moved %.1f MiB; read %.1f MiB in %d requests, written %.1f MiB in %d requests\n",
            moved, rs * 512 / 1048576, r, ws * 512 / 1048576, w
        printf "moved per member byte %.3f, member requests per moved MiB %.2f\n",
            moved / ((rs + ws) * 512 / 1048576), (r + w) / moved
    }' <<< "$out"
