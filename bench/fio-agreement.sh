#!/bin/bash
# fio-agreement.sh — uraid bench's figures against fio's on the same volume:
# one member served by `uraid serve`, 1 MiB sequential write and read at
# qd 1 and 4 KiB random reads at qd 1 and 32.  ROUNDS rounds, medians.
#
#   bench/fio-agreement.sh [ROUNDS]      (default 3)
#   URAID=/path/to/uraid bench/fio-agreement.sh 5
#   RT=1 bench/fio-agreement.sh          (both tools and their servers at
#                                         real-time priority: see below)
#   KINDS=mem WORKLOADS=write bench/fio-agreement.sh 5   (a subset of rows;
#                                         kinds: sata80 mem file, file being
#                                         a file on FILE_DIR, default /var/tmp,
#                                         with O_DIRECT)
#   RUNTIME=4 bench/fio-agreement.sh     (seconds per figure, default 2)
#
# Both tools see the same thing:
#  - the same server: the bench serves a single member from a file on
#    tmpfs (the disk model wrapped around it for sim kinds, the bare file
#    for mem), and fio gets `uraid serve` of exactly that spec over a file
#    of the same size, allocated the same way;
#  - the same requests: size, queue depth, 64 MiB span, 2 s per figure
#    however many passes that takes (both time-based), random offsets
#    drawn with replacement (fio: norandommap);
#  - the same data policy: every buffer starts as random bytes and each
#    write stamps its sectors so that no two writes send the same data
#    (fio's default scramble_buffers; see docs/bench.md).
# The two tools take turns figure by figure, in alternating order from
# round to round, since the machine's load drifts; each figure gets a
# fresh server over a fresh member (which reads as zeros on both sides).
# On RAM, 4 KiB random reads at qd 32 are bound by the load generator
# itself (client and server each fill one of two cores), so anything else
# running steals from the figure unevenly; RT=1 runs the tools and their
# servers under SCHED_FIFO (chrt -f 50, needs root), the same for both.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
uraid=${URAID:-$PWD/build/src/uraid}
[ -x "$uraid" ] || { echo "fio-agreement: no uraid at $uraid (set URAID)" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio-agreement: fio not installed" >&2; exit 1; }
rt=()
[ "${RT:-0}" = 1 ] && rt=(chrt -f 50)
dir=$(mktemp -d /dev/shm/fio-agreement.XXXXXX)
fdir=$(mktemp -d "${FILE_DIR:-/var/tmp}/fio-agreement.XXXXXX") # 'file' members: this machine's disk
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$dir" "$fdir"' EXIT
runtime=${RUNTIME:-2}
size=64M

fio_run() { # URI rw bs qd -> "bytes/s IOPS"
    local out sync=0
    # Writes end with a flush inside the time, as the bench's do.
    [ "$2" = write ] && sync=1
    out=$("${rt[@]}" fio --name=a --ioengine=nbd --uri="$1" --rw="$2" --bs="$3" --iodepth="$4" \
              --size=$size --runtime=$runtime --time_based --norandommap --end_fsync=$sync \
              --output-format=terse --terse-version=3 2>/dev/null | grep '^3;')
    if [ "${2#rand}" = read ]; then echo "$(( $(cut -d';' -f7 <<<"$out") * 1024 )) $(cut -d';' -f8 <<<"$out")"
    else echo "$(( $(cut -d';' -f48 <<<"$out") * 1024 )) $(cut -d';' -f49 <<<"$out")"; fi
}

run_bench() { # kind workload
    "${rt[@]}" "$uraid" bench --members "$1" --dir "$fdir" --layout single --workload "$2" --size $size --reps 1 \
        --runtime ${runtime}s --time-based --no-ceilings --json "$dir/b.json" >/dev/null 2>&1
    python3 - "$dir/b.json" "$1" >> "$dir/rows" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for row in j["results"]:
    print("bench", sys.argv[2], row["workload"], row["bw_bytes"], row["iops"])
PY
}

run_fio() { # kind workload
    local uri="nbd+unix:///?socket=$dir/s.sock" spec m="$dir/m.img"
    [ "$1" = file ] && m="$fdir/m.img"
    rm -f "$m" "$dir/s.sock"
    fallocate -l $size "$m" 2>/dev/null || truncate -s $size "$m"
    case $1 in
    mem) spec=("$m") ;;
    file) spec=(--direct "$m") ;; # the bench opens file members with O_DIRECT
    *) spec=("sim:$1:$m") ;;
    esac
    "${rt[@]}" "$uraid" serve --foreground --socket "$dir/s.sock" "${spec[@]}" 2>/dev/null & pid=$!
    for _ in $(seq 100); do [ -S "$dir/s.sock" ] && break; sleep 0.1; done
    case $2 in
    write) echo "fio $1 $2 $(fio_run "$uri" write 1M 1)" ;;
    read) echo "fio $1 $2 $(fio_run "$uri" read 1M 1)" ;;
    randread-qd1) echo "fio $1 $2 $(fio_run "$uri" randread 4k 1)" ;;
    randread-qd32) echo "fio $1 $2 $(fio_run "$uri" randread 4k 32)" ;;
    esac >> "$dir/rows"
    kill $pid; wait $pid 2>/dev/null || true; pid=""; rm -f "$m"
}

for r in $(seq "$rounds"); do
    echo "== round $r" >&2
    for kind in ${KINDS:-sata80 mem}; do
        for w in ${WORKLOADS:-write read randread-qd1 randread-qd32}; do
            if [ $((r % 2)) = 1 ]; then run_bench $kind $w; run_fio $kind $w
            else run_fio $kind $w; run_bench $kind $w; fi
        done
    done
done

python3 - "$dir/rows" <<'PY'
import statistics, sys
v = {}
for line in open(sys.argv[1]):
    tool, kind, w, bw, iops = line.split()
    v.setdefault((kind, w, tool), []).append((float(bw), float(iops)))
print(f"{'member':8} {'workload':14} {'bench':>14} {'fio':>14} {'bench/fio':>9}  per round")
for kind in ("sata80", "mem", "file"):
    for w in ("write", "read", "randread-qd1", "randread-qd32"):
        b, f = v.get((kind, w, "bench")), v.get((kind, w, "fio"))
        if not b or not f:
            continue
        i = 1 if w.startswith("rand") else 0
        unit = "IOPS" if i else "MB/s"
        mb = statistics.median(x[i] for x in b) / (1 if i else 1e6)
        mf = statistics.median(x[i] for x in f) / (1 if i else 1e6)
        per = " ".join(f"{x[i] / y[i]:.2f}" for x, y in zip(b, f))
        print(f"{kind:8} {w:14} {mb:9.0f} {unit:4} {mf:9.0f} {unit:4} {mb / mf:9.2f}  {per}")
PY
