#!/bin/bash
# bench-study.sh — `--study 000` prints the post's figures beside ours for
# every row of seed 000's summary (on RAM members, so it takes seconds).
set -euo pipefail
. "$SRCDIR/tests/sh/bench-lib.sh"
bench_scratch

"$URAID" bench --study 000 --quick --runtime 0.05s --members mem --workload dd \
    >"$scratch/out.txt"
grep -q '^study 000: ' "$scratch/out.txt"
# The four raw rows, each with the post's and our normalised figures.
for row in 'single disk / raw' 'single disk + softraid crypto / raw' \
           '2 disk softraid RAID1 / raw' '2 disk softraid RAID1 + softraid crypto / raw'; do
    line=$(grep -F -- "$row" "$scratch/out.txt")
    # post write, post read, ours write, ours read: four numbers.
    nums=$(sed "s|^$row||" <<<"$line" | grep -oE '[0-9]+\.[0-9]{2}' | wc -l)
    [ "$nums" -ge 4 ] || { echo "row '$row': $line" >&2; exit 1; }
done
