# lib.sh — what the shell tests share: strict mode, $URAID checked, a
# scratch dir $tmp removed on exit after the registered cleanup hooks ran
# (`cleanup_hooks+=('CMD')`), `requires TOOL...` (exit 77, a skip, when one
# is missing), `fail MSG` and wait-lib.sh's waits.  Area helpers (nbd-lib.sh, luks-lib.sh)
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

# kill_mid_writes PID SOCK MEMBER FIO-OPTS...: a crash in the middle of
# writes.  fio writes at random (64k unless FIO-OPTS say --bs; --offset,
# --size) to the serve on SOCK for up to 30 s; PID, that serve, is killed
# with SIGKILL once the writes are under way (MEMBER's md superblock says
# active, however slowly fio starts on a loaded machine) and a second more
# of them has run.  Both are reaped and SOCK removed.
kill_mid_writes() {
    local pid=$1 sock=$2 member=$3 fio_pid
    shift 3
    fio --name=w --ioengine=nbd --uri="nbd+unix:///?socket=$sock" --rw=randwrite --bs=64k \
        --iodepth=8 "$@" --time_based --runtime=30 --output=/dev/null >/dev/null 2>&1 &
    fio_pid=$!
    for _ in $(seq 600); do
        mdadm --examine "$member" 2>/dev/null | grep -q "State : active" && break
        sleep 0.1
    done
    sleep 1
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null || true
    wait "$fio_pid" 2>/dev/null || true
    rm -f "$sock"
}

. "$(dirname "${BASH_SOURCE[0]}")/wait-lib.sh"   # wait_until, wait_log
