#!/bin/bash
# test.sh — run the whole test suite on the sanitizer build and print the
# closing line "N passed, N failed, N skipped".  Extra arguments go to
# `meson test` (e.g. a test name, or --suite unit; then the kernel tests that a whole
# run batches, suite peer-single, run alone too).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-test}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# A whole run leaves out the suite peer-single: those kernel tests run inside the
# peer-batch-* tests (tests/meson.build), sharing VM boots; named, they run alone.
[ $# -gt 0 ] || set -- --no-suite peer-single
meson test -C "$build" --print-errorlogs --num-processes 2 "$@"
rc=$?

python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, os, sys
passed = failed = skipped = 0
if not os.path.exists(sys.argv[1]):
    print("no test log: the build failed")
    print("0 passed, 1 failed")
    sys.exit(0)
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        passed += 1
    elif r == "SKIP":
        skipped += 1
    else:
        failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $rc
