#!/bin/bash
# bench-timebased.sh — --time-based (fio's time_based) is accepted, the run
# reports a result, and both the reproduce line and the JSON's cmdline
# carry the option, so a rerun is time-based too.  (How long the run
# lasts is not asserted: no test here measures time.)
set -euo pipefail
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
. "$SRCDIR/tests/sh/bench-lib.sh"
bench_scratch

"$URAID" bench --target vol --members null --layout single --workload write --size 1M \
    --reps 1 --runtime 0.3s --time-based --no-ceilings --json "$scratch/out.json" \
    >"$scratch/table.txt"
grep -q '^reproduce: uraid bench .* --time-based' "$scratch/table.txt"
python3 - "$scratch/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert " --time-based" in d["cmdline"], d["cmdline"]
assert d["results"][0]["bw_bytes"] > 0
PY
