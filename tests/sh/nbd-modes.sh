#!/bin/bash
# nbd-modes.sh — the ways `uraid serve` runs: --readonly refusing writes,
# --direct (O_DIRECT file member),
# --run with $uri and its exit status, --stdio, systemd socket activation
# (nbdinfo's [ CMD ]), TCP with --port, and daemon mode with --pid-file
# and a clean exit on SIGTERM.
. "$(dirname "$0")/nbd-lib.sh"
requires nbdinfo qemu-io nbdcopy

# --readonly: flagged read-only, writes refused, data unchanged.
head -c 4M /dev/urandom > "$tmp/ro.img"
cp "$tmp/ro.img" "$tmp/ro.orig"
s=$tmp/ro.sock
start_server "$s" --readonly "$tmp/ro.img"
uri="nbd+unix:///?socket=$s"
nbdinfo "$uri" | grep -q "is_read_only: true" || fail "--readonly not advertised"
if qemu-io -f raw "$uri" -c 'write -P 1 0 4k' 2>&1 | grep -q "wrote"; then fail "write accepted on --readonly"; fi
nbdcopy "$uri" "$tmp/ro.back"
cmp "$tmp/ro.orig" "$tmp/ro.back" || fail "readonly read-back"
stop_server "$server_pid"
cmp "$tmp/ro.orig" "$tmp/ro.img" || fail "readonly export was modified"

# --direct: O_DIRECT file member, 512-byte minimum block size, data intact.
truncate -s 8M "$tmp/dio.img"
head -c 8M /dev/urandom > "$tmp/dio.src"
if "$URAID" serve --direct --run 'true' "$tmp/dio.img" 2>/dev/null; then
    out=$("$URAID" serve --direct --run 'nbdinfo "$uri"' "$tmp/dio.img")
    grep -q "block_size_minimum: 512" <<<"$out" || fail "--direct block size"
    "$URAID" serve --direct --run "nbdcopy '$tmp/dio.src' \"\$uri\"" "$tmp/dio.img"
    cmp "$tmp/dio.src" "$tmp/dio.img" || fail "--direct round trip"
fi

# --run: $uri is set, the server stops with the command, its status is ours.
out=$("$URAID" serve --run 'nbdinfo --size "$uri"' mem:8M)
[ "$out" = 8388608 ] || fail "--run output '$out'"
rc=0; "$URAID" serve --run 'exit 7' mem:8M || rc=$?
[ "$rc" = 7 ] || fail "--run exit status $rc, want 7"
out=$("$URAID" serve --export-name 'a b' --run 'echo "$uri"' mem:8M)
case $out in "nbd+unix:///a%20b?socket="*) ;; *) fail "--run uri '$out'";; esac

# --stdio and socket activation.
[ "$(nbdinfo --size -- [ "$URAID" serve mem:16M ])" = 16777216 ] || fail "socket activation"
if command -v nbdsh >/dev/null && /usr/bin/python3 -c 'import nbd' 2>/dev/null; then
    out=$(/usr/bin/python3 - "$URAID" <<'PY'
import nbd, sys
h = nbd.NBD()
h.connect_command([sys.argv[1], "serve", "--stdio", "mem:1M"])
h.pwrite(b"\x42" * 4096, 8192)
assert h.pread(4096, 8192) == b"\x42" * 4096
print(h.get_size())
h.shutdown()
PY
)
    [ "$out" = 1048576 ] || fail "--stdio '$out'"
fi

# TCP on a port the kernel picks, reported through $uri.
out=$("$URAID" serve --port 0 --run 'nbdinfo --size "$uri"' mem:2M)
[ "$out" = 2097152 ] || fail "tcp --port 0 '$out'"

# Daemon: returns once listening; pid file; SIGTERM ends it cleanly and
# removes the socket and the pid file.
s=$tmp/d.sock
"$URAID" serve --socket "$s" --pid-file "$tmp/pid" mem:4M
[ -S "$s" ] || fail "daemon returned before listening"
pid=$(cat "$tmp/pid")
server_pids+=("$pid")
[ "$(nbdinfo --size "nbd+unix:///?socket=$s")" = 4194304 ] || fail "daemon size"
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$pid" 2>/dev/null; then fail "daemon did not exit on SIGTERM"; fi
[ ! -e "$s" ] || fail "socket left behind"
[ ! -e "$tmp/pid" ] || fail "pid file left behind"

# Usage errors.
rc=0; "$URAID" serve mem:1M 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "no listener must be a usage error, got $rc"
rc=0; "$URAID" serve --stdio --socket x mem:1M 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "--stdio --socket must be a usage error, got $rc"
"$URAID" serve --help | grep -q -- "--export-name" || fail "--help"
echo PASS
