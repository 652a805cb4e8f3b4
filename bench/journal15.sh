#!/bin/bash
# journal15.sh — issue 15's figures, side by side in one run, rounds
# interleaved: `uraid bench` on a RAID5 of 4 sata80 members without a
# journal (raid5x4), with md's write-through journal on an ssd model
# (raid5+journal), the same in write-back (raid5+journal-wb) and with PPL
# (raid5+ppl), then the ssd model alone
# (single --members ssd), ROUNDS times.  Rows: 4 KiB random writes with a
# flush after each (randwrite-sync, qd1), 1 MiB sequential writes (write),
# and seed 004's ext4 metadata rows (fs-touch: create 10,000 files,
# fs-retouch, fs-unlink).  Prints per row the median over the rounds
# (min-max) and the ratios the issue asks for.
#
#   bench/journal15.sh URAID [ROUNDS] [RUNTIME] [WORKLOADS]
set -eu
U=$1 rounds=${2:-3} rt=${3:-2s} wl=${4:-journal}
d=$(mktemp -d /tmp/journal15.XXXXXX)
trap 'rm -rf $d' EXIT
for r in $(seq $rounds); do
  $U bench --members sata80 --layout raid5x4,raid5+journal,raid5+journal-wb,raid5+ppl --workload $wl \
    --reps 1 --runtime $rt --seed $r --json $d/raid-$r.json >$d/raid-$r.txt 2>&1
  $U bench --members ssd --layout single --workload randwrite-sync,write \
    --reps 1 --runtime $rt --seed $r --json $d/ssd-$r.json >$d/ssd-$r.txt 2>&1
  echo "round $r done $(date -u +%H:%M:%S)" >&2
done
python3 - $d $rounds <<'PY'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
fig = {}   # (layout, workload) -> [figures]; bytes/s, or files/s for fs rows
jc = {}    # workload -> the bench's own journal ceiling (ssd alone, in process)
bound = {}
for r in range(1, n + 1):
    for f in (f"{d}/raid-{r}.json", f"{d}/ssd-{r}.json"):
        for row in json.load(open(f))["results"]:
            if row["skipped"]:
                print("skipped:", row["layout"], row["workload"], row["skipped"]); continue
            k = (row["layout"] + ("/ssd" if row["layout"] == "single" else ""), row["workload"])
            v = row["iops"] if row["workload"].startswith("fs-") else row["bw_bytes"]
            fig.setdefault(k, []).append(v)
            bound.setdefault(k, []).append(f'{row.get("bound", "-")} {row.get("efficiency", 0):.2f}')
            j = row.get("ceilings", {}).get("journal", 0)
            if j: jc.setdefault(row["workload"], []).append(j)
med = {k: statistics.median(v) for k, v in fig.items()}
def cell(k, unit):
    if k not in fig: return "-"
    v = fig[k]; s = 1e6 if unit == "MB/s" else 1
    return f"{med[k]/s:.2f} ({min(v)/s:.2f}-{max(v)/s:.2f})" if unit == "MB/s" else f"{med[k]:.0f} ({min(v):.0f}-{max(v):.0f})"
lays = ["raid5x4", "raid5+journal", "raid5+journal-wb", "raid5+ppl", "single/ssd"]
for w, unit in [("randwrite-sync", "MB/s"), ("write", "MB/s"), ("fs-touch", "files/s"),
                ("fs-retouch", "files/s"), ("fs-unlink", "files/s")]:
    print(f"{w} ({unit}, median of {n} (min-max)): " + " | ".join(f"{l} {cell((l, w), unit)}" for l in lays))
    if w == "randwrite-sync":
        print("  IOPS:", " | ".join(f"{l} {med[(l, w)]/4096:.1f}" for l in lays if (l, w) in med))
    if w in jc:
        print(f"  journal ceiling (ssd alone, in process): {statistics.median(jc[w])/1e6:.2f} MB/s")
    for l in lays:
        if (l, w) in bound: print(f"  verdicts {l}: {bound[(l, w)]}")
    def ratio(a, b):
        return f"{med[(a, w)]/med[(b, w)]:.3f}" if (a, w) in med and (b, w) in med and med[(b, w)] else "-"
    print(f"  journal/none {ratio('raid5+journal', 'raid5x4')}  ppl/none {ratio('raid5+ppl', 'raid5x4')}"
          f"  journal/ssd {ratio('raid5+journal', 'single/ssd')}"
          f"  write-back/ssd {ratio('raid5+journal-wb', 'single/ssd')}"
          f"  write-back/none {ratio('raid5+journal-wb', 'raid5x4')}")
PY
echo "raw tables: (removed with $d)"; cat $d/raid-1.txt | sed -n '/^layout/,$p'
