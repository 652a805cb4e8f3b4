#!/bin/bash
# nbd-member-tls.sh — nbds:// members: uraid as the TLS client of another
# `uraid serve --tls require`, with libnbd's TLS settings in the member's
# URI (member.h).
#  - PSK (tls-psk-file=, which libnbd refuses in a URI unless allowed):
#    data written through the member lands on the remote disk and reads
#    back; a RAID1 of two TLS members is created and served.
#  - X.509 (tls-certificates= with the CA, tls-hostname=): reads back.
#  - A wrong key is a clear error naming the member, at once.
#  - The TLS server stopped (SIGSTOP): the member times out; resumed, it
#    reconnects over TLS and reads back.
. "$(dirname "$0")/nbd-lib.sh"
. "$(dirname "$0")/nbd-tls-lib.sh"
requires nbdcopy nbdinfo openssl cmp

psk_key() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
printf 'alice:%s\n' "$(psk_key)" > "$tmp/keys.psk"
printf 'alice:%s\n' "$(psk_key)" > "$tmp/wrong.psk"
chmod 600 "$tmp/keys.psk" "$tmp/wrong.psk"
truncate -s 32M "$tmp/a.img" "$tmp/b.img"
head -c 4M /dev/urandom > "$tmp/data"

start_server "$tmp/a.sock" --tls require --tls-psk "$tmp/keys.psk" "$tmp/a.img" 2>"$tmp/a.log"
a_pid=$server_pid
remote="nbds+unix://alice@/?socket=$tmp/a.sock&tls-psk-file=$tmp/keys.psk"
member="$remote&timeout=10"

# Through the member: write, then read straight from the TLS server.
start_server "$tmp/m.sock" "$member" 2>"$tmp/m.log"
m_pid=$server_pid
nbdcopy "$tmp/data" "nbd+unix:///?socket=$tmp/m.sock" ||
    fail "psk: nbdcopy into the nbds member: $(cat "$tmp/m.log")"
nbdcopy "$remote" "$tmp/out" || fail "psk: reading the remote disk"
cmp -n $((4 << 20)) "$tmp/data" "$tmp/out" || fail "psk: what went through the member is not on the remote disk"
nbdcopy "nbd+unix:///?socket=$tmp/m.sock" "$tmp/out2" || fail "psk: reading through the member"
cmp -n $((4 << 20)) "$tmp/data" "$tmp/out2" || fail "psk: reading through the member"
stop_server "$m_pid"

# The TLS server stops answering: the member's request times out (no
# redundancy here: the client sees the error); resumed, the member
# reconnects over TLS by itself and serves again.
start_server "$tmp/m2.sock" "$remote&timeout=2&reconnect=0.2" 2>"$tmp/m2.log"
m2_pid=$server_pid
kill -STOP "$a_pid"
for _ in $(seq 100); do [ "$(cut -d' ' -f3 "/proc/$a_pid/stat")" = T ] && break; sleep 0.05; done
cleanup_hooks=("kill -CONT $a_pid" "${cleanup_hooks[@]}")
if nbdcopy "nbd+unix:///?socket=$tmp/m2.sock" "$tmp/out5" 2>/dev/null; then
    fail "psk: a read through a member whose server is stopped succeeded"
fi
grep -q "no reply within 2 s" "$tmp/m2.log" || fail "psk: no timeout logged: $(cat "$tmp/m2.log")"
kill -CONT "$a_pid"
for _ in $(seq 300); do grep -q "reconnected" "$tmp/m2.log" && break; sleep 0.1; done
grep -q "reconnected" "$tmp/m2.log" || fail "psk: the member did not reconnect: $(cat "$tmp/m2.log")"
nbdcopy "nbd+unix:///?socket=$tmp/m2.sock" "$tmp/out5" || fail "psk: reading after the reconnect"
cmp -n $((4 << 20)) "$tmp/data" "$tmp/out5" || fail "psk: reading after the reconnect"
stop_server "$m2_pid"

# A wrong key: refused before anything listens, naming the member.
rc=0
out=$("$URAID" serve --run true "nbds+unix://alice@/?socket=$tmp/a.sock&tls-psk-file=$tmp/wrong.psk&timeout=10" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "psk: a wrong key was accepted"
grep -q "wrong.psk" <<<"$out" || fail "psk: the error does not name the member: $out"

# A RAID1 of two TLS members, created and served by uraid.
start_server "$tmp/b.sock" --tls require --tls-psk "$tmp/keys.psk" "$tmp/b.img" 2>"$tmp/b.log"
remote_b="nbds+unix://alice@/?socket=$tmp/b.sock&tls-psk-file=$tmp/keys.psk"
"$URAID" create --level=1 --name=tls "$member" "$remote_b&timeout=10" 2>"$tmp/create.log" ||
    fail "psk: create a RAID1 on nbds members: $(cat "$tmp/create.log")"
start_server "$tmp/r.sock" "$member" "$remote_b&timeout=10" 2>"$tmp/r.log"
r_pid=$server_pid
nbdinfo --list "nbd+unix:///?socket=$tmp/r.sock" | grep -q "md/tls" ||
    fail "psk: the RAID1 over nbds members is not exported: $(cat "$tmp/r.log")"
nbdcopy "$tmp/data" "nbd+unix:///?socket=$tmp/r.sock" || fail "psk: writing the RAID1"
nbdcopy "nbd+unix:///?socket=$tmp/r.sock" "$tmp/out3" || fail "psk: reading the RAID1"
cmp -n $((4 << 20)) "$tmp/data" "$tmp/out3" || fail "psk: the RAID1 over TLS members reads back wrong"
stop_server "$r_pid"

# X.509: the member checks the server's certificate against the CA.
pki=$tmp/pki
pki_ca "$tmp/ca" "uraid test CA"
pki_server "$tmp/ca" "$pki"
cp "$tmp/data" "$tmp/c.img"
truncate -s 32M "$tmp/c.img"
start_server "$tmp/x.sock" --tls require --tls-certificates "$pki" "$tmp/c.img" 2>/dev/null
x509="nbds+unix:///?socket=$tmp/x.sock&tls-certificates=$pki&tls-hostname=localhost&timeout=10"
start_server "$tmp/mx.sock" --readonly "$x509" 2>"$tmp/mx.log"
nbdcopy "nbd+unix:///?socket=$tmp/mx.sock" "$tmp/out4" ||
    fail "x509: reading through the member: $(cat "$tmp/mx.log")"
cmp -n $((4 << 20)) "$tmp/data" "$tmp/out4" || fail "x509: reading through the member"
echo "ok: nbds members with PSK and X.509; a RAID1 of two; a wrong key refused"
