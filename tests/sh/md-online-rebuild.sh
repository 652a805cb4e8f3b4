#!/bin/bash
# md-online-rebuild.sh — `uraid serve` recovers md arrays while it serves
# them, as the kernel's md does.
#   (a) RAID1, RAID10 and RAID5 with a member replaced by a blank one
#       (`uraid add --no-rebuild`): serve rebuilds it in the background
#       (onto a slowed member, sim:) while a client rewrites the whole
#       device with a new pattern, so client writes race the rebuild's
#       window; the superblocks then say the member is in sync.
#   (b) a hot spare: RAID1 with a spare (`uraid add --spare`) and a member
#       that fails under the client's writes (fault:after=N): the spare
#       takes its role and is rebuilt while the writes go on.
#   (c) RAID5 serve stopped (SIGTERM) in the middle of a slowed rebuild:
#       the recovery offset is saved (mdadm shows it), and the next serve
#       resumes from it and finishes.
# After each: `uraid check` finds the copies (parity) agree, the RAID1
# copies are byte-identical, the client reads back the last pattern, and
# `mdadm --examine` accepts every member, all active, one events count, no
# recovery offset left.  --readonly neither rebuilds nor writes, and
# --no-rebuild leaves the member being rebuilt alone.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo mdadm cmp md5sum du

SIZE=20M
# mk NAME LEVEL DISKS OPTS...: make_array, plus a second pattern
# $tmp/NAME.p2 for the client to write while the rebuild runs
mk() {
    make_array "$@"
    head -c "$(stat -c %s "$tmp/$1.data")" /dev/urandom > "$tmp/$1.p2"
}

# replace NAME I: member I becomes a blank file, added back to be rebuilt
replace() {
    local name=$1 victim=$2 rest=() out
    rm "$tmp/$name.$victim"
    truncate -s $SIZE "$tmp/$name.$victim"
    for f in "${files[@]}"; do [ "$f" = "$tmp/$name.$victim" ] || rest+=("$f"); done
    out=$("$URAID" add --no-rebuild "$tmp/$name.$victim" "${rest[@]}" 2>&1) ||
        fail "$name: add: $out"
}

# in_sync FILE: its superblock says active and not being recovered
in_sync() {
    local out
    out=$("$URAID" examine "$1" 2>/dev/null) || return 1
    grep -q "Device Role : Active device" <<<"$out" && ! grep -q "Recovery Offset" <<<"$out"
}

# wait_sync NAME FILE: until FILE is in sync (the server still running)
wait_sync() {
    for _ in $(seq 600); do
        in_sync "$2" && return 0
        kill -0 "$server_pid" 2>/dev/null || fail "$1: server died: $(cat "$tmp/$1.log")"
        sleep 0.05
    done
    fail "$1: $2 never got in sync: $(cat "$tmp/$1.log")"
}


# same_data A B: the data areas of two RAID1 members are byte-identical
same_data() {
    local off used
    off=$(field "$1" "Data Offset")
    used=$(field "$1" "Used Dev Size")
    [ -n "$used" ] || used=$(field "$1" "Avail Dev Size")
    cmp -s -n $((used * 512)) <(tail -c +$((off * 512 + 1)) "$1") \
        <(tail -c +$((off * 512 + 1)) "$2") || fail "data areas of $1 and $2 differ"
}

# (a) rebuilt while a client rewrites everything.
for geometry in "r1 1 2 1" "n2 10 4 2 --layout=n2 --chunk=64" "r5 5 3 1 --chunk=64"; do
    read -r name level disks victim opts <<<"$geometry"
    # shellcheck disable=SC2086
    mk "$name" "$level" "$disks" $opts
    replace "$name" "$victim"
    specs=()
    for f in "${files[@]}"; do
        [ "$f" = "$tmp/$name.$victim" ] && specs+=("sim:40M:$f") || specs+=("$f")
    done
    start_server "$tmp/$name.sock" -v "${specs[@]}" 2> "$tmp/$name.log"
    nbdcopy "$tmp/$name.p2" "nbd+unix:///?socket=$tmp/$name.sock" || fail "$name: rewrite"
    wait_sync "$name" "$tmp/$name.$victim"
    stop_server "$server_pid" || fail "$name: stop: $(cat "$tmp/$name.log")"
    grep -q "recovering .*while serving" "$tmp/$name.log" || fail "$name: no online recovery: $(cat "$tmp/$name.log")"
    grep -q "is rebuilt and in sync" "$tmp/$name.log" || fail "$name: log: $(cat "$tmp/$name.log")"
    verify "$name" "$tmp/$name.p2" "${files[@]}"
    [ "$level" = 1 ] && same_data "${files[@]}"
    echo "ok: $name rebuilt while serving writes"
done

# (b) a hot spare takes the role of a member failing under writes.
mk hs 1 2
truncate -s $SIZE "$tmp/hs.s"
out=$("$URAID" add --spare "$tmp/hs.s" "${files[@]}" 2>&1) || fail "hs: add spare: $out"
start_server "$tmp/hs.sock" -v "$tmp/hs.0" "fault:after=40,mode=write:$tmp/hs.1" "$tmp/hs.s" \
    2> "$tmp/hs.log"
nbdcopy "$tmp/hs.p2" "nbd+unix:///?socket=$tmp/hs.sock" || fail "hs: rewrite"
wait_sync hs "$tmp/hs.s"
stop_server "$server_pid" || fail "hs: stop: $(cat "$tmp/hs.log")"
grep -q "spare .*hs.s takes role 1" "$tmp/hs.log" || fail "hs: log: $(cat "$tmp/hs.log")"
mdadm --examine "$tmp/hs.0" | grep -q "Array State : AA" || fail "hs: the array is not whole"
verify hs "$tmp/hs.p2" "$tmp/hs.0" "$tmp/hs.s"
same_data "$tmp/hs.0" "$tmp/hs.s"
echo "ok: a hot spare took a failed member's role"

# (c) stopped mid-rebuild: the offset is saved, the next serve resumes.
mk st 5 3 --chunk=64
replace st 2
start_server "$tmp/st.sock" -v "$tmp/st.0" "$tmp/st.1" "sim:2M:$tmp/st.2" 2> "$tmp/st.log"
for _ in $(seq 400); do
    [ "$(du -k "$tmp/st.2" | cut -f1)" -ge 3072 ] && break
    sleep 0.05
done
stop_server "$server_pid" || fail "st: stop: $(cat "$tmp/st.log")"
ro=$(field "$tmp/st.2" "Recovery Offset")
used=$(field "$tmp/st.0" "Used Dev Size")
[ -n "$used" ] || used=$(field "$tmp/st.0" "Avail Dev Size")
[ -n "$ro" ] && [ "$ro" -gt 0 ] && [ "$ro" -lt "$used" ] ||
    fail "st: recovery offset '$ro' of $used after SIGTERM: $(cat "$tmp/st.log")"
mdadm --examine "$tmp/st.2" | grep -q "Recovery Offset : $ro sectors" ||
    fail "st: mdadm does not see recovery offset $ro"
# --readonly: neither rebuilds nor writes a byte
md5sum "$tmp"/st.? > "$tmp/sums"
"$URAID" serve --readonly --degraded --run "nbdinfo \"\$uri\" >/dev/null" "$tmp"/st.? 2>/dev/null ||
    fail "st: read-only serve"
md5sum --quiet -c "$tmp/sums" || fail "st: --readonly changed a member"
# --no-rebuild (on copies: it writes the others, and the member left out
# is then recorded as faulty): the member being rebuilt stays untouched
mkdir "$tmp/nr"
cp --sparse=always "$tmp"/st.? "$tmp/nr/"
md5sum "$tmp/nr/st.2" > "$tmp/sums"
"$URAID" serve --no-rebuild --degraded --run "nbdcopy $tmp/st.data \"\$uri\"" "$tmp"/nr/st.? \
    2>/dev/null || fail "st: --no-rebuild serve"
md5sum --quiet -c "$tmp/sums" || fail "st: --no-rebuild wrote the member being rebuilt"
rm -r "$tmp/nr"
start_server "$tmp/st.sock" -v "$tmp"/st.? 2> "$tmp/st.log"
nbdcopy "$tmp/st.p2" "nbd+unix:///?socket=$tmp/st.sock" || fail "st: rewrite"
wait_sync st "$tmp/st.2"
stop_server "$server_pid" || fail "st: stop: $(cat "$tmp/st.log")"
grep -q "from byte $((ro * 512))" "$tmp/st.log" || fail "st: did not resume at $ro: $(cat "$tmp/st.log")"
verify st "$tmp/st.p2" "$tmp"/st.?
echo "ok: an interrupted online rebuild resumes"
echo PASS
