#!/bin/bash
# file-fresh.sh — 4 KiB random writes then reads at qd 32 (fio, 3 s each)
# on a fresh 2 GiB sparse file in /tmp, served by nbdkit's file plugin and
# by `uraid serve`, alternating, ROUNDS times, with a sync before each
# server.  peers.sh runs its random jobs after several GB of sequential
# writes, when both servers wait on the kernel writing dirty pages back to
# this machine's disk; this measures the servers instead.
#
#   bench/file-fresh.sh [ROUNDS]        (default 3); prints "round server job IOPS"
set -u
cd "$(dirname "$0")/.."
rounds=${1:-3}
uraid=${URAID:-$PWD/build/src/uraid}
d=$(mktemp -d /tmp/file-fresh.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
for r in $(seq "$rounds"); do
    for srv in nbdkit uraid; do
        rm -f "$d/f.img" "$d/f.sock"
        truncate -s 2G "$d/f.img"
        sync
        if [ $srv = nbdkit ]; then nbdkit -f -U "$d/f.sock" file "$d/f.img" & pid=$!
        else "$uraid" serve --foreground --socket "$d/f.sock" "$d/f.img" 2>/dev/null & pid=$!; fi
        for _ in $(seq 100); do [ -S "$d/f.sock" ] && break; sleep 0.1; done
        for rw in randwrite randread; do
            iops=$(fio --name=t --ioengine=nbd --uri="nbd+unix:///?socket=$d/f.sock" --rw=$rw \
                       --bs=4k --iodepth=32 --size=1G --runtime=3 --time_based \
                       --output-format=terse --terse-version=3 2>/dev/null | grep '^3;' |
                   awk -F';' -v rw=$rw '{print (rw == "randread") ? $8 : $49}')
            echo "$r $srv $rw $iops"
        done
        kill $pid; wait $pid 2>/dev/null; pid=""
    done
done
