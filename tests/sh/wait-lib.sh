# wait-lib.sh — waiting on a condition instead of sleeping a guess, the one rule for the
# shell tests (lib.sh and peer-lib.sh source it): poll every 0.1 s, up to a limit.
# wait_until TENTHS CMD...: until CMD succeeds; 1 if it never does.
wait_until() {
    local n=$1 i
    shift
    for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done
    return 1
}

# wait_log FILE PATTERN — until FILE has a line matching PATTERN (60 s);
# 1 if it never does.
wait_log() { wait_until 600 grep -q "$2" "$1"; }
