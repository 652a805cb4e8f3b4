#!/bin/bash
# bench-journal.sh — `uraid bench` serves its md-journal and PPL layouts
# (issue 15): a tiny run of raid5+journal, raid5+journal-wb (served
# --journal-mode=write-back) and raid5+ppl over RAM members
# measures every row through `uraid serve` (none skipped, none in process),
# the journal rows carry the journal device's ceiling (the ssd model) and
# the PPL rows none, and the JSON validates.  Beside RAM members the ssd
# model's flush after each write is the lowest ceiling of randwrite-sync,
# a property of the stack (on a quiet machine), and the verdict must name
# the lowest ceiling (or, short of it, "cpu" / "uraid itself"); no speed is
# asserted.
set -euo pipefail
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
. "$SRCDIR/tests/sh/bench-lib.sh"
bench_scratch

"$URAID" bench --size 16M --runtime 0.1s --reps 1 --members mem \
    --layout raid5+journal,raid5+journal-wb,raid5+ppl --workload randwrite-sync,write \
    --json "$scratch/out.json" >"$scratch/table.txt" 2>"$scratch/err.txt" ||
    { cat "$scratch/err.txt"; exit 1; }
bench_validate "$SRCDIR/bench/schema.json" "$scratch/out.json"
python3 - "$scratch/out.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
assert len(rows) == 6, f"{len(rows)} rows, expected 3 layouts x 2 workloads"
for r in rows:
    where = f"{r['layout']} {r['workload']}"
    assert not r["skipped"], f"{where}: skipped: {r['skipped']}"
    assert r["target"] == "nbd", f"{where}: target {r['target']}, expected the server"
    assert r["bw_bytes"] > 0, f"{where}: no bytes"
    j = r["ceilings"]["journal"]
    if r["layout"] in ("raid5+journal", "raid5+journal-wb"):
        assert j > 0, f"{where}: no journal ceiling"
    else:
        assert j == 0, f"{where}: a journal ceiling ({j}) without a journal"
# Which ceiling is lowest depends on the machine (the journal's is a
# model's flush cost, the transport's the CPU, slower when loaded); the
# verdict must follow whichever it is.
r = next(r for r in rows if r["layout"] == "raid5+journal" and r["workload"] == "randwrite-sync")
ceil = {k: v for k, v in r["ceilings"].items()
        if k in ("disks", "cipher", "transport", "journal") and v > 0}
lowest = min(ceil, key=ceil.get)
allowed = {lowest} if r["efficiency"] >= 0.80 else {"cpu", "uraid itself"}
assert r["bound"] in allowed, f"bound {r['bound']!r} at {r['efficiency']:.2f} ({ceil}), expected {allowed}"
print(f"ok: raid5+journal randwrite-sync: lowest ceiling {lowest}, bound {r['bound']}, efficiency {r['efficiency']:.2f}")
PY
