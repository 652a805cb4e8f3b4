#!/bin/bash
# md-reshape.sh — a RAID5 reshape (3 -> 4 devices) continued by `uraid
# serve` while a client writes at random, the server killed (SIGKILL)
# part-way, three times, and started again:
#   - `uraid grow -n 4 --add NEW --stop-at` starts it offline and leaves it
#     part-way (mdadm --examine: Reshape pos'n, Delta Devices 1);
#   - each serve goes on with it in the background (at --sync-speed-max),
#     the client's acknowledged writes kept in a flat reference file (the
#     one write in flight at the kill may have landed or not, each 4 KiB
#     block of it: either is accepted, then it is written again);
#   - a last serve finishes it: mdadm --examine shows 4 devices and no
#     reshape, the first bytes read back as the reference, and
#     `uraid check` finds the parity consistent.
# A read-only serve's `uraid detail` shows the reshape as it stands.
# Refusals: --continue on an array with no reshape; add/rebuild of an
# array under reshape (md_super_no_reshape) say why.
. "$(dirname "$0")/nbd-lib.sh"
requires nbdcopy nbdinfo mdadm cmp
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import nbd' 2>/dev/null ||
    { echo "SKIP: python3-libnbd (nbdsh's module) missing"; exit 77; }

for i in 0 1 2 3; do truncate -s 16M "$tmp/m$i"; done
m=("$tmp/m0" "$tmp/m1" "$tmp/m2")
"$URAID" create --level=5 --chunk=16 "${m[@]}" >/dev/null 2>&1 || fail "create"
size=$("$URAID" serve --readonly --run 'nbdinfo --size "$uri"' "${m[@]}" 2>/dev/null)
head -c "$size" /dev/urandom > "$tmp/ref"
"$URAID" serve --run "nbdcopy '$tmp/ref' \"\$uri\"" "${m[@]}" 2>/dev/null || fail "fill"

out=$("$URAID" grow --continue "${m[@]}" 2>&1) && fail "--continue without a reshape: $out"
grep -q "no reshape under way" <<<"$out" || fail "--continue without a reshape said: $out"
out=$("$URAID" grow -n 4 --add "$tmp/m3" --stop-at 1024 "${m[@]}" 2>&1) || fail "grow: $out"
grep -q "stopped part-way" <<<"$out" || fail "grow --stop-at said: $out"
mdadm --examine "$tmp/m0" | grep -q "Delta Devices : 1 (3->4)" || fail "mdadm sees no reshape"
all=("${m[@]}" "$tmp/m3")
# A read-only serve shows the recorded position, standing.
start_server "$tmp/ro.sock" --readonly --control "$tmp/ro.ctl" "${all[@]}" 2>/dev/null
out=$("$URAID" detail "$tmp/ro.ctl") || fail "detail of the read-only serve"
grep -q "Reshape Status : [0-9]*% complete (not moving)" <<<"$out" || fail "detail (read-only): $out"
grep -q "Delta Devices : 1, (3->4)" <<<"$out" || fail "detail (read-only): no delta: $out"
kib=$(mdadm --examine "$tmp/m0" | sed -n "s/.*Reshape pos'n : \([0-9]*\).*/\1/p")
"$URAID" detail --json "$tmp/ro.ctl" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)["arrays"][0]["reshape"]
assert r["done"] == int(sys.argv[1]) * 1024 and not r["moving"], r' "$kib" ||
    fail "detail --json: not the recorded position ($kib KiB, mdadm)"
stop_server "$server_pid" || fail "the read-only serve did not stop cleanly"
out=$("$URAID" rebuild "${all[@]}" 2>&1) && fail "rebuild of a reshaping array: $out"
grep -q "reshape under way" <<<"$out" || fail "rebuild said: $out"
echo "ok: started offline and stopped part-way; refusals"

# The client: random writes of 4 KiB .. 128 KiB, each applied to the
# reference once acknowledged; the one in flight is kept in $tmp/pending.
cat > "$tmp/client.py" <<'EOF'
import nbd, os, random, struct, sys
uri, ref, pend, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
h = nbd.NBD()
h.connect_uri(uri)
size = h.get_size()
rng = random.Random(seed)
with open(ref, "r+b") as f:
    if os.path.exists(pend) and os.path.getsize(pend) > 16:
        # the write in flight when the server died: old or new, then new
        with open(pend, "rb") as p:
            off, ln = struct.unpack("QQ", p.read(16)); data = p.read()
        f.seek(off); old = f.read(ln)
        got = h.pread(ln, off)
        for k in range(0, ln, 4096):  # torn at the kill: block by block
            if got[k:k+4096] != old[k:k+4096] and got[k:k+4096] != data[k:k+4096]:
                sys.exit("pending write at %d reads neither the old nor the new bytes" % (off + k))
        h.pwrite(data, off); f.seek(off); f.write(data); f.flush()
        os.remove(pend)
    for i in range(int(sys.argv[5])):
        ln = rng.randrange(1, 33) * 4096
        off = rng.randrange(0, (size - ln) // 4096 + 1) * 4096
        data = rng.randbytes(ln)
        with open(pend, "wb") as p:
            p.write(struct.pack("QQ", off, ln) + data)
        h.pwrite(data, off)
        f.seek(off); f.write(data); f.flush()
        os.remove(pend)
        if i % 8 == 0:
            got = h.pread(ln, off)
            if got != data:
                sys.exit("read after write at %d differs" % off)
EOF

sock=$tmp/s.sock
uri="nbd+unix:///?socket=$sock"
pos() { mdadm --examine "$tmp/m0" | sed -n "s/.*Reshape pos'n : \([0-9]*\).*/\1/p"; }
for round in 1 2 3; do
    start_server "$sock" --sync-speed-max 1M "${all[@]}" 2>>"$tmp/serve.log"
    before=$(pos)
    /usr/bin/python3 "$tmp/client.py" "$uri" "$tmp/ref" "$tmp/pending" "$round" 100000 2>"$tmp/client.err" &
    client=$!
    sleep "0.$((RANDOM % 7 + 3))"
    kill -KILL "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    wait "$client" 2>/dev/null || true
    grep -q "neither\|differs" "$tmp/client.err" && fail "round $round: $(cat "$tmp/client.err")"
    after=$(pos)
    echo "ok: round $round: killed at reshape position $after KiB (was $before)"
    rm -f "$sock"
done
[ -n "$(pos)" ] || fail "the reshape ended before the kills; nothing was tested"

# The last serve settles the pending write and finishes the reshape.
start_server "$sock" "${all[@]}" 2>>"$tmp/serve.log"
/usr/bin/python3 "$tmp/client.py" "$uri" "$tmp/ref" "$tmp/pending" 9 20 || fail "last client"
for _ in $(seq 600); do [ -z "$(pos)" ] && break; sleep 0.1; done
stop_server "$server_pid" || fail "serve did not stop cleanly"
[ -z "$(pos)" ] || fail "the reshape did not finish: at $(pos) KiB"
mdadm --examine "$tmp/m0" | grep -q "Raid Devices : 4" || fail "mdadm: not 4 devices"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" - | head -c $size | cmp - '$tmp/ref'" "${all[@]}" 2>/dev/null ||
    fail "the array differs from the reference"
"$URAID" check "${all[@]}" >"$tmp/check.out" 2>&1 || fail "check: $(cat "$tmp/check.out")"
grep -q "agree" "$tmp/check.out" || fail "check said: $(cat "$tmp/check.out")"
echo "ok: the reshape finished under the client; the array is the reference and its parity agrees"
