#!/bin/bash
# sparse-copy.sh — copying a sparse volume out over NBD: nbdcopy asks the
# server where the data is (base:allocation) and reads only that.  The same
# sparse image (SIZE, with DATA MiB of random data in 2 MiB pieces spread
# over it) is served by uraid, nbdkit's file plugin and qemu-nbd in turn,
# and `nbdcopy URI null:` is timed ROUNDS times each; medians.
#
#   bench/sparse-copy.sh [ROUNDS] [SIZE] [DATA_MIB]   (defaults 5, 4G, 64)
#   URAID=/path/to/uraid bench/sparse-copy.sh
#   TMPDIR=/dev/shm bench/sparse-copy.sh        (the image in RAM)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} size=${2:-4G} data=${3:-64}
uraid=${URAID:-$PWD/build/src/uraid}
for t in nbdcopy nbdkit qemu-nbd python3; do
    command -v $t >/dev/null || { echo "sparse-copy: needs $t" >&2; exit 1; }
done
d=$(mktemp -d "${TMPDIR:-/tmp}/sparse-copy.XXXXXX")
trap 'rm -rf "$d"' EXIT
truncate -s "$size" "$d/s.img"
bytes=$(stat -c %s "$d/s.img")
pieces=$((data / 2))
for i in $(seq 0 $((pieces - 1))); do
    dd if=/dev/urandom of="$d/s.img" bs=1M count=2 conv=notrunc \
        seek=$((i * (bytes >> 20) / pieces)) 2>/dev/null
done
echo "image: $size, $(du -m "$d/s.img" | cut -f1) MiB allocated" >&2
copy='t0=$(date +%s%N); nbdcopy "$uri" null: && echo $((($(date +%s%N) - t0) / 1000))'
for r in $(seq "$rounds"); do
    echo "uraid $("$uraid" serve --readonly --run "$copy" "$d/s.img" 2>/dev/null)"
    echo "nbdkit $(nbdkit -r -U - file "$d/s.img" --run "$copy")"
    echo "qemu-nbd $(qemu-nbd -r -f raw -t -k "$d/q.sock" "$d/s.img" & p=$!;
        for _ in $(seq 50); do [ -S "$d/q.sock" ] && break; sleep 0.1; done
        uri="nbd+unix:///?socket=$d/q.sock" bash -c "$copy"; kill $p; wait $p 2>/dev/null)"
done > "$d/rows"
python3 - "$d/rows" <<'PY'
import statistics, sys
v = {}
for line in open(sys.argv[1]):
    name, us = line.split()
    v.setdefault(name, []).append(int(us) / 1e6)
for name, xs in v.items():
    print(f"{name:9} median {statistics.median(xs):6.3f} s  (min {min(xs):.3f}, max {max(xs):.3f}, n={len(xs)})")
PY
