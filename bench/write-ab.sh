#!/bin/bash
# write-ab.sh — issue 16's rows for two builds side by side in one run:
# each row is served by build A and then by build B, back to back, in
# every round, so both see the same machine; the figures are medians over
# the rounds and the ratios are taken inside one build (RAID1x2 write over
# one member's write, LUKS2 over plain, mem: over null:).  Members are
# files on tmpfs (/dev/shm) or mem:; one fio job (ioengine=nbd) writes or
# reads a fixed byte count over a 256 MiB range, writes before reads so
# that reads are of data.  The `mem:` rows twice: as they come (the first
# pass over the range pays the kernel's first touch of each page) and
# written once first (memw: the transport and the copy alone).  Also the
# server's CPU per request of each run (utime + stime of all its threads
# from /proc/PID/stat before and after the run: the figure a loaded
# machine moves least), in a table of its own after the ratios.
#
# Each ratio of build B (the only build when B is not given) is set
# against issue 16's goal for it: the table says met or not.
#
#   A=OLD/uraid B=NEW/uraid bench/write-ab.sh [ROUNDS] [MIB_PER_RUN]
#   A=build/src/uraid bench/write-ab.sh ...   (one build: issue 16's table)
#   ROWS='mem|null' ...   (only those rows)   RAW=FILE ... (keep every run)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} mib=${2:-1024}
A=${A:?A=path of build A\'s uraid}
builds="A B"
if [ -z "${B:-}" ]; then B=$A builds=B; fi
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
# The server's CPU time so far, in clock ticks (all its threads).
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
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
    local spid=$pid
    [ "$label" = nbdkit ] || spid=$(pgrep -P $pid || echo $pid)
    for spec in $runs; do
        IFS=: read -r rw bs qd <<<"$spec"
        # warm: write the 256 MiB range once, not counted (the kernel's
        # first touch of a mem: member's pages is then behind the runs)
        [ "$rw" = warm ] && { fio1 write "$bs" "$qd" 256 >/dev/null; continue; }
        local m=$mib t0 mbs reqs
        [ "$bs" = 4k ] && m=$((mib / 8))
        t0=$(ticks "$spid")
        mbs=$(fio1 "$rw" "$bs" "$qd" "$m")
        reqs=$(( m * 1024 / ${bs%[kM]} )); [ "$bs" = 1M ] && reqs=$m
        echo "$build $label $rw $bs $qd $mbs $(( ($(ticks "$spid") - t0) * 1000000 / $(getconf CLK_TCK) / reqs ))" >> "$dir/rows"
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
    for b in $builds; do serve_row $b null "$seq1m" -- null:1G; done
    for b in $builds; do serve_row $b mem "$seq1m" -- mem:1G; done
    for b in $builds; do serve_row $b memw "warm:1M:1 $seq1m" -- mem:1G; done
    for b in $builds; do serve_row $b single "$seq1m randwrite:4k:32" -- $single; done
    for b in $builds; do serve_row $b raid1x2 "$w1m randwrite:4k:32" -- $r1x2; done
    for b in $builds; do serve_row $b raid0x2 "$w1m" -- $r0x2; done
    for b in $builds; do serve_row $b raid0x4 "$w1m" -- $r0x4; done
    for b in $builds; do serve_row $b luks2 "$seq1m randwrite:4k:32" -- --key-file "$dir/key" $lsingle; done
    for b in $builds; do serve_row $b luks2-raid1 "$w1m" -- --key-file "$dir/key" $lr1; done
    serve_row A nbdkit "randwrite:4k:32" -- $single
done

[ -n "${RAW:-}" ] && cp "$dir/rows" "$RAW"   # RAW=FILE keeps every run's line
python3 - "$dir/rows" <<'PY'
import statistics, sys
# runs[key] is in round order: index i of every list is round i, so a
# ratio is taken inside one round (rows minutes apart, not the whole run).
runs, cpus = {}, {}
for line in open(sys.argv[1]):
    b, label, rw, bs, qd, mb, cpu = line.split()
    runs.setdefault((b, label, rw, bs, qd), []).append(int(mb))
    cpus.setdefault((b, label, rw, bs, qd), []).append(int(cpu))
def med(k):
    v = runs.get(k)
    return statistics.median(v) if v else 0
def ratio(k, base):
    a, d = runs.get(k, []), runs.get(base, [])
    r = [x / y for x, y in zip(a, d) if y]
    return statistics.median(r) if r else 0
def cell(b, k, base):
    r = ratio((b,) + k, (b,) + base)
    return f"{r:4.2f} ({med((b,) + k):.0f}/{med((b,) + base):.0f})" if r else "-"
# Issue 16's goals, (qd1, qd16): a ratio at or above it is met.
goals = {
    "RAID1x2 write / one member": (0.85, 0.85),
    "RAID0x2 write / one member": (1.0, 1.0),
    "RAID0x4 write / one member": (1.0, 1.0),
    "LUKS2 write / plain": (0.85, 0.9),
    "LUKS2 read / plain": (0.9, 0.9),
    "LUKS2 on RAID1 write / RAID1": (0.8, 0.8),
    "mem: / null: write": (0.9, 0.9),
    "mem: / null: read": (0.9, 0.9),
    "mem: written once / null: write": (0.9, 0.9),
    "mem: written once / null: read": (0.9, 0.9),
    "4K randwrite RAID1x2 / nbdkit": (1.0, 1.0),
    "4K randwrite LUKS2 / nbdkit": (1.0, 1.0),
}
def verdict(name, qd, rs):
    g = goals.get(name)
    if not g or not rs:
        return f"{'(stated)':>8}"
    g = g[0] if qd == "1" else g[1]
    k = sum(r >= g for r in rs)
    return f"{'>= %.2f' % g:>8} {'met' if k == len(rs) else 'NOT' if k == 0 else f'{k}/{len(rs)}'}"
def rounds(k, base):
    a, d = runs.get(k, []), runs.get(base, [])
    return [x / y for x, y in zip(a, d) if y]
rows = [
    ("RAID1x2 write / one member", "raid1x2", "write", "single", "write"),
    ("RAID0x2 write / one member", "raid0x2", "write", "single", "write"),
    ("RAID0x4 write / one member", "raid0x4", "write", "single", "write"),
    ("LUKS2 write / plain", "luks2", "write", "single", "write"),
    ("LUKS2 read / plain", "luks2", "read", "single", "read"),
    ("LUKS2 on RAID1 write / RAID1", "luks2-raid1", "write", "raid1x2", "write"),
    ("mem: / null: write", "mem", "write", "null", "write"),
    ("mem: / null: read", "mem", "read", "null", "read"),
    ("mem: written once / null: write", "memw", "write", "null", "write"),
    ("mem: written once / null: read", "memw", "read", "null", "read"),
]
# One build (B not given): its column alone.
single = not any(k[0] == "A" and k[1] != "nbdkit" for k in runs)
def line(name, qd, a, b, v):
    print(f"{name:34} {qd:>3}  " + ("" if single else f"{a:>18}  ") + f"{b:>18}  {v}")
print("Ratios: median over rounds of the ratio inside a round (MiB/s medians);")
print("met: every round's ratio at or above the goal, NOT: none, k/n: k rounds of n")
line("row", "qd", "A", "B" if not single else "figure", f"{'goal':>8} met")
for name, label, rw, base, brw in rows:
    for qd in ("1", "16"):
        k, bk = (label, rw, "1M", qd), (base, brw, "1M", qd)
        line(name, qd, cell('A', k, bk), cell('B', k, bk),
             verdict(name, qd, rounds(("B",) + k, ("B",) + bk)))
for name, label, base in [("4K randwrite RAID1x2 / one member", "raid1x2", "single"),
                          ("4K randwrite LUKS2 / plain", "luks2", "single")]:
    k, bk = (label, "randwrite", "4k", "32"), (base, "randwrite", "4k", "32")
    line(name, "32", cell('A', k, bk), cell('B', k, bk), verdict(name, "32", []))
for name, label in [("4K randwrite RAID1x2 / nbdkit", "raid1x2"),
                    ("4K randwrite LUKS2 / nbdkit", "luks2")]:
    k = (label, "randwrite", "4k", "32")
    nk = ('A', 'nbdkit', 'randwrite', '4k', '32')
    rs = [f"{ratio((b,) + k, nk):4.2f} ({med((b,) + k):.0f}/{med(nk):.0f})" for b in "AB"]
    line(name, "32", rs[0], rs[1], verdict(name, "1", rounds(("B",) + k, nk)))
print()
print("Server CPU per request (us, /proc/PID/stat around each run): median (min-max) over rounds")
print(f"{'row':14} {'op':10} {'bs':>3} {'qd':>3} " + ("" if single else f"{'A':>18} ") + f"{'B':>18}")
def cpucell(k):
    v = cpus.get(k)
    return f"{statistics.median(v):.0f} ({min(v)}-{max(v)})" if v else "-"
for (b, label, rw, bs, qd) in cpus:
    if b != "B":
        continue
    k = (label, rw, bs, qd)
    print(f"{label:14} {rw:10} {bs:>3} {qd:>3} " + ("" if single else f"{cpucell(('A',) + k):>18} ") +
          f"{cpucell(('B',) + k):>18}")
if single:
    sys.exit(0)  # no pairs
print()
print("B/A: median over rounds of B's run over A's run of the same row, back to back")
print(f"{'row':14} {'op':10} {'bs':>3} {'qd':>3} {'A MiB/s':>8} {'B MiB/s':>8} {'B/A':>5}  A min-max  B min-max (n)")
for (b, label, rw, bs, qd), v in runs.items():
    if b != "A":
        continue
    k = (label, rw, bs, qd)
    bv = runs.get(("B",) + k, [])
    r = ratio(("B",) + k, ("A",) + k)
    rs = f"{r:5.2f}" if r else "    -"
    bmm = f"{min(bv)}-{max(bv)}" if bv else "-"
    print(f"{label:14} {rw:10} {bs:>3} {qd:>3} {med(('A',) + k):8.0f} {med(('B',) + k):8.0f} {rs}  "
          f"{min(v)}-{max(v)}  {bmm} ({len(v)})")
PY
