# ceph-lib.sh — a one-host Ceph cluster a test starts by itself, from
# Debian's ceph-mon / ceph-osd / ceph-common: one monitor on 127.0.0.1 (a
# fresh fsid, a free port, msgr2 only, cephx off), CEPH_NOSDS OSDs (default
# 1) on memstore, a pool "rbd" of size 1, everything (ceph.conf, data, logs,
# admin sockets) under $ceph_dir, killed on exit.  No mgr: client I/O and
# pool commands need only the monitor and the OSDs.
#
#   . tests/sh/ceph-lib.sh        (after lib.sh; skips with 77 if ceph is absent)
#   ceph_start                    sets $CEPH_CONF (exported) and $ceph_startup_s
#   ceph_rbd_create IMAGE SIZE    rbd create in the pool
#   ceph_osd_kill N               SIGKILL osd.N (the member on it fails)
#
# Client ops are bounded (rados osd op timeout, rados mon op timeout,
# client mount timeout in the [client] section) so a dead OSD fails
# requests instead of hanging them: CEPH_OP_TIMEOUT seconds, default 10.
# CEPH_CLIENT_CONF is more [client] lines ("rbd cache = false").  A client
# answers `ceph --admin-daemon $ceph_dir/run/client.PID.asok config get OPT`.
requires ceph ceph-mon ceph-osd ceph-authtool monmaptool rbd rados

ceph_dir=$tmp/ceph
ceph_pids=()

ceph_stop_all() {
    for p in "${ceph_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    for p in "${ceph_pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
cleanup_hooks+=(ceph_stop_all)

# A TCP port nothing listens on now, from a range uraid's other tests and
# Ceph's defaults (3300, 6789, 6800-7300) leave alone.
ceph_free_port() {
    local p
    for _ in $(seq 100); do
        p=$((20000 + RANDOM % 20000))
        grep -qi ":$(printf %04X "$p") " /proc/net/tcp /proc/net/tcp6 2>/dev/null ||
            { echo "$p"; return 0; }
    done
    return 1
}

ceph_skip() { echo "SKIP: $*"; exit 77; }

# ceph_daemon NAME CMD... — start a daemon in the foreground (-f) in the
# background, so its pid is ours to kill.
ceph_daemon() {
    local name=$1; shift
    "$@" -f -c "$CEPH_CONF" >"$ceph_dir/log/$name.out" 2>&1 &
    ceph_pids+=($!)
    eval "ceph_pid_${name//./_}=$!"
}

ceph_cmd() { timeout 60 ceph -c "$CEPH_CONF" "$@"; }

ceph_start() {
    local nosds=${CEPH_NOSDS:-1} t0 port fsid i
    t0=$(date +%s.%N)
    mkdir -p "$ceph_dir"/{log,run,mon,osd}
    port=$(ceph_free_port) || ceph_skip "no free TCP port for the monitor"
    local osd_lo
    osd_lo=$(ceph_free_port) || ceph_skip "no free TCP port for the OSDs"
    fsid=$(cat /proc/sys/kernel/random/uuid)
    export CEPH_CONF=$ceph_dir/ceph.conf
    cat >"$CEPH_CONF" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$port]
public addr = 127.0.0.1
ms bind msgr1 = false
ms bind port min = $osd_lo
ms bind port max = $((osd_lo + 100))
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
run dir = $ceph_dir/run
admin socket = $ceph_dir/run/\$name.asok
log file = $ceph_dir/log/\$name.log
mon data = $ceph_dir/mon/\$name
osd data = $ceph_dir/osd/\$name
osd objectstore = memstore
memstore device bytes = ${CEPH_MEMSTORE_BYTES:-2147483648}
osd memory target = 939524096
mon data avail warn = 1
mon data avail crit = 0
osd max object name len = 256
osd max object namespace len = 64
[client]
rados osd op timeout = ${CEPH_OP_TIMEOUT:-10}
rados mon op timeout = ${CEPH_OP_TIMEOUT:-10}
client mount timeout = ${CEPH_OP_TIMEOUT:-10}
log file = $ceph_dir/log/client.\$pid.log
admin socket = $ceph_dir/run/client.\$pid.asok
${CEPH_CLIENT_CONF:-}
EOF
    monmaptool --create --addv a "[v2:127.0.0.1:$port]" --fsid "$fsid" \
        "$ceph_dir/monmap" >"$ceph_dir/log/monmaptool.out" 2>&1 ||
        ceph_skip "monmaptool failed: $(tail -1 "$ceph_dir/log/monmaptool.out")"
    ceph-authtool --create-keyring "$ceph_dir/mon.keyring" --gen-key -n mon. \
        --cap mon 'allow *' >/dev/null 2>&1 || ceph_skip "ceph-authtool failed"
    ceph-mon -c "$CEPH_CONF" --mkfs -i a --monmap "$ceph_dir/monmap" \
        --keyring "$ceph_dir/mon.keyring" >"$ceph_dir/log/mon-mkfs.out" 2>&1 ||
        ceph_skip "ceph-mon --mkfs failed: $(tail -1 "$ceph_dir/log/mon-mkfs.out")"
    ceph_daemon mon.a ceph-mon -i a
    ceph_cmd mon stat >/dev/null 2>&1 ||
        ceph_skip "ceph-mon did not answer on 127.0.0.1:$port: $(tail -3 "$ceph_dir/log/mon.a.out")"
    for ((i = 0; i < nosds; i++)); do
        local uuid
        uuid=$(cat /proc/sys/kernel/random/uuid)
        [ "$(ceph_cmd osd new "$uuid")" = "$i" ] || fail "ceph osd new did not give osd.$i"
        mkdir -p "$ceph_dir/osd/osd.$i"
        ceph-osd -c "$CEPH_CONF" -i "$i" --mkfs --osd-uuid "$uuid" \
            >"$ceph_dir/log/osd.$i-mkfs.out" 2>&1 ||
            ceph_skip "ceph-osd --mkfs failed: $(tail -1 "$ceph_dir/log/osd.$i-mkfs.out")"
        ceph_daemon "osd.$i" ceph-osd -i "$i"
    done
    for _ in $(seq 600); do
        [ "$(ceph_cmd osd stat -f json 2>/dev/null | sed -n 's/.*"num_up_osds":\([0-9]*\).*/\1/p')" = "$nosds" ] && break
        sleep 0.1
    done
    [ "$(ceph_cmd osd stat -f json | sed -n 's/.*"num_up_osds":\([0-9]*\).*/\1/p')" = "$nosds" ] ||
        ceph_skip "the OSDs did not come up: $(tail -3 "$ceph_dir/log/osd.0.out")"
    ceph_cmd osd pool create rbd 8 8 >/dev/null 2>&1 || fail "ceph osd pool create rbd"
    ceph_cmd osd pool set rbd size 1 --yes-i-really-mean-it >/dev/null 2>&1 || true
    ceph_cmd osd pool application enable rbd rbd >/dev/null 2>&1 || fail "ceph osd pool application enable"
    # Wait until a write goes through: the PGs are active.
    for _ in $(seq 600); do
        timeout 20 rados -c "$CEPH_CONF" -p rbd put ceph-lib-probe /dev/null >/dev/null 2>&1 && break
        sleep 0.1
    done
    timeout 20 rados -c "$CEPH_CONF" -p rbd rm ceph-lib-probe >/dev/null 2>&1 ||
        fail "pool rbd never took a write: $(ceph_cmd -s 2>&1 | tail -5)"
    ceph_startup_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}

ceph_rbd_create() { # IMAGE SIZE
    timeout 60 rbd -c "$CEPH_CONF" create --size "$2" "rbd/$1" || fail "rbd create rbd/$1"
}

ceph_osd_kill() { # N
    local v="ceph_pid_osd_$1"
    kill -KILL "${!v}"
    wait "${!v}" 2>/dev/null || true # reaped here: no "Killed" from bash later
}
