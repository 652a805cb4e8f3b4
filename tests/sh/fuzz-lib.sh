# fuzz-lib.sh — what the libFuzzer tests share (nbd-fuzz.sh, format-fuzz.sh).
#
# fuzz_init: $cc (FUZZ_CC, default clang; skip, 77, without it or without
#   its libFuzzer runtime, libclang-rt-NN-dev), $tmp (a scratch dir removed
#   at exit), $src (the sources), $fuzz_cflags (an instrumented build:
#   sources compiled straight from src/; warnings shown, not fatal: the
#   -Werror gate for src/ is the meson build), $art (where crashing inputs
#   go: FUZZ_ARTIFACTS, default in $tmp) and the sanitizers' options.
# fuzz_target NAME BIN CORPUS RUNS [OPTS...] [-- DIRS...]: run BIN over
#   every input of CORPUS once, then fuzz RUNS inputs from CORPUS (and
#   DIRS), new inputs going to the scratch dir, never the repo.  A budget
#   in executions, not seconds, so that a slow or loaded runner does the
#   same work as a fast one (FUZZ_RUNS=N sets every target's, FUZZ_SCALE=K
#   multiplies each target's by K, URAID_TEST_SEED_BASE=S is libFuzzer's
#   -seed; for long runs by hand FUZZ_SECONDS=N fuzzes each target for N
#   seconds instead).  A
#   crash, leak, sanitizer report or hang fails the test and keeps the
#   input (in $FUZZ_ARTIFACTS, or a /tmp/uraid-fuzz-crash.* dir it prints):
#   add it to the corpus as regress-NAME with the fix.
set -euo pipefail
: "${SRCDIR:?SRCDIR must point at the source root}"

fuzz_init() {
    cc=${FUZZ_CC:-clang}
    command -v "$cc" >/dev/null || { echo "SKIP: $cc not installed"; exit 77; }
    tmp=$(mktemp -d /tmp/uraid-fuzz.XXXXXX)
    trap 'rm -rf "$tmp"' EXIT
    echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
        >"$tmp/probe.c"
    if ! "$cc" -fsanitize=fuzzer "$tmp/probe.c" -o "$tmp/probe" 2>/dev/null; then
        echo "SKIP: $cc has no libFuzzer runtime (libclang-rt-*-dev)"
        exit 77
    fi
    src=$SRCDIR/src
    fuzz_cflags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wno-missing-field-initializers -I"$src")
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    art=${FUZZ_ARTIFACTS:-$tmp/artifacts}
    mkdir -p "$art"
}

# fuzz_fail LOG WHAT: show LOG's end, keep the inputs, fail.
fuzz_fail() {
    tail -60 "$1" >&2
    if [ -z "${FUZZ_ARTIFACTS:-}" ]; then
        local keep
        keep=$(mktemp -d /tmp/uraid-fuzz-crash.XXXXXX)
        cp "$art"/* "$keep"/ 2>/dev/null || true
        art=$keep
    fi
    echo "FAIL: $2; input(s) kept in $art:" >&2
    ls -l "$art" >&2
    exit 1
}

fuzz_target() {
    local name=$1 bin=$2 corpus=$3 runs=${FUZZ_RUNS:-$(($4 * ${FUZZ_SCALE:-1}))} opts=() dirs=()
    local budget
    shift 4
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && { shift; dirs=("$@"); }
    if ! "$bin" "${opts[@]}" "$corpus"/* >"$tmp/replay-$name.log" 2>&1; then
        fuzz_fail "$tmp/replay-$name.log" "a corpus input crashes $name"
    fi
    echo "$name: replayed $(ls "$corpus" | wc -l) corpus inputs"
    mkdir -p "$tmp/new-$name"
    budget=-runs="$runs"
    [ -z "${FUZZ_SECONDS:-}" ] || budget=-max_total_time="$FUZZ_SECONDS"
    [ -z "${URAID_TEST_SEED_BASE:-}" ] || budget+=" -seed=$URAID_TEST_SEED_BASE"
    # shellcheck disable=SC2086 # $budget: one or two options
    if ! "$bin" "${opts[@]}" $budget -artifact_prefix="$art/" \
        -print_final_stats=1 "$tmp/new-$name" "$corpus" "${dirs[@]}" >"$tmp/fuzz-$name.log" 2>&1; then
        fuzz_fail "$tmp/fuzz-$name.log" "fuzzing $name found a crash"
    fi
    grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$tmp/fuzz-$name.log" |
        sed "s/^/$name: /" || true
}
