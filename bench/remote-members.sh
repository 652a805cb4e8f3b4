#!/bin/bash
# remote-members.sh — two uraid builds A/B on a RAID1 of two remote
# members: nbdkit's memory plugin on two Unix sockets, `uraid create` on
# nbd+unix:// members, `uraid serve` of the array, fio (ioengine=nbd)
# 1 MiB sequential read and write at qd1 and qd16, time-based, rounds
# interleaved.  Prints "round build job qd MiB/s" lines.
#
#   bench/remote-members.sh BEFORE_URAID AFTER_URAID [ROUNDS] [SECONDS]
#
# Builds from before the nbd member's timeouts take the same plain URIs.
set -eu
A=$1 B=$2
rounds=${3:-3} secs=${4:-5}
d=/dev/shm/remote-members.$$
rm -rf "$d"
mkdir -p "$d"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
declare -A bin=([before]=$A [after]=$B)
for m in a b; do
  nbdkit -f -U "$d/$m.sock" memory 1G & pids+=($!)
done
for _ in $(seq 100); do [ -S "$d/a.sock" ] && [ -S "$d/b.sock" ] && break; sleep 0.05; done
ma="nbd+unix:///?socket=$d/a.sock" mb="nbd+unix:///?socket=$d/b.sock"
"$B" create --level=1 --assume-clean "$ma" "$mb" >/dev/null 2>&1
for r in $(seq "$rounds"); do
  for v in before after; do
    "${bin[$v]}" serve -f --socket "$d/s.sock" "$ma" "$mb" 2>/dev/null & pid=$!
    for _ in $(seq 100); do [ -S "$d/s.sock" ] && break; sleep 0.05; done
    for job in read write; do
      for qd in 1 16; do
        mibs=$(fio --name=j --ioengine=nbd --uri="nbd+unix:///?socket=$d/s.sock" --rw=$job \
          --bs=1M --iodepth=$qd --size=512M --time_based --runtime="$secs" \
          --output-format=json 2>/dev/null | sed -n '/^{/,$p' |
          python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print("%.0f" % ((j["read"]["bw"] + j["write"]["bw"]) / 1024))')
        echo "$r $v $job qd$qd $mibs"
      done
    done
    kill $pid; wait $pid 2>/dev/null || true
  done
done
