#!/bin/bash
# sync-speed.sh — the speeds the md sync limits give (--sync-speed-max /
# --sync-speed-min), measured: a check of a served RAID1 of two tmpfs
# files at each limit, alone and beside a reading client, in MiB/s of each
# member.  The suite does not time anything; what the limits decide is
# tests/unit/test_md_throttle.c's.  This is where the achieved rates are.
#
#   bench/sync-speed.sh [SIZE] [LIMITS...]     (defaults 48M, 4M 16M)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-48M}
shift || true
if [ $# -gt 0 ]; then limits=("$@"); else limits=(4M 16M); fi
uraid=${URAID:-$PWD/build/src/uraid}
dir=$(mktemp -d /dev/shm/sync-speed.XXXXXX)
pid="" busy=""
trap '[ -n "$busy" ] && kill $busy 2>/dev/null; [ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT

truncate -s "$size" "$dir/a" "$dir/b"
"$uraid" create --level=1 "$dir/a" "$dir/b" > /dev/null
member=$(( $("$uraid" serve --run 'nbdinfo --size "$uri"' "$dir/a" "$dir/b" 2>/dev/null) ))

# check OPTS...: MiB/s of each member of one check under a serve with OPTS
check() {
    "$uraid" serve -f --socket "$dir/s" --control "$dir/c" "$@" "$dir/a" "$dir/b" 2>/dev/null &
    pid=$!
    for _ in $(seq 200); do [ -S "$dir/c" ] && break; sleep 0.05; done
    if [ -n "${CLIENT:-}" ]; then
        fio --name=busy --ioengine=nbd --uri="nbd+unix:///?socket=$dir/s" --rw=randread --bs=4k \
            --iodepth=1 --size=8M --time_based --runtime=600 --rate_iops=200 > /dev/null 2>&1 &
        busy=$!
        sleep 1
    fi
    local t0 t1
    t0=$(date +%s%N)
    "$uraid" check --wait "$dir/c" > /dev/null
    t1=$(date +%s%N)
    [ -n "$busy" ] && { kill $busy; wait $busy 2>/dev/null || true; busy=""; }
    kill $pid; wait $pid 2>/dev/null || true; pid=""
    rm -f "$dir/s" "$dir/c"
    awk -v b="$member" -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", b / 1048576 / (ns / 1e9) }'
}

printf '%-28s %10s\n' "limit" "MiB/s"
printf '%-28s %10s\n' "none" "$(check)"
for l in "${limits[@]}"; do
    printf '%-28s %10s\n' "--sync-speed-max $l" "$(check --sync-speed-max "$l")"
    printf '%-28s %10s\n' "--sync-speed-min $l, client" "$(CLIENT=1 check --sync-speed-min "$l")"
done
