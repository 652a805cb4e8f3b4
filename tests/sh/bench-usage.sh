#!/bin/bash
# bench-usage.sh — unknown layouts, member kinds, workloads, studies and
# bad option values are usage errors: exit 2 with a message naming them.
set -euo pipefail
. "$SRCDIR/tests/sh/bench-lib.sh"
bench_scratch

expect_usage() { # WORD ARGS...: exit 2, and stderr names WORD
    local word=$1 rc=0
    shift
    "$URAID" bench "$@" >/dev/null 2>"$scratch/err" || rc=$?
    if [ $rc -ne 2 ] || ! grep -q -- "$word" "$scratch/err"; then
        echo "uraid bench $*: exit $rc, stderr:" >&2
        cat "$scratch/err" >&2
        exit 1
    fi
}
expect_usage raid7 --layout single,raid7
expect_usage floppy --members floppy
expect_usage dd-sideways --workload dd-sideways
expect_usage 042 --study 042
expect_usage size --size lots
expect_usage target --target carrier-pigeon
"$URAID" bench --help | grep -q 'raid1+luks'
