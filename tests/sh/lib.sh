# lib.sh — what the shell tests share: strict mode, $URAID checked, a
# scratch dir $tmp removed on exit after the registered cleanup hooks ran
# (`cleanup_hooks+=('CMD')`), `requires TOOL...` (exit 77, a skip, when one
# is missing) and `fail MSG`.  Area helpers (nbd-lib.sh, luks-lib.sh)
# source it and add their own.
set -euo pipefail
: "${URAID:?URAID must point at the uraid binary}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

tmp=$(mktemp -d "/tmp/uraid-${lib_scratch_name:-test}.XXXXXX")
cleanup_hooks=()
cleanup() {
    for h in "${cleanup_hooks[@]}"; do eval "$h" || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT

requires() {
    for t in "$@"; do
        command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
    done
}

fail() { echo "FAIL: $*" >&2; exit 1; }
