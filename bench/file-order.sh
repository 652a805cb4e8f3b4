#!/bin/bash
# file-order.sh — nbdkit's file plugin and `uraid serve FILE` (2 GiB sparse
# files in /tmp), bench/peers.sh's six jobs on each, one server
# after the other in the order given:
#
#   bench/file-order.sh ours-first|nbdkit-first
#
# peers.sh itself always runs nbdkit-file before the server given with
# --uri.  Its 4 KiB random writes come after several GB of sequential
# writes, when the kernel is writing dirty pages back to this machine's
# disk; this shows how much of that row is the order the two run in.
set -u
cd "$(dirname "$0")/.."
URAID=${URAID:-$PWD/build/src/uraid}
d=$(mktemp -d /tmp/file-order.XXXXXX); truncate -s 2G $d/a.img $d/b.img
nbdkit -f -U "$d/nk.sock" file "$d/a.img" & p1=$!
"$URAID" serve --foreground --socket "$d/u.sock" "$d/b.img" 2>/dev/null & p2=$!
trap 'kill $p1 $p2 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
sleep 1; sync
P=${PEERS_SH:-$(dirname "$0")/peers.sh}
if [ "$1" = ours-first ]; then
  $P --only --runtime 4 --uri "nbd+unix:///?socket=$d/u.sock" --label uraid-file
  $P --only --runtime 4 --uri "nbd+unix:///?socket=$d/nk.sock" --label nbdkit-file
else
  $P --only --runtime 4 --uri "nbd+unix:///?socket=$d/nk.sock" --label nbdkit-file
  $P --only --runtime 4 --uri "nbd+unix:///?socket=$d/u.sock" --label uraid-file
fi

