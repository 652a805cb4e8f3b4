#!/bin/bash
# md-kernel-journal.sh — md's raid5-cache write journal, both ways, with
# the Linux kernel in a linux-peer VM (tests/linux-peer): each side
# replays a journal the other wrote and left behind a crash.
# (a) uraid creates a RAID5 with --write-journal, a client writes through
#     `uraid serve`, which is killed -9 mid-write; the kernel assembles it
#     (replaying the journal: dmesg "recovering 0 data-only stripes and N
#     data-parity stripes", N > 0), and its parity check finds 0
#     mismatches; uraid's own replay of a copy rewrites the same N stripes
#     and reads the same sha256.
# (b) the kernel creates a RAID5 with mdadm --write-journal, fio writes and
#     the VM is cut off (sysrq b); uraid replays a copy (N stripes, its
#     check agrees) and reads the same sha256 and count as the kernel's own
#     replay of another copy.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=8
. "$(dirname "$0")/peer-lib.sh"
command -v fio >/dev/null || { echo "skip: fio missing"; exit 77; }

img() { truncate -s 16M "$D/$1"; }
for f in o0 o1 o2 oj k0 k1 k2 kj; do img $f.img; done
fail=0

# (b), first half: the kernel makes and crashes its array.
cat > "$D/job1.sh" <<'JOB'
#!/bin/sh
echo 1 > /proc/sys/kernel/sysrq
mdadm --create /dev/md0 --run --metadata=1.2 --level=5 --chunk=64 --raid-devices=3 \
    --assume-clean /dev/vda /dev/vdb /dev/vdc --write-journal /dev/vdd >/tmp/c.log 2>&1 ||
    { echo create-failed; cat /tmp/c.log; exit 1; }
echo "mode $(cat /sys/block/md0/md/journal_mode)"
fio --name=w --filename=/dev/md0 --rw=randwrite --bs=12k --direct=1 --ioengine=psync \
    --numjobs=2 --size=24M --time_based --runtime=120 --randseed=7 >/dev/null 2>&1 &
sleep 8
echo crashing
sleep 2 # the line reaches the host before the reset
echo b > /proc/sysrq-trigger
sleep 30
JOB
out=$(LINUX_PEER_TIMEOUT=300 "$PEER/run.sh" "$D/job1.sh" "$D"/k0.img "$D"/k1.img "$D"/k2.img \
    "$D"/kj.img 2>&1) || true
grep -q '^crashing\|sysrq: Resetting' <<< "$out" || { echo "$out" | tail -20; echo "FAIL: the kernel's array was not made and crashed"; exit 1; }
grep -q '^mode .*\[write-through\]' <<< "$out" || echo "note: $(grep '^mode' <<< "$out")"
for f in k0 k1 k2 kj; do cp "$D/$f.img" "$D/u$f.img"; done

# (a), first half: ours, killed mid-write.
$URAID create --level=5 --chunk=64 --write-journal="$D/oj.img" "$D"/o0.img "$D"/o1.img \
    "$D"/o2.img >/dev/null
$URAID serve -f --socket "$D/s.sock" --pid-file "$D/pid" "sim:20M:$D/o0.img" \
    "sim:20M:$D/o1.img" "sim:20M:$D/o2.img" "$D/oj.img" 2>"$D/serve.log" &
for _ in $(seq 100); do [ -S "$D/s.sock" ] && break; sleep 0.1; done
nbdcopy "$D/pat" "nbd+unix:///?socket=$D/s.sock" 2>/dev/null &
copier=$!
sleep 1.5
kill -9 "$(cat "$D/pid")"
wait "$copier" 2>/dev/null || true
for f in o0 o1 o2 oj; do cp "$D/$f.img" "$D/u$f.img"; done

# uraid replays the copies: how many stripes, then what the array reads.
replay() { # IMAGES...: "N SHA256" (N: stripes with parity rewritten)
    local log sha
    sha=$($URAID serve "$@" --run 'nbdcopy "$uri" - | sha256sum' 2>"$D/r.log" | cut -d' ' -f1)
    log=$(grep -o 'journal replayed: [0-9]* stripes' "$D/r.log" | grep -o '[0-9]*' || echo 0)
    echo "$log $sha"
}
read -r on osha <<< "$(replay "$D"/uo0.img "$D"/uo1.img "$D"/uo2.img "$D"/uoj.img)"
read -r kn ksha <<< "$(replay "$D"/uk0.img "$D"/uk1.img "$D"/uk2.img "$D"/ukj.img)"
for a in o k; do
    $URAID check "$D"/u${a}0.img "$D"/u${a}1.img "$D"/u${a}2.img "$D"/u${a}j.img 2>&1 |
        grep -q 'the copies agree' || { echo "FAIL: uraid's replay of $a left parity wrong"; fail=1; }
done

# The kernel replays ours and its own (the copies it has not seen replayed).
cat > "$D/job2.sh" <<'JOB'
#!/bin/sh
one() { # MD NAME DEVS...
    md=$1 name=$2; shift 2
    mdadm --assemble /dev/$md "$@" >/tmp/a.log 2>&1 || { echo "$name assemble-failed"; cat /tmp/a.log; return; }
    echo "recov $name $(dmesg | grep "$md: recovering" | tail -1 | sed 's/.*and \([0-9]*\) data-parity.*/\1/')"
    echo "sha $name $(dd if=/dev/$md bs=1M 2>/dev/null | sha256sum | cut -d' ' -f1)"
    echo check > /sys/block/$md/md/sync_action
    while [ "$(cat /sys/block/$md/md/sync_action)" != idle ]; do sleep 0.2; done
    echo "mismatch $name $(cat /sys/block/$md/md/mismatch_cnt)"
    mdadm --stop /dev/$md >/dev/null 2>&1
}
one md0 ours /dev/vda /dev/vdb /dev/vdc /dev/vdd
one md1 theirs /dev/vde /dev/vdf /dev/vdg /dev/vdh
exit 0
JOB
out=$(LINUX_PEER_TIMEOUT=300 "$PEER/run.sh" "$D/job2.sh" "$D"/o0.img "$D"/o1.img "$D"/o2.img \
    "$D"/oj.img "$D"/k0.img "$D"/k1.img "$D"/k2.img "$D"/kj.img 2>&1) ||
    { echo "$out" | tail -20; echo "FAIL: the second linux-peer job did not finish"; exit 1; }
field() { grep "^$1 $2 " <<< "$out" | cut -d' ' -f3; }
for spec in "ours $on $osha" "theirs $kn $ksha"; do
    read -r who n sha <<< "$spec"
    kr=$(field recov "$who") ks=$(field sha "$who") km=$(field mismatch "$who")
    if [ -n "$kr" ] && [ "$kr" -gt 0 ] 2>/dev/null && [ "$kr" = "$n" ]; then
        echo "ok: $who: the kernel and uraid each replay $n stripes with parity"
    else
        echo "FAIL: $who: kernel replayed '$kr' stripes, uraid $n"; fail=1
    fi
    if [ "$ks" = "$sha" ]; then echo "ok: $who: the same sha256 after either replay"; else
        echo "FAIL: $who: kernel reads $ks, uraid $sha"; fail=1; fi
    [ "$km" = 0 ] && echo "ok: $who: the kernel's check finds 0 mismatches" ||
        { echo "FAIL: $who: kernel check mismatch_cnt '$km'"; fail=1; }
done
[ $fail = 0 ] || echo "$out" | tail -30
exit $fail
