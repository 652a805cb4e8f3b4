#!/bin/bash
# fio-agreement.sh — uraid bench's figures against fio's on the same kind of
# volume: one member, served by `uraid serve`, 1 MiB sequential write and
# read at qd 1 and 4 KiB random reads at qd 32.  ROUNDS rounds, medians.
#
#   bench/fio-agreement.sh [ROUNDS]      (default 3)
#
# Members: sim:sata80 (a disk model: figures do not depend on the load) and
# mem (RAM: the noisy case).  The bench serves its own 64 MiB member; fio
# gets a server of the same spec over a 64 MiB tmpfs file or mem:64M.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
uraid=$PWD/build/src/uraid
dir=$(mktemp -d /dev/shm/fio-agreement.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT

fio_run() { # URI rw bs qd -> "MBps IOPS"
    local out
    out=$(fio --name=a --ioengine=nbd --uri="$1" --rw="$2" --bs="$3" --iodepth="$4" --size=64M \
              --runtime=2 --time_based --output-format=terse --terse-version=3 2>/dev/null | grep '^3;')
    if [ "${2#rand}" = read ]; then echo "$(( $(cut -d';' -f7 <<<"$out") * 1024 )) $(cut -d';' -f8 <<<"$out")"
    else echo "$(( $(cut -d';' -f48 <<<"$out") * 1024 )) $(cut -d';' -f49 <<<"$out")"; fi
}

for r in $(seq "$rounds"); do
    echo "== round $r" >&2
    for kind in sata80 mem; do
        "$uraid" bench --members "$kind" --layout single --workload write,read,randread-qd32 \
            --reps 1 --runtime 2 --no-ceilings --json "$dir/b.json" >/dev/null 2>&1
        python3 - "$dir/b.json" "$kind" >> "$dir/rows" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for row in j["results"]:
    print("bench", sys.argv[2], row["workload"], row["bw_bytes"], row["iops"])
PY
        if [ "$kind" = sata80 ]; then truncate -s 64M "$dir/m.img"; spec="sim:sata80:$dir/m.img"; else spec=mem:64M; fi
        "$uraid" serve --foreground --socket "$dir/s.sock" "$spec" 2>/dev/null & pid=$!
        for _ in $(seq 100); do [ -S "$dir/s.sock" ] && break; sleep 0.1; done
        uri="nbd+unix:///?socket=$dir/s.sock"
        echo "fio $kind write $(fio_run "$uri" write 1M 1)" >> "$dir/rows"
        echo "fio $kind read $(fio_run "$uri" read 1M 1)" >> "$dir/rows"
        echo "fio $kind randread-qd32 $(fio_run "$uri" randread 4k 32)" >> "$dir/rows"
        kill $pid; wait $pid 2>/dev/null || true; pid=""; rm -f "$dir/m.img"
    done
done

python3 - "$dir/rows" <<'PY'
import statistics, sys
v = {}
for line in open(sys.argv[1]):
    tool, kind, w, bw, iops = line.split()
    v.setdefault((kind, w, tool), []).append((float(bw), float(iops)))
print(f"{'member':8} {'workload':14} {'bench':>14} {'fio':>14} {'bench/fio':>9}")
for kind in ("sata80", "mem"):
    for w in ("write", "read", "randread-qd32"):
        b, f = v.get((kind, w, "bench")), v.get((kind, w, "fio"))
        if not b or not f:
            continue
        i = 1 if w.startswith("rand") else 0
        unit = "IOPS" if i else "MB/s"
        mb = statistics.median(x[i] for x in b) / (1 if i else 1e6)
        mf = statistics.median(x[i] for x in f) / (1 if i else 1e6)
        print(f"{kind:8} {w:14} {mb:9.0f} {unit:4} {mf:9.0f} {unit:4} {mb / mf:9.2f}")
PY
