#!/bin/bash
# nbd-tls-peer.sh — --tls-verify-peer: X.509 client certificates.
#  - A client certificate issued by the CA in ca-cert.pem gets in
#    (libnbd's nbdinfo/nbdcopy, qemu-img and qemu-io); no certificate, or
#    one from another CA, fails the TLS handshake, the log says why, and
#    the server goes on serving.
#  - A certificate listed in ca-crl.pem is refused.
#  - --tls on still lets plain clients in (require is what makes the
#    certificate mandatory); with a PSK the option is accepted and the key
#    alone decides, as in nbdkit.
#  - Settings that cannot work are refused before anything listens.
. "$(dirname "$0")/nbd-lib.sh"
. "$(dirname "$0")/nbd-tls-lib.sh"
requires nbdinfo nbdcopy qemu-img qemu-io openssl python3 cmp
client_py=$(dirname "$0")/nbd-tls-client.py

pki_ca "$tmp/ca" "uraid test CA"
pki_ca "$tmp/ca2" "another CA"
pki_server "$tmp/ca" "$tmp/srv"
pki_client "$tmp/ca" "$tmp/alice" alice
pki_client "$tmp/ca" "$tmp/eve" eve
pki_client "$tmp/ca2" "$tmp/mallory" mallory "$tmp/ca" # trusts the server
mkdir "$tmp/anon"
cp "$tmp/ca/ca-cert.pem" "$tmp/anon/"
# qemu checks its own certificate against its ca-cert.pem before it
# connects: mallory's qemu trusts both CAs.
mkdir "$tmp/mallory-qemu"
cp "$tmp/mallory/client-"*.pem "$tmp/mallory-qemu/"
cat "$tmp/ca/ca-cert.pem" "$tmp/ca2/ca-cert.pem" > "$tmp/mallory-qemu/ca-cert.pem"
img=$tmp/d.img
truncate -s 32M "$img"
head -c 4M /dev/urandom > "$tmp/data"

uri() { echo "nbds+unix:///?socket=$tmp/s.sock&tls-certificates=$1&tls-hostname=localhost"; }
qemu_opts() { echo "driver=nbd,server.type=unix,server.path=$tmp/s.sock,tls-creds=t0,tls-hostname=localhost"; }
qemu_creds() { echo "tls-creds-x509,id=t0,endpoint=client,dir=$1"; }
refused() { # WHAT CMD... — must fail
    if "${@:2}" >/dev/null 2>&1; then fail "$1 got in"; fi
}

start_server "$tmp/s.sock" --tls require --tls-certificates "$tmp/srv" --tls-verify-peer \
    "$img" 2>"$tmp/serve.log"
# In: libnbd and qemu with alice's certificate.
nbdinfo "$(uri "$tmp/alice")" | grep -q "with TLS" || fail "alice: nbdinfo"
nbdcopy "$tmp/data" "$(uri "$tmp/alice")" || fail "alice: nbdcopy in"
nbdcopy "$(uri "$tmp/alice")" "$tmp/out" || fail "alice: nbdcopy out"
cmp -n $((4 << 20)) "$tmp/data" "$tmp/out" || fail "alice: data differs after a round trip"
qemu-img compare --object "$(qemu_creds "$tmp/alice")" --image-opts "$(qemu_opts)" \
    "driver=raw,file.filename=$tmp/out" >/dev/null || fail "alice: qemu-img does not see the data"
qemu-io --object "$(qemu_creds "$tmp/alice")" --image-opts "$(qemu_opts)" \
    -c "write -P 0x5a 8M 64k" >/dev/null || fail "alice: qemu-io write"
cmp -n 65536 -i $((8 << 20)):0 "$img" <(head -c 65536 /dev/zero | tr '\0' '\132') ||
    fail "alice: qemu-io's write did not land"
grep -q "certificate verified: CN=alice" "$tmp/serve.log" || fail "alice is not logged"

# Out: no certificate, or one from another CA.
refused "nbdinfo without a certificate" nbdinfo "$(uri "$tmp/anon")"
refused "nbdcopy without a certificate" nbdcopy "$(uri "$tmp/anon")" "$tmp/out2"
refused "qemu-img without a certificate" \
    qemu-img info --object "$(qemu_creds "$tmp/anon")" --image-opts "$(qemu_opts)"
refused "nbdinfo with another CA's certificate" nbdinfo "$(uri "$tmp/mallory")"
refused "qemu-io with another CA's certificate" qemu-io --object "$(qemu_creds "$tmp/mallory-qemu")" \
    --image-opts "$(qemu_opts)" -c "read 0 4k"
# GnuTLS clients keep a certificate the server's CA list does not name to
# themselves; python's (OpenSSL) sends it, and the server must check it.
python3 "$client_py" "$tmp/s.sock" "$tmp/mallory" refused ||
    fail "a certificate from another CA, presented, got in"
python3 "$client_py" "$tmp/s.sock" "$tmp/alice" list || fail "alice: raw client"
grep -q "client presented no certificate" "$tmp/serve.log" ||
    fail "no log of a client without a certificate: $(cat "$tmp/serve.log")"
grep -q "client certificate refused: .*issuer is unknown" "$tmp/serve.log" ||
    fail "no log of another CA's certificate: $(cat "$tmp/serve.log")"
nbdinfo "$(uri "$tmp/alice")" >/dev/null || fail "the server stopped serving after refusals"
stop_server "$server_pid"

# Revocation: eve's certificate in the CA's revocation list.
pki_revoke "$tmp/ca" "$tmp/eve/client-cert.pem"
cp "$tmp/ca/ca-crl.pem" "$tmp/srv/"
start_server "$tmp/s.sock" --tls require --tls-certificates "$tmp/srv" --tls-verify-peer \
    "$img" 2>"$tmp/serve.log"
refused "a revoked certificate" nbdinfo "$(uri "$tmp/eve")"
grep -q "client certificate refused: .*revoked" "$tmp/serve.log" ||
    fail "no log of a revoked certificate: $(cat "$tmp/serve.log")"
nbdinfo "$(uri "$tmp/alice")" >/dev/null || fail "alice refused once a CRL is loaded"
stop_server "$server_pid"

# --tls on: a plain client still gets in; a TLS one needs its certificate.
start_server "$tmp/s.sock" --tls on --tls-certificates "$tmp/srv" --tls-verify-peer \
    "$img" 2>/dev/null
nbdinfo "nbd+unix:///?socket=$tmp/s.sock" | grep -q "without TLS" || fail "on: a plain client"
refused "on: a TLS client without a certificate" nbdinfo "$(uri "$tmp/anon")"
nbdinfo "$(uri "$tmp/alice")" | grep -q "with TLS" || fail "on: alice"
stop_server "$server_pid"

# A PSK: accepted, the key decides (nbdkit does the same).
printf 'alice:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$tmp/keys.psk"
start_server "$tmp/s.sock" --tls require --tls-psk "$tmp/keys.psk" --tls-verify-peer \
    "$img" 2>/dev/null
nbdinfo "nbds+unix://alice@/?socket=$tmp/s.sock&tls-psk-file=$tmp/keys.psk" | grep -q "with TLS" ||
    fail "psk: --tls-verify-peer kept a PSK client out"
stop_server "$server_pid"

tls_expect_refused "verify-peer without TLS" "needs --tls-certificates" --tls-verify-peer
tls_expect_refused "verify-peer with --tls off" "contradicts --tls off" \
    --tls off --tls-certificates "$tmp/srv" --tls-verify-peer
mkdir "$tmp/noca"
cp "$tmp/srv/server-"*.pem "$tmp/noca/"
tls_expect_refused "verify-peer without ca-cert.pem" "noca/ca-cert.pem" \
    --tls-certificates "$tmp/noca" --tls-verify-peer
cp "$tmp/srv/ca-cert.pem" "$tmp/noca/"
echo "not a CRL" > "$tmp/noca/ca-crl.pem"
tls_expect_refused "a malformed ca-crl.pem" "noca/ca-crl.pem" \
    --tls-certificates "$tmp/noca" --tls-verify-peer
echo "ok: --tls-verify-peer admits the CA's clients only (libnbd, qemu, CRL)"
