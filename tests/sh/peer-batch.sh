#!/bin/bash
# peer-batch.sh — tests/linux-peer/batch.sh, the runner that gives several kernel tests one
# VM boot: four small members in one batch (one boot).  m0's job leaves an md array
# running and a file in /tmp and exits 3: its run.sh must say 3 and print its output.  m1's
# job names /dev/vda, a disk of m0's: refused without running, run.sh exit 2.  m2's job,
# after m0's in the same VM, must find /tmp empty, no array, and its own disk as the first
# one after m0's and m1's (its 1 MiB, not m0's 4 MiB).  m3 fails on the host.  The batch
# must fail naming m3 alone, and report each member under its name.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=1
. "$(dirname "$0")/peer-lib.sh"

# a member: lib lines, then its body (it writes $D/job.sh and calls run.sh itself)
member() { # NAME BODY
    { echo '#!/bin/bash'; echo 'MB=1; . "$SRCDIR/tests/sh/peer-lib.sh"'; echo "$2"; } > "$D/$1.sh"
    chmod +x "$D/$1.sh"
}
member m0 '
add_images a 2 4M
{ echo "#!/bin/sh"
  echo "mdadm --create /dev/md0 --run --level=1 --raid-devices=2 ${devs[a]} >/dev/null 2>&1"
  echo "touch /tmp/leftover; echo m0-job-ran; exit 3"; } > "$D/job.sh"
rc=0; out=$("$PEER/run.sh" "$D/job.sh" "${imgs[@]}" 2>&1) || rc=$?
[ $rc = 3 ] || { echo "FAIL: m0: run.sh exit $rc, not 3: $out"; exit 1; }
grep -q "^m0-job-ran$" <<< "$out" || { echo "FAIL: m0: no output: $out"; exit 1; }
echo "ok: m0: its job ran, exit 3"'
member m1 '
add_images b 1 1M
printf "#!/bin/sh\ncat /dev/vda > /dev/null\n" > "$D/job.sh"
rc=0; out=$("$PEER/run.sh" "$D/job.sh" "${imgs[@]}" 2>&1) || rc=$?
[ $rc = 2 ] && grep -q "names /dev/vda, not one of its 1 disks" <<< "$out" ||
    { echo "FAIL: m1: a job naming another member'"'"'s disk: exit $rc: $out"; exit 1; }
echo "ok: m1: refused"'
member m2 '
add_images c 1 1M
d=${devs[c]% }
{ echo "#!/bin/sh"
  echo "echo \"tmp \$(ls -A /tmp | wc -l) arrays \$(grep -c ^md /proc/mdstat)\""
  echo "echo \"disk $d \$(blockdev --getsize64 $d)\""; } > "$D/job.sh"
out=$("$PEER/run.sh" "$D/job.sh" "${imgs[@]}" 2>&1) || { echo "FAIL: m2: $out"; exit 1; }
grep -q "^tmp 0 arrays 0$" <<< "$out" || { echo "FAIL: m2: m0 left its state: $out"; exit 1; }
[ "$d" = /dev/vdd ] && grep -q "^disk /dev/vdd 1048576$" <<< "$out" ||
    { echo "FAIL: m2: its disk ($d): $out"; exit 1; }
echo "ok: m2: a clean guest, its own disk"'
member m3 'echo "m3 fails here"; exit 1'

rc=0
out=$("$PEER/batch.sh" "$D/m0.sh" "$D/m1.sh" "$D/m2.sh" "$D/m3.sh" 2>&1) || rc=$?
echo "$out"
fail=0
[ $rc = 1 ] || { echo "FAIL: batch exit $rc with a member failing, not 1"; fail=1; }
for m in m0 m1 m2; do
    grep -q "^batch: $m ok$" <<< "$out" || { echo "FAIL: batch did not report $m ok"; fail=1; }
done
grep -q "^batch: m3 FAILED (exit 1)$" <<< "$out" || { echo "FAIL: batch did not name m3's failure"; fail=1; }
grep -A1 "^==== m3 (exit 1)$" <<< "$out" | grep -q "^m3 fails here$" ||
    { echo "FAIL: m3's report is not under its name"; fail=1; }
[ $fail = 0 ] && echo "ok: the batch reports each member, fails naming m3"
exit $fail
