#!/bin/bash
# md-control.sh — managing a running `uraid serve` through its control
# socket (--control), as mdadm --detail / --fail / --remove / --add do on
# a live array:
#   RAID1 x2, RAID5 x3 and a v1.0 RAID1 x2: `uraid detail` (text and
#   --json) shows the version and every member in sync (the member added
#   later gets the array's version); a client writes; `uraid fail` makes one faulty (detail
#   and the survivors' superblocks say so) and I/O goes on; `uraid remove`
#   closes it (its file lock is free again); `uraid add` of a blank file
#   rebuilds it while a client rewrites everything; after the server stops,
#   `uraid check` agrees, the data reads back, and mdadm accepts every
#   member with one events count.
#   Refusals, each a clear error with the server still serving and the
#   members unchanged: fail of the last copy (RAID1) or of a second member
#   (RAID5), remove of an active member, add of a file too small or of a
#   member of another array, malformed and unknown requests, a second
#   serve on the same control path.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo mdadm cmp md5sum python3 flock

SIZE=20M

# ctl NAME: the control socket of array NAME
ctl() { echo "$tmp/$1.ctl"; }

# detail NAME: the text form, or fail
detail() { "$URAID" detail "$(ctl "$1")" || fail "$1: detail failed"; }

# jfield NAME PYEXPR: a value from `uraid detail --json` (j is the reply)
jfield() {
    "$URAID" detail --json "$(ctl "$1")" > "$tmp/j" || fail "$1: detail --json"
    python3 -m json.tool "$tmp/j" > /dev/null || fail "$1: detail --json is not JSON: $(cat "$tmp/j")"
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$tmp/j"
}

# member_state NAME FILE: the state detail gives the member FILE (or a
# wrapper spec around it: sim:...FILE)
member_state() {
    jfield "$1" "' '.join(m['state'] for m in j['arrays'][0]['members'] if m['device'].endswith('$2'))"
}

# refused NAME WHAT PATTERN CMD...: CMD fails with PATTERN on stderr, the
# members hash the same as before, and the server still serves
refused() {
    local name=$1 what=$2 pat=$3 out
    shift 3
    md5sum "${files[@]}" > "$tmp/sums"
    if out=$("$@" 2>&1); then fail "$name: $what was accepted: $out"; fi
    grep -q "$pat" <<<"$out" || fail "$name: $what: unclear error: $out"
    md5sum --quiet -c "$tmp/sums" || fail "$name: $what changed a member"
    nbdinfo --size "nbd+unix:///?socket=$tmp/$name.sock" > /dev/null ||
        fail "$name: not serving after $what"
}

# request NAME TEXT: send TEXT as it is, print the reply
request() {
    python3 - "$(ctl "$1")" "$2" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode())
s.shutdown(socket.SHUT_WR)
print(s.makefile().read())
EOF
}

# run NAME LEVEL DISKS VICTIM OPTS...: the whole story on one array
run() {
    local name=$1 level=$2 disks=$3 victim=$4 out uri state
    shift 4
    make_array "$name" "$level" "$disks" "$@"
    for p in p2 p3; do head -c "$(stat -c %s "$tmp/$name.data")" /dev/urandom > "$tmp/$name.$p"; done
    uri="nbd+unix:///?socket=$tmp/$name.sock"
    local vf="$tmp/$name.$victim" survivor="$tmp/$name.0"
    [ "$victim" = 0 ] && survivor="$tmp/$name.1"
    start_server "$tmp/$name.sock" --control "$(ctl "$name")" "${files[@]}" 2> "$tmp/$name.log"
    [ "$(stat -c %a "$(ctl "$name")")" = 600 ] || fail "$name: control socket mode"

    # detail: all in sync, the superblocks' version
    local version=1.2 o
    for o in "$@"; do case $o in --metadata=*) version=${o#--metadata=} ;; esac; done
    out=$(detail "$name")
    grep -q "State : clean$" <<<"$out" || fail "$name: state: $out"
    grep -q "Version : $version$" <<<"$out" || fail "$name: version: $out"
    [ "$(grep -c "active sync" <<<"$out")" = "$disks" ] || fail "$name: members: $out"
    [ "$(jfield "$name" "j['arrays'][0]['level'], j['arrays'][0]['raid_disks'], \
        j['arrays'][0]['degraded'], j['export']['luks']")" = "raid$level $disks False 0" ] ||
        fail "$name: json: $(cat "$tmp/j")"
    [ "$(jfield "$name" "j['export']['size']")" = "$(nbdinfo --size "$uri")" ] ||
        fail "$name: export size"

    nbdcopy "$tmp/$name.data" "$uri" || fail "$name: write"
    refused "$name" "remove of an active member" "fail it first" \
        "$URAID" remove "$(ctl "$name")" "$vf"

    # fail: faulty in detail and in the survivors' superblocks; I/O goes on
    out=$("$URAID" fail "$(ctl "$name")" "$vf" 2>&1) || fail "$name: fail: $out"
    [ "$(member_state "$name" "$vf")" = faulty ] || fail "$name: after fail: $(detail "$name")"
    state=$(jfield "$name" "j['arrays'][0]['state']")
    [ "$state" = "active, degraded" ] || fail "$name: state after fail: $state"
    out=$(mdadm --examine "$survivor")
    grep -q "Array State : .*\." <<<"$out" || fail "$name: survivor does not record the failure: $out"
    if [ "$level" = 1 ]; then
        refused "$name" "fail of the last copy" "cannot lose it" \
            "$URAID" fail "$(ctl "$name")" "$survivor"
    else
        refused "$name" "fail of a second member" "cannot lose it" \
            "$URAID" fail "$(ctl "$name")" "$survivor"
    fi
    nbdcopy "$tmp/$name.p2" "$uri" || fail "$name: write while degraded"

    # remove: gone from detail, its file free
    out=$("$URAID" remove "$(ctl "$name")" "$vf" 2>&1) || fail "$name: remove: $out"
    [ -z "$(member_state "$name" "$vf")" ] || fail "$name: still listed: $(detail "$name")"
    flock -n "$vf" true || fail "$name: the removed member is still held"

    # refused adds
    truncate -s 4M "$tmp/$name.small"
    refused "$name" "add of a small file" "too small" \
        "$URAID" add "$(ctl "$name")" "$tmp/$name.small"
    refused "$name" "add of another array's member" "another array" \
        "$URAID" add "$(ctl "$name")" "$tmp/other.0"

    # hot add of a blank (slowed) file: rebuilt while a client rewrites
    rm "$vf"
    truncate -s $SIZE "$vf"
    out=$("$URAID" add "$(ctl "$name")" "sim:8M:$vf" 2>&1) || fail "$name: add: $out"
    out=$(detail "$name")
    grep -q "spare rebuilding *sim:.*$vf" <<<"$out" || fail "$name: not rebuilding: $out"
    grep -q "Rebuild Status : .*% complete" <<<"$out" || fail "$name: no rebuild status: $out"
    nbdcopy "$tmp/$name.p3" "$uri" || fail "$name: rewrite during the rebuild"
    for _ in $(seq 600); do
        state=$(jfield "$name" "j['arrays'][0]['state']")
        [ "$state" = active ] && break
        sleep 0.05
    done
    [ "$state" = active ] || fail "$name: never whole again: $state: $(cat "$tmp/$name.log")"
    [ "$(member_state "$name" "$vf")" = "active sync" ] || fail "$name: $(detail "$name")"
    stop_server "$server_pid" || fail "$name: stop: $(cat "$tmp/$name.log")"
    [ ! -e "$(ctl "$name")" ] || fail "$name: control socket left behind"

    verify "$name" "$tmp/$name.p3" "${files[@]}"
    mdadm --examine "$vf" | grep -q "Version : $version$" ||
        fail "$name: the added member is not v$version: $(mdadm --examine "$vf" | grep Version)"
    echo "ok: $name: detail, fail, remove, hot add"
}

# Another array, whose member `add` must refuse.
make_array other 1 2
other_files=("${files[@]}")

for geometry in "r1 1 2 0" "r5 5 3 2 --chunk=64" "v10 1 2 0 --metadata=1.0"; do
    read -r name level disks victim opts <<<"$geometry"
    # shellcheck disable=SC2086
    run "$name" "$level" "$disks" "$victim" $opts
done

# Malformed and unknown requests, and a second serve on a live control path.
files=("${other_files[@]}")
start_server "$tmp/other.sock" --control "$(ctl other)" "${files[@]}" 2> "$tmp/other.log"
for req in 'garbage' '{"op":' '[1,2]' '{"op":7}' '{"op":"frobnicate"}' '{"op":"fail"}' \
    '{"op":"detail"} trailing'; do
    out=$(request other "$req")
    grep -q '"ok":false' <<<"$out" || fail "request '$req' got: $out"
    grep -q '"error":"[a-z]' <<<"$out" || fail "request '$req': no error text: $out"
done
out=$(request other "{\"op\":\"detail\",\"x\":\"$(head -c 100000 /dev/zero | tr '\0' a)\"}")
grep -q '"ok":false,"error":"request too long' <<<"$out" || fail "an oversized request got: $out"
refused other "a second serve on a live control path" "another server" \
    "$URAID" serve -f --socket "$tmp/other2.sock" --control "$(ctl other)" "$tmp/r1.0" "$tmp/r1.1"
[ "$(jfield other "j['ok']")" = True ] || fail "the control socket stopped answering"
stop_server "$server_pid" || fail "other: stop: $(cat "$tmp/other.log")"
echo PASS
