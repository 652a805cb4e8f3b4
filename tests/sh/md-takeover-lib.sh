# md-takeover-lib.sh — helpers of the level-change-while-serving tests
# (md-takeover-online*.sh), on top of reshape-lib.sh ($tmp/client.py, the
# reference $tmp/ref of $size bytes: reshape_array):
#   serve MEMBER...        the serve ($server_pid, control socket $ctl; with
#                          the options in ${opts[@]}) and the client writing
#                          to it ($client)
#   level L LEVEL N ARGS.. `uraid grow --level L ARGS... $ctl`, then detail
#                          and mdadm --examine of $first show LEVEL of N
#                          devices, whole (a rebuild or reshape it started
#                          waited for)
#   refused WHY ARGS...    `uraid grow ARGS... $ctl` fails saying WHY
#   end MEMBER...          the client and the serve stopped; the array read
#                          back from MEMBER... is the reference
. "$(dirname "${BASH_SOURCE[0]}")/reshape-lib.sh"
requires nbdinfo nbdcopy mdadm cmp

sock=$tmp/s.sock ctl=$tmp/s.ctl opts=()
uri="nbd+unix:///?socket=$sock"

serve() {
    rm -f "$tmp/stop"
    start_server "$sock" --control "$ctl" --sync-speed-min 64M "${opts[@]}" "$@" \
        2>"$tmp/serve.log"
    /usr/bin/python3 "$tmp/client.py" "$uri" "$tmp/ref" "$tmp/stop" >"$tmp/client.out" 2>"$tmp/client.err" &
    client=$!
}
level() {
    local l=$1 want=$2 n=$3 out e
    shift 3
    out=$("$URAID" grow --level "$l" "$@" "$ctl" 2>&1) || fail "--level $l $*: $out"
    grep -q "while serving" <<<"$out" || fail "--level $l said: $out"
    for _ in $(seq 600); do
        out=$("$URAID" detail "$ctl") || fail "detail"
        grep -q "Raid Level : $want\$" <<<"$out" && ! grep -q "degraded\|reshaping" <<<"$out" && break
        sleep 0.1
    done
    grep -q "Raid Level : $want\$" <<<"$out" || fail "--level $l: detail: $out"
    grep -q "Raid Devices : $n\$" <<<"$out" || fail "--level $l: not $n devices: $out"
    grep -q "degraded\|reshaping" <<<"$out" && fail "--level $l: not whole: $out"
    e=$(mdadm --examine "$first" 2>&1) || fail "mdadm --examine: $e"
    grep -q "Raid Level : $want\$" <<<"$e" || fail "--level $l: mdadm: $e"
    grep -q "Raid Devices : $n\$" <<<"$e" || fail "--level $l: mdadm: not $n devices: $e"
    echo "ok: --level $l $* while serving: $want of $n"
}
refused() {
    local why=$1 out
    shift
    out=$("$URAID" grow "$@" "$ctl" 2>&1) && fail "grow $* was not refused: $out"
    grep -q "$why" <<<"$out" || fail "grow $* said: $out"
}
end() {
    touch "$tmp/stop"
    wait "$client" || fail "client: $(cat "$tmp/client.err")"
    stop_server "$server_pid" || fail "serve did not stop cleanly: $(tail -5 "$tmp/serve.log")"
    "$URAID" serve --readonly "${opts[@]}" --run "nbdcopy \"\$uri\" - | head -c $size | cmp - '$tmp/ref'" \
        "$@" 2>/dev/null || fail "after the level changes the array differs from the reference"
    echo "ok: $(cat "$tmp/client.out") client writes throughout; the data is the reference"
}
