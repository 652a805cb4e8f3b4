#!/bin/bash
# bench-timebased.sh — --time-based (fio's time_based) makes a repetition
# run for the whole --runtime: one pass of a 1 MiB null volume takes
# microseconds, yet the run lasts at least the 0.3 s asked for, and the
# reproduce line carries the option.
set -euo pipefail
command -v python3 >/dev/null || exit 77
. "$SRCDIR/tests/sh/bench-lib.sh"
bench_scratch

"$URAID" bench --target vol --members null --layout single --workload write --size 1M \
    --reps 1 --runtime 0.3s --time-based --no-ceilings --json "$scratch/out.json" \
    >"$scratch/table.txt"
grep -q '^reproduce: uraid bench .* --time-based' "$scratch/table.txt"
python3 - "$scratch/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["seconds"] >= 0.3, d["seconds"]
assert d["results"][0]["bw_bytes"] > 0
PY
