#!/bin/bash
# reshape-rate.sh — BENCHMARKS' reshape rate: a RAID5 3 -> 4 reshape
# (`uraid grow -n 4 --add`) of three sparse 512 MiB files made by `uraid
# create --level=5 --chunk=512 --assume-clean`, on sim:sata80 members
# (80 MB/s = 76.3 MiB/s each), offline; A/B interleaved, round after round.
# Each run prints its wall time, the rate of old array bytes (1020 MiB) as
# a share of one member, and each member's modelled busy time (sim.c's
# debug line at close: the figure CPU contention does not blur).
#
#   bench/reshape-rate.sh ROUNDS BINARY...      (e.g. 3 old/uraid new/uraid)
# DIR (default /tmp) holds the files; SIZE (default 512M) each member.
set -euo pipefail
rounds=${1:?rounds}
shift
dir=$(mktemp -d "${DIR:-/tmp}/reshape-rate.XXXXXX")
trap 'rm -rf "$dir"' EXIT
size=${SIZE:-512M}

# run BIN: one reshape; prints "wall_s rate busy0 busy1 busy2 busy3"
run() {
    local bin=$1 f=("$dir/m0" "$dir/m1" "$dir/m2" "$dir/m3")
    rm -f "${f[@]}"
    truncate -s "$size" "${f[@]}"
    "$bin" create --level=5 --chunk=512 --assume-clean "${f[@]:0:3}" >/dev/null 2>&1
    local t0 t1
    t0=$(date +%s%N)
    "$bin" grow -v -v -n 4 --add "sim:sata80:${f[3]}" "sim:sata80:${f[0]}" \
        "sim:sata80:${f[1]}" "sim:sata80:${f[2]}" >"$dir/log" 2>&1
    t1=$(date +%s%N)
    local moved
    moved=$(( ($(stat -c %s "${f[0]}") / 1048576 - 2) * 2 ))  # old array MiB, 1 MiB metadata+offset
    awk -v ns=$((t1 - t0)) -v mib="$moved" '
        /modelled busy/ { for (i = 1; i <= NF; i++) if ($i == "busy") b = b " " $(i + 1) }
        END { printf "%.2f %.3f%s\n", ns / 1e9, mib / (ns / 1e9) / 76.294, b }' "$dir/log"
}

echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) rounds $rounds"
for r in $(seq "$rounds"); do
    for bin in "$@"; do
        echo "$r $bin $(run "$bin")"
    done
done
