#!/bin/bash
# md-replace.sh — md's hot replacement (mdadm --replace OLD --with NEW):
#   (a) RAID1, RAID10, RAID5 and RAID6: `uraid replace --no-copy` records
#       NEW as OLD's replacement (mdadm --examine: "Replacement device"),
#       then a writable serve builds it from OLD, slowed (--sync-speed-max),
#       while a client rewrites the whole device; at the end OLD is faulty
#       in the others' role tables and NEW holds its role: `uraid check`
#       finds the copies agree, the data reads back (sha256) and mdadm
#       --examine accepts NEW and the rest (all active, one events count);
#       `uraid detail` showed NEW as "spare rebuilding" meanwhile; RAID10's
#       is begun on the running serve (`uraid replace CONTROL OLD --with
#       NEW`), and a second one of its faulty OLD is refused;
#   (b) a serve killed (SIGKILL) part-way: NEW's recovery offset is saved
#       (mdadm shows it) and `uraid rebuild` continues from there;
#   (c) `serve --readonly` reads an array with a replacement from OLD and
#       writes no byte;
#   (d) refusals that name what is wrong and change no byte (sha256): OLD
#       marked faulty, NEW too small, a second replacement.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo mdadm sha256sum

SIZE=8M
uri() { echo "nbd+unix:///?socket=$1"; }
sums() { sha256sum "$@" > "$tmp/sums"; }
unchanged() { sha256sum --quiet -c "$tmp/sums" || fail "$1: a member changed"; }

# role_of FILE: mdadm --examine's device role line
role_of() { mdadm --examine "$1" 2>/dev/null | sed -n 's/ *Device Role : //p'; }

# (a) each level, under a writer
for geometry in "r1 1 2 0" "r10 10 4 1 --layout=n2 --chunk=64" "r5 5 3 2 --chunk=64" \
    "r6 6 4 1 --chunk=64"; do
    read -r name level disks old opts <<<"$geometry"
    # shellcheck disable=SC2086
    make_array "$name" "$level" "$disks" $opts
    head -c "$(stat -c %s "$tmp/$name.data")" /dev/urandom > "$tmp/$name.p2"
    new=$tmp/$name.new
    truncate -s $SIZE "$new"
    ctl=$tmp/$name.ctl
    if [ "$name" = r10 ]; then # the hot form, on the running serve
        start_server "$tmp/$name.sock" -v --sync-speed-min 4M --sync-speed-max 4M \
            --control "$ctl" "${files[@]}" 2> "$tmp/$name.log"
        out=$("$URAID" replace "$ctl" "${files[$old]}" --with "$new" 2>&1) ||
            fail "$name: hot replace: $out"
    else
        out=$("$URAID" replace --no-copy "${files[$old]}" --with "$new" "${files[@]}" 2>&1) ||
            fail "$name: replace: $out"
        [ "$(role_of "$new")" = "Replacement device $old" ] ||
            fail "$name: mdadm --examine NEW: '$(role_of "$new")'"
        start_server "$tmp/$name.sock" -v --sync-speed-min 4M --sync-speed-max 4M \
            --control "$ctl" "${files[@]}" "$new" 2> "$tmp/$name.log"
    fi
    detail=$("$URAID" detail "$ctl" 2>&1) || fail "$name: detail: $detail"
    grep -q "spare rebuilding *$new" <<<"$detail" || fail "$name: detail: $detail"
    nbdcopy "$tmp/$name.p2" "$(uri "$tmp/$name.sock")" || fail "$name: rewrite"
    wait_log "$tmp/$name.log" "replaced ${files[$old]}" || fail "$name: not replaced: $(cat "$tmp/$name.log")"
    if [ "$name" = r10 ]; then # OLD is faulty now: refused, naming why
        truncate -s $SIZE "$tmp/r10.x"
        sums "$tmp/r10.x"
        out=$("$URAID" replace "$ctl" "${files[$old]}" --with "$tmp/r10.x" 2>&1) &&
            fail "$name: hot replace of a faulty OLD succeeded"
        grep -q "${files[$old]} is not an in-sync member" <<<"$out" || fail "$name: $out"
        unchanged "$name: hot replace of a faulty OLD"
    fi
    stop_server "$server_pid" || fail "$name: stop"
    rest=("$new")
    for i in "${!files[@]}"; do [ "$i" = "$old" ] || rest+=("${files[$i]}"); done
    verify "$name" "$tmp/$name.p2" "${rest[@]}"
    # OLD's slot is faulty in the survivors' role table
    python3 - "$new" "${files[$old]}" <<'PY' || fail "$name: OLD's slot is not faulty in NEW's table"
import struct, sys
def sb(path):
    with open(path, "rb") as f:
        f.seek(4096)
        return f.read(4096)
new, old = sb(sys.argv[1]), sb(sys.argv[2])
slot = struct.unpack_from("<I", old, 160)[0]  # dev_number
max_dev = struct.unpack_from("<I", new, 220)[0]
assert struct.unpack_from("<H", new, 256 + 2 * slot)[0] == 0xfffe
PY
done

# (b) killed part-way, then continued
name=k5
make_array "$name" 5 3 --chunk=64
new=$tmp/$name.new
truncate -s $SIZE "$new"
"$URAID" replace --no-copy "${files[0]}" --with "$new" "${files[@]}" >/dev/null 2>&1 ||
    fail "$name: replace"
start_server "$tmp/$name.sock" -v --sync-speed-min 1M --sync-speed-max 1M "${files[@]}" "$new" 2> "$tmp/$name.log"
for _ in $(seq 300); do
    off=$(field "$new" "Recovery Offset")
    [ -n "$off" ] && [ "$off" -gt 0 ] && break
    sleep 0.05
done
[ -n "$off" ] && [ "$off" -gt 0 ] || fail "$name: no recovery offset saved: $(cat "$tmp/$name.log")"
kill -KILL "$server_pid"
wait "$server_pid" 2>/dev/null || true
off=$(field "$new" "Recovery Offset") # what the kill left
[ -n "$off" ] && [ "$off" -gt 0 ] || fail "$name: killed too late: the copy ended"
mdadm --examine "$new" | grep -q "Recovery Offset : $off sectors" || fail "$name: mdadm: no offset"
out=$("$URAID" rebuild -v "${files[@]}" "$new" 2>&1) || fail "$name: continue: $out"
grep -q "with $new from byte $((off * 512))" <<<"$out" || fail "$name: not continued from $off: $out"
verify "$name" "$tmp/$name.data" "$new" "${files[1]}" "${files[2]}"

# (c) read-only: read from OLD, no byte written
name=ro
make_array "$name" 1 2
new=$tmp/$name.new
truncate -s $SIZE "$new"
"$URAID" replace --no-copy "${files[1]}" --with "$new" "${files[@]}" >/dev/null 2>&1 ||
    fail "$name: replace"
sums "${files[@]}" "$new"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" - | sha256sum > $tmp/ro.sum" "${files[@]}" \
    "$new" 2>/dev/null || fail "$name: read-only serve"
[ "$(cut -d' ' -f1 "$tmp/ro.sum")" = "$(sha256sum < "$tmp/$name.data" | cut -d' ' -f1)" ] ||
    fail "$name: read-only data differs"
unchanged "$name: read-only"

# (d) refusals, nothing changed: OLD marked faulty (r6's replaced member),
# NEW too small, a second replacement for the role (ro's)
new=$tmp/bad.new
truncate -s $SIZE "$new"
truncate -s 4M "$tmp/small"
# refuse_sha WANT ARGS...: `uraid replace ARGS` fails saying WANT, no byte changed
refuse_sha() {
    local want=$1 rc=0 out
    shift
    sums "$tmp"/r6.* "$tmp"/ro.[0-9] "$tmp"/ro.new "$new" "$tmp/small"
    out=$("$URAID" replace "$@" 2>&1) || rc=$?
    [ "$rc" != 0 ] || fail "replace $* succeeded"
    grep -q -- "$want" <<<"$out" || fail "replace $*: wanted '$want', got: $out"
    unchanged "replace $*"
}
refuse_sha "$tmp/r6.1 is marked faulty" "$tmp/r6.1" --with "$new" "$tmp"/r6.[0-3] "$tmp/r6.new"
refuse_sha "$tmp/small is too small: 4 MiB, and md/uraid needs 8 MiB" "$tmp/r6.0" \
    --with "$tmp/small" "$tmp"/r6.[023] "$tmp/r6.new"
refuse_sha "$tmp/ro.new: md superblock is a replacement being built for role 1" "$tmp/ro.0" \
    --with "$new" "$tmp/ro.0" "$tmp/ro.1" "$tmp/ro.new"
echo "OK"
