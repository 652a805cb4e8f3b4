#!/bin/bash
# journal-wb.sh — the write-back journal's 4 KiB qd1 fsync row three ways,
# against the ssd model alone under the same fio job, rounds interleaved:
#   burst    N random writes over the whole array (N: below the cache's
#            bound of 128 4 KiB stripes), from an empty cache;
#   set-S    random writes over the first S bytes of the array for RUNTIME
#            (a working set: 384k is 32 stripes, 1536k is 128);
#   steady   random writes over the whole array for RUNTIME after a ramp
#            of RAMP (the cache full: the destage rate binds).
# RAID5 of 4 sim:sata80 members (128 MiB files in /dev/shm, 64 KiB chunk),
# the journal a 128 MiB sim:ssd member, served --journal-mode=write-back;
# each job on a fresh `uraid serve`, after one write (the array's first
# write marks it active in every superblock: tens of ms on the disks).  fio ioengine=nbd, bs=4k, iodepth=1,
# fsync=1.  Prints per row and round the IOPS of both and the ratio, then
# the medians.
#
#   bench/journal-wb.sh URAID [ROUNDS] [RUNTIME] [RAMP] [N]
set -eu
U=$1 rounds=${2:-3} rt=${3:-5} ramp=${4:-5} n=${5:-120}
d=/dev/shm/jwb.$$; rm -rf $d; mkdir -p $d
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf $d' EXIT
serve() { # MEMBERS...: start, wait for the socket
  rm -f $d/s.sock
  $U serve --foreground --socket $d/s.sock "$@" >$d/serve.log 2>&1 & pid=$!
  while ! [ -S $d/s.sock ]; do
    kill -0 $pid 2>/dev/null || { echo "serve exited:"; cat $d/serve.log; exit 1; } >&2
    sleep 0.01
  done
}
stop() { kill $pid; wait $pid 2>/dev/null || true; pid=; }
job() { # ARGS...: one fio job, prints its write IOPS
  fio --name=w --ioengine=nbd --uri="nbd+unix:///?socket=$d/s.sock" --rw=randwrite --bs=4k \
    --iodepth=1 --fsync=1 --randrepeat=0 --output-format=json "$@" 2>/dev/null |
    python3 -c 'import json,sys; t=sys.stdin.read(); print("%.1f" % json.loads(t[t.index("{"):])["jobs"][0]["write"]["iops"])'
}
fresh() {
  rm -f $d/m* $d/j $d/ssd
  truncate -s 128M $d/m0 $d/m1 $d/m2 $d/m3 $d/j $d/ssd
  $U create --level 5 --raid-devices 4 --assume-clean --chunk 64K --write-journal $d/j \
    $d/m0 $d/m1 $d/m2 $d/m3 >/dev/null 2>&1
}
rows=${ROWS:-"burst set-384k set-1536k steady"}
args() { # ROW: fio's arguments for it
  case $1 in
    burst) echo "--number_ios=$n --size=300M" ;;
    set-*) echo "--size=${1#set-} --time_based --runtime=$rt" ;;
    steady) echo "--size=300M --time_based --ramp_time=$ramp --runtime=$rt" ;;
  esac
}
out=$d/figures
for r in $(seq $rounds); do
  for row in $rows; do
    fresh
    serve sim:sata80:$d/m0 sim:sata80:$d/m1 sim:sata80:$d/m2 sim:sata80:$d/m3 \
      --journal-mode=write-back sim:ssd:$d/j
    job --number_ios=1 --size=300M >/dev/null # md marks the array active first
    wb=$(job $(args $row)); stop
    serve sim:ssd:$d/ssd
    job --number_ios=1 --size=300M >/dev/null
    ssd=$(job $(args $row)); stop
    echo "round $r $row: write-back $wb IOPS, ssd alone $ssd IOPS, ratio $(python3 -c "print('%.2f' % ($wb/$ssd))") (load $(cut -d' ' -f1 /proc/loadavg))"
    echo "$row $wb $ssd" >>$out
  done
done
python3 - $out <<'PY'
import statistics, sys
fig = {}
for line in open(sys.argv[1]):
    row, wb, ssd = line.split(); fig.setdefault(row, []).append((float(wb), float(ssd)))
for row, v in fig.items():
    wb = statistics.median(x for x, _ in v); ssd = statistics.median(y for _, y in v)
    rs = sorted(x / y for x, y in v)
    print(f"{row}: write-back {wb:.0f} IOPS, ssd {ssd:.0f}, ratio median {statistics.median(rs):.2f} ({rs[0]:.2f}-{rs[-1]:.2f}), {len(v)} rounds")
PY
