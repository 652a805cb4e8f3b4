#!/bin/bash
# bench-json.sh — a short bench run (served, over RAM) finishes and its
# JSON validates against bench/schema.json; the CSV has a row per result.
set -euo pipefail
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
. "$SRCDIR/tests/sh/bench-lib.sh"
bench_scratch

"$URAID" bench --quick --runtime 0.05s --members mem --layout single,raid1,luks \
    --workload write,read,fw,randread-qd32 --json "$scratch/out.json" \
    --csv "$scratch/out.csv" >"$scratch/table.txt"
bench_validate "$SRCDIR/bench/schema.json" "$scratch/out.json"
# 3 layouts x 4 workloads, every row measured (none skipped).
python3 - "$scratch/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["results"]
assert len(rows) == 12, len(rows)
skipped = [r for r in rows if r["skipped"]]
assert not skipped, skipped
assert all(r["bw_bytes"] > 0 for r in rows)
assert any("bw_bytes_fsync" in r for r in rows if r["workload"] == "fw")
PY
[ "$(wc -l <"$scratch/out.csv")" -eq 13 ]
grep -q '^reproduce: uraid bench ' "$scratch/table.txt"
