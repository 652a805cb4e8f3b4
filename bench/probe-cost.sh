#!/bin/bash
# probe-cost.sh — what `uraid probe` reads: bytes and reads (strace on the
# read syscalls of the member files) and wall time, for N members of SIZE
# (sparse files holding an md RAID6, v1.2) at two sizes, to show that
# probing reads metadata only and does not grow with the members' size.
#   bench/probe-cost.sh [URAID] [N]     (default build-rel/src/uraid, 8)
set -euo pipefail
U=${1:-build-rel/src/uraid}
N=${2:-8}
U=$(readlink -f "$U")
command -v strace >/dev/null || { echo "needs strace"; exit 1; }
D=$(mktemp -d /var/tmp/probe-cost.XXXXXX)
trap 'rm -rf "$D"' EXIT
echo "| members | bytes read | reads | wall (median of 5) |"
echo "|---|---:|---:|---:|"
for size in 64M 4T; do
    mkdir "$D/$size"
    cd "$D/$size"
    for ((i = 0; i < N; i++)); do truncate -s "$size" m$i.img; done
    "$U" create --level=6 --bitmap=none m*.img >/dev/null 2>&1
    strace -f -e trace=pread64,read,preadv,preadv2 -o st.log "$U" probe m*.img >/dev/null 2>&1
    # reads of the members' descriptors (those above 2), summed
    read -r n bytes < <(awk '/^[0-9]+ +p?read(v2?|64)?\(/ {
        fd = $2; sub(/^[a-z0-9]*\(/, "", fd); sub(/,.*/, "", fd)
        if (fd + 0 > 2 && $NF ~ /^[0-9]+$/) { n++; b += $NF } } END { print n + 0, b + 0 }' st.log)
    times=()
    for k in 1 2 3 4 5; do
        s=$(date +%s.%N); "$U" probe --json m*.img >/dev/null 2>&1; e=$(date +%s.%N)
        times+=("$(echo "$e - $s" | bc)")
    done
    med=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)
    printf "| %d x %s | %d | %d | %.3f s |\n" "$N" "$size" "$bytes" "$n" "$med"
    cd - >/dev/null
done
