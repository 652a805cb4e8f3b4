#!/bin/bash
# progress.sh — long commands say how far they got: `uraid add` (offline),
# `uraid grow --add` and `uraid check --wait` on a pipe print plain lines,
# each with a percent, the bytes, a rate and the time left, at rising
# tenths, the last at 100.0% with the time it took; on a terminal (tmux)
# `uraid add` keeps one line, redrawn in place, that ends at 100.0%.
. "$(dirname "$0")/md-lib.sh"
requires tmux python3 nbdinfo

SIZE=40M

# plain CMD_OUTPUT_FILE WHAT: the progress lines are plain, rise, and end at 100%
plain() {
    python3 - "$1" "$2" <<'EOF2' || fail "$2: progress lines: $(cat "$1")"
import re, sys
lines = [l for l in open(sys.argv[1]) if re.search(r"\d+\.\d% \(", l)]
assert len(lines) >= 3, "too few lines"
assert all("\r" not in l and "\x1b" not in l for l in lines), "terminal codes"
pct = [float(re.search(r"(\d+\.\d)% \(", l).group(1)) for l in lines]
assert pct == sorted(pct) and pct[-1] == 100.0, pct
assert all(re.search(r"MiB/s, ETA \S+$", l.strip()) for l in lines[:-1]), lines
assert re.search(r"MiB/s, took \S+$", lines[-1].strip()), lines[-1]
EOF2
}

for i in 0 1 2 3; do truncate -s "$SIZE" "$tmp/m.$i"; done
"$URAID" create --level=1 --raid-devices=2 "$tmp/m.0" missing > /dev/null 2>&1 || fail create
"$URAID" add "$tmp/m.1" "$tmp/m.0" > "$tmp/add.out" 2>&1 || fail "add: $(cat "$tmp/add.out")"
plain "$tmp/add.out" add
"$URAID" grow --raid-devices 3 --add "$tmp/m.2" "$tmp/m.0" "$tmp/m.1" > "$tmp/grow.out" 2>&1 ||
    fail "grow: $(cat "$tmp/grow.out")"
plain "$tmp/grow.out" grow

# check --wait, on a running array (held to 20 MB/s, so that it shows a few)
start_server "$tmp/s.sock" --control "$tmp/c.ctl" --sync-speed-max 20M \
    "$tmp/m.0" "$tmp/m.1" "$tmp/m.2" 2> "$tmp/serve.log"
"$URAID" check --wait "$tmp/c.ctl" > "$tmp/check.out" 2>&1 || fail "check: $(cat "$tmp/check.out")"
plain "$tmp/check.out" "check --wait"
stop_server "$server_pid" || fail "server exit"

# a terminal: one line, redrawn
"$URAID" create --level=1 --raid-devices=2 --force "$tmp/m.0" missing > /dev/null 2>&1 || fail create2
sock=tmux-$$
cleanup_hooks+=("tmux -L $sock kill-server")
tmux -L "$sock" new-session -d -x 160 -y 40 "$URAID add $tmp/m.3 $tmp/m.0; echo DONE; sleep 30"
for _ in $(seq 100); do
    tmux -L "$sock" capture-pane -p > "$tmp/screen"
    grep -q DONE "$tmp/screen" && break
    sleep 0.2
done
grep -q DONE "$tmp/screen" || fail "tty: add did not end: $(cat "$tmp/screen")"
[ "$(grep -c '% (' "$tmp/screen")" = 1 ] || fail "tty: not one redrawn line: $(cat "$tmp/screen")"
grep -q '100.0% (.*took' "$tmp/screen" || fail "tty: the line does not end at 100%: $(cat "$tmp/screen")"
echo "ok: plain progress lines for add, grow and check --wait; one redrawn line on a terminal"
