#!/bin/bash
# journal-replay.sh — how long a start takes when md's write journal holds
# all it can: a RAID5 of 4 members with a write-through journal (files in
# /dev/shm), fio (ioengine=nbd) writing 64 KiB random writes at qd8 until
# the journal has taken JSIZE bytes of log, `kill -9` of the server, then
# the next `uraid serve` is timed from exec to its listening socket (the
# replay runs before it listens), against a start after a clean stop (an
# empty log).  The server's own line gives what was replayed.  MODE:
# models (members sim:sata80, journal sim:ssd) or bare (tmpfs files:
# uraid's own cost).  Prints one line per round.
#
#   bench/journal-replay.sh URAID [ROUNDS] [JSIZE] [MODE]
set -eu
U=$1 rounds=${2:-3} jsize=${3:-32M} mode=${4:-models}
d=/dev/shm/jreplay.$$; rm -rf $d; mkdir -p $d
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf $d' EXIT
ns() { date +%s%N; }
spec() { # FILE MODEL
  if [ $mode = models ]; then echo "sim:$2:$1"; else echo "$1"; fi
}
start() { # LOG: start the server, wait for its socket; ms in $ms
  rm -f $d/s.sock
  local t0=$(ns)
  $U serve --foreground --socket $d/s.sock $(for i in 0 1 2 3; do spec $d/m$i sata80; done) \
    $(spec $d/j ssd) >$1 2>&1 & pid=$!
  while ! [ -S $d/s.sock ]; do
    kill -0 $pid 2>/dev/null || { echo "serve exited:"; cat $1; exit 1; } >&2
    sleep 0.005
  done
  ms=$(( ($(ns) - t0) / 1000000 ))
}
for r in $(seq $rounds); do
  rm -f $d/m* $d/j
  truncate -s 256M $d/m0 $d/m1 $d/m2 $d/m3
  truncate -s $jsize $d/j
  $U create --level 5 --raid-devices 4 --assume-clean --chunk 64K --write-journal $d/j \
    $d/m0 $d/m1 $d/m2 $d/m3 >/dev/null 2>&1
  # A clean start and stop: the empty log's start time.
  start $d/clean.log; t_clean=$ms
  kill $pid; wait $pid 2>/dev/null || true
  start $d/clean2.log; t_clean2=$ms
  # Write until the log has wrapped past its size once, then kill -9
  # at once, mid-write.
  fio --name=w --ioengine=nbd --uri="nbd+unix:///?socket=$d/s.sock" --rw=randwrite --bs=64k \
    --iodepth=8 --size=600M --io_size=$jsize --randrepeat=0 >/dev/null 2>&1 &
  fpid=$!
  wait $fpid || true
  fio --name=w --ioengine=nbd --uri="nbd+unix:///?socket=$d/s.sock" --rw=randwrite --bs=64k \
    --iodepth=8 --size=600M --time_based --runtime=30 --randrepeat=0 >/dev/null 2>&1 &
  fpid=$!
  sleep ${KILL_AFTER:-1}
  kill -9 $pid; wait $pid 2>/dev/null || true
  kill $fpid 2>/dev/null; wait $fpid 2>/dev/null || true
  start $d/dirty.log; t_dirty=$ms
  what=$(grep -o 'journal replayed: .*' $d/dirty.log || echo "nothing replayed")
  kill $pid; wait $pid 2>/dev/null || true; pid=
  echo "round $r mode $mode journal $jsize: clean start ${t_clean} / ${t_clean2} ms, after kill -9 ${t_dirty} ms: $what"
done
