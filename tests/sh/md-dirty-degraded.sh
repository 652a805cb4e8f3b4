#!/bin/bash
# md-dirty-degraded.sh — md's write hole.  A RAID5/6 that a crash left
# dirty (marked active) while it was missing a member may hold stripes
# half-written at the crash, whose blocks on the missing member nothing can
# recompute; md refuses to start such an array unless forced.  So must
# uraid: a plain writable start fails naming the write hole and changes no
# byte, --readonly serves it with a warning and changes no byte, --force
# starts it (and resyncs).  A dirty degraded RAID1 has no write hole: it
# starts as md starts it.
#
# The state is made as a crash makes it: `uraid serve --degraded` without
# the last member(s) (recorded as failed at the first write), data written
# and flushed, then the server killed with SIGKILL.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo sha256sum

SIZE=16M

# crash NAME LEVEL DISKS KEEP OPTS...: an array of DISKS files (md-lib's
# make_array: filled whole) whose first KEEP were then served degraded,
# written at the start ($tmp/NAME.new) and killed.
crash() {
    local name=$1 level=$2 disks=$3 keep=$4 sock
    shift 4
    make_array "$name" "$level" "$disks" "$@"
    sock=$tmp/$name.sock
    start_server "$sock" --degraded "${files[@]:0:$keep}" 2>/dev/null
    head -c 4M /dev/urandom > "$tmp/$name.new"
    nbdcopy --flush "$tmp/$name.new" "nbd+unix:///?socket=$sock" || fail "$name: write"
    kill -KILL "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    rm -f "$sock"
    "$URAID" examine "${files[0]}" 2>/dev/null | grep -q "State : active" ||
        fail "$name: not marked active after the crash"
}

sums() { sha256sum "${files[@]}"; }

for geometry in "5 3 1 raid5" "6 4 2 raid6"; do
    read -r level disks gone lname <<<"$geometry"
    name=r$level
    crash "$name" "$level" "$disks" $((disks - gone)) --chunk=64
    before=$(sums)

    # writable: refused, naming the write hole, nothing written
    rc=0
    out=$("$URAID" serve --run true "${files[@]}" 2>&1) || rc=$?
    [ "$rc" != 0 ] || fail "$name: a dirty degraded $lname started writable: $out"
    grep -q "cannot start a dirty degraded $lname" <<<"$out" || fail "$name: $out"
    grep -q "write hole" <<<"$out" || fail "$name: the refusal does not name the write hole: $out"
    grep -q -- "--force" <<<"$out" || fail "$name: the refusal does not say --force: $out"
    [ "$(sums)" = "$before" ] || fail "$name: the refused start changed a member"

    # read-only: served, with the warning, nothing written
    out=$("$URAID" serve --readonly --run "nbdcopy \"\$uri\" $tmp/out" "${files[@]}" 2>&1) ||
        fail "$name: --readonly: $out"
    grep -q "write hole" <<<"$out" || fail "$name: --readonly gave no warning: $out"
    [ "$(sums)" = "$before" ] || fail "$name: --readonly changed a member"
    cmp -s -n 4194304 "$tmp/out" "$tmp/$name.new" || fail "$name: --readonly read other data"

    # forced: it starts, and stops clean
    out=$("$URAID" serve --force --run "nbdcopy \"\$uri\" $tmp/out" "${files[@]}" 2>&1) ||
        fail "$name: --force: $out"
    grep -q "starting anyway" <<<"$out" || fail "$name: --force gave no warning: $out"
    cmp -s -n 4194304 "$tmp/out" "$tmp/$name.new" || fail "$name: --force read other data"
    "$URAID" examine "${files[0]}" 2>/dev/null | grep -q "State : clean" ||
        fail "$name: not clean after a forced start and a clean stop"
    rm -f "$tmp/out"
done

# RAID1: no write hole, a writable start resyncs what is there
crash r1 1 2 1
out=$("$URAID" serve --run "nbdcopy \"\$uri\" $tmp/out" "${files[@]}" 2>&1) ||
    fail "r1: a dirty degraded raid1 did not start: $out"
grep -q "write hole" <<<"$out" && fail "r1: warned of a write hole: $out"
cmp -s -n 4194304 "$tmp/out" "$tmp/r1.new" || fail "r1: read other data"
"$URAID" examine "${files[0]}" 2>/dev/null | grep -q "State : clean" || fail "r1: not clean"
echo "PASS"
