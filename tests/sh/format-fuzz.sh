#!/bin/bash
# format-fuzz.sh — build the libFuzzer targets for the on-disk formats a
# foreign disk brings (tests/fuzz/fuzz_md.c: md v1.2 superblocks and
# read-only assembly; tests/fuzz/fuzz_luks.c: LUKS1/LUKS2 headers, dump,
# unlock, payload) with clang, replay their seed and regression inputs
# (tests/fuzz/corpus-md/, corpus-luks/) once, then fuzz each for a
# bounded time (FUZZ_SECONDS, default 25 each).  Any crash, leak,
# sanitizer report, hang or write to a member fails the test and leaves
# the input under $FUZZ_ARTIFACTS (default: the /tmp/uraid-fuzz-crash.*
# dir it prints) — add it to the corpus as regress-NAME with the fix.
#
# Like nbd-fuzz.sh the recipe compiles the sources straight from src/.
# disc/crypt.c (needed by the LUKS payload) uses GCC vector builtins clang
# does not have, so it is compiled by gcc without instrumentation and
# linked in.  With cryptsetup installed, LUKS seeds carrying their whole
# key material (too big to commit) are made in the scratch dir, so that
# the fuzzer also starts from headers the passphrase unlocks.
set -euo pipefail
: "${SRCDIR:?SRCDIR must point at the source root}"

cc=${FUZZ_CC:-clang}
command -v "$cc" >/dev/null || { echo "SKIP: $cc not installed"; exit 77; }
gcc=${FUZZ_GCC:-gcc}
command -v "$gcc" >/dev/null || { echo "SKIP: $gcc not installed (for disc/crypt.c)"; exit 77; }
tmp=$(mktemp -d /tmp/uraid-ffuzz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
    >"$tmp/probe.c"
if ! "$cc" -fsanitize=fuzzer "$tmp/probe.c" -o "$tmp/probe" 2>/dev/null; then
    echo "SKIP: $cc has no libFuzzer runtime (libclang-rt-*-dev)"
    exit 77
fi

src=$SRCDIR/src
fz=$SRCDIR/tests/fuzz
cflags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
    -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wno-missing-field-initializers -I"$src")
disc=()
for f in "$src"/disc/*.c; do
    [ "$(basename "$f")" = crypt.c ] || disc+=("$f")
done
# The two targets build side by side.
"$cc" "${cflags[@]}" "$fz/fuzz_md.c" "$src"/format/md*.c \
    "${disc[@]}" "$src"/core/*.c \
    $(pkg-config --cflags --libs libcrypto) -pthread -lm -o "$tmp/fuzz_md" &
md_build=$!
"$gcc" -c -O1 -g -std=gnu11 -D_GNU_SOURCE -I"$src" "$src"/disc/crypt.c -o "$tmp/crypt.o"
"$cc" "${cflags[@]}" "$fz/fuzz_luks.c" "$src"/format/luks*.c "$src"/disc/slice.c \
    "$src"/core/*.c "$tmp/crypt.o" \
    $(pkg-config --cflags --libs libcrypto libargon2 json-c) -pthread -lm -o "$tmp/fuzz_luks"
wait "$md_build"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
art=${FUZZ_ARTIFACTS:-$tmp/artifacts}
mkdir -p "$art"

extra_luks=()
if command -v cryptsetup >/dev/null && command -v python3 >/dev/null; then
    if CORPUS_OUT="$tmp/gen" LUKS_ONLY=1 python3 "$fz/make_corpus_formats.py" \
        "${URAID:-uraid}" --full "$tmp/full" >/dev/null 2>&1; then
        extra_luks=("$tmp/full")
        echo "fuzz_luks: $(ls "$tmp/full" | wc -l) unlockable seeds made with cryptsetup"
    fi
fi

fail() {
    tail -60 "$1" >&2
    if [ -z "${FUZZ_ARTIFACTS:-}" ]; then
        keep=$(mktemp -d /tmp/uraid-fuzz-crash.XXXXXX)
        cp "$art"/* "$keep"/ 2>/dev/null || true
        art=$keep
    fi
    echo "FAIL: $2; input(s) kept in $art:" >&2
    ls -l "$art" >&2
    exit 1
}

secs=${FUZZ_SECONDS:-25}
for t in md luks; do
    corpus=$fz/corpus-$t
    opts=(-rss_limit_mb=2048 -timeout=10)
    [ "$t" = luks ] && opts+=(-dict="$fz/luks.dict")
    # 1. Every committed seed and regression input, once.
    if ! "$tmp/fuzz_$t" "${opts[@]}" "$corpus"/* >"$tmp/replay-$t.log" 2>&1; then
        fail "$tmp/replay-$t.log" "a corpus-$t input crashes fuzz_$t"
    fi
    echo "fuzz_$t: replayed $(ls "$corpus" | wc -l) corpus inputs"
    # 2. Bounded fuzzing; new inputs go to a scratch dir, never the repo.
    mkdir -p "$tmp/new-$t"
    more=()
    [ "$t" = luks ] && more=("${extra_luks[@]}")
    if ! "$tmp/fuzz_$t" "${opts[@]}" -max_total_time="$secs" -artifact_prefix="$art/" \
        -print_final_stats=1 "$tmp/new-$t" "$corpus" "${more[@]}" >"$tmp/fuzz-$t.log" 2>&1; then
        fail "$tmp/fuzz-$t.log" "fuzzing fuzz_$t found a crash"
    fi
    grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$tmp/fuzz-$t.log" |
        sed "s/^/fuzz_$t: /" || true
done
echo "PASS"
