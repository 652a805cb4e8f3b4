#!/bin/bash
# bench-verdict.sh — the verdict names the ceiling that binds: one member
# deliberately slower than the other (a 20 MB/s disk model beside RAM)
# binds a mirror's writes and a stripe ("disks"); LUKS over null members
# is bound by the cipher.  In process, so only the stack is measured; the
# margins are wide (the model is ~100x slower than RAM; the cipher stack is
# its own ceiling).  Figures measured on a shared machine can be disturbed
# by other load between the ceiling and the row, so a case passes if one
# of three attempts gives the expected verdict: it fails only when the
# verdict is wrong every time.
set -euo pipefail
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
. "$SRCDIR/tests/sh/bench-lib.sh"
bench_scratch

check() { # EXPECTED JSON: every row's bound is EXPECTED
    python3 - "$1" "$2" <<'PY'
import json, sys
want, rows = sys.argv[1], json.load(open(sys.argv[2]))["results"]
bad = [(r["layout"], r["workload"], r.get("bound"), r.get("efficiency"))
       for r in rows if r.get("bound") != want]
if bad:
    print(f"expected '{want}', got: {bad}", file=sys.stderr)
    sys.exit(1)
PY
}

attempt() { # EXPECTED ARGS...
    local want=$1 n
    shift
    for n in 1 2 3; do
        "$URAID" bench --target vol --size 32M --workload write --json "$scratch/out.json" \
            "$@" >/dev/null
        check "$want" "$scratch/out.json" && return 0
    done
    return 1
}

attempt disks --members mem,sim:20M --layout raid1,raid0x2 --runtime 0.5s --reps 1
attempt cipher --members null --layout luks --runtime 0.2s --reps 3
