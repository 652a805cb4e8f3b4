#!/bin/bash
# nbd-proto.sh — the server against a raw-socket client that breaks the
# rules: unknown and oversized options (consumed, answered, session goes
# on), unknown export names, NO_ZEROES, oversized and invalid requests with
# their payload consumed, bad magic ending only that connection, a client
# leaving mid-write, and the connection cap.
. "$(dirname "$0")/nbd-lib.sh"
requires python3

s=$tmp/s.sock
start_server "$s" --export-name disk --max-connections 3 mem:64M
python3 - "$s" <<'PY'
import socket, struct, sys, time

path = sys.argv[1]
IHAVEOPT = 0x49484156454F5054
REP_MAGIC = 0x3e889045565a9
failed = []

def check(cond, what):
    if not cond:
        failed.append(what)
        print("FAIL:", what, file=sys.stderr)

def recvn(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return b

def connect(cflags=3):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    magic, opt, hflags = struct.unpack(">QQH", recvn(s, 18))
    assert magic == 0x4e42444d41474943 and opt == IHAVEOPT and hflags == 3
    s.sendall(struct.pack(">I", cflags))
    return s


# The cap is 3 and connections that just ended may still hold a slot for
# a moment (the server notices the close asynchronously): a new one may
# be refused meanwhile, so the test's own connections retry.
def connect_retry(cflags=3):
    for _ in range(100):
        try:
            return connect(cflags)
        except (EOFError, ConnectionResetError):
            time.sleep(0.05)
    raise EOFError

def option(s, opt, data=b""):
    s.sendall(struct.pack(">QII", IHAVEOPT, opt, len(data)) + data)

def reply(s):
    magic, opt, typ, ln = struct.unpack(">QIII", recvn(s, 20))
    assert magic == REP_MAGIC
    return opt, typ, recvn(s, ln)

def go(s, name=b""):
    option(s, 7, struct.pack(">I", len(name)) + name + struct.pack(">H", 0))
    while True:
        opt, typ, data = reply(s)
        if typ == 1 or typ & 0x80000000:
            return typ

def request(s, typ, off, ln, flags=0, cookie=1, payload=b""):
    s.sendall(struct.pack(">IHHQQI", 0x25609513, flags, typ, cookie, off, ln) + payload)

def simple_reply(s):
    magic, err, cookie = struct.unpack(">IIQ", recvn(s, 16))
    assert magic == 0x67446698
    return err, cookie

# Unknown option with a large payload: consumed, ERR_UNSUP, session goes on.
s = connect()
option(s, 200, b"\0" * 200000)
check(reply(s)[1] == 0x80000001, "unknown option -> ERR_UNSUP")
# Oversized known option: ERR_TOO_BIG, still in step.
option(s, 6, b"\0" * 70000)
check(reply(s)[1] == 0x80000009, "oversized INFO -> ERR_TOO_BIG")
# Malformed INFO (length mismatch): ERR_INVALID.
option(s, 6, struct.pack(">I", 100) + b"x")
check(reply(s)[1] == 0x80000003, "malformed INFO -> ERR_INVALID")
# LIST with data: ERR_INVALID; LIST proper: SERVER + ACK.
option(s, 3, b"x")
check(reply(s)[1] == 0x80000003, "LIST with data -> ERR_INVALID")
option(s, 3)
opt, typ, data = reply(s)
# The name, then the description (the vol's name) as text for people.
check(typ == 2 and data[:8] == struct.pack(">I", 4) + b"disk", "LIST names the export")
check(data[8:] == b"mem:64M", "LIST describes the export (got %r)" % data[8:])
check(reply(s)[1] == 1, "LIST ends with ACK")
# Unknown export name: ERR_UNKNOWN; then GO on the real one.
check(go(s, b"nope") == 0x80000006, "unknown export -> ERR_UNKNOWN")
check(go(s, b"disk") == 1, "GO disk")

# Transmission: unknown command, too-large write (payload consumed), bad
# flags, out of range; the connection stays usable.
request(s, 42, 0, 0, cookie=7)
check(simple_reply(s) == (22, 7), "unknown command -> EINVAL")
big = 33 * 1024 * 1024
request(s, 1, 0, big, cookie=8, payload=b"\x55" * big)
r = simple_reply(s)
check(r == (22, 8), "oversized write -> EINVAL (got %r)" % (r,))
request(s, 1, 0, 512, flags=0x40, cookie=9, payload=b"\x66" * 512)
check(simple_reply(s) == (22, 9), "unknown flag -> EINVAL")
request(s, 1, (64 << 20) - 256, 512, cookie=10, payload=b"\x77" * 512)
check(simple_reply(s) == (28, 10), "write past the end -> ENOSPC")
request(s, 0, 2**64 - 512, 1024, cookie=11)
check(simple_reply(s) == (22, 11), "read with wrapping offset -> EINVAL")
request(s, 1, 4096, 4, cookie=12, payload=b"abcd")
check(simple_reply(s) == (0, 12), "write")
request(s, 0, 4096, 4, cookie=13)
check(simple_reply(s) == (0, 13) and recvn(s, 4) == b"abcd", "read back")

# Another client breaks the magic: only that connection ends.
t = connect_retry()
check(go(t) == 1, "GO default export")
request(t, 0, 0, 4)
t.sendall(b"\xde\xad\xbe\xef" * 7)
check(simple_reply(t)[0] == 0, "read before the bad request")
recvn(t, 4)
try:
    closed = t.recv(1) == b""
except ConnectionResetError:
    closed = True
check(closed, "bad magic closes the connection")
t.close()

# A client leaving in the middle of a write payload.
t = connect_retry()
go(t)
request(t, 1, 0, 65536, payload=b"\1" * 1000)
t.close()

# EXPORT_NAME with and without NO_ZEROES.
t = connect_retry(cflags=3)
option(t, 1, b"disk")
size, tflags = struct.unpack(">QH", recvn(t, 10))
check(size == 64 << 20 and tflags & 1, "EXPORT_NAME reply")
request(t, 2, 0, 0)   # DISC
t.settimeout(5)
check(t.recv(1) == b"", "DISC closes")
t.close()
t = connect_retry(cflags=1)
option(t, 1, b"")
check(len(recvn(t, 134)) == 134, "EXPORT_NAME without NO_ZEROES: 124 zero bytes")
t.close()

# The first session still works after all that.
request(s, 0, 4096, 4, cookie=14)
check(simple_reply(s) == (0, 14) and recvn(s, 4) == b"abcd", "first connection unharmed")

# Connection cap (3, established connections): s plus two more are
# served, the fourth is closed.
a = connect_retry(); go(a)
b = connect_retry(); go(b)
# A slot held by a connection that ended may free while a and b connect,
# letting one more in: with s, a and b held, a fourth must be refused
# once the server has caught up.
for _ in range(50):
    c = socket.socket(socket.AF_UNIX); c.settimeout(10); c.connect(path)
    try:
        got = c.recv(18)
    except ConnectionResetError:
        got = b""
    c.close()
    if got == b"":
        break
    time.sleep(0.1)
check(got == b"", "connection over the cap is refused")
for x in (a, b, s):
    x.close()
sys.exit(1 if failed else 0)
PY
stop_server "$server_pid"

# A client that connects and says nothing is dropped after the timeout.
s=$tmp/t.sock
start_server "$s" --handshake-timeout 1 mem:1M
python3 - "$s" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(sys.argv[1])
got = b""
while True:
    c = s.recv(100)
    if not c:
        break
    got += c
sys.exit(0 if len(got) == 18 else 1)
PY
stop_server "$server_pid"
echo PASS
