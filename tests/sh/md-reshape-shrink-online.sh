#!/bin/bash
# md-reshape-shrink-online.sh — a RAID5 shrink (4 -> 3 devices) started
# through the control socket of a running `uraid serve` (`uraid grow -n 3
# --array-size S CONTROL`):
#   - refused, nothing written, with LUKS2 on the array (its data segment
#     runs to the device's end; the refusal names it);
#   - the export serves S from the shrink's start on, as md's array_size:
#     a client connected before it (which negotiated the old size) keeps
#     reading and writing below S, and past S its write gets ENOSPC and
#     its read EINVAL (the NBD protocol's errors for a request past the
#     end); new connections get S, during the reshape and after it;
#   - after the serve stops, mdadm --examine shows 3 devices on the three
#     kept and the fourth a spare, the array reads as the client's flat
#     reference (its first S bytes), and `uraid check` finds it consistent.
. "$(dirname "$0")/reshape-lib.sh"
requires nbdinfo nbdcopy mdadm cmp

for i in 0 1 2 3; do truncate -s 8M "$tmp/m$i"; done
m=("$tmp/m0" "$tmp/m1" "$tmp/m2" "$tmp/m3")
"$URAID" create --level=5 --chunk=32 "${m[@]}" >/dev/null 2>&1 || fail "create"
size=$("$URAID" serve --readonly --run 'nbdinfo --size "$uri"' "${m[@]}" 2>/dev/null)
new=$((12256 * 1024)) # S: less than the 3 x 7 MiB three members hold, off a stripe boundary
sock=$tmp/s.sock ctl=$tmp/s.ctl
uri="nbd+unix:///?socket=$sock"

# LUKS2 on the array (its data segment runs to the device's end, as
# cryptsetup makes it): a shrink is refused, naming it, nothing written.
printf pass >"$tmp/key"
"$URAID" luks-format -q --key-file "$tmp/key" --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
    "${m[@]}" >/dev/null 2>&1 || fail "luks-format"
start_server "$sock" --control "$ctl" --key-file "$tmp/key" "${m[@]}" 2>"$tmp/serve0.log"
before=$(cat "${m[@]}" | sha256sum)
out=$("$URAID" grow -n 3 --array-size 12256K "$ctl" 2>&1) && fail "a shrink under LUKS2: $out"
grep -q "LUKS2 on it takes the array to its end" <<<"$out" || fail "the shrink under LUKS2 said: $out"
[ "$(cat "${m[@]}" | sha256sum)" = "$before" ] || fail "a refused shrink wrote"
stop_server "$server_pid" || fail "serve (LUKS2) did not stop cleanly"
echo "ok: refused under LUKS2 (its segment to the end), nothing written"

# Made again without LUKS; the reference: random, its first 4 KiB zero.
for f in "${m[@]}"; do truncate -s 0 "$f"; truncate -s 8M "$f"; done
"$URAID" create --level=5 --chunk=32 "${m[@]}" >/dev/null 2>&1 || fail "create again"
{ head -c 4096 /dev/zero; head -c $((size - 4096)) /dev/urandom; } >"$tmp/ref"
"$URAID" serve --run "nbdcopy '$tmp/ref' \"\$uri\"" "${m[@]}" 2>/dev/null || fail "fill"

# The client: random writes below S until $tmp/stop appears, each applied
# to the reference once acknowledged; once $tmp/probe appears, one write
# and one read of the last 4 KiB of the size it connected with, which
# must fail with ENOSPC and EINVAL.
cat > "$tmp/client.py" <<'PY'
import errno, nbd, os, random, sys
uri, ref, stop, probe, new = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
h = nbd.NBD()
h.connect_uri(uri)
size = h.get_size()
open(stop + ".connected", "w").close()
rng = random.Random(19)
n, probed = 0, False
with open(ref, "r+b") as f:
    while not os.path.exists(stop) or n < 50:
        if not probed and os.path.exists(probe):
            for what, fn, want in (
                    ("write", lambda: h.pwrite(b"x" * 4096, size - 4096), errno.ENOSPC),
                    ("read", lambda: h.pread(4096, size - 4096), errno.EINVAL)):
                try:
                    fn()
                    sys.exit("a %s past the shrunk end succeeded" % what)
                except nbd.Error as e:
                    if e.errno not in (want, errno.errorcode[want]):  # a name in libnbd's binding
                        sys.exit("a %s past the shrunk end: errno %s, want %s" %
                                 (what, e.errno, want))
            probed = True
        ln = rng.randrange(1, 33) * 4096
        off = rng.randrange(1, (new - ln) // 4096 + 1) * 4096
        data = rng.randbytes(ln)
        h.pwrite(data, off)
        f.seek(off); f.write(data); f.flush()
        if n % 8 == 0 and h.pread(ln, off) != data:
            sys.exit("read after write at %d differs" % off)
        n += 1
if not probed:
    sys.exit("never probed past the end")
h.flush()
print(size, n)
PY

start_server "$sock" --control "$ctl" --sync-speed-max 1M "${m[@]}" 2>"$tmp/serve.log"
/usr/bin/python3 "$tmp/client.py" "$uri" "$tmp/ref" "$tmp/stop" "$tmp/probe" "$new" \
    >"$tmp/client.out" 2>"$tmp/client.err" &
client=$!
for _ in $(seq 100); do [ -e "$tmp/stop.connected" ] && break; sleep 0.1; done
[ -e "$tmp/stop.connected" ] || fail "the client did not connect: $(cat "$tmp/client.err")"
out=$("$URAID" grow -n 3 --array-size 12256K "$ctl" 2>&1) || fail "shrink through the control socket: $out"
grep -q "reshaping 4 -> 3 devices" <<<"$out" || fail "the shrink said: $out"
[ "$(nbdinfo --size "$uri")" = "$new" ] || fail "a new connection during the shrink: $(nbdinfo --size "$uri"), not $new"
"$URAID" detail --json "$ctl" | /usr/bin/python3 -c '
import json, sys
a = json.load(sys.stdin)["arrays"][0]; r = a["reshape"]
assert r["from_devices"] == 4 and r["to_devices"] == 3 and r["backwards"], r
assert a["array_size"] == r["old_size"] == r["new_size"] == int(sys.argv[1]), (a["array_size"], r)' "$new" ||
    fail "detail --json: the shrink does not serve S now and once it ends"
touch "$tmp/probe"
reshape_wait_end "$ctl" "the shrink"
touch "$tmp/stop"
wait "$client" || fail "client: $(cat "$tmp/client.err")"
read -r csize writes <"$tmp/client.out"
[ "$csize" = "$size" ] || fail "the client connected with $csize bytes, not the old $size"
[ "$(nbdinfo --size "$uri")" = "$new" ] || fail "a new connection after the shrink: $(nbdinfo --size "$uri"), not $new"
stop_server "$server_pid" || fail "serve did not stop cleanly: $(tail -5 "$tmp/serve.log")"
echo "ok: shrunk while serving under $writes client writes; past S: ENOSPC and EINVAL; new connections get S"

reshape_examined "Raid Devices : 3" '!Reshape\|Delta' -- "${m[@]:0:3}"
mdadm --examine "${m[3]}" | grep -q "Device Role : spare" || fail "mdadm: the fourth is not a spare"
truncate -s "$new" "$tmp/ref"
# a restart serves the new geometry's size, S in whole stripes
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" - | head -c $new | cmp - '$tmp/ref'" "${m[@]:0:3}" 2>/dev/null ||
    fail "the array differs from the reference"
"$URAID" check "${m[@]:0:3}" >"$tmp/check.out" 2>&1 || fail "check: $(cat "$tmp/check.out")"
echo "ok: mdadm sees 3 devices and a spare; the array is the reference's first S bytes; its parity agrees"
