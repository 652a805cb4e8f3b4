#!/bin/bash
# reshape-online.sh — BENCHMARKS' reshape rate with a client streaming: a
# `uraid serve` (no sync speed limit) of the RAID5 of reshape-rate.sh (three
# sparse 512 MiB files, sim:sata80 members) starts `uraid grow -n 4 --add`
# through its control socket while fio (ioengine=nbd, 1 MiB, qd1) reads or
# writes sequentially from before the start until the reshape ends; and the
# same client alone (no reshape) for as long.  Each run prints the reshape's
# wall time and rate (old array bytes, 1020 MiB, as a share of one member's
# 76.3 MiB/s), the client's MiB/s, and each member's modelled busy time.
#
#   bench/reshape-online.sh ROUNDS BINARY [MODE...]
# MODE: none (the reshape alone), read, write (the reshape beside a client),
# alone-read, alone-write (the client alone, CLIENT_S seconds, default 20).
# Modes run interleaved round after round.  DIR (default /tmp) holds the files.
set -euo pipefail
rounds=${1:?rounds}
bin=${2:?binary}
shift 2
[ $# -gt 0 ] || set -- none read write alone-read alone-write
dir=$(mktemp -d "${DIR:-/tmp}/reshape-online.XXXXXX")
spid="" cpid=""
trap '[ -n "$cpid" ] && kill $cpid 2>/dev/null; [ -n "$spid" ] && kill $spid 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT

# run MODE: one run; prints "reshape_s rate client_MiB/s busy0 busy1 busy2 busy3"
run() {
    local mode=$1 f=("$dir/m0" "$dir/m1" "$dir/m2" "$dir/m3") s=$dir/s c=$dir/c
    rm -f "${f[@]}" "$s" "$c" "$dir/fio.json"
    truncate -s 512M "${f[@]}"
    "$bin" create --level=5 --chunk=512 --assume-clean "${f[@]:0:3}" >/dev/null 2>&1
    "$bin" serve -f -v -v --socket "$s" --control "$c" --sync-speed-min 0 --sync-speed-max 0 \
        "sim:sata80:${f[0]}" "sim:sata80:${f[1]}" "sim:sata80:${f[2]}" 2>"$dir/serve.log" &
    spid=$!
    for _ in $(seq 400); do [ -S "$c" ] && [ -S "$s" ] && break; sleep 0.05; done
    local rw=${mode#alone-} runtime=600
    [ "$mode" = "${mode#alone-}" ] || runtime=${CLIENT_S:-20}
    if [ "$mode" != none ]; then
        fio --name=c --ioengine=nbd --uri="nbd+unix:///?socket=$s" --rw="$rw" --bs=1M \
            --iodepth=1 --size=1000M --time_based --runtime="$runtime" \
            --output-format=json --output="$dir/fio.json" >/dev/null 2>&1 &
        cpid=$!
        sleep 1
    fi
    local t0 t1 ns=0
    if [ "$mode" = "${mode#alone-}" ]; then
        t0=$(date +%s%N)
        "$bin" grow -n 4 --add "sim:sata80:${f[3]}" "$c" >/dev/null
        while "$bin" detail "$c" 2>/dev/null | grep -q reshaping; do sleep 0.1; done
        t1=$(date +%s%N)
        ns=$((t1 - t0))
    fi
    if [ -n "$cpid" ]; then
        [ "$mode" = "${mode#alone-}" ] && kill -INT $cpid
        wait $cpid || true
        cpid=""
    fi
    kill $spid; wait $spid 2>/dev/null || true
    spid=""
    local mibs=0
    [ -s "$dir/fio.json" ] && mibs=$(python3 -c '
import json, sys
t = open(sys.argv[1]).read()  # after SIGINT fio writes a line before the JSON
j = json.loads(t[t.index("{"):])["jobs"][0]
print("%.1f" % ((j["read"]["bw"] + j["write"]["bw"]) / 1024))' "$dir/fio.json")
    awk -v ns=$ns -v mibs="$mibs" '
        /modelled busy/ { for (i = 1; i <= NF; i++) if ($i == "busy") b = b " " $(i + 1) }
        END { printf "%.2f %.3f %s%s\n", ns / 1e9, ns ? 1020 / (ns / 1e9) / 76.294 : 0, mibs, b }' \
        "$dir/serve.log"
}

echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) rounds $rounds $bin"
for r in $(seq "$rounds"); do
    for mode in "$@"; do
        echo "$r $mode $(run "$mode")"
    done
done
