#!/bin/bash
# write-ab.sh — issue 16's rows for two builds side by side in one run:
# each row is served by build A and then by build B, back to back, in
# every round, so both see the same machine; the figures are medians over
# the rounds and the ratios are taken inside one build (RAID1x2 write over
# one member's write, LUKS2 over plain, mem: over null:).  Members are
# files on tmpfs (/dev/shm) or mem:; one fio job (ioengine=nbd) writes or
# reads a fixed byte count over a 256 MiB range, writes before reads so
# that reads are of data.  Also the server's CPU per request (getrusage of
# all its threads, through /usr/bin/time: the load-independent figure).
#
#   A=OLD/uraid B=NEW/uraid bench/write-ab.sh [ROUNDS] [MIB_PER_RUN]
#   ROWS='mem|null' ...   (only those rows)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} mib=${2:-1024}
A=${A:?A=path of build A\'s uraid} B=${B:?B=path of build B\'s uraid}
dir=$(mktemp -d /dev/shm/write-ab.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
printf bench > "$dir/key"

# fio: RW BS QD MIB -> "MiB/s"
fio1() {
    local out
    out=$(fio --name=s --ioengine=nbd --uri="nbd+unix:///?socket=$dir/s.sock" --rw="$1" \
              --bs="$2" --iodepth="$3" --size=256M --io_size="$4M" \
              --output-format=terse --terse-version=3 2>/dev/null | grep '^3;' || true)
    [ -n "$out" ] || { echo 0; return; }
    case $1 in *read) echo $(( $(cut -d';' -f7 <<<"$out") / 1024 )) ;;
               *) echo $(( $(cut -d';' -f48 <<<"$out") / 1024 )) ;; esac
}
# One server of build $1 for row $2 (serve args after "--"), then the runs
# named in $3 ("write:1M:1 read:1M:16 ..."): one line each to rows.
serve_row() {
    local build=$1 label=$2 runs=$3 uraid
    shift 4
    [[ $label =~ ^(${ROWS:-.*})$ ]] || return 0
    uraid=$A; [ "$build" = B ] && uraid=$B
    local t0 n=0 spec
    if [ "$label" = nbdkit ]; then
        nbdkit --foreground --unix "$dir/s.sock" file "$1" 2>>"$dir/serve.log" & pid=$!
    else
        /usr/bin/time -o "$dir/rusage" -f '%U %S %w %c' \
            "$uraid" serve --foreground --socket "$dir/s.sock" "$@" 2>>"$dir/serve.log" & pid=$!
    fi
    for _ in $(seq 100); do [ -S "$dir/s.sock" ] && break; sleep 0.1; done
    for spec in $runs; do
        IFS=: read -r rw bs qd <<<"$spec"
        local m=$mib
        [ "$bs" = 4k ] && m=$((mib / 8))
        echo "$build $label $rw $bs $qd $(fio1 "$rw" "$bs" "$qd" "$m")" >> "$dir/rows"
    done
    if [ "$label" = nbdkit ]; then
        kill $pid
    else
        kill "$(pgrep -P $pid)"
    fi
    wait $pid 2>/dev/null || true; pid=""
    rm -f "$dir/s.sock"
}
mk() { # NAME N SIZE create-args...
    local name=$1 n=$2 size=$3; shift 3
    local files=()
    for i in $(seq "$n"); do files+=("$dir/$name.$i"); truncate -s "$size" "$dir/$name.$i"; done
    [ "$n" = 1 ] || "$B" create --name="$name" "$@" "${files[@]}" >/dev/null 2>&1
    echo "${files[@]}"
}
luks() { "$B" luks-format --batch --key-file "$dir/key" --pbkdf-memory=65536 --iter-time=100 \
             --sector-size=4096 "$@" >/dev/null; }
single=$(mk single 1 1G)
r1x2=$(mk r1x2 2 1G --level=1)
r0x2=$(mk r0x2 2 1G --level=0 --chunk=512)
r0x4=$(mk r0x4 4 1G --level=0 --chunk=512)
lsingle=$(mk lsingle 1 1G)
luks $lsingle
lr1=$(mk lr1 2 1G --level=1)
luks $lr1

seq1m="write:1M:1 write:1M:16 read:1M:1 read:1M:16"
w1m="write:1M:1 write:1M:16"
for r in $(seq "$rounds"); do
    echo "== round $r" >&2
    for b in A B; do serve_row $b null "$seq1m" -- null:1G; done
    for b in A B; do serve_row $b mem "$seq1m" -- mem:1G; done
    for b in A B; do serve_row $b single "$seq1m randwrite:4k:32" -- $single; done
    for b in A B; do serve_row $b raid1x2 "$w1m randwrite:4k:32" -- $r1x2; done
    for b in A B; do serve_row $b raid0x2 "$w1m" -- $r0x2; done
    for b in A B; do serve_row $b raid0x4 "$w1m" -- $r0x4; done
    for b in A B; do serve_row $b luks2 "$seq1m randwrite:4k:32" -- --key-file "$dir/key" $lsingle; done
    for b in A B; do serve_row $b luks2-raid1 "$w1m" -- --key-file "$dir/key" $lr1; done
    serve_row A nbdkit "randwrite:4k:32" -- $single
done

python3 - "$dir/rows" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    b, label, rw, bs, qd, mb = line.split()
    runs.setdefault((b, label, rw, bs, qd), []).append(int(mb))
med = {k: statistics.median(v) for k, v in runs.items()}
def cell(b, label, rw, bs, qd, base):
    m, d = med.get((b, label, rw, bs, qd)), med.get((b,) + base)
    if not m or not d:
        return "      -"
    return f"{m / d:4.2f} ({m:.0f}/{d:.0f})"
ratios = [
    ("RAID1x2 write / one member", "raid1x2", "write", ("single", "write")),
    ("RAID0x2 write / one member", "raid0x2", "write", ("single", "write")),
    ("RAID0x4 write / one member", "raid0x4", "write", ("single", "write")),
    ("LUKS2 write / plain", "luks2", "write", ("single", "write")),
    ("LUKS2 read / plain", "luks2", "read", ("single", "read")),
    ("LUKS2 on RAID1 write / RAID1", "luks2-raid1", "write", ("raid1x2", "write")),
    ("mem: / null: write", "mem", "write", ("null", "write")),
    ("mem: / null: read", "mem", "read", ("null", "read")),
]
print(f"{'row':32} {'qd':>3}  {'A':>18}  {'B':>18}")
for name, label, rw, base in ratios:
    for qd in ("1", "16"):
        a = cell("A", label, rw, "1M", qd, base + ("1M", qd))
        b = cell("B", label, rw, "1M", qd, base + ("1M", qd))
        print(f"{name:32} {qd:>3}  {a:>18}  {b:>18}")
for name, label, base in [("4K randwrite RAID1x2 / one member", "raid1x2", "single"),
                          ("4K randwrite LUKS2 / plain", "luks2", "single"),
                          ("4K randwrite RAID1x2 / nbdkit", "raid1x2", "nbdkit"),
                          ("4K randwrite LUKS2 / nbdkit", "luks2", "nbdkit")]:
    a = cell("A", label, "randwrite", "4k", "32", (base, "randwrite", "4k", "32"))
    b = cell("B", label, "randwrite", "4k", "32", (base, "randwrite", "4k", "32"))
    if base == "nbdkit":
        m = med.get(("A", "nbdkit", "randwrite", "4k", "32"))
        a = f"{med.get(('A', label, 'randwrite', '4k', '32'), 0) / m:4.2f}" if m else "-"
        b = f"{med.get(('B', label, 'randwrite', '4k', '32'), 0) / m:4.2f}" if m else "-"
    print(f"{name:32} {'32':>3}  {a:>18}  {b:>18}")
print()
print(f"{'MiB/s medians':24} {'op':10} {'bs':>3} {'qd':>3} {'A':>6} {'B':>6}  B/A  A min-max  B min-max (n)")
for (b, label, rw, bs, qd), v in runs.items():
    if b != "A":
        continue
    bv = runs.get(("B", label, rw, bs, qd), [])
    ma, mb = med[(b, label, rw, bs, qd)], (statistics.median(bv) if bv else 0)
    ratio = f"{mb / ma:4.2f}" if ma and mb else "   -"
    bmm = f"{min(bv)}-{max(bv)}" if bv else "-"
    print(f"{label:24} {rw:10} {bs:>3} {qd:>3} {ma:6.0f} {mb:6.0f}  {ratio}  {min(v)}-{max(v)}  {bmm} ({len(v)})")
PY
