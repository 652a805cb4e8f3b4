#!/bin/bash
# md-force.sh — a writable `serve --force` of an array that cannot start
# from its fresh members takes back the stale ones as mdadm --assemble
# --force does, writing their superblocks (docs/md.md, "Forced
# assembly"), and serves the array writable.
#   - RAID5 x4: role 3 failed by `uraid fail`, new data written, role 0's
#     image saved, the same data written again, role 0's old image put
#     back: 2 of 4 in sync.  A plain start refuses naming --force; with
#     it, role 0 is taken back ("forcing event count in X(0) from A up to
#     B"), only role 0's member is written, the data reads as written, the
#     events agree (mdadm --examine), and a write and a restart without
#     --force work.
#   - RAID6 x4: roles 2 and 3 failed, role 0 stale: the same.
#   - RAID1 x2: role 0 stale, the fresh member under recovery (`uraid add
#     --no-rebuild`): role 0 is taken back, and is the superblock that now
#     records the new member in its role; the recovery runs from it.
#   - failed: a RAID5 x4 whose roles 1 and 2 failed their writes (md's
#     MD_BROKEN): role 2's member, one event behind and recorded faulty,
#     is taken back with its events kept (mdadm's margin), role 0's
#     superblock (the one the array is based on) records it in role 2
#     again and the array clean, no other member is written, and a restart
#     without --force, members given in reverse order, reads what the
#     forced start read (the superblock based on is role 0's, not the
#     first given).
#   - refused: the RAID5 with roles 1 and 3 not given, so even its stale
#     member cannot start it: the refusal names the roles, and no byte
#     changes.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo mdadm sha256sum

SIZE=8M
sums() { sha256sum "$@"; }
events() { mdadm --examine "$1" | sed -n 's/^ *Events : //p'; }

# stale NAME LEVEL DISKS FAILED...: make_array NAME, fail the roles FAILED
# through the control socket, write new data ($tmp/NAME.p2), save role 0,
# write the same again, put role 0's saved image back.
stale() {
    local name=$1 level=$2 disks=$3 sock ctl r
    shift 3
    make_array "$name" "$level" "$disks" --chunk=64
    sock=$tmp/$name.sock ctl=$tmp/$name.ctl
    head -c "$(stat -c %s "$tmp/$name.data")" /dev/urandom > "$tmp/$name.p2"
    start_server "$sock" --control "$ctl" "${files[@]}" 2>/dev/null
    for r in "$@"; do
        "$URAID" fail "$ctl" "${files[$r]}" >/dev/null || fail "$name: uraid fail role $r"
    done
    nbdcopy "$tmp/$name.p2" "nbd+unix:///?socket=$sock" || fail "$name: write p2"
    stop_server "$server_pid"
    cp "${files[0]}" "$tmp/$name.old0"
    "$URAID" serve --run "nbdcopy $tmp/$name.p2 \"\$uri\"" "${files[@]}" 2>/dev/null ||
        fail "$name: the second write"
    cp "$tmp/$name.old0" "${files[0]}"
}

# forced NAME FRESH...: the plain start refused and the forced one reading
# p2, writing role 0's member only (FRESH... are the indexes of the members
# in sync, whose events role 0 must then have)
forced() {
    local name=$1 out before e0 want i
    shift
    before=$(sums "${files[@]}")
    out=$("$URAID" serve --run true "${files[@]}" 2>&1) && fail "$name: started without --force"
    grep -q "cannot run: .*--force.* takes back" <<<"$out" || fail "$name: plain start: $out"
    [ "$(sums "${files[@]}")" = "$before" ] || fail "$name: the refused start changed a member"
    e0=$(events "${files[0]}") want=$(events "${files[$1]}")
    "$URAID" serve --force --run "nbdcopy \"\$uri\" $tmp/$name.got" "${files[@]}" \
        2> "$tmp/$name.log" || fail "$name: --force: $(cat "$tmp/$name.log")"
    grep -q "forcing event count in ${files[0]}(0) from $e0 up to $want" "$tmp/$name.log" ||
        fail "$name: no mdadm-style message for role 0: $(cat "$tmp/$name.log")"
    [ "$(grep -c "forcing event count" "$tmp/$name.log")" = 1 ] ||
        fail "$name: more than role 0 forced: $(cat "$tmp/$name.log")"
    cmp -s "$tmp/$name.got" "$tmp/$name.p2" || fail "$name: the forced array reads other data"
    for i in "$@"; do
        [ "$(events "${files[$i]}")" = "$(events "${files[0]}")" ] ||
            fail "$name: events of role 0 $(events "${files[0]}"), of member $i $(events "${files[$i]}")"
    done
    # only role 0's member was written (mdadm's chosen drive, it needs no other change)
    diff <(sed 1d <<<"$before") <(sums "${files[@]:1}") >/dev/null ||
        fail "$name: --force wrote a member other than role 0's"
    # writable from now on, without --force
    head -c "$(stat -c %s "$tmp/$name.p2")" /dev/urandom > "$tmp/$name.p3"
    "$URAID" serve --run "nbdcopy $tmp/$name.p3 \"\$uri\"" "${files[@]}" 2>"$tmp/$name.log" ||
        fail "$name: a write after --force, without it: $(cat "$tmp/$name.log")"
    "$URAID" serve --readonly --run "nbdcopy \"\$uri\" $tmp/$name.got" "${files[@]}" 2>/dev/null ||
        fail "$name: the restart"
    cmp -s "$tmp/$name.got" "$tmp/$name.p3" || fail "$name: the restart reads other data"
}

stale r5 5 4 3
forced r5 1 2
echo "ok: raid5: role 0 taken back, written alone, p2 read, writable after"

stale r6 6 4 3 2
forced r6 1
echo "ok: raid6: the same with two roles failed"

# failed: roles 1 and 2 fail their writes under a copy
make_array rf 5 4 --chunk=64
rf=("${files[@]}")
"$URAID" serve --run "nbdcopy $tmp/rf.data \"\$uri\"" "${rf[0]}" "fault:after=20,mode=write:${rf[1]}" \
    "fault:after=50,mode=write:${rf[2]}" "${rf[3]}" >/dev/null 2>&1 &&
    fail "rf: the copy onto the failing array succeeded"
mdadm --examine "${rf[0]}" | grep -q "Array State : A..A " || fail "rf: roles 1, 2 not failed"
before=$(sums "${rf[@]}")
"$URAID" serve --force --run "nbdcopy \"\$uri\" $tmp/rf.got" "${rf[@]}" 2> "$tmp/rf.log" ||
    fail "rf: --force: $(cat "$tmp/rf.log")"
grep -q "forcing event count" "$tmp/rf.log" && fail "rf: raised the events of a member one behind"
grep -q "rf.2: slot 2 of ${rf[0]}'s superblock records it in role 2 now (was faulty)" "$tmp/rf.log" ||
    fail "rf: role 2 not restored in role 0's superblock: $(cat "$tmp/rf.log")"
grep -q "marking the array clean in ${rf[0]}'s superblock" "$tmp/rf.log" ||
    fail "rf: not marked clean: $(cat "$tmp/rf.log")"
diff <(sed 1d <<<"$before") <(sums "${rf[@]:1}") >/dev/null || fail "rf: --force wrote a member other than role 0's"
mdadm --examine "${rf[0]}" | grep -q "Array State : A.AA " || fail "rf: $(mdadm --examine "${rf[0]}")"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" $tmp/rf.again" "${rf[3]}" "${rf[2]}" "${rf[1]}" \
    "${rf[0]}" 2>"$tmp/rf.log" || fail "rf: restart without --force: $(cat "$tmp/rf.log")"
cmp -s "$tmp/rf.got" "$tmp/rf.again" || fail "rf: the restart reads other data than the forced start"
echo "ok: failed raid5: role 2 back with its events, restored and marked clean in role 0's superblock alone; restarts"

# refused: the RAID5 again, roles 1 and 3 not given (given, the failed role 3
# would be taken too, as mdadm takes the next freshest while it has too few)
stale r5b 5 4 3
sub=("${files[0]}" "${files[2]}")
before=$(sums "${sub[@]}")
out=$("$URAID" serve --force --degraded --run true "${sub[@]}" 2>&1) &&
    fail "r5b: started from 1 of 4 in sync and a stale member"
grep -q "raid5 cannot run: 2 of 4 members in sync (missing or failed role 1,3), even with the stale members" <<<"$out" ||
    fail "r5b: the refusal: $out"
[ "$(sums "${sub[@]}")" = "$before" ] || fail "r5b: the refused --force changed a member"
echo "ok: too few even with the stale member: refused, naming roles 1,3, no byte changed"

# RAID1: role 0 stale, the only fresh member under recovery
make_array r1 1 2
cp "${files[0]}" "$tmp/r1.old0"
"$URAID" serve --run "nbdcopy $tmp/r1.data \"\$uri\"" "${files[@]}" 2>/dev/null ||
    fail "r1: the second write"
truncate -s "$SIZE" "$tmp/r1.new"
"$URAID" add --no-rebuild "$tmp/r1.new" "${files[0]}" >/dev/null 2>&1 || fail "r1: add --no-rebuild"
cp "$tmp/r1.old0" "${files[0]}"
r1=("${files[0]}" "$tmp/r1.new")
out=$("$URAID" serve --run true "${r1[@]}" 2>&1) && fail "r1: started without --force"
e0=$(events "${files[0]}") want=$(events "$tmp/r1.new")
"$URAID" serve --force --run "nbdcopy \"\$uri\" $tmp/r1.got" "${r1[@]}" 2> "$tmp/r1.log" ||
    fail "r1: --force: $(cat "$tmp/r1.log")"
grep -q "forcing event count in ${files[0]}(0) from $e0 up to $want" "$tmp/r1.log" ||
    fail "r1: no mdadm-style message: $(cat "$tmp/r1.log")"
grep -q "r1.new: slot 2 of ${files[0]}'s superblock records it in role 1 now" "$tmp/r1.log" ||
    fail "r1: role 0's superblock does not take the new member: $(cat "$tmp/r1.log")"
cmp -s "$tmp/r1.got" "$tmp/r1.data" || fail "r1: the forced array reads other data"
# the online recovery may not have finished when the run ended: finish it
"$URAID" rebuild "${r1[@]}" >/dev/null 2>&1 || fail "r1: rebuild after --force"
verify r1 "$tmp/r1.data" "${r1[@]}"
echo "ok: raid1: role 0 taken back over a member under recovery, which then recovers from it"
