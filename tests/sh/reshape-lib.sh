# reshape-lib.sh — helpers of the served-reshape tests (md-reshape-online*.sh,
# md-reshape-shrink-online.sh), on top of nbd-lib.sh:
#   reshape_client FILE   writes a Python client to FILE: `FILE URI REF STOP
#                         [SEED [UNITS]]` writes 4 KiB .. UNITS x 4 KiB at
#                         random until STOP exists (and 20 writes at least),
#                         each applied to the flat reference REF once
#                         acknowledged, every 8th read back; prints the count
#   reshape_array OPT... -- MEMBER...
#                         `uraid create OPT...` on the MEMBERs; size = the
#                         array's bytes, $tmp/ref that many random bytes,
#                         written to the array; $tmp/client.py the client
#   reshape_serve SPEED MEMBER...
#                         serves the MEMBERs with a control socket ($sock,
#                         $ctl: $tmp/s.sock, $tmp/s.ctl unless set; $uri
#                         set) at --sync-speed-max SPEED, and starts the
#                         client against $tmp/ref ($client its pid; a
#                         $tmp/stop of an earlier serve removed first)
#   reshape_detail_until CTL PATTERN
#                         `uraid detail CTL` until it shows PATTERN (10 s);
#                         $out what it said last (the caller checks it)
#   reshape_examined PATTERN... -- MEMBER...
#                         mdadm --examine reads every MEMBER and shows each
#                         PATTERN (grep's); one written !PATTERN it must not
#   reshape_end CTL WHAT NEW_SIZE
#                         reshape_wait_end, then reshape_stop WHAT NEW_SIZE:
#                         the client ($client) told to stop and waited for,
#                         a new connection to $uri checked to get NEW_SIZE,
#                         the serve ($server_pid) stopped cleanly
#   reshape_wait_end CTL WHAT
#                         follows `uraid detail CTL` until the reshape is
#                         gone; fails if it did not end in 60 s, or was gone
#                         at the first look (nothing ran under load)
# Skips (77) without python3-libnbd, which the client needs.
. "$(dirname "${BASH_SOURCE[0]}")/nbd-lib.sh"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import nbd' 2>/dev/null ||
    { echo "SKIP: python3-libnbd (nbdsh's module) missing"; exit 77; }

reshape_client() {
    cat >"$1" <<'PY'
import nbd, os, random, sys
uri, ref, stop = sys.argv[1], sys.argv[2], sys.argv[3]
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 19
seed += int(os.environ.get("URAID_TEST_SEED_BASE", "0")) # a soak's (docs/testing.md)
units = int(sys.argv[5]) if len(sys.argv) > 5 else 32
h = nbd.NBD()
h.connect_uri(uri)
size = h.get_size()
rng = random.Random(seed)
n = 0
with open(ref, "r+b") as f:
    while not os.path.exists(stop) or n < 20:
        ln = rng.randrange(1, units + 1) * 4096
        off = rng.randrange(0, (size - ln) // 4096 + 1) * 4096
        data = rng.randbytes(ln)
        h.pwrite(data, off)
        f.seek(off); f.write(data); f.flush()
        if n % 8 == 0 and h.pread(ln, off) != data:
            sys.exit("read after write at %d differs" % off)
        n += 1
h.flush()
print(n)
PY
}

# reshape_serve: above; the serve's log is $tmp/serve.log.
reshape_serve() {
    local speed=$1
    shift
    sock=${sock:-$tmp/s.sock} ctl=${ctl:-$tmp/s.ctl}
    uri="nbd+unix:///?socket=$sock"
    rm -f "$tmp/stop"
    start_server "$sock" --control "$ctl" --sync-speed-max "$speed" "$@" 2>"$tmp/serve.log"
    /usr/bin/python3 "$tmp/client.py" "$uri" "$tmp/ref" "$tmp/stop" >"$tmp/client.out" 2>"$tmp/client.err" &
    client=$!
}

reshape_detail_until() {
    for _ in $(seq 100); do
        out=$("$URAID" detail "$1") || fail "detail"
        grep -q "$2" <<<"$out" && return 0
        sleep 0.1
    done
}

reshape_examined() {
    local pats=() f p e
    while [ "$1" != -- ]; do pats+=("$1"); shift; done
    shift
    for f; do
        e=$(mdadm --examine "$f" 2>&1) || fail "mdadm --examine $f: $e"
        for p in "${pats[@]}"; do
            if [ "${p:0:1}" = '!' ]; then
                ! grep -q "${p:1}" <<<"$e" || fail "mdadm: $f shows '${p:1}': $e"
            else
                grep -q "$p" <<<"$e" || fail "mdadm: $f: no '$p': $e"
            fi
        done
    done
}

reshape_array() {
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    "$URAID" create "${opts[@]}" "$@" >/dev/null 2>&1 || fail "create ${opts[*]}"
    size=$("$URAID" serve --readonly --run 'nbdinfo --size "$uri"' "$@" 2>/dev/null)
    head -c "$size" /dev/urandom >"$tmp/ref"
    "$URAID" serve --run "nbdcopy '$tmp/ref' \"\$uri\"" "$@" 2>/dev/null || fail "fill"
    reshape_client "$tmp/client.py"
}

reshape_wait_end() {
    local out seen
    detail_until_gone "$1" "Reshape Status" || fail "$2 did not end: $out"
    [ "$seen" -gt 0 ] || fail "$2 ended before a second look; nothing was tested under load"
}

reshape_end() {
    reshape_wait_end "$1" "$2"
    reshape_stop "$2" "$3"
}

reshape_stop() {
    touch "$tmp/stop"
    wait "$client" || fail "client: $(cat "$tmp/client.err")"
    [ "$(nbdinfo --size "$uri")" = "$2" ] ||
        fail "a new connection after $1: $(nbdinfo --size "$uri"), not $2"
    stop_server "$server_pid" || fail "serve did not stop cleanly: $(tail -5 "$tmp/serve.log")"
}
