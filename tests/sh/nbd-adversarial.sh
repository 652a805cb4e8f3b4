#!/bin/bash
# nbd-adversarial.sh — hostile clients against one running server, then a
# well-behaved client checks that the same server process still serves
# the data written before the abuse.  The clients are the raw-socket
# scripts in tests/adversarial/ (handshake abuse, request abuse, connection
# abuse, the connection cap, handshake floods, idle clients, buffer
# memory) and libnbd with strict mode off.  A crash,
# hang, sanitizer report, out-of-step reply or wrong error fails the test.
. "$(dirname "$0")/nbd-lib.sh"
requires python3 nbdcopy nbdinfo
adv=$SRCDIR/tests/adversarial
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the source tree
scratch=$((32 << 20)) # the scripts write only above this offset

alive() { kill -0 "$1" 2>/dev/null || fail "server $1 died ($2)"; }

# Server A takes the handshake, request and connection abuse.
a=$tmp/a.sock
start_server "$a" --handshake-timeout 2 --max-connections 64 mem:64M
pid_a=$server_pid
uri_a="nbd+unix:///?socket=$a"
head -c $((8 << 20)) /dev/urandom >"$tmp/before.img"
nbdcopy "$tmp/before.img" "$uri_a"

python3 "$adv/handshake_abuse.py" "$a" "$pid_a" || fail "handshake abuse"
alive "$pid_a" "handshake abuse"
python3 "$adv/request_abuse.py" "$a" "$pid_a" "$scratch" || fail "request abuse"
alive "$pid_a" "request abuse"
python3 "$adv/conn_abuse.py" "$a" "$pid_a" "$scratch" || fail "connection abuse"
alive "$pid_a" "connection abuse"

# libnbd with its own checks off (nbdsh's module, python3-libnbd).
nbdpy=
for py in python3 /usr/bin/python3; do
    if "$py" -c 'import nbd' 2>/dev/null; then nbdpy=$py; break; fi
done
if [ -n "$nbdpy" ]; then
    "$nbdpy" "$adv/strict_mode.py" "$uri_a" "$scratch" || fail "libnbd strict mode off"
    alive "$pid_a" "libnbd strict mode off"
else
    echo "note: python3-libnbd missing, libnbd strict-mode part not run"
fi

# Server B: a file opened with O_DIRECT advertises a 512-byte minimum
# block size, so misaligned requests are refused there.
truncate -s 16M "$tmp/b.img"
b=$tmp/b.sock
start_server "$b" --direct "$tmp/b.img"
pid_b=$server_pid
min=$(nbdinfo --json "nbd+unix:///?socket=$b" | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["exports"][0].get("block_size_minimum", 1))')
[ "$min" -gt 1 ] || echo "note: --direct export has no minimum block size here"
python3 "$adv/request_abuse.py" "$b" "$pid_b" $((8 << 20)) || fail "request abuse (block size $min)"
if [ -n "$nbdpy" ]; then
    "$nbdpy" "$adv/strict_mode.py" "nbd+unix:///?socket=$b" $((8 << 20)) ||
        fail "libnbd strict mode off (block size $min)"
fi
stop_server "$pid_b"

# Server C: a connection cap of 4.
c=$tmp/c.sock
start_server "$c" --handshake-timeout 2 --max-connections 4 mem:16M
pid_c=$server_pid
python3 "$adv/conn_cap.py" "$c" "$pid_c" 4 || fail "connection cap"
stop_server "$pid_c"

# Sockets in the handshake never lock a client out: 200 that connect and
# send nothing, then nbdinfo must be served (the oldest handshake makes
# room for a new client; established connections have their own cap).
e=$tmp/e.sock
start_server "$e" mem:16M
pid_e=$server_pid
python3 "$adv/hs_flood.py" "$e" "$pid_e" idle || fail "idle sockets locked a client out"
stop_server "$pid_e"

# --idle-timeout: established clients that go idle are closed, so as many
# as the cap cannot keep a new client out.
f=$tmp/f.sock
start_server "$f" --max-connections 2 --idle-timeout 1 mem:16M
pid_f=$server_pid
python3 "$adv/idle_timeout.py" "$f" "$pid_f" 2 || fail "idle timeout"
stop_server "$pid_f"

# One server-wide bound on payload buffers (--max-buffer-memory): 16
# connections that did 4 MiB reads and went idle, then 16 that do not read
# their replies, stay within it, and idle buffers are given back.
g=$tmp/g.sock
start_server "$g" --max-buffer-memory 64M mem:16M
pid_g=$server_pid
python3 "$adv/buf_memory.py" "$g" "$pid_g" 64 || fail "payload buffers beyond their bound"
stop_server "$pid_g"

# Server D: a client that stops reading its replies cannot hold the
# server's orderly stop hostage (SIGTERM must end it; exit status 0).
d=$tmp/d.sock
start_server "$d" mem:16M
pid_d=$server_pid
python3 "$adv/stuck_reader.py" "$d" hold >"$tmp/stuck.out" &
stuck=$!
for _ in $(seq 300); do grep -q READY "$tmp/stuck.out" && break; sleep 0.1; done
grep -q READY "$tmp/stuck.out" || fail "stuck client never got going"
kill -TERM "$pid_d"
for _ in $(seq 300); do kill -0 "$pid_d" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid_d" 2>/dev/null; then
    kill "$stuck"
    fail "server still running 30 s after SIGTERM with a client that does not read"
fi
rc=0; wait "$pid_d" || rc=$?
kill "$stuck" 2>/dev/null || true
wait "$stuck" 2>/dev/null || true
[ "$rc" = 0 ] || fail "server exited with $rc after SIGTERM (stuck client)"

# A client that pipelines maximum-size reads and reads no reply must not pin
# threads x block_max of server memory: a connection's share of the buffer
# pool (src/nbd/bufpool.c) bounds it.
python3 "$adv/stuck_reader.py" "$a" pin "$pid_a" || fail "memory pinned by unread replies"

# After all that, server A still serves what was written before.
alive "$pid_a" "before the final read-back"
nbdinfo "$uri_a" >/dev/null || fail "nbdinfo after the abuse"
nbdcopy "$uri_a" "$tmp/after.img"
cmp -n $((8 << 20)) "$tmp/before.img" "$tmp/after.img" || fail "data changed by the abuse"
stop_server "$pid_a"
echo "PASS"
