#!/bin/bash
# md-counters.sh — the per-member I/O counters of `uraid detail --json`
# against what fio did through NBD, as the layout spreads it:
#   RAID1 x2: fio writes W bytes; each mirror took W, the array W; fio
#   reads R bytes at random; the mirrors' reads add up to R;
#   RAID5 x3 (64 KiB chunks): fio writes W in whole stripes; each member
#   took W/2 (its data chunks and its share of parity), 1.5 W in all; reads
#   of R add up to R across the members;
#   all within 1%, no errors, nothing in flight once fio ended;
#   and `uraid detail --watch --interval 1` in a terminal (tmux) redraws
#   one screen with one line per member.
. "$(dirname "$0")/md-lib.sh"
requires fio python3 tmux

SIZE=40M
W=$((32 << 20)) R=$((8 << 20))
fio --enghelp 2>/dev/null | grep -qw nbd || { echo "SKIP: fio has no nbd engine"; exit 77; }

# jio NAME PYEXPR: evaluate PYEXPR with a (the array), m (its members in
# roles) and W, R
jio() {
    "$URAID" detail --json "$tmp/$1.ctl" > "$tmp/j" || fail "$1: detail --json"
    python3 - "$tmp/j" "$W" "$R" "$2" <<'EOF2'
import json, sys
a = json.load(open(sys.argv[1]))["arrays"][0]
W, R = int(sys.argv[2]), int(sys.argv[3])
m = [x["io"] for x in a["members"] if "io" in x]
near = lambda got, want: abs(got - want) <= want / 100
print(eval(sys.argv[4]))
EOF2
}

# run NAME LEVEL DISKS WRITE_EXPR CREATE_OPTS...: the story on one array
run() {
    local name=$1 level=$2 disks=$3 wexpr=$4 uri base
    shift 4
    files=()
    for i in $(seq 0 $((disks - 1))); do
        truncate -s "$SIZE" "$tmp/$name.$i"
        files+=("$tmp/$name.$i")
    done
    "$URAID" create --level="$level" "$@" "${files[@]}" > /dev/null 2>&1 || fail "$name: create"
    uri="nbd+unix:///?socket=$tmp/$name.sock"
    start_server "$tmp/$name.sock" --control "$tmp/$name.ctl" "${files[@]}" 2> "$tmp/$name.log"
    fio --name=w --ioengine=nbd --uri="$uri" --rw=write --bs=128k --size="$W" --iodepth=8 \
        > "$tmp/fio.log" 2>&1 || fail "$name: fio write: $(cat "$tmp/fio.log")"
    [ "$(jio "$name" "len(m) == $disks and $wexpr")" = True ] ||
        fail "$name: write bytes: $(cat "$tmp/j")"
    [ "$(jio "$name" "near(a['io']['write_bytes'], W)")" = True ] ||
        fail "$name: the array's write bytes: $(cat "$tmp/j")"
    base=$(jio "$name" "sum(x['read_bytes'] for x in m)")
    fio --name=r --ioengine=nbd --uri="$uri" --rw=randread --bs=4k --size="$R" --iodepth=16 \
        > "$tmp/fio.log" 2>&1 || fail "$name: fio read: $(cat "$tmp/fio.log")"
    [ "$(jio "$name" "near(sum(x['read_bytes'] for x in m) - $base, R)")" = True ] ||
        fail "$name: read bytes (before: $base): $(cat "$tmp/j")"
    [ "$(jio "$name" "all(x['errors'] == 0 and x['inflight'] == 0 for x in m) and len(m) == $disks")" = True ] ||
        fail "$name: errors or in flight: $(cat "$tmp/j")"
    [ "$(jio "$name" "all(x['latency_us']['write']['p99'] > 0 and sum(x['latency_hist']['write']) == x['writes'] for x in m)")" = True ] ||
        fail "$name: latency histogram: $(cat "$tmp/j")"
}

run r1 1 2 "all(near(x['write_bytes'], W) for x in m)"
run r5 5 3 "all(near(x['write_bytes'], W // 2) for x in m) and near(sum(x['write_bytes'] for x in m), W * 3 // 2)" --chunk=64K

# the watch in a terminal: one screen, one line per member
sock=tmux-$$
tmux -L "$sock" new-session -d -x 160 -y 40 "$URAID detail --watch --interval 1 $tmp/r5.ctl; sleep 30"
cleanup_hooks+=("tmux -L $sock kill-server")
sleep 3.5
tmux -L "$sock" capture-pane -p > "$tmp/screen"
tmux -L "$sock" kill-server
[ "$(grep -c '^  .*r5\.[0-9]' "$tmp/screen")" = 3 ] || fail "watch: not one line per member: $(cat "$tmp/screen")"
[ "$(grep -c '^device ' "$tmp/screen")" = 1 ] || fail "watch: not redrawn in place: $(cat "$tmp/screen")"
grep -q '^md/' "$tmp/screen" || fail "watch: no array line: $(cat "$tmp/screen")"
# and not on a terminal: plain lines, a header and the lines each sample
out=$("$URAID" detail --watch --interval 0.2 --count 2 "$tmp/r5.ctl") || fail "watch --count: $out"
[ "$(grep -c ' device ' <<<"$out")" = 2 ] || fail "watch plain: $out"
grep -q $'\e' <<<"$out" && fail "watch plain: escape codes: $out"
echo "ok: per-member bytes as RAID1 and RAID5 lay them out, within 1%; the watch view"
