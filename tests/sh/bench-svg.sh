#!/bin/bash
# bench-svg.sh — the SVG chart of a short run renders to a non-empty PNG.
set -euo pipefail
command -v rsvg-convert >/dev/null || { echo "skip: rsvg-convert missing (librsvg2-bin)"; exit 77; }
. "$SRCDIR/tests/sh/bench-lib.sh"
bench_scratch

"$URAID" bench --quick --runtime 0.05s --target vol --members mem \
    --layout single,raid0x2 --workload dd --svg "$scratch/out.svg" >/dev/null
rsvg-convert -o "$scratch/out.png" "$scratch/out.svg"
[ -s "$scratch/out.png" ]
