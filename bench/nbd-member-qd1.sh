#!/bin/bash
# nbd-member-qd1.sh — one whole run of qd1 reads through an nbd member:
# nbdkit's memory plugin on a Unix socket, `uraid serve` of that one member
# (URAID), fio 4 KiB random reads at qd1 (NUMBER ops) through the served
# export.  Appends "iops clat_median_us" to OUT.  Meant to be timed whole,
# a build against another in turns (e.g. /usr/bin/time -v, or any paired
# runner), so that the wall and CPU seconds of the process tree compare the
# two members.
#
#   URAID=... bench/nbd-member-qd1.sh OUT [NUMBER]
set -eu
out=$1 number=${2:-20000}
: "${URAID:?URAID must point at the uraid binary}"
d=$(mktemp -d /dev/shm/nbd-qd1.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
nbdkit -f -U "$d/m.sock" memory 256M & pids+=($!)
for _ in $(seq 200); do [ -S "$d/m.sock" ] && break; sleep 0.02; done
"$URAID" serve -f --socket "$d/s.sock" "nbd+unix:///?socket=$d/m.sock" 2>/dev/null & pids+=($!)
for _ in $(seq 200); do [ -S "$d/s.sock" ] && break; sleep 0.02; done
fio --name=j --ioengine=nbd --uri="nbd+unix:///?socket=$d/s.sock" --rw=randread --bs=4k \
    --iodepth=1 --size=64M --number_ios="$number" --output-format=json 2>/dev/null |
    sed -n '/^{/,$p' | python3 -c '
import json, sys
r = json.load(sys.stdin)["jobs"][0]["read"]
print("%.0f %.1f" % (r["iops"], r["clat_ns"]["percentile"]["50.000000"] / 1000))' >>"$out"
