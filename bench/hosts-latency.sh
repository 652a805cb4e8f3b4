#!/bin/bash
# hosts-latency.sh — issue 17's latency row without sch_netem: each member
# is nbdkit's file plugin behind its delay filter (every write's reply
# DELAY late: the round trip of a far link; the filter takes whole ms),
# on TCP to localhost.  Per round, fio 4 KiB random writes at qd1 for SECS
# s (1 s ramp), median total latency (µs: fio's lat, submission to
# completion; its nbd engine counts the wait in slat, so clat alone
# understates it) of:
#   lat1       fio's nbd engine straight to member 1 and to member 2: the
#              slower of the two (the slowest member's round trip)
#   single     `uraid serve` of a plain export of member 1's server (uraid's
#              path, no RAID)
#   raid1      `uraid serve` of a RAID1 of members 1 and 2
#   behind     a RAID1 of member 1 and member 3 (write-mostly, FAR late),
#              --write-behind: the far copy is not waited for
#   behindoff  the same RAID1 without --write-behind
# Ratios of the medians over ROUNDS rounds (interleaved) go to stdout.
#   URAID=... bench/hosts-latency.sh [ROUNDS] [SECS] [DELAY] [FAR]
set -eu
rounds=${1:-3} secs=${2:-5} delay=${3:-1ms} far=${4:-10ms}
: "${URAID:?URAID must point at the uraid binary}"
d=$(mktemp -d /dev/shm/hosts-lat.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
port=$((20000 + RANDOM % 20000))
for i in 1 2 3; do
    truncate -s 256M "$d/m$i.img"
    w=$delay
    [ $i = 3 ] && w=$far
    nbdkit -f -i 127.0.0.1 -p $((port + i)) --filter=delay file dir="$d" wdelay="$w" \
        2>>"$d/nbdkit.log" &
    pids+=($!)
done
sleep 1
u() { echo "nbd://127.0.0.1:$((port + $1))/$2"; }
"$URAID" create --level=1 --assume-clean --name=r1 "$(u 1 m1.img)" "$(u 2 m2.img)" >/dev/null
truncate -s 256M "$d/s1.img" "$d/wb1.img" "$d/wb3.img" "$d/nb1.img" "$d/nb3.img"
"$URAID" create --level=1 --assume-clean --write-behind=256 --name=wb "$(u 1 wb1.img)" \
    --write-mostly "$(u 3 wb3.img)" >/dev/null
"$URAID" create --level=1 --assume-clean --bitmap=internal --name=nb "$(u 1 nb1.img)" \
    --write-mostly "$(u 3 nb3.img)" >/dev/null

lat() {
    fio --name=j --ioengine=nbd --uri="$1" --rw=randwrite --bs=4k --iodepth=1 --size=128M \
        --time_based --runtime="$secs" --ramp_time=1 --lat_percentiles=1 --output-format=json \
        2>/dev/null | sed -n '/^{/,$p' |
        python3 -c 'import json,sys; print("%.0f" % (json.load(sys.stdin)["jobs"][0]["write"]["lat_ns"]["percentile"]["50.000000"] / 1000))'
}
served() {
    local sock=$d/s.sock
    rm -f "$sock"
    "$URAID" serve -f --socket "$sock" "$@" 2>>"$d/serve.log" &
    local pid=$!
    for _ in $(seq 200); do [ -S "$sock" ] && break; sleep 0.05; done
    lat "nbd+unix:///?socket=$sock"
    kill -TERM $pid
    wait $pid 2>/dev/null || true
}
res=$d/res
for r in $(seq "$rounds"); do
    a=$(lat "$(u 1 m1.img)")
    b=$(lat "$(u 2 m2.img)")
    echo "$r lat1 $((a > b ? a : b))" >>"$res"
    echo "$r single $(served "$(u 1 s1.img)")" >>"$res"
    echo "$r raid1 $(served "$(u 1 m1.img)" "$(u 2 m2.img)")" >>"$res"
    echo "$r behind $(served "$(u 1 wb1.img)" "$(u 3 wb3.img)")" >>"$res"
    echo "$r behindoff $(served "$(u 1 nb1.img)" "$(u 3 nb3.img)")" >>"$res"
    grep "^$r " "$res" | tr '\n' ' '
    echo
done
python3 - "$res" "$delay" "$far" <<'PY'
import collections, statistics, sys
v = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r, k, x = line.split()
    v[k][int(r)] = float(x)
med = {k: statistics.median(d.values()) for k, d in v.items()}
rounds = sorted(v["lat1"])
def row(name, a, b):
    per = " ".join("%.2f" % (v[a][r] / v[b][r]) for r in rounds)
    print("%-40s %6.0f vs %6.0f us  %.2f  (%s)" % (name, med[a], med[b], med[a] / med[b], per))
print("wdelay %s (far member %s); medians of %d rounds" % (sys.argv[2], sys.argv[3], len(rounds)))
row("RAID1 vs the slower member straight", "raid1", "lat1")
row("RAID1 vs uraid serving one member", "raid1", "single")
row("one member through uraid vs straight", "single", "lat1")
row("write-behind RAID1 vs without", "behind", "behindoff")
row("write-behind RAID1 vs one member", "behind", "single")
PY
