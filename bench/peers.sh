#!/bin/bash
# peers.sh — the same fio jobs, over NBD, against peer servers and (optionally) ours.
# (Brought into the project from the shared workplace kit, where it was written for uraid,
# so that the benchmark scripts here run from a clone alone.)
#
#   peers.sh                         nbdkit memory/file/luks and qemu-nbd raw/luks
#   peers.sh --uri URI --label NAME  also (or only, with --only) one server you started
#   options: --runtime S (default 6), --size 1G, --only, --jobs "write:1M:16 read:1M:16 ..."
#
# Each row: MB/s and IOPS for one job (fio, ioengine=nbd, one connection).
# Needs fio, nbdkit, qemu-utils (apt-get install fio nbdkit qemu-utils).
set -u
runtime=6 size=1G only=0 uri="" label="" jobs="write:1M:16 read:1M:16 randread:4k:32 randwrite:4k:32 read:1M:1 write:1M:1"
while [ $# -gt 0 ]; do
  case $1 in
    --uri) uri=$2; shift ;; --label) label=$2; shift ;; --runtime) runtime=$2; shift ;;
    --size) size=$2; shift ;; --only) only=1 ;; --jobs) jobs=$2; shift ;;
    *) echo "peers.sh: unknown option $1" >&2; exit 2 ;;
  esac; shift
done
for t in fio; do command -v $t >/dev/null || { echo "peers.sh: needs $t" >&2; exit 2; }; done
dir=$(mktemp -d /tmp/peers.XXXXXX); pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT

run_jobs() { # URI LABEL
  local u=$1 l=$2 spec rw bs qd r
  for spec in $jobs; do
    IFS=: read -r rw bs qd <<<"$spec"
    r=$(fio --name=t --ioengine=nbd --uri="$u" --rw="$rw" --bs="$bs" --iodepth="$qd" --size="$size" \
          --runtime="$runtime" --time_based --randrepeat=0 --output-format=terse --terse-version=3 2>/dev/null | grep '^3;')
    if [ -z "$r" ]; then printf '%-16s %-10s bs=%-4s qd=%-3s  FAILED\n' "$l" "$rw" "$bs" "$qd"; continue; fi
    local rk ri wk wi
    rk=$(cut -d';' -f7 <<<"$r"); ri=$(cut -d';' -f8 <<<"$r"); wk=$(cut -d';' -f48 <<<"$r"); wi=$(cut -d';' -f49 <<<"$r")
    if [ "$rk" -gt 0 ]; then printf '%-16s %-10s bs=%-4s qd=%-3s  %7d MB/s %8d IOPS\n' "$l" "$rw" "$bs" "$qd" $((rk/1024)) "$ri"
    else printf '%-16s %-10s bs=%-4s qd=%-3s  %7d MB/s %8d IOPS\n' "$l" "$rw" "$bs" "$qd" $((wk/1024)) "$wi"; fi
  done
}
wait_sock() { for _ in $(seq 50); do [ -S "$1" ] && return 0; sleep 0.1; done; echo "peers.sh: $1 never appeared" >&2; return 1; }

if [ $only = 0 ]; then
  nbdkit -f -U "$dir/mem.sock" memory 2G & pids+=($!)
  wait_sock "$dir/mem.sock" && run_jobs "nbd+unix:///?socket=$dir/mem.sock" nbdkit-memory
  truncate -s 2G "$dir/disk.img"
  nbdkit -f -U "$dir/file.sock" file "$dir/disk.img" & pids+=($!)
  wait_sock "$dir/file.sock" && run_jobs "nbd+unix:///?socket=$dir/file.sock" nbdkit-file
  qemu-img create -q -f luks --object secret,id=s0,data=peers -o key-secret=s0,cipher-alg=aes-256,cipher-mode=xts,iter-time=10 "$dir/luks.img" 2G
  nbdkit -f -U "$dir/kluks.sock" --filter=luks file "$dir/luks.img" passphrase=peers & pids+=($!)
  wait_sock "$dir/kluks.sock" && run_jobs "nbd+unix:///?socket=$dir/kluks.sock" nbdkit-luks
  qemu-nbd -k "$dir/qraw.sock" -f raw -t --cache=writeback -e 4 "$dir/disk.img" & pids+=($!)
  wait_sock "$dir/qraw.sock" && run_jobs "nbd+unix:///?socket=$dir/qraw.sock" qemu-nbd-raw
  qemu-nbd -k "$dir/qluks.sock" -t --cache=writeback -e 4 --object secret,id=s0,data=peers \
    --image-opts driver=luks,key-secret=s0,file.filename="$dir/luks.img" & pids+=($!)
  wait_sock "$dir/qluks.sock" && run_jobs "nbd+unix:///?socket=$dir/qluks.sock" qemu-nbd-luks
fi
[ -n "$uri" ] && run_jobs "$uri" "${label:-ours}"
exit 0
