#!/bin/bash
# bench-verdict.sh — a real run's rows carry a verdict that follows from
# their own figures: the ideal is the lowest ceiling measured, the
# efficiency is the row over the ideal, and the bound names that ceiling
# when the row reaches BENCH_EXPLAINED (0.80) of it, else "cpu" or "uraid
# itself".  Which ceiling is lowest is a property of the stack, not of the
# machine's speed: a 20 MB/s disk model beside RAM binds a mirror's writes
# and a stripe ("disks"); LUKS over a null member has the cipher as its
# only ceiling.  Whether a row reaches its ceiling on a loaded machine is
# a measurement, so it is checked for consistency only, never for a speed
# (the decision itself, with exact numbers: tests/unit/test_bench.c).
set -euo pipefail
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
. "$SRCDIR/tests/sh/bench-lib.sh"
bench_scratch

check() { # LOWEST JSON: every row's lowest ceiling is LOWEST, its verdict follows
    python3 - "$1" "$2" <<'PY'
import json, sys
want, rows = sys.argv[1], json.load(open(sys.argv[2]))["results"]
assert rows, "no rows"
for r in rows:
    where = f"{r['layout']} {r['workload']}"
    ceil = {k: v for k, v in r["ceilings"].items()
            if k in ("disks", "cipher", "transport", "journal") and v > 0}
    lowest = min(ceil, key=ceil.get)
    if lowest != want:
        sys.exit(f"{where}: lowest ceiling is {lowest} ({ceil}), expected {want}")
    if abs(r["ideal"] - ceil[lowest]) > 1e-6 * ceil[lowest]:
        sys.exit(f"{where}: ideal {r['ideal']} is not the lowest ceiling {ceil[lowest]}")
    eff = r["bw_bytes"] / r["ideal"]
    if abs(r["efficiency"] - eff) > 1e-6 * eff:
        sys.exit(f"{where}: efficiency {r['efficiency']} is not bw / ideal = {eff}")
    allowed = {want} if eff >= 0.80 else {"cpu", "uraid itself"}
    if r["bound"] not in allowed:
        sys.exit(f"{where}: bound {r['bound']!r} at efficiency {eff:.2f}, expected one of {allowed}")
    print(f"ok: {where}: lowest ceiling {lowest}, efficiency {eff:.2f}, bound {r['bound']}")
PY
}

run() { # LOWEST ARGS...
    local want=$1
    shift
    "$URAID" bench --target vol --size 32M --workload write --json "$scratch/out.json" "$@" >/dev/null
    check "$want" "$scratch/out.json"
}

run disks --members mem,sim:20M --layout raid1,raid0x2 --runtime 0.5s --reps 1
run cipher --members null --layout luks --runtime 0.2s --reps 3
