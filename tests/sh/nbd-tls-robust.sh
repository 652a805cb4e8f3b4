#!/bin/bash
# nbd-tls-robust.sh — clients that break TLS after a good handshake
# (nbd-tls-client.py does the breaking, record by record):
#  - in the negotiation, half a record and then silence: dropped at the
#    handshake timeout; bytes that are not TLS records: dropped;
#  - in transmission, garbage in place of a record, a WRITE whose payload
#    stops half way and the client closes, the same with the last record
#    cut in half, and garbage after a WRITE header: each connection is
#    dropped, nothing of the cut WRITE reaches the image (a WRITE before
#    it on the same connection did);
#  - after each, the server serves the next client, and it exits cleanly
#    (under ASan: no error, no leak);
#  - keyless clients reconnecting and stalling in the handshake do not keep
#    a PSK client out (tests/adversarial/hs_flood.py).
. "$(dirname "$0")/nbd-lib.sh"
. "$(dirname "$0")/nbd-tls-lib.sh"
requires nbdinfo openssl python3 cmp
client_py=$(dirname "$0")/nbd-tls-client.py

pki_ca "$tmp/ca" "uraid test CA"
pki_server "$tmp/ca" "$tmp/srv"
pki_client "$tmp/ca" "$tmp/cli" client
img=$tmp/d.img
truncate -s 8M "$img"
uri="nbds+unix:///?socket=$tmp/s.sock&tls-certificates=$tmp/cli&tls-hostname=localhost"
zeroes() { head -c "$1" /dev/zero; }

start_server "$tmp/s.sock" --tls require --tls-certificates "$tmp/srv" \
    --handshake-timeout 2 "$img" 2>"$tmp/serve.log"
for mode in opt-stall opt-garbage read-garbage write-cut write-torn write-garbage; do
    python3 "$client_py" "$tmp/s.sock" "$tmp/cli" "$mode" || fail "$mode: not dropped"
    cmp -n 65536 "$img" <(zeroes 65536) || fail "$mode: a cut WRITE reached the image"
    if [ "${mode#write-}" != "$mode" ]; then
        cmp -n 65536 -i $((1 << 20)):0 "$img" <(zeroes 65536 | tr '\0' '\252') ||
            fail "$mode: the complete WRITE before it did not land"
    fi
    nbdinfo "$uri" >/dev/null || fail "$mode: the server stopped serving"
done
stop_server "$server_pid" || fail "the server did not exit cleanly: $(cat "$tmp/serve.log")"

# With TLS required, keyless clients that keep reconnecting and stall in
# the handshake never keep a client with the key out (10 in a row).
printf 'alice:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$tmp/keys.psk"
chmod 600 "$tmp/keys.psk"
start_server "$tmp/p.sock" --tls require --tls-psk "$tmp/keys.psk" "$img" 2>"$tmp/psk.log"
PYTHONDONTWRITEBYTECODE=1 python3 "$SRCDIR/tests/adversarial/hs_flood.py" "$tmp/p.sock" \
    "$server_pid" tls "$tmp/keys.psk" || fail "keyless clients locked the PSK client out"
stop_server "$server_pid" || fail "the PSK server did not exit cleanly: $(tail -5 "$tmp/psk.log")"
echo "ok: TLS records cut short, or garbage, after the handshake drop that client only"
