#!/bin/bash
# md-kernel-ppl.sh — md's partial parity log between the Linux kernel (in a
# linux-peer VM) and uraid, both ways, after a crash mid-write.
# (a) Ours: `uraid create --consistency-policy=ppl`, a pattern written and
#     flushed through `uraid serve` over the first half, random writes over
#     the second half until serve is killed with SIGKILL.  The kernel
#     assembles the unclean array: it must replay our PPL rather than
#     resync (resync_start "none" at once), read the flushed half as
#     written, and its parity check must find no mismatch.
# (b) Theirs: `mdadm --create --consistency-policy=ppl` in the VM, fio
#     random writes, the VM killed (sysrq b).  Two copies of the images:
#     uraid replays one (serve, writable: "replayed N PPL entries", no
#     resync), the kernel the other; both then read the array, whole and
#     with member 0 left out (its chunks rebuilt from the replayed parity),
#     and the four sha256 must agree pairwise; uraid check finds no
#     mismatch on its copy.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=4
. "$(dirname "$0")/peer-lib.sh"
requires_fio() { command -v fio >/dev/null || { echo "skip: fio missing"; exit 77; }; }
requires_fio
fail=0

# ---- (a) on the host: our array, torn by SIGKILL ----
add_images o 3
set -- ${files[o]}
$URAID create --level=5 --chunk=64 --consistency-policy=ppl --name=o "$@" >/dev/null
sock=$D/o.sock
uri="nbd+unix:///?socket=$sock"
$URAID serve -f --socket "$sock" "$@" 2>"$D/o.log" &
spid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
size=$(nbdinfo --size "$uri")
nbdcopy --flush "$D/pat" "$uri"
fio --name=w --ioengine=nbd --uri="$uri" --rw=randwrite --bs=12k --iodepth=8 \
    --offset=$((MB << 20)) --size=$((size - (MB << 20))) --time_based --runtime=30 \
    --output=/dev/null >/dev/null 2>&1 &
fpid=$!
sleep 2
kill -KILL "$spid"
wait "$spid" 2>/dev/null || true
wait "$fpid" 2>/dev/null || true

# ---- (b) in the VM: the kernel's array, torn by a reset ----
add_images k 3
{
    guest_header
    echo "mdadm --create /dev/md1 --run --metadata=1.2 --level=5 --chunk=64 --consistency-policy=ppl --assume-clean --raid-devices=3 /dev/vda /dev/vdb /dev/vdc >/tmp/c.log 2>&1 || { echo 'create-failed'; cat /tmp/c.log; }"
    echo "echo \"policy k \$(cat /sys/block/md1/md/consistency_policy)\""
    echo "echo 1 > /proc/sys/kernel/sysrq"
    echo "fio --name=w --filename=/dev/md1 --direct=1 --rw=randwrite --bs=12k --numjobs=4 --ioengine=psync --time_based --runtime=60 >/dev/null 2>&1 &"
    echo "sleep 4; echo b > /proc/sysrq-trigger"
} > "$D/job.sh"
LINUX_PEER_TIMEOUT=300 "$PEER/run.sh" "$D/job.sh" ${files[k]} >"$D/vm1.out" 2>&1 || true
# The reset leaves run.sh's work dir behind ("guest died"): ours to remove.
wd=$(sed -n 's/.*work dir kept: \([^ ]*\).*/\1/p' "$D/vm1.out" | head -n 1)
case "$wd" in /*/linux-peer-run.*) rm -rf "$wd" ;; esac
grep -q "^policy k ppl" "$D/vm1.out" || { cat "$D/vm1.out"; echo "FAIL: the kernel made no PPL array"; exit 1; }
kc=()
for f in ${files[k]}; do cp --sparse=always "$f" "$f.u"; kc+=("$f.u"); done
$URAID examine "${kc[0]}" | grep -q "State : active" || { echo "FAIL: the kernel's array is not unclean after the reset"; fail=1; }

# uraid replays its copy.
$URAID serve --run true "${kc[@]}" 2>"$D/k.log" || { cat "$D/k.log"; echo "FAIL: uraid could not start the kernel's array"; exit 1; }
if grep -q "replayed [1-9][0-9]* PPL entries" "$D/k.log" && ! grep -q resyncing "$D/k.log"; then
    echo "ok: uraid replays the kernel's PPL ($(grep -o 'replayed [0-9]* PPL entries' "$D/k.log"))"
else
    echo "FAIL: uraid did not replay the kernel's PPL: $(cat "$D/k.log")"; fail=1
fi
out=$($URAID check "${kc[@]}" 2>&1) && grep -q agree <<<"$out" ||
    { echo "FAIL: uraid check after its replay: $out"; fail=1; }
sha() { $URAID serve --readonly "$@" --run 'nbdcopy "$uri" - | sha256sum' 2>/dev/null | cut -d' ' -f1; }
u_all=$(sha "${kc[@]}")
u_deg=$(sha --degraded "${kc[1]}" "${kc[2]}")

# ---- VM 2: the kernel reads ours, and replays its own ----
set -- ${devs[k]}
{
    guest_header
    guest_read_ours o 0 1 ${devs[o]} | sed '1a echo "resync o $(cat /sys/block/md0/md/resync_start 2>/dev/null)"'
    echo "mdadm --assemble /dev/md1 ${devs[k]} >/dev/null 2>&1 || echo 'k assemble-failed'"
    echo "echo \"kresync \$(cat /sys/block/md1/md/resync_start)\""
    echo "echo \"kall \$(dd if=/dev/md1 bs=1M 2>/dev/null | sha256sum | cut -d' ' -f1)\""
    echo "mdadm --stop /dev/md1 >/dev/null 2>&1"
    echo "mdadm --assemble --run --readonly /dev/md1 $2 $3 >/dev/null 2>&1 || echo 'k degraded-failed'"
    echo "echo \"kdeg \$(dd if=/dev/md1 bs=1M 2>/dev/null | sha256sum | cut -d' ' -f1)\""
    echo "mdadm --stop /dev/md1 >/dev/null 2>&1"
    echo 'exit 0'
} > "$D/job.sh"
run_peer "${imgs[@]}"
host_check_ours o 1 "PPL RAID5 after SIGKILL (flushed half, parity check)"
grep -q "^resync o none" <<<"$out" && echo "ok: the kernel replays our PPL (no resync)" ||
    { echo "FAIL: the kernel resyncs our array: $(grep '^resync o' <<<"$out")"; fail=1; }
grep -q "^kresync none" <<<"$out" || { echo "FAIL: the kernel's own replay: $(grep kresync <<<"$out")"; fail=1; }
k_all=$(sed -n 's/^kall //p' <<<"$out")
k_deg=$(sed -n 's/^kdeg //p' <<<"$out")
if [ -n "$u_all" ] && [ "$u_all" = "$k_all" ] && [ "$u_deg" = "$k_deg" ] && [ "$u_all" = "$u_deg" ]; then
    echo "ok: uraid's and the kernel's replays of the kernel's PPL read the same, whole and degraded"
else
    echo "FAIL: replays differ: uraid $u_all / $u_deg, kernel $k_all / $k_deg"; fail=1
fi
exit $fail
