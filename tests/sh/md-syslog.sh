#!/bin/bash
# md-syslog.sh — `uraid serve --syslog` logs md events as mdadm --monitor
# --syslog does: syslog(3), facility daemon, ident uraid, "EVENT event
# detected on md device DEV[, component device MEMBER]", failures at crit
# and the rest at info.  syslog(3) writes to /dev/log: the test runs the
# server in a mount namespace of its own (unshare -m, as root) whose /dev
# is a tmpfs holding a datagram socket there that it reads.
. "$(dirname "$0")/md-lib.sh"
requires unshare python3 nbdcopy
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for a mount namespace"; exit 77; }
unshare -m true 2>/dev/null || { echo "SKIP: unshare -m is not allowed here"; exit 77; }

SIZE=20M
make_array s 1 2
head -c 16M /dev/urandom > "$tmp/d"
cat > "$tmp/inner.sh" <<EOF2
set -e
mkdir -p "$tmp/olddev"
mount --rbind /dev "$tmp/olddev"
mount -t tmpfs none /dev
for n in null zero urandom random; do touch /dev/\$n; mount --bind "$tmp/olddev/\$n" /dev/\$n; done
python3 - <<'PY' &
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
s.settimeout(5)
with open("$tmp/syslog.txt", "w") as f:
    try:
        while True:
            f.write(s.recv(4096).decode(errors="replace") + "\n")
            f.flush()
    except socket.timeout:
        pass
PY
for _ in \$(seq 100); do [ -S /dev/log ] && break; sleep 0.05; done
"$URAID" serve --syslog --test --run 'nbdcopy "$tmp/d" "\$uri"' "$tmp/s.0" "fault:after=40:$tmp/s.1"
wait
EOF2
timeout 60 unshare -m sh "$tmp/inner.sh" 2> "$tmp/serve.log" || fail "serve: $(cat "$tmp/serve.log")"
log=$(cat "$tmp/syslog.txt")
name=$(sed -n 's/.*uraid\[[0-9]*\]: NewArray event detected on md device \(md\/[^ ]*\)$/\1/p' <<<"$log")
[ -n "$name" ] || fail "no NewArray: $log"
# <30> is daemon.info, <26> daemon.crit
want="<30> NewArray event detected on md device $name
<30> TestMessage event detected on md device $name
<26> Fail event detected on md device $name, component device fault:$tmp/s.1
<26> DegradedArray event detected on md device $name
<26> DeviceDisappeared event detected on md device $name"
got=$(sed -n 's/^\(<[0-9]*>\).* uraid\[[0-9]*\]: \(.*\)$/\1 \2/p' <<<"$log")
[ "$got" = "$want" ] || fail "syslog:
$got
wanted:
$want"
echo "ok: --syslog as mdadm words it, facility daemon, crit for failures"
