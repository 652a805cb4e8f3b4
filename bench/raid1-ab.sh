#!/bin/bash
# raid1-ab.sh — two uraid builds A/B on the 4 KiB qd32 rows over an md
# RAID1 of two files in /dev/shm: fio (ioengine=nbd) randread and
# randwrite, 131072 I/Os a job, rounds interleaved; prints per round and
# build the IOPS and the server's CPU time per I/O in ns (utime + stime
# from /proc, 10 ms ticks).
#
#   bench/raid1-ab.sh BEFORE_URAID AFTER_URAID [ROUNDS]
set -eu
A=$1 B=$2
shift 2
d=/dev/shm/raid1-ab.$$; rm -rf $d; mkdir -p $d
pid=
trap 'kill $pid 2>/dev/null; rm -rf $d' EXIT
rounds=${1:-5}
declare -A bin=([before]=$A [after]=$B)
truncate -s 1G $d/a $d/b
$B create --level=1 $d/a $d/b >/dev/null 2>&1
cpu() { awk '{print $14 + $15}' /proc/$1/stat; }
for r in $(seq $rounds); do
  for v in before after; do
    U=${bin[$v]}
    $U serve -f --socket $d/s.sock $d/a $d/b 2>/dev/null & pid=$!
    for _ in $(seq 100); do [ -S $d/s.sock ] && break; sleep 0.05; done
    for job in randread randwrite; do
      c0=$(cpu $pid)
      iops=$(fio --name=j --ioengine=nbd --uri="nbd+unix:///?socket=$d/s.sock" --rw=$job --bs=4k --iodepth=32 \
        --size=512M --output-format=json 2>/dev/null | sed -n "/^{/,\$p" |
        python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(int(j["read"]["iops"]+j["write"]["iops"]))')
      c1=$(cpu $pid)
      echo "$r $v $job $iops $(( (c1 - c0) * 10000000 / 131072 ))"  # ns of CPU per I/O (ticks of 10 ms)
    done
    kill $pid; wait $pid 2>/dev/null || true
  done
done
