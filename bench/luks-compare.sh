#!/bin/bash
# luks-compare.sh — the LUKS rows of issue 4 alone: nbdkit's LUKS filter
# and `uraid serve` on the same LUKS1 image that qemu-img makes (aes-256-xts,
# 512-byte sectors), and uraid's LUKS2 (4096-byte sectors) on a 2 GiB file,
# with bench/peers.sh's fio jobs, interleaved ROUNDS times.
#
#   bench/luks-compare.sh [ROUNDS] [RUNTIME]      (defaults 3 and 3 s)
#
# peers.sh makes its own LUKS image each run with qemu-img, which fails
# now and then on this machine ("Unable to get accurate CPU usage" while
# timing its PBKDF); here the image is made once, with retries.
# Prints peers.sh's rows, then medians per (server, job).
# TMPDIR=/dev/shm keeps the images in RAM, out of reach of this machine's
# disk writeback (which binds random writes on /tmp after the sequential jobs).
# RT=1 runs the three servers and fio under SCHED_FIFO (chrt -f 50, root),
# the same for all, so that other work on the machine does not land on one
# server's turn more than another's.
set -u
cd "$(dirname "$0")/.."
rounds=${1:-3} runtime=${2:-3}
rt=()
[ "${RT:-0}" = 1 ] && rt=(chrt -f 50)
uraid=${URAID:-$PWD/build/src/uraid}
peers=${PEERS_SH:-$(dirname "$0")/peers.sh}
d=$(mktemp -d "${TMPDIR:-/tmp}/luks-compare.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$d"' EXIT
printf peers > "$d/key"
for _ in 1 2 3 4 5; do
    qemu-img create -q -f luks --object secret,id=s0,data=peers \
        -o key-secret=s0,cipher-alg=aes-256,cipher-mode=xts,iter-time=10 "$d/luks1.img" 2G \
        2>/dev/null && break
    rm -f "$d/luks1.img"
    sleep 1
done
[ -f "$d/luks1.img" ] || { echo "luks-compare: qemu-img could not make a LUKS image" >&2; exit 1; }
truncate -s 2G "$d/luks2.img"
"$uraid" luks-format --batch --key-file "$d/key" --pbkdf-memory=65536 --iter-time=100 \
    "$d/luks2.img" 2>/dev/null
"${rt[@]}" nbdkit -f -U "$d/nk.sock" --filter=luks file "$d/luks1.img" passphrase=peers & pids+=($!)
"${rt[@]}" "$uraid" serve --foreground --socket "$d/u1.sock" --key-file "$d/key" "$d/luks1.img" 2>/dev/null &
pids+=($!)
"${rt[@]}" "$uraid" serve --foreground --socket "$d/u2.sock" --key-file "$d/key" "$d/luks2.img" 2>/dev/null &
pids+=($!)
for s in nk u1 u2; do
    for _ in $(seq 100); do [ -S "$d/$s.sock" ] && break; sleep 0.1; done
done
for r in $(seq "$rounds"); do
    echo "== round $r" >&2
    "${rt[@]}" "$peers" --only --runtime "$runtime" --uri "nbd+unix:///?socket=$d/nk.sock" --label nbdkit-luks
    "${rt[@]}" "$peers" --only --runtime "$runtime" --uri "nbd+unix:///?socket=$d/u1.sock" --label uraid-luks1
    "${rt[@]}" "$peers" --only --runtime "$runtime" --uri "nbd+unix:///?socket=$d/u2.sock" --label uraid-luks2
done | tee "$d/rows"
python3 - "$d/rows" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r'(\S+)\s+(\S+)\s+bs=(\S+)\s+qd=(\S+)\s+(\d+) MB/s\s+(\d+) IOPS', line)
    if m:
        rows.setdefault((m[1], m[2], m[3], m[4]), []).append((int(m[5]), int(m[6])))
print(f"{'server':14} {'job':10} {'bs':>4} {'qd':>3} {'MiB/s':>7} {'IOPS':>8}  (median of n)")
for k, v in rows.items():
    print(f"{k[0]:14} {k[1]:10} {k[2]:>4} {k[3]:>3} {statistics.median(x[0] for x in v):7.0f} "
          f"{statistics.median(x[1] for x in v):8.0f}  n={len(v)}")
PY
