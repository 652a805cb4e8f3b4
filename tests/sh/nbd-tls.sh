#!/bin/bash
# nbd-tls.sh — NBD over TLS (NBD_OPT_STARTTLS), with real clients.
#  - Pre-shared keys (--tls-psk, psktool's "username:hexkey" format):
#    libnbd (nbdinfo, nbdcopy) and qemu's NBD client connect, data round
#    trips, block status works inside TLS; a wrong key is refused and the
#    server goes on serving.
#  - --tls require: a client that does not start TLS gets
#    NBD_REP_ERR_TLS_REQD for its options (raw wire check) and no data.
#  - --tls on: plain and TLS clients both get in.
#  - X.509 (--tls-certificates DIR): a client that checks the server's
#    certificate against its CA and host name connects; TLS works over
#    --stdio's pipes too.  (Client certificates: nbd-tls-peer.sh; records
#    cut short after the handshake: nbd-tls-robust.sh.)
#  - A client that stalls inside the TLS handshake is dropped at the
#    handshake timeout.
#  - Bad settings are clear errors before anything listens.
. "$(dirname "$0")/nbd-lib.sh"
. "$(dirname "$0")/nbd-tls-lib.sh"
requires nbdinfo nbdcopy qemu-img openssl python3 cmp

psk_key() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
printf 'alice:%s\n' "$(psk_key)" > "$tmp/keys.psk"
printf 'alice:%s\n' "$(psk_key)" > "$tmp/wrong.psk"
chmod 600 "$tmp/keys.psk" "$tmp/wrong.psk"
img=$tmp/d.img
truncate -s 32M "$img"
head -c 4M /dev/urandom > "$tmp/data"

start_server "$tmp/s.sock" --tls require --tls-psk "$tmp/keys.psk" "$tmp/d.img" 2>"$tmp/serve.log"
tls="nbds+unix://alice@/?socket=$tmp/s.sock&tls-psk-file=$tmp/keys.psk"
nbdinfo "$tls" | grep -q "with TLS" || fail "psk: nbdinfo did not get a TLS session"
nbdcopy "$tmp/data" "$tls" || fail "psk: nbdcopy in"
nbdcopy "$tls" "$tmp/out" || fail "psk: nbdcopy out"
cmp -n $((4 << 20)) "$tmp/data" "$tmp/out" || fail "psk: data differs after a round trip"
nbdinfo --map "$tls" | head -1 | grep -q "4194304 *0 *data" ||
    fail "psk: block status inside TLS: $(nbdinfo --map "$tls")"
# qemu's client: its PSK credentials are a directory holding keys.psk.
qemu-img compare --object "tls-creds-psk,id=t0,endpoint=client,dir=$tmp,username=alice" \
    --image-opts "driver=nbd,server.type=unix,server.path=$tmp/s.sock,tls-creds=t0" \
    "driver=raw,file.filename=$tmp/out" >/dev/null ||
    fail "psk: qemu-img over TLS does not see the data"
# The wrong key, and no TLS at all: refused, server unharmed.
if nbdinfo "nbds+unix://alice@/?socket=$tmp/s.sock&tls-psk-file=$tmp/wrong.psk" >/dev/null 2>&1; then
    fail "psk: a wrong key got in"
fi
if nbdinfo "nbd+unix:///?socket=$tmp/s.sock" >/dev/null 2>&1; then
    fail "require: a client without TLS got in"
fi
python3 - "$tmp/s.sock" <<'PY' || fail "require: options before STARTTLS were not refused with TLS_REQD"
import socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
def recvn(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            sys.exit("closed")
        b += c
    return b
recvn(18)
s.sendall(struct.pack(">I", 3))
IHAVEOPT = 0x49484156454F5054
for opt, data in ((8, b""), (7, struct.pack(">IH", 0, 0)), (3, b"")):  # STRUCTURED, GO, LIST
    s.sendall(struct.pack(">QII", IHAVEOPT, opt, len(data)) + data)
    _, o, t, n = struct.unpack(">QIII", recvn(20))
    recvn(n)
    if (o, t) != (opt, 0x80000005):
        sys.exit("option %d: reply %#x" % (opt, t))
PY
nbdinfo "$tls" >/dev/null || fail "psk: the server stopped serving after refusals"
stop_server "$server_pid"

# --run hands its command a URI that starts TLS with the key's user.
out=$("$URAID" serve --tls require --tls-psk "$tmp/keys.psk" \
    --run 'echo "$uri"; nbdinfo "$uri"' "$tmp/d.img" 2>/dev/null) || fail "require: --run: $out"
grep -q "^nbds+unix://alice@/" <<<"$out" && grep -q "with TLS" <<<"$out" ||
    fail "require: --run's URI does not start TLS: $out"

# A client that stops in the middle of the TLS handshake (a record header
# promising bytes that never come) is dropped at the handshake timeout.
start_server "$tmp/h.sock" --handshake-timeout 2 --tls require --tls-psk "$tmp/keys.psk" \
    "$tmp/d.img" 2>/dev/null
python3 - "$tmp/h.sock" <<'PY' || fail "a stalled TLS handshake was not dropped"
import socket, struct, sys, time
s = socket.socket(socket.AF_UNIX); s.settimeout(15); s.connect(sys.argv[1])
s.recv(18)
s.sendall(struct.pack(">I", 3) + struct.pack(">QII", 0x49484156454F5054, 5, 0))
if struct.unpack(">I", s.recv(20)[12:16])[0] != 1:
    sys.exit("STARTTLS not acknowledged")
s.sendall(b"\x16\x03\x01\x00\x64")
t = time.time()
sys.exit(0 if s.recv(100) == b"" and time.time() - t < 10 else 1)
PY
nbdinfo "nbds+unix://alice@/?socket=$tmp/h.sock&tls-psk-file=$tmp/keys.psk" >/dev/null ||
    fail "the server stopped serving after a stalled handshake"
stop_server "$server_pid"

# --tls on: TLS offered, not required.
start_server "$tmp/o.sock" --tls on --tls-psk "$tmp/keys.psk" "$tmp/d.img" 2>/dev/null
nbdinfo "nbd+unix:///?socket=$tmp/o.sock" | grep -q "without TLS" || fail "on: a plain client"
nbdinfo "nbds+unix://alice@/?socket=$tmp/o.sock&tls-psk-file=$tmp/keys.psk" | grep -q "with TLS" ||
    fail "on: a TLS client"
stop_server "$server_pid"

# X.509: a CA, and a server certificate for localhost issued by it.
pki_ca "$tmp/ca" "uraid test CA"
pki=$tmp/pki
pki_server "$tmp/ca" "$pki"
start_server "$tmp/x.sock" --tls require --tls-certificates "$pki" "$tmp/d.img" 2>/dev/null
x509="nbds+unix:///?socket=$tmp/x.sock&tls-certificates=$pki&tls-hostname=localhost"
nbdinfo "$x509" | grep -q "with TLS" || fail "x509: nbdinfo"
nbdcopy "$x509" "$tmp/out2" && cmp -n $((4 << 20)) "$tmp/data" "$tmp/out2" || fail "x509: read back"
stop_server "$server_pid"
# --stdio on pipes (not a socketpair, which is what libnbd would give):
# the TLS session must not need socket calls.
python3 "$(dirname "$0")/nbd-tls-client.py" - "$pki" list \
    "$URAID" serve --stdio --tls require --tls-certificates "$pki" "$img" ||
    fail "x509: TLS over --stdio's pipes"

# Bad settings: a clear error, exit status 2 or 1, nothing listens.
tls_expect_refused "require without a key" "needs --tls-psk" --tls require
tls_expect_refused "an unknown mode" "takes off, on or require" --tls maybe --tls-psk "$tmp/keys.psk"
tls_expect_refused "a missing PSK file" "nosuch.psk" --tls-psk "$tmp/nosuch.psk"
printf 'not a key file\n' > "$tmp/garbage.psk"
tls_expect_refused "a malformed PSK file" "garbage.psk" --tls-psk "$tmp/garbage.psk"
tls_expect_refused "a directory without certificates" "server-cert.pem" --tls-certificates "$tmp"
echo "ok: TLS with PSK (libnbd, qemu) and X.509; require refuses plain clients"
