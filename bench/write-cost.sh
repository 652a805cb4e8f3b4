#!/bin/bash
# write-cost.sh — CPU per request of `uraid serve`, for issue 16's rows.
# One fio job (ioengine=nbd, 1 MiB sequential writes, a fixed byte count,
# not a fixed time) per row.  The server's CPU time and context switches
# (getrusage of all its threads, through /usr/bin/time; `perf stat` in
# this VM lost the connection threads' counts) do not depend on how loaded
# the machine is, as wall-clock MiB/s does.  Prints per 1 MiB request the
# server's CPU us (user share), switches, and MiB/s for reference only.
#
#   bench/write-cost.sh [GIB_WRITTEN] [QD]        (defaults 4 and 1)
#   ROWS='single|luks2' bench/write-cost.sh ...     (only those rows)
set -euo pipefail
cd "$(dirname "$0")/.."
gib=${1:-4} qd=${2:-1}
uraid=${URAID:-$PWD/build/src/uraid}
dir=$(mktemp -d /dev/shm/write-cost.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
printf bench > "$dir/key"
mk() { # NAME N SIZE create-args...
    local name=$1 n=$2 size=$3; shift 3
    local files=()
    for i in $(seq "$n"); do files+=("$dir/$name.$i"); truncate -s "$size" "$dir/$name.$i"; done
    [ "$n" = 1 ] || "$uraid" create --name="$name" "$@" "${files[@]}" >/dev/null 2>&1
    echo "${files[@]}"
}
row() { # LABEL MEMBERS...
    local label=$1; shift
    [[ $label =~ ^(${ROWS:-.*})$ ]] || return 0
    /usr/bin/time -o "$dir/rusage" -f '%U %S %w %c' \
        "$uraid" serve --foreground --socket "$dir/s.sock" "$@" 2>>"$dir/serve.log" & pid=$!
    for _ in $(seq 100); do [ -S "$dir/s.sock" ] && break; sleep 0.1; done
    local out n=$((gib * 1024))
    out=$(fio --name=s --ioengine=nbd --uri="nbd+unix:///?socket=$dir/s.sock" --rw=write \
              --bs=1M --iodepth="$qd" --size=256M --io_size="${gib}G" \
              --output-format=terse --terse-version=3 2>/dev/null | grep '^3;' || true)
    kill "$(pgrep -P $pid)"; wait $pid 2>/dev/null || true; pid=""
    read -r u s vcs ics < <(tail -1 "$dir/rusage")
    [ -n "${DEBUG:-}" ] && cut -d";" -f47,50 <<<"$out" && cat "$dir/rusage"
    printf '%-10s qd%-2s %6.0f us CPU/req (user %5.0f) %5.1f switches/req %6d MiB/s\n' \
        "$label" "$qd" "$(echo "($u + $s) * 1000000 / $n" | bc -l)" \
        "$(echo "$u * 1000000 / $n" | bc -l)" "$(echo "($vcs + $ics) / $n" | bc -l)" \
        $(( $(cut -d';' -f48 <<<"$out") / 1024 ))
}
single=$(mk single 1 1G)
r1=$(mk r1 2 1G --level=1)
r0=$(mk r0 2 1G --level=0 --chunk=128)
l1=$(mk l1 1 1G)
"$uraid" luks-format --batch --key-file "$dir/key" --pbkdf-memory=65536 --iter-time=100 \
    --sector-size=4096 $l1 >/dev/null 2>&1 || "$uraid" luks-format --batch --key-file "$dir/key" \
    --pbkdf-memory=65536 --iter-time=100 $l1 >/dev/null
row null null:1G
row mem mem:1G
row single $single
row raid1x2 $r1
row raid0x2 $r0
row luks2 --key-file "$dir/key" $l1
