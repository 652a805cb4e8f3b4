#!/bin/bash
# stripe-log.sh — what a stripe log (md's PPL, the raid5-cache journal in
# write-through) costs a single sequential writer: 1 MiB writes through NBD
# with fio at queue depth 1 and 4, on a RAID5 of four sim:sata80 members,
# without a log, with PPL, and with a journal on a sim:ssd member; ROUNDS
# times, medians, each row also as a ratio to the same build without a log.
#
#   bench/stripe-log.sh [ROUNDS] [RUNTIME]          (defaults 3 and 10 s)
#
# URAID names the uraid binary (default build/src/uraid); URAID_BASE, when
# set, a second one (an older build) that runs every row beside it, in the
# same rounds, so that both see the same machine load.  QDS (default
# "1 4") and LOGS (default "none ppl journal") narrow the rows.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} runtime=${2:-10}
uraid=${URAID:-$PWD/build/src/uraid}
base=${URAID_BASE:-}
dir=$(mktemp -d /dev/shm/stripe-log.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT

# fio, one job; MiB/s of writes, the closing flush counted in the time.
fio1() { # URI IODEPTH
    local out
    out=$(fio --name=s --ioengine=nbd --uri="$1" --rw=write --bs=1M --iodepth="$2" \
              --size=100% --runtime="$runtime" --time_based --end_fsync=1 \
              --output-format=terse --terse-version=3 2>/dev/null | grep '^3;')
    echo $(( $(cut -d';' -f48 <<<"$out") / 1024 ))
}
mk() { # NAME create-args... : four 2 GiB members (and journal.img), fresh
    local name=$1; shift
    rm -rf "$dir/$name"; mkdir "$dir/$name"
    for i in 1 2 3 4; do truncate -s 2G "$dir/$name/m$i"; done
    truncate -s 1G "$dir/$name/journal"
    "$URAID_NOW" create --level=5 --name="$name" "$@" "$dir/$name"/m[1-4] >/dev/null 2>&1
}
run() { # BUILD LABEL QD create-args... ; appends "BUILD LABEL QD MiB/s"
    local build=$1 label=$2 qd=$3; shift 3
    mk "$label" "$@"
    local members=() f
    for f in "$dir/$label"/m[1-4]; do members+=("sim:sata80:$f"); done
    [ "$label" = journal ] && members+=("sim:ssd:$dir/$label/journal")
    "$URAID_NOW" serve --foreground --socket "$dir/s.sock" "${members[@]}" \
        2>>"$dir/serve.log" & pid=$!
    for _ in $(seq 100); do [ -S "$dir/s.sock" ] && break; sleep 0.1; done
    echo "$build $label $qd $(fio1 "nbd+unix:///?socket=$dir/s.sock" "$qd")" >> "$dir/rows"
    kill $pid; wait $pid 2>/dev/null || true; pid=""
    rm -f "$dir/s.sock"; rm -rf "${dir:?}/$label"
}

builds=(new)
[ -n "$base" ] && builds=(base new)
for r in $(seq "$rounds"); do
    echo "== round $r" >&2
    for qd in ${QDS:-1 4}; do
        for b in "${builds[@]}"; do
            if [ "$b" = base ]; then URAID_NOW=$base; else URAID_NOW=$uraid; fi
            for log in ${LOGS:-none ppl journal}; do
                case $log in
                    none) run $b none $qd --bitmap=none ;;
                    ppl) run $b ppl $qd --consistency-policy=ppl ;;
                    journal) run $b journal $qd --write-journal="$dir/journal/journal" ;;
                esac
            done
        done
    done
done

python3 - "$dir/rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    b, label, qd, mb = line.split()
    rows.setdefault((b, label, int(qd)), []).append(int(mb))
med = {k: statistics.median(v) for k, v in rows.items()}
print(f"{'build':6} {'log':8} {'qd':>2} {'MiB/s':>6}  {'x no log':>8}  runs")
for (b, label, qd), m in sorted(med.items()):
    none = med.get((b, "none", qd))
    ratio = f"{m / none:8.2f}" if none else "       -"
    print(f"{b:6} {label:8} {qd:>2} {m:6.0f}  {ratio}  {rows[(b, label, qd)]}")
PY
