#!/bin/bash
# raid-fail-beyond.sh — a served array that loses more members than it can
# lose fails as the kernel's md does (docs/raid.md, "An array that has
# failed"): fault:after=N,mode=write members fail at different points
# under a client that checks every acknowledged write against a flat
# reference, for a RAID5 of 4 losing two, a RAID6 of 5 losing three, a
# RAID1 losing both copies and a RAID10 losing both copies of a pair.
#   - once a write fails, no later write, nor the flush, is acknowledged
#     (md's MD_BROKEN);
#   - no block that an acknowledged write left reads back wrong: each
#     reads the reference or fails (RAID5/6: EIO for the blocks on the
#     failed members; RAID1/10 keep their last copy, as the kernel does,
#     and read on);
#   - RAID5/6: mdadm --examine of the members kept records every failed
#     role, a restart refuses naming them, and --force --readonly starts
#     it with the member that failed last (mdadm --assemble --force's
#     choice), reading the reference wherever the client was acknowledged
#     (but in the stripes a failed write tore: md's write hole);
#   - detail says FAILED; serve --program gets md's Fail for each RAID5
#     member (raid5_error marks the second too), one for RAID1 (the last
#     copy is kept); a RAID1 or RAID10 that kept its last copy restarts
#     degraded and reads the reference.
. "$(dirname "$0")/nbd-lib.sh"
requires nbdinfo nbdcopy mdadm
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import nbd' 2>/dev/null ||
    { echo "SKIP: python3-libnbd (nbdsh's module) missing"; exit 77; }

# client.py URI REF UNKNOWN SEED: random writes of 4..64 KiB until one fails,
# then 8 more (which must fail too), applied to REF when acknowledged; the
# 4 KiB blocks that a failed write touched (and no acknowledged write
# rewrote) go to UNKNOWN.  Then a flush, and every block read back.
cat >"$tmp/client.py" <<'PY'
import nbd, random, sys
uri, ref, unknown_out, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
h = nbd.NBD()
h.connect_uri(uri)
size = h.get_size()
rng = random.Random(seed)
B = 4096
data_ref = bytearray(open(ref, "rb").read())
unknown = bytearray(size // B)
acked = failed = acked_after = n = 0
while n < 4000 and failed < 9:
    n += 1
    ln = rng.randrange(1, 17) * B
    off = rng.randrange(0, (size - ln) // B + 1) * B
    data = rng.randbytes(ln)
    try:
        h.pwrite(data, off)
    except nbd.Error:
        failed += 1
        for b in range(off // B, (off + ln) // B):
            unknown[b] = 1
        continue
    acked += 1
    acked_after += failed > 0
    data_ref[off:off + ln] = data
    for b in range(off // B, (off + ln) // B):
        unknown[b] = 0
try:
    h.flush()
    flush = "ok"
except nbd.Error:
    flush = "EIO"
wrong = eio = 0
for b in range(size // B):
    try:
        got = h.pread(B, b * B)
    except nbd.Error:
        eio += 1
        continue
    if not unknown[b] and got != data_ref[b * B:(b + 1) * B]:
        wrong += 1
open(ref, "wb").write(data_ref)
open(unknown_out, "w").write("".join("%d\n" % b for b in range(size // B) if unknown[b]))
print("acked=%d failed=%d acked_after=%d flush=%s wrong=%d eio=%d" %
      (acked, failed, acked_after, flush, wrong, eio))
PY

# serve --program: one line per md event (mdadm --monitor's words)
cat >"$tmp/prog.sh" <<EOS
#!/bin/sh
echo "\$1 \$3" >>"$tmp/\$(cat "$tmp/case").events"
EOS
chmod +x "$tmp/prog.sh"

sock=$tmp/s.sock
uri="nbd+unix:///?socket=$sock"

# run_case NAME SEED CREATE-OPTS... -- MEMBER-SPEC...: a member spec is a file
# name, or after=N:FILE for a member whose writes fail after N.
run_case() {
    local name=$1 seed=$(($2 + ${URAID_TEST_SEED_BASE:-0})) opts=() files=() specs=()
    shift 2
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    for s in "$@"; do
        local f=$tmp/$name-${#files[@]}
        truncate -s 8M "$f"
        files+=("$f")
        case $s in
        after=*) specs+=("fault:${s},mode=write:$f") ;;
        *) specs+=("$f") ;;
        esac
    done
    echo "$name" >"$tmp/case"
    "$URAID" create "${opts[@]}" "${files[@]}" >/dev/null 2>&1 || fail "$name: create"
    size=$("$URAID" serve --readonly --run 'nbdinfo --size "$uri"' "${files[@]}" 2>/dev/null)
    head -c "$size" /dev/urandom >"$tmp/$name.ref"
    "$URAID" serve --run "nbdcopy '$tmp/$name.ref' \"\$uri\"" "${files[@]}" 2>/dev/null ||
        fail "$name: fill"
    : >"$tmp/$name.events"
    start_server "$sock" --no-rebuild --control "$tmp/ctl" --program "$tmp/prog.sh" \
        "${specs[@]}" 2>"$tmp/$name.log"
    out=$(/usr/bin/python3 "$tmp/client.py" "$uri" "$tmp/$name.ref" "$tmp/$name.unknown" \
        "$seed" 2>&1) || fail "$name: client: $out"
    detail=$("$URAID" detail "$tmp/ctl") || fail "$name: detail"
    grep -q "State : .*FAILED" <<<"$detail" || fail "$name: detail does not say FAILED: $detail"
    kill -TERM "$server_pid"
    wait "$server_pid" || true
    echo "$name: $out"
    grep -q " failed=9 " <<<"$out" || fail "$name: the array never failed a write: $out"
    grep -q " acked_after=0 " <<<"$out" ||
        fail "$name: writes were acknowledged after the array failed: $out"
    grep -q " flush=EIO " <<<"$out" || fail "$name: a flush of the failed array succeeded: $out"
    grep -q " wrong=0 " <<<"$out" || fail "$name: acknowledged writes read back wrong: $out"
}

# RAID5 of 4: roles 1 and 2 fail; the blocks on them read EIO.
run_case r5 5 --level=5 --raid-devices=4 --chunk=64 -- \
    0 after=30 after=90 3
grep -q " eio=0$" <<<"$out" && fail "r5: no read of a failed member's blocks failed: $out"
# md's: Fail for each (raid5_error marks the second faulty too), DegradedArray once
[ "$(grep -c "^Fail .*r5-[12]$" "$tmp/r5.events")" = 2 ] ||
    fail "r5: not a Fail for each failed member: $(cat "$tmp/r5.events")"
[ "$(grep -c "^DegradedArray" "$tmp/r5.events")" = 1 ] ||
    fail "r5: not one DegradedArray: $(cat "$tmp/r5.events")"
for f in "$tmp/r5-0" "$tmp/r5-3"; do
    e=$(mdadm --examine "$f") || fail "mdadm --examine $f"
    grep -q "Array State : A..A " <<<"$e" || fail "mdadm: $f does not record roles 1 and 2 failed: $e"
done
ev0=$(mdadm --examine "$tmp/r5-0" | awk '/Events/ {print $3}')
ev2=$(mdadm --examine "$tmp/r5-2" | awk '/Events/ {print $3}')
[ "$ev2" -lt "$ev0" ] || fail "r5: the member that failed last has events $ev2, the kept $ev0"
out=$("$URAID" serve --run true "$tmp"/r5-{0,1,2,3} 2>&1) && fail "r5: a restart started: $out"
grep -q "role 1,2" <<<"$out" || fail "r5: the restart's refusal does not name roles 1,2: $out"
echo "ok: r5 restart refused: $(grep -m1 'role 1,2' <<<"$out")"
# mdadm --assemble --force takes the freshest of the stale members (role 2)
"$URAID" serve --force --readonly --run "nbdcopy \"\$uri\" '$tmp/r5.got'" \
    "$tmp"/r5-{0,1,2,3} 2>"$tmp/r5.force" || fail "r5: --force --readonly: $(cat "$tmp/r5.force")"
grep -q "r5-2 is stale by .* taken in role 2" "$tmp/r5.force" ||
    fail "r5: --force did not take role 2's member: $(cat "$tmp/r5.force")"
# compare REF GOT UNKNOWN ROWBLOCKS: every 4 KiB block of GOT is REF's,
# but in the rows (ROWBLOCKS blocks each) that hold an UNKNOWN block.
compare() {
    python3 - "$@" <<'PY'
import sys
a, b = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
per = int(sys.argv[4])
rows = {int(x) // per for x in open(sys.argv[3]).read().split()}
bad = [i for i in range(len(a) // 4096)
       if i // per not in rows and a[i * 4096:(i + 1) * 4096] != b[i * 4096:(i + 1) * 4096]]
print("%d of %d rows left out, %d blocks differ" % (len(rows), len(a) // 4096 // per, len(bad)))
sys.exit(1 if bad or len(a) != len(b) else 0)
PY
}

# A stripe a failed write touched may read wrong where it lies on role 1,
# still missing (md's write hole: its parity may have taken the new data,
# role 2 the old): the comparison leaves out those stripes, 192 KiB each.
compare "$tmp/r5.ref" "$tmp/r5.got" "$tmp/r5.unknown" 48 || fail "r5: --force reads differ"
echo "ok: r5 --force --readonly takes role 2 back and reads the reference"

# RAID6 of 5: roles 0, 2 and 4 fail.
run_case r6 6 --level=6 --raid-devices=5 --chunk=64 -- \
    after=30 1 after=70 3 after=110
grep -q " eio=0$" <<<"$out" && fail "r6: no read of a failed member's blocks failed: $out"
e=$(mdadm --examine "$tmp/r6-1") || fail "mdadm --examine r6-1"
grep -q "Array State : \.A\.A\. " <<<"$e" || fail "mdadm: r6-1 does not record roles 0,2,4 failed: $e"
out=$("$URAID" serve --run true "$tmp"/r6-{0,1,2,3,4} 2>&1) && fail "r6: a restart started: $out"
grep -q "role 0,2,4" <<<"$out" || fail "r6: the restart's refusal does not name roles 0,2,4: $out"
echo "ok: r6 restart refused"

# RAID1 of 2: both copies; the last is kept (md's last device), reads go on.
run_case r1 1 --level=1 --raid-devices=2 -- after=30 after=80
[ "$(grep -c "^Fail " "$tmp/r1.events")" = 1 ] ||
    fail "r1: the last copy was failed too: $(cat "$tmp/r1.events")"
# it kept its last copy: the restart starts degraded, and reads the reference
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" '$tmp/r1.got'" "$tmp"/r1-{0,1} \
    2>"$tmp/r1.restart" || fail "r1: the restart: $(cat "$tmp/r1.restart")"
compare "$tmp/r1.ref" "$tmp/r1.got" "$tmp/r1.unknown" 1 || fail "r1: after the restart reads differ"
# RAID10 of 4 (near 2): both copies of the pair of roles 0 and 1.
run_case r10 10 --level=10 --raid-devices=4 --chunk=64 -- after=30 after=80 2 3
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" '$tmp/r10.got'" "$tmp"/r10-{0,1,2,3} \
    2>"$tmp/r10.restart" || fail "r10: the restart: $(cat "$tmp/r10.restart")"
compare "$tmp/r10.ref" "$tmp/r10.got" "$tmp/r10.unknown" 1 || fail "r10: after the restart reads differ"
echo "ok: RAID5, RAID6, RAID1 and RAID10 fail as md does"
