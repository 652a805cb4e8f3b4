#!/bin/bash
# hosts.sh — arrays over members on other hosts, each host's link shaped
# with tc (tests/sh/hosts-lib.sh: network namespaces, veth, nbdkit's file
# plugin on /dev/shm files of random bytes), against one link, in one run:
#   read1     fio 1 MiB sequential read at qd16 of one member straight (one link)
#   raid1     the same through `uraid serve` of a RAID1 of hosts 1 and 2
#   raid0     the same through a RAID0 of hosts 1-4 (512 KiB chunk)
#   lat1      fio 4 KiB write at qd1 of host 1's and host 2's member
#             straight: the slower median completion latency (µs)
#   lat-raid1 the same through the RAID1
#   resync    RAID1 with a write-intent bitmap (1 MiB chunk): host 2 cut for
#             OUTAGE s while fio writes sequentially; the link back, bytes
#             md's re-add resynced (detail's readd.last_bytes) against the
#             bytes fio wrote meanwhile
# Rounds interleaved; prints "round job value" lines, the medians last.
#
#   URAID=build/src/uraid bench/hosts.sh [ROUNDS] [SECONDS] [RATE] [OUTAGE]
#
# RATE is tc's (default 200mbit); delays need sch_netem, which this script
# uses where hosts_can_netem says it is there (DELAY, e.g. 0.5ms).
# shellcheck disable=SC2034 # lib.sh names its scratch dir by it
lib_scratch_name=bench-hosts
. "$(dirname "$0")/../tests/sh/lib.sh"
. "$(dirname "$0")/../tests/sh/hosts-lib.sh"
requires fio nbdkit python3
hosts_require
rounds=${1:-3} secs=${2:-5} rate=${3:-200mbit} outage=${4:-10}
delay=${DELAY:-}
if [ -n "$delay" ] && ! hosts_can_netem; then
    echo "# no sch_netem in this kernel: no delay, rate only" >&2
    delay=""
fi
opts="timeout=3&reconnect=0.3"
d=$(mktemp -d /dev/shm/bench-hosts.XXXXXX)
cleanup_hooks+=("rm -rf $d")
res=$tmp/results

for i in 1 2 3 4; do
    host_add "$i"
    mkdir -p "$d/h$i"
    for f in r1 r0 rs; do head -c 160M /dev/urandom >"$d/h$i/$f.img"; done
    host_serve_nbdkit "$i" "$d/h$i"
    host_shape "$i" ${delay:+delay "$delay"} rate "$rate"
done
m() { echo "$(host_uri "$1" "$2")?$opts"; }
"$URAID" create --level=1 --assume-clean --name=r1 "$(m 1 r1.img)" "$(m 2 r1.img)" >/dev/null
"$URAID" create --level=1 --assume-clean --bitmap=internal --bitmap-chunk=1M --name=rs \
    "$(m 1 rs.img)" "$(m 2 rs.img)" >/dev/null
"$URAID" create --level=0 --chunk=512K --name=r0 \
    "$(m 1 r0.img)" "$(m 2 r0.img)" "$(m 3 r0.img)" "$(m 4 r0.img)" >/dev/null

# fio_job URI RW BS QD [extra...] — one job; prints MiB/s, or with lat the
# median completion latency in µs.
fio_job() {
    local uri=$1 rw=$2 bs=$3 qd=$4
    shift 4
    fio --name=j --ioengine=nbd --uri="$uri" --rw="$rw" --bs="$bs" --iodepth="$qd" \
        --size=128M --time_based --runtime="$secs" --ramp_time=1 "$@" \
        --output-format=json 2>/dev/null | sed -n '/^{/,$p' | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
io = j["read"] if j["read"]["io_bytes"] else j["write"]
if sys.argv[1] == "lat":
    print("%.0f" % (io["clat_ns"]["percentile"]["50.000000"] / 1000))
else:
    print("%.1f" % (io["bw"] / 1024))' "${LAT:-bw}"
}

# serve NAME MEMBER... — `uraid serve` of an array; sets sock, ctl, pid.
serve() {
    local name=$1
    shift
    sock=$tmp/$name.sock ctl=$tmp/$name.ctl
    rm -f "$sock" "$ctl"
    "$URAID" serve -f --socket "$sock" --control "$ctl" "$@" 2>>"$tmp/$name.log" &
    pid=$!
    for _ in $(seq 200); do [ -S "$sock" ] && [ -S "$ctl" ] && break; sleep 0.05; done
    [ -S "$sock" ] || fail "$name: serve did not start: $(cat "$tmp/$name.log")"
}
unserve() { kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; }

# resync_round — the outage and the re-add (the array in sync again at
# the end, for the next round); prints "written resynced".
resync_round() {
    serve rs "$(m 1 rs.img)" "$(m 2 rs.img)"
    host_link_down 2
    local wrote
    wrote=$(fio --name=w --ioengine=nbd --uri="nbd+unix:///?socket=$sock" --rw=write \
        --bs=64k --iodepth=4 --size=128M --rate=4m --time_based --runtime="$outage" \
        --output-format=json 2>/dev/null | sed -n '/^{/,$p' |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["write"]["io_bytes"])')
    host_link_up 2
    local ra=""
    for _ in $(seq 1200); do
        ra=$("$URAID" detail --json "$ctl" | python3 -c '
import json, sys
a = json.load(sys.stdin)["arrays"][0]
r = a.get("readd", {})
print(r.get("last_bytes", "") if r.get("count") and not a.get("recovering") else "")')
        [ -n "$ra" ] && break
        sleep 0.1
    done
    unserve
    [ -n "$ra" ] || fail "resync: no re-add: $(tail -5 "$tmp/rs.log")"
    echo "$wrote $ra"
}

u1="$(host_uri 1 r1.img)" u2="$(host_uri 2 r1.img)"
for r in $(seq "$rounds"); do
    echo "$r read1 $(fio_job "$u1" read 1M 16)" | tee -a "$res"
    serve r1 "$(m 1 r1.img)" "$(m 2 r1.img)"
    echo "$r raid1 $(fio_job "nbd+unix:///?socket=$sock" read 1M 16)" | tee -a "$res"
    echo "$r lat-raid1 $(LAT=lat fio_job "nbd+unix:///?socket=$sock" write 4k 1 --size=64M)" |
        tee -a "$res"
    unserve
    a=$(LAT=lat fio_job "$u1" write 4k 1 --size=64M --offset=64M)
    b=$(LAT=lat fio_job "$u2" write 4k 1 --size=64M --offset=64M)
    echo "$r lat1 $((a > b ? a : b))" | tee -a "$res"
    serve r0 "$(m 1 r0.img)" "$(m 2 r0.img)" "$(m 3 r0.img)" "$(m 4 r0.img)"
    echo "$r raid0 $(fio_job "nbd+unix:///?socket=$sock" read 1M 16)" | tee -a "$res"
    unserve
    read -r w s <<<"$(resync_round)"
    echo "$r resync-written $w" | tee -a "$res"
    echo "$r resync-bytes $s" | tee -a "$res"
done

python3 - "$res" <<'PY'
import statistics, sys
from collections import defaultdict
v = defaultdict(list)
for line in open(sys.argv[1]):
    r, job, x = line.split()
    v[job].append(float(x))
med = {k: statistics.median(x) for k, x in v.items()}
for k in sorted(med):
    print(f"median {k} {med[k]:g}  (rounds: {' '.join('%g' % x for x in v[k])})")
def ratio(a, b):
    rs = [x / y for x, y in zip(v[a], v[b]) if y]
    return statistics.median(rs), rs
for name, a, b in (("raid1/read1", "raid1", "read1"), ("raid0/read1", "raid0", "read1"),
                   ("lat-raid1/lat1", "lat-raid1", "lat1"),
                   ("resync-bytes/written", "resync-bytes", "resync-written")):
    m, rs = ratio(a, b)
    print(f"ratio {name} {m:.2f}  (rounds: {' '.join('%.2f' % x for x in rs)})")
PY
