#!/bin/bash
# nbd-fuzz.sh — build the libFuzzer target for the NBD handshake and request
# parser (tests/fuzz/fuzz_nbd.c) with clang, replay every seed and
# regression input in tests/fuzz/corpus/ once, then fuzz 50000 inputs (about
# 14 s on the CI runner; FUZZ_RUNS=N, or FUZZ_SECONDS=N by hand).  Any crash, leak, sanitizer report or hang
# fails the test and leaves the input under $FUZZ_ARTIFACTS (default: the
# /tmp/uraid-fuzz-crash.* dir it prints) — add it to the corpus as
# regress-NAME together with the fix.
#
# The harness brings its own in-memory vol, so only the nbd module and
# core/vol.c, core/log.c and core/exec.c (streamed writes) are linked in.
# The shared steps: fuzz-lib.sh.
. "$(dirname "$0")/fuzz-lib.sh"
fuzz_init

"$cc" "${fuzz_cflags[@]}" "$SRCDIR/tests/fuzz/fuzz_nbd.c" \
    "$src"/nbd/*.c \
    "$src"/core/vol.c "$src"/core/log.c "$src"/core/exec.c \
    $(pkg-config --cflags --libs gnutls) -pthread -o "$tmp/fuzz_nbd"

fuzz_target fuzz_nbd "$tmp/fuzz_nbd" "$SRCDIR/tests/fuzz/corpus" 50000 \
    -rss_limit_mb=1024 -timeout=10
echo "PASS"
