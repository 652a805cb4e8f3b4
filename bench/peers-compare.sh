#!/bin/bash
# peers-compare.sh — uraid against nbdkit and qemu-nbd with the same fio
# jobs (bench/peers.sh), ROUNDS times, medians per row.
#
#   bench/peers-compare.sh [ROUNDS] [RUNTIME]     (defaults 3 and 4 s)
#
# Ours: `uraid serve mem:2G`, a 2 GiB file, our LUKS2 on a 2 GiB file, and
# the very LUKS1 image format qemu-img makes (aes-256-xts, 512-byte
# sectors), which is what nbdkit-luks and qemu-nbd-luks serve in peers.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} runtime=${2:-4}
peers=${PEERS_SH:-$(dirname "$0")/peers.sh}
uraid=${URAID:-$PWD/build/src/uraid}
dir=$(mktemp -d /tmp/peers-compare.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$dir"' EXIT

printf peers > "$dir/key"
truncate -s 2G "$dir/file.img" "$dir/luks2.img"
"$uraid" luks-format --batch --key-file "$dir/key" --pbkdf-memory=65536 --iter-time=100 "$dir/luks2.img" 2>/dev/null
qemu-img create -q -f luks --object secret,id=s0,data=peers -o key-secret=s0,cipher-alg=aes-256,cipher-mode=xts,iter-time=10 "$dir/luks1.img" 2G

serve() { # LABEL ARGS...
    local label=$1; shift
    "$uraid" serve --foreground --socket "$dir/$label.sock" "$@" 2>"$dir/$label.log" &
    pids+=($!)
    for _ in $(seq 100); do [ -S "$dir/$label.sock" ] && return 0; sleep 0.1; done
    echo "peers-compare: $label did not start" >&2; cat "$dir/$label.log" >&2; exit 1
}
serve uraid-mem mem:2G
serve uraid-file "$dir/file.img"
serve uraid-luks2 --key-file "$dir/key" "$dir/luks2.img"
serve uraid-luks1 --key-file "$dir/key" "$dir/luks1.img"

for r in $(seq "$rounds"); do
    echo "== round $r" >&2
    "$peers" --runtime "$runtime" --uri "nbd+unix:///?socket=$dir/uraid-mem.sock" --label uraid-mem
    for l in uraid-file uraid-luks2 uraid-luks1; do
        "$peers" --runtime "$runtime" --only --uri "nbd+unix:///?socket=$dir/$l.sock" --label "$l"
    done
done > "$dir/rows.txt"

# Median MB/s and IOPS per (server, job) row.
python3 - "$dir/rows.txt" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r'(\S+)\s+(\S+)\s+bs=(\S+)\s+qd=(\S+)\s+(\d+) MB/s\s+(\d+) IOPS', line)
    if m:
        k = (m[1], m[2], m[3], m[4])
        rows.setdefault(k, []).append((int(m[5]), int(m[6])))
print(f"{'server':16} {'job':10} {'bs':>4} {'qd':>3} {'MB/s':>7} {'IOPS':>8}  (median of n; min-max MB/s)")
for k, v in rows.items():
    mb = statistics.median(x[0] for x in v); io = statistics.median(x[1] for x in v)
    print(f"{k[0]:16} {k[1]:10} {k[2]:>4} {k[3]:>3} {mb:7.0f} {io:8.0f}  n={len(v)} {min(x[0] for x in v)}-{max(x[0] for x in v)}")
PY
