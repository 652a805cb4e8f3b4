#!/bin/bash
# soak.sh — run randomized tests over many more seeds than CI does
# (docs/testing.md, "Soaks"), at nice 19, each run's CPU seconds and
# result one line in the log.
#   scripts/soak.sh [-b BUILD] [-l LOG] [-o FIRST] ROUNDS TEST[:SEEDS]...
# runs each TEST (a unit test's name, as test_crash, or a shell test's,
# as crash-serve or soak-serve) ROUNDS times, round k (from FIRST, default
# 1) with URAID_TEST_SEED_BASE=k*1000 (no two rounds share a seed) and,
# where :SEEDS is given, URAID_TEST_SEEDS=SEEDS.  A failing run keeps its
# output in LOG.d/TEST-BASE.out; the exit status is 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
build=build-test log=/tmp/uraid-soak.log first=1
while getopts b:l:o: o; do
    case $o in
    b) build=$OPTARG ;;
    l) log=$OPTARG ;;
    o) first=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { sed -n '2,11p' "$0"; exit 2; }
rounds=$1
shift
mkdir -p "$log.d"
export URAID=$PWD/$build/src/uraid SRCDIR=$PWD BUILDDIR=$PWD/$build
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
bad=0
for k in $(seq "$first" $((first + rounds - 1))); do
    for spec in "$@"; do
        t=${spec%%:*} seeds=
        [ "$spec" = "$t" ] || seeds=${spec#*:}
        case $t in
        test_*) cmd=("$build/tests/$t") ;;
        *) cmd=(tests/sh/"$t".sh) ;;
        esac
        out=$log.d/$t-$((k * 1000)).out
        start=$(date +%s)
        env URAID_TEST_SEED_BASE=$((k * 1000)) ${seeds:+URAID_TEST_SEEDS=$seeds} \
            /usr/bin/time -f "%U %S" -o "$out.time" nice -n 19 "${cmd[@]}" >"$out" 2>&1
        rc=$?
        cpu=$(awk '{print $1 + $2}' "$out.time" 2>/dev/null)
        echo "$(date -u +%H:%M:%S) $t base=$((k * 1000)) seeds=${seeds:-ci} rc=$rc cpu_s=$cpu wall_s=$(($(date +%s) - start))" |
            tee -a "$log"
        if [ "$rc" = 0 ] || [ "$rc" = 77 ]; then
            rm -f "$out" "$out.time"
        else
            bad=1
        fi
    done
done
exit $bad
