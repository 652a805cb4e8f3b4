#!/bin/bash
# rbd.sh — uraid on Ceph RBD against librbd driven directly, on one
# one-host cluster (tests/sh/ceph-lib.sh: a monitor and one memstore OSD on
# 127.0.0.1).  Three 512 MiB images, each filled first:
#   fio-rbd      fio's rbd engine on image "raw" (librbd, no NBD, no LUKS):
#                the ceiling the cluster gives one client
#   uraid-rbd    `uraid serve rbd:rbd/plain`, fio's nbd engine
#   uraid-luks2  `uraid serve rbd:rbd/luks` holding uraid's LUKS2
#                (aes-xts-plain64, 512-bit key, 4096-byte sectors)
# Jobs: 1 MiB sequential write and read at qd16, 4 KiB random write and
# read at qd32, RUNTIME s each, the three targets interleaved, ROUNDS times;
# then `rbd bench` (16 threads) on "raw" as a second reference.  Prints the
# rows, then medians and the ratios to fio-rbd.
#
#   bench/rbd.sh [ROUNDS] [RUNTIME]        (defaults 3 and 5)
#   URAID=path/to/uraid (default build/src/uraid, a release build)
#   RBD_CACHE=false   librbd's cache off for every client (Ceph's default is
#                     on: writethrough until a client's first flush, then
#                     writeback; uraid flushes, fio's rbd engine does not)
set -u
cd "$(dirname "$0")/.."
rounds=${1:-3} runtime=${2:-5}
export URAID=${URAID:-$PWD/build/src/uraid}
lib_scratch_name=rbd-bench
. tests/sh/lib.sh
set +e
requires fio python3
fio --enghelp=rbd >/dev/null 2>&1 || { echo "rbd.sh: fio lacks ioengine=rbd" >&2; exit 1; }
export CEPH_MEMSTORE_BYTES=$((3 << 30))
[ -n "${RBD_CACHE:-}" ] && export CEPH_CLIENT_CONF="rbd cache = $RBD_CACHE"
. tests/sh/ceph-lib.sh
ceph_start
echo "== cluster up in ${ceph_startup_s} s" >&2
span=512M
for img in raw plain luks; do ceph_rbd_create "$img" "$span"; done
printf bench >"$tmp/key"
chmod 600 "$tmp/key"
"$URAID" luks-format --batch --key-file "$tmp/key" --pbkdf-memory=65536 --iter-time=100 \
    rbd:rbd/luks 2>/dev/null || fail "luks-format on rbd:rbd/luks"
pids=()
# uraid first (it closes its images while the cluster is up); wait for those
# alone, the cluster's daemons are children too.
cleanup_hooks=("kill \${pids[*]} 2>/dev/null; wait \${pids[*]}" "${cleanup_hooks[@]}")
"$URAID" serve -f --socket "$tmp/plain.sock" rbd:rbd/plain 2>/dev/null & pids+=($!)
"$URAID" serve -f --socket "$tmp/luks.sock" --key-file "$tmp/key" rbd:rbd/luks 2>/dev/null &
pids+=($!)
for s in plain luks; do
    for _ in $(seq 200); do [ -S "$tmp/$s.sock" ] && break; sleep 0.1; done
    [ -S "$tmp/$s.sock" ] || fail "uraid serve $s did not start"
done

engine() { # TARGET: fio's engine options for it
    case $1 in
    fio-rbd) echo "--ioengine=rbd --clientname=admin --pool=rbd --rbdname=raw" ;;
    uraid-rbd) echo "--ioengine=nbd --uri=nbd+unix:///?socket=$tmp/plain.sock" ;;
    uraid-luks2) echo "--ioengine=nbd --uri=nbd+unix:///?socket=$tmp/luks.sock" ;;
    esac
}

# Fill every image, so that reads are of data and not of absent objects.
for t in fio-rbd uraid-rbd uraid-luks2; do
    # shellcheck disable=SC2046
    fio --name=fill $(engine $t) --rw=write --bs=4M --iodepth=8 --size=$span \
        --output="$tmp/fill.out" >/dev/null || { cat "$tmp/fill.out" >&2; fail "fill $t"; }
done

job() { # TARGET NAME RW BS QD
    local t=$1 name=$2 rw=$3 bs=$4 qd=$5 out=$tmp/job.json
    # shellcheck disable=SC2046
    fio --name="$name" $(engine "$t") --rw="$rw" --bs="$bs" --iodepth="$qd" --size=$span \
        --time_based --runtime="$runtime" --ramp_time=1 --output-format=json \
        --output="$out" >/dev/null || { echo "fio $t $name failed" >&2; return; }
    python3 - "$out" "$t" "$name" "$bs" "$qd" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
d = j["write"] if j["write"]["io_bytes"] else j["read"]
print(f"{sys.argv[2]:12} {sys.argv[3]:10} bs={sys.argv[4]:3} qd={sys.argv[5]:3} "
      f"{d['bw'] / 1024:8.0f} MiB/s {d['iops']:9.0f} IOPS")
PY
}

for r in $(seq "$rounds"); do
    echo "== round $r" >&2
    for j in "seqwrite write 1M 16" "seqread read 1M 16" "randwrite randwrite 4k 32" \
        "randread randread 4k 32"; do
        # shellcheck disable=SC2086
        set -- $j
        for t in fio-rbd uraid-rbd uraid-luks2; do job "$t" "$@"; done
    done
done | tee "$tmp/rows"

echo "== rbd bench on rbd/raw (16 threads), for reference" >&2
for spec in "write seq 1M 512M" "read seq 1M 512M" "write rand 4K 64M" "read rand 4K 64M"; do
    # shellcheck disable=SC2086
    set -- $spec
    timeout 300 rbd -c "$CEPH_CONF" bench --io-type "$1" --io-pattern "$2" --io-size "$3" \
        --io-total "$4" --io-threads 16 rbd/raw 2>&1 | tail -1 | sed "s/^/rbd-bench $1 $2 $3: /"
done

python3 - "$tmp/rows" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r'(\S+)\s+(\S+)\s+bs=(\S+)\s+qd=(\S+)\s+(\d+) MiB/s\s+(\d+) IOPS', line)
    if m:
        rows.setdefault(m[2], {}).setdefault(m[1], []).append((int(m[5]), int(m[6])))
print(f"{'job':10} {'fio-rbd':>14} {'uraid-rbd':>14} {'uraid-luks2':>14} {'rbd/fio':>8} {'luks2/fio':>9}")
for job, by in rows.items():
    unit = 1 if job.startswith('seq') else 2
    med = {t: statistics.median(x[unit - 1] for x in v) for t, v in by.items()}
    f = med.get('fio-rbd') or 1
    u = 'MiB/s' if unit == 1 else 'IOPS'
    print(f"{job:10} " + " ".join(f"{med.get(t, 0):8.0f} {u:5}" for t in
          ('fio-rbd', 'uraid-rbd', 'uraid-luks2')) +
          f" {med.get('uraid-rbd', 0) / f:8.2f} {med.get('uraid-luks2', 0) / f:9.2f}")
PY
