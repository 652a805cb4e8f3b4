#!/bin/bash
# nbd-fuzz.sh — build the libFuzzer target for the NBD handshake and request
# parser (tests/fuzz/fuzz_nbd.c) with clang, replay every seed and
# regression input in tests/fuzz/corpus/ once, then fuzz for a bounded time
# (FUZZ_SECONDS, default 30).  Any crash, leak, sanitizer report or hang
# fails the test and leaves the input under $FUZZ_ARTIFACTS (default: the
# /tmp/uraid-fuzz-crash.* dir it prints) — add it to the corpus as
# regress-NAME together with the fix.
#
# The recipe compiles the server's sources straight from src/ (no meson
# option needed): the harness brings its own in-memory vol, so only the
# nbd module and core/vol.c, core/log.c are linked in.  Warnings are shown,
# not fatal: the -Werror gate for src/ is the meson build, and this test
# should fail only for what the fuzzer finds.
set -euo pipefail
: "${SRCDIR:?SRCDIR must point at the source root}"

cc=${FUZZ_CC:-clang}
command -v "$cc" >/dev/null || { echo "SKIP: $cc not installed"; exit 77; }
tmp=$(mktemp -d /tmp/uraid-fuzz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# libFuzzer's runtime (libclang-rt-NN-dev) may be missing even with clang.
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
    >"$tmp/probe.c"
if ! "$cc" -fsanitize=fuzzer "$tmp/probe.c" -o "$tmp/probe" 2>/dev/null; then
    echo "SKIP: $cc has no libFuzzer runtime (libclang-rt-*-dev)"
    exit 77
fi

src=$SRCDIR/src
"$cc" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wshadow \
    -Wno-missing-field-initializers -I"$src" \
    "$SRCDIR/tests/fuzz/fuzz_nbd.c" \
    "$src"/nbd/conn.c "$src"/nbd/handshake.c "$src"/nbd/request.c \
    "$src"/nbd/server.c "$src"/nbd/tls.c "$src"/nbd/transmit.c \
    "$src"/core/vol.c "$src"/core/log.c \
    $(pkg-config --cflags --libs gnutls) -pthread -o "$tmp/fuzz_nbd"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
art=${FUZZ_ARTIFACTS:-$tmp/artifacts}
mkdir -p "$art" "$tmp/new"
corpus=$SRCDIR/tests/fuzz/corpus

# 1. Every committed seed and regression input, once.
if ! "$tmp/fuzz_nbd" -rss_limit_mb=1024 -timeout=10 "$corpus"/* >"$tmp/replay.log" 2>&1; then
    tail -40 "$tmp/replay.log" >&2
    echo "FAIL: a corpus input crashes the server" >&2
    exit 1
fi
echo "replayed $(ls "$corpus" | wc -l) corpus inputs"

# 2. Bounded fuzzing; new inputs go to a scratch dir, never the repo.
secs=${FUZZ_SECONDS:-30}
if ! "$tmp/fuzz_nbd" -max_total_time="$secs" -rss_limit_mb=1024 -timeout=10 \
    -artifact_prefix="$art/" -print_final_stats=1 "$tmp/new" "$corpus" >"$tmp/fuzz.log" 2>&1; then
    tail -60 "$tmp/fuzz.log" >&2
    if [ -z "${FUZZ_ARTIFACTS:-}" ]; then
        keep=$(mktemp -d /tmp/uraid-fuzz-crash.XXXXXX)
        cp "$art"/* "$keep"/ 2>/dev/null || true
        art=$keep
    fi
    echo "FAIL: fuzzing found a crash; input(s) kept in $art:" >&2
    ls -l "$art" >&2
    exit 1
fi
grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$tmp/fuzz.log" || true
echo "PASS"
