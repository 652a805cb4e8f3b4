# hosts-lib.sh — "hosts" for tests and benchmarks that need several
# machines: network namespaces, each joined to the root namespace by a veth
# pair on its own subnet, each serving files over NBD/TCP with `uraid serve`
# or nbdkit.  Source it after lib.sh (it uses $tmp, cleanup_hooks, fail).
#
#   hosts_require                 exit 77, saying why, where `ip netns`,
#                                 veth or addresses are not allowed
#   host_add N                    host N (1..9): namespace, veth, 10.99.X.2
#                                 inside, 10.99.X.1 on the root side
#   host_serve_uraid N DIR FILE...  `uraid serve` of DIR's FILEs on the
#                                 host, port 10809 (exports named FILE)
#   host_serve_nbdkit N DIR       nbdkit's file plugin over DIR (each file
#                                 an export named by its file name)
#   host_uri N EXPORT             nbd://10.99.X.2:10809/EXPORT
#   host_link_down N, host_link_up N   cut or restore the host's link
#                                 (its root-side veth: packets are dropped,
#                                 no reset reaches either end)
#   host_shape N [delay D] [rate R]  shape both ends of the link (netem
#                                 with a delay, tbf for a rate alone;
#                                 hosts_can_netem: is netem there); host_shape
#                                 N alone removes it
#   host_exec N CMD...            run CMD inside host N
# Everything is removed on exit (servers stopped, namespaces deleted).
# X is drawn per run from the shell's pid, so two runs rarely collide; a
# namespace or veth of that name left by another run is an error.

hosts_tag=$(( $$ % 1000 ))
hosts_base=$(( ($$ % 24) * 10 ))
hosts_made=()
hosts_pids=()

# Last started, first stopped (an array's server before its hosts); a
# server that has not gone 3 s after SIGTERM (nbdkit waiting on a
# connection whose peer vanished with a cut link) is killed.
hosts_cleanup() {
    local i p n
    for ((i = ${#hosts_pids[@]} - 1; i >= 0; i--)); do
        p=${hosts_pids[i]}
        kill "$p" 2>/dev/null || continue
        for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    for n in "${hosts_made[@]}"; do ip netns del "$(host_ns "$n")" 2>/dev/null || true; done
}
cleanup_hooks+=(hosts_cleanup)

host_ns() { echo "uraid$hosts_tag-h$1"; }
host_veth() { echo "urv$hosts_tag-$1"; }
host_net() { echo "10.99.$((hosts_base + $1))"; }
host_addr() { echo "$(host_net "$1").2"; }
host_uri() { echo "nbd://$(host_addr "$1"):10809/$2"; }
host_exec() { local n=$1; shift; ip netns exec "$(host_ns "$n")" "$@"; }

hosts_require() {
    command -v ip >/dev/null || { echo "SKIP: ip (iproute2) not installed"; exit 77; }
    local probe="uraid$hosts_tag-probe" err
    if ! err=$(ip netns add "$probe" 2>&1); then
        echo "SKIP: ip netns is not allowed here: $err"
        exit 77
    fi
    if ! err=$(ip link add "urp$hosts_tag" type veth peer name "urq$hosts_tag" 2>&1); then
        ip netns del "$probe" 2>/dev/null || true
        echo "SKIP: veth pairs are not allowed here: $err"
        exit 77
    fi
    ip link del "urp$hosts_tag" 2>/dev/null || true
    ip netns del "$probe"
}

host_add() {
    local n=$1 ns veth net
    ns=$(host_ns "$n") veth=$(host_veth "$n") net=$(host_net "$n")
    ip netns add "$ns" || fail "host $n: ip netns add $ns"
    hosts_made+=("$n")
    ip link add "$veth" type veth peer name eth0 netns "$ns" ||
        fail "host $n: ip link add $veth"
    ip addr add "$net.1/24" dev "$veth"
    ip link set "$veth" up
    ip -n "$ns" addr add "$net.2/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
}

# host_wait_port N — until the host's port 10809 takes connections.
host_wait_port() {
    local addr
    addr=$(host_addr "$1")
    for _ in $(seq 200); do
        if (exec 3<>"/dev/tcp/$addr/10809") 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    fail "host $1: nothing listens on $addr:10809"
}

host_serve_uraid() {
    local n=$1 dir=$2
    shift 2
    (cd "$dir" && exec ip netns exec "$(host_ns "$n")" "$URAID" serve -f \
        --bind "$(host_addr "$n")" --port 10809 "$@") 2>>"$tmp/host$n.log" &
    hosts_pids+=($!)
    host_wait_port "$n"
}

host_serve_nbdkit() {
    local n=$1 dir=$2
    ip netns exec "$(host_ns "$n")" nbdkit -f -i "$(host_addr "$n")" -p 10809 \
        file dir="$dir" 2>>"$tmp/host$n.log" &
    hosts_pids+=($!)
    host_wait_port "$n"
}

host_link_down() { ip link set "$(host_veth "$1")" down; }

host_link_up() {
    local n=$1
    ip link set "$(host_veth "$n")" up
    # The route to the host's subnet comes back with the link.
    ip addr replace "$(host_net "$n").1/24" dev "$(host_veth "$n")"
}

# host_shape N [delay D] [rate R] — on both ends of the link: netem where
# a delay is asked (it takes the rate too), tbf for a rate alone (tbf is in
# more kernels than netem: hosts_can_netem says whether netem is).
host_shape() {
    local n=$1 veth delay="" rate="" ns
    shift
    veth=$(host_veth "$n") ns=$(host_ns "$n")
    while [ $# -gt 0 ]; do
        case $1 in
        delay) delay=$2; shift 2 ;;
        rate) rate=$2; shift 2 ;;
        *) fail "host_shape: unknown $1 (delay D, rate R)" ;;
        esac
    done
    tc qdisc del dev "$veth" root 2>/dev/null || true
    ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null || true
    local q
    if [ -n "$delay" ]; then
        q="netem delay $delay${rate:+ rate $rate}"
    elif [ -n "$rate" ]; then
        q="tbf rate $rate burst 256kb latency 100ms"
    else
        return 0
    fi
    # shellcheck disable=SC2086 # q is words
    tc qdisc add dev "$veth" root $q && ip netns exec "$ns" tc qdisc add dev eth0 root $q ||
        fail "host $n: tc qdisc $q${delay:+ (netem: hosts_can_netem says if this kernel has it)}"
}

# hosts_can_netem — whether tc's netem qdisc (delays) exists here.
hosts_can_netem() {
    local v="urn$hosts_tag" ok=1
    ip link add "$v" type veth peer name "uro$hosts_tag" 2>/dev/null || return 1
    tc qdisc add dev "$v" root netem delay 1ms 2>/dev/null && ok=0
    ip link del "$v" 2>/dev/null || true
    return $ok
}

# role_state CTL ROLE — the state `uraid detail --json` gives the array's
# member in ROLE (the one array served on CTL).
role_state() {
    "$URAID" detail --json "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for m in d["arrays"][0]["members"]:
    if m["role"] == int(sys.argv[1]):
        print(m["state"])' "$2"
}
