#!/bin/bash
# raid-scaling.sh — issue 3's and 4's single-stream goals, through NBD with
# fio (one job, 1 MiB requests, one in flight), ROUNDS times, medians.
#
#   bench/raid-scaling.sh [ROUNDS] [RUNTIME]       (defaults 3 and 5 s;
#                                                   SIM_RUNTIME=10 s)
#
# Part 1, disk models: members are sim:RATE:FILE wrappers (files on tmpfs)
# of rate B; rows give MiB/s, the ratio to one sim member alone and to
# the models' nominal rate (80M = 80 MiB/s).
# Part 2, RAM: arrays on tmpfs files without models, against one tmpfs
# file; LUKS2 on one file and on a RAID1, against the same unencrypted.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} runtime=${2:-5}
# The disk models' rows run longer (SIM_RUNTIME, default 10 s): a stream's
# first fraction of a second (detection, the read-ahead's ramp) weighs on
# a short run; the figure wanted is the stream's steady rate.
sim_runtime=${SIM_RUNTIME:-10}
rate=${RATE:-80M}
uraid=${URAID:-$PWD/build/src/uraid}
dir=$(mktemp -d /dev/shm/raid-scaling.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
printf bench > "$dir/key"

# fio one job; prints MiB/s (fio's KiB/s over 1024).  Writes end with a flush that counts in their
# time (fio includes end_fsync in the runtime), so data an array holds in
# memory (write-behind) is not counted as written until it is on the disks.
fio1() { # URI rw
    local out sync=0
    [ "$2" = write ] && sync=1
    out=$(fio --name=s --ioengine=nbd --uri="$1" --rw="$2" --bs=1M --iodepth=1 --size=100% \
              --runtime="${RUNTIME_NOW:-$runtime}" --time_based --end_fsync=$sync \
              --output-format=terse --terse-version=3 2>/dev/null | grep '^3;')
    if [ "$2" = read ]; then echo $(( $(cut -d';' -f7 <<<"$out") / 1024 ))
    else echo $(( $(cut -d';' -f48 <<<"$out") / 1024 )); fi
}
serve_run() { # LABEL RW MEMBERS... ; appends "LABEL RW MBps" to rows
    local label=$1 rw=$2; shift 2
    "$uraid" serve --foreground --socket "$dir/s.sock" "$@" 2>>"$dir/serve.log" & pid=$!
    for _ in $(seq 100); do [ -S "$dir/s.sock" ] && break; sleep 0.1; done
    echo "$label $rw $(fio1 "nbd+unix:///?socket=$dir/s.sock" "$rw")" >> "$dir/rows"
    kill $pid; wait $pid 2>/dev/null || true; pid=""
    # What a disk model's write put in memory is of no use to the reads
    # (the model does not look at data): give it back, past the metadata.
    if [ "${label#sim-}" != "$label" ] && [ "$rw" = write ]; then
        local m
        for m in "$@"; do
            m=${m##*:}
            fallocate -p -o 4194304 -l "$(stat -c %s "$m")" "$m" 2>/dev/null || true
        done
    fi
}
mk() { # NAME N SIZE create-args...
    local name=$1 n=$2 size=$3; shift 3
    local files=()
    for i in $(seq "$n"); do files+=("$dir/$name.$i"); truncate -s "$size" "$dir/$name.$i"; done
    [ "$n" = 1 ] || "$uraid" create --name="$name" "$@" "${files[@]}" >/dev/null 2>&1
    echo "${files[@]}"
}
sim() { local out=(); for f in "$@"; do out+=("sim:$rate:$f"); done; echo "${out[@]}"; }

# The disk models' arrays are larger than a 5 s stream reads (sparse
# files: only what is written takes memory), so that no stream reaches the
# array's end, where the last stretch is one mirror's alone and fio wraps
# around to a new stream.
single=$(mk single 1 1G)
s1x2=$(mk s1x2 2 4G --level=1)
s1x3=$(mk s1x3 3 4G --level=1)
s0x8=$(mk s0x8 8 1G --level=0 --chunk=128)
s10x4=$(mk s10x4 4 2G --level=10 --layout=n2 --chunk=128)
s5x4=$(mk s5x4 4 1G --level=5 --chunk=128)
s6x4=$(mk s6x4 4 1G --level=6 --chunk=128)
r1x2=$(mk r1x2 2 1G --level=1)
r0x2=$(mk r0x2 2 1G --level=0 --chunk=128)
lr1=$(mk lr1 2 1G --level=1)
"$uraid" luks-format --batch --key-file "$dir/key" --pbkdf-memory=65536 --iter-time=100 $lr1 >/dev/null 2>&1
lsingle=$(mk lsingle 1 1G)
"$uraid" luks-format --batch --key-file "$dir/key" --pbkdf-memory=65536 --iter-time=100 $lsingle >/dev/null 2>&1

for r in $(seq "$rounds"); do
    echo "== round $r" >&2
    export RUNTIME_NOW=$sim_runtime
    for rw in read write; do
        serve_run "sim-single" $rw $(sim $single)
        serve_run "sim-raid1x2" $rw $(sim $s1x2)
        serve_run "sim-raid1x3" $rw $(sim $s1x3)
        serve_run "sim-raid0x8" $rw $(sim $s0x8)
        serve_run "sim-raid10x4" $rw $(sim $s10x4)
        serve_run "sim-raid5x4" $rw $(sim $s5x4)
        serve_run "sim-raid6x4" $rw $(sim $s6x4)
    done
    unset RUNTIME_NOW
    # Writes first, so that the reads are of data, not of tmpfs holes.
    for rw in write read; do
        serve_run "ram-single" $rw $single
        serve_run "ram-raid0x2" $rw $r0x2
        serve_run "ram-raid1x2" $rw $r1x2
        serve_run "ram-luks-single" $rw --key-file "$dir/key" $lsingle
        serve_run "ram-luks-raid1x2" $rw --key-file "$dir/key" $lr1
    done
done

python3 - "$dir/rows" "$rate" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, rw, mb = line.split()
    rows.setdefault((label, rw), []).append(int(mb))
# The models' nominal rate in MiB/s (sim's sizes are binary: 80M = 80 MiB/s).
m = re.fullmatch(r'(\d+)([KMG]?)', sys.argv[2])
nominal = int(m[1]) * {'K': 1 / 1024, 'M': 1, 'G': 1024, '': 1 / 1048576}[m[2]]
med = {k: statistics.median(v) for k, v in rows.items()}
print(f"{'layout':20} {'op':6} {'MiB/s':>7}  {'x single':>8}  {'x rate':>6}  min-max (n)")
for (label, rw), m in med.items():
    base = med.get(("sim-single" if label.startswith("sim") else "ram-single", rw))
    ratio = f"{m / base:8.2f}" if base else "       -"
    xrate = f"{m / nominal:6.2f}" if label.startswith("sim") else "     -"
    v = rows[(label, rw)]
    print(f"{label:20} {rw:6} {m:7.0f}  {ratio}  {xrate}  {min(v)}-{max(v)} ({len(v)})")
PY
