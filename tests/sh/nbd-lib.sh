# nbd-lib.sh — helpers the nbd-*.sh tests source: lib.sh's scratch dir,
# `requires` and `fail`, and `start_server SOCK ARGS...` that runs
# `uraid serve -f --socket SOCK ARGS` in the background and waits for the
# socket; every server started is stopped on exit.
lib_scratch_name=nbdtest
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

server_pids=()
stop_all_servers() {
    for p in "${server_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${server_pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
cleanup_hooks+=(stop_all_servers)

wait_socket() {
    for _ in $(seq 200); do [ -S "$1" ] && return 0; sleep 0.05; done
    echo "FAIL: socket $1 never appeared" >&2; return 1
}

# detail_until_gone CTL PATTERN — `uraid detail CTL` every 0.1 s until it
# no longer shows PATTERN (a reshape, a rebuild); returns 1 if it still
# does after 60 s.  $out is what it said last, $seen how many looks showed
# PATTERN (the caller declares them local where it must).
detail_until_gone() {
    seen=0
    for _ in $(seq 600); do
        out=$("$URAID" detail "$1") || fail "detail $1: $out"
        grep -q "$2" <<<"$out" || return 0
        seen=$((seen + 1))
        sleep 0.1
    done
    return 1
}

# start_server SOCK ARGS... — sets $server_pid
start_server() {
    local sock=$1; shift
    "$URAID" serve -f --socket "$sock" "$@" &
    server_pid=$!
    server_pids+=("$server_pid")
    wait_socket "$sock"
}

# stop_server PID — SIGTERM, and the exit status must be 0
stop_server() {
    kill -TERM "$1"
    local rc=0
    wait "$1" || rc=$?
    [ "$rc" = 0 ] || { echo "FAIL: server exited with $rc after SIGTERM" >&2; return 1; }
}

