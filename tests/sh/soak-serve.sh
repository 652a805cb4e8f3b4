#!/bin/bash
# soak-serve.sh — a soak, not in the suite (scripts/soak.sh runs it): a
# served array under concurrent writes and FLUSHes while one member is
# failed (`uraid fail`) and taken back (`uraid add --re-add` from the
# bitmap, or `uraid remove` and `uraid add --force`, rebuilt whole), with a
# power cut at a seeded point (crash members: fault:crash=G,cut-after=N, so
# each member write since its last flush is kept, dropped or torn), then:
#  - the next writable start with every member reads back every block whose
#    last write was durable (acknowledged before a FLUSH on its connection
#    completed, or a FUA write), and every block no write touched since the
#    fill; blocks whose last write was not durable are not judged;
#  - once it has resynced or rebuilt, `uraid check` finds the copies or
#    parity consistent and each member left out in turn reads the same.
# Cases (SOAK_CASES, default all): r5 (4, bitmap), r5nb (4, no bitmap: a
# whole rebuild), r6 (5, bitmap), f2 and o2 (RAID10 far and offset, 4,
# bitmap), luks5 (LUKS2 on r5); r5eio, r6eio, f2eio: the victim not failed
# by request but by its writes failing (fault:after=N,mode=write).
# Seeds: SOAK_SEEDS (default 1) from URAID_TEST_SEED_BASE (default 0); a
# failing case prints its seed;
# SOAK_LOGS=DIR keeps each case's serve logs there.
. "$(dirname "$0")/nbd-lib.sh"
requires nbdinfo nbdcopy mdadm
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import nbd' 2>/dev/null ||
    { echo "SKIP: python3-libnbd (nbdsh's module) missing"; exit 77; }

# client.py URI REF UNKNOWN SEED CTL URAID VICTIM MODE FAIL BACK: three connections
# write at random (4..64 KiB, each in 64 KiB regions of its own, 1 in 16
# FUA, a FLUSH every 2..8 writes) until a write fails or 4000 are done; a
# fourth thread fails VICTIM after FAIL acknowledged writes and takes it
# back (MODE readd or rebuild) after BACK.  REF (the fill) becomes what a
# restart must read, UNKNOWN the 4 KiB blocks not judged.
cat >"$tmp/client.py" <<'PY'
import nbd, random, subprocess, sys, threading
uri, ref, unknown_out, seed, ctl, uraid, victim, mode, fail_at, back_at = sys.argv[1:11]
fail_at, back_at = int(fail_at), int(back_at)
seed = int(seed)
B, REG, T = 4096, 16, 3
exp = bytearray(open(ref, "rb").read())
size = len(exp)
unk = bytearray(size // B)
acked = [0] * T
failed = [None] * T
stop = threading.Event()
log = []

def writer(t):
    rng = random.Random(seed * 131 + t)
    h = nbd.NBD()
    h.connect_uri(uri)
    regions = [r for r in range(size // B // REG) if r % T == t]
    pend = {}
    until = rng.randrange(2, 9)
    try:
        while not stop.is_set() and acked[t] < 4000 // T:
            r = rng.choice(regions)
            first = rng.randrange(REG)
            nb = rng.randrange(1, REG - first + 1)
            b0 = r * REG + first
            data = rng.randbytes(nb * B)
            fua = rng.randrange(16) == 0
            for b in range(b0, b0 + nb):
                unk[b] = 1
            h.pwrite(data, b0 * B, nbd.CMD_FLAG_FUA if fua else 0)
            acked[t] += 1
            for i, b in enumerate(range(b0, b0 + nb)):
                if fua:
                    exp[b * B:(b + 1) * B] = data[i * B:(i + 1) * B]
                    unk[b] = 0
                    pend.pop(b, None)
                else:
                    pend[b] = data[i * B:(i + 1) * B]
            until -= 1
            if until == 0:
                until = rng.randrange(2, 9)
                h.flush()
                for b, d in pend.items():
                    exp[b * B:(b + 1) * B] = d
                    unk[b] = 0
                pend.clear()
    except nbd.Error as e:
        failed[t] = str(e)
    try:
        h.shutdown()
    except nbd.Error:
        pass

def ctl_run(*args):
    p = subprocess.run([uraid, *args], capture_output=True, text=True)
    log.append("%s: %s %s" % (" ".join(args[:2]), p.returncode,
                               (p.stdout + p.stderr).strip().replace("\n", " | ")))
    return p.returncode == 0

def controller():
    steps = [(fail_at, lambda: ctl_run("fail", ctl, victim))]
    if mode == "eio":  # the victim fails by itself (fault:after=)
        return
    if mode == "readd":
        steps.append((back_at, lambda: ctl_run("add", "--re-add", ctl, victim)))
    else:
        steps.append((back_at, lambda: ctl_run("remove", ctl, victim) and
                      ctl_run("add", "--force", ctl, victim)))
    for at, step in steps:
        while sum(acked) < at and not stop.is_set() and any(x is None for x in failed) \
                and any(th.is_alive() for th in ths):
            stop.wait(0.01)
        if sum(acked) < at:
            return
        step()

ths = [threading.Thread(target=writer, args=(t,)) for t in range(T)]
for th in ths:
    th.start()
c = threading.Thread(target=controller)
c.start()
for th in ths:
    th.join()
stop.set()
c.join()
open(ref, "wb").write(exp)
open(unknown_out, "w").write("".join("%d\n" % b for b in range(size // B) if unk[b]))
print("acked=%d failed=%d unknown=%d ctl=[%s]" % (sum(acked), sum(f is not None for f in failed),
      sum(unk), "; ".join(log)))
PY

# verify.py URI REF UNKNOWN [ROW [SHIFT]]: how many judged blocks read back
# wrong; with ROW (blocks a row; SHIFT: the array's blocks before the
# export, LUKS's header), those in a row that holds an UNKNOWN block are
# counted apart (the write hole of a dirty degraded start)
cat >"$tmp/verify.py" <<'PY'
import nbd, sys
uri, ref, unknown = sys.argv[1:4]
rows = int(sys.argv[4]) if len(sys.argv) > 4 else 0
shift = int(sys.argv[5]) if len(sys.argv) > 5 else 0 # blocks before the export's first
B = 4096
exp = open(ref, "rb").read()
skip = set(int(x) for x in open(unknown).read().split())
torn = set((b + shift) // rows for b in skip) if rows else set()
h = nbd.NBD()
h.connect_uri(uri)
wrong = []
for off in range(0, len(exp), 1 << 20):
    got = h.pread(min(1 << 20, len(exp) - off), off)
    for b in range(off // B, (off + len(got)) // B):
        if b not in skip and got[(b * B - off):(b * B - off) + B] != exp[b * B:(b + 1) * B]:
            wrong.append(b)
h.shutdown()
hole = [b for b in wrong if rows and (b + shift) // rows in torn]
wrong = [b for b in wrong if b not in hole]
print("wrong=%d%s%s" % (len(wrong), (" first blocks " + ",".join(map(str, wrong[:8]))) if wrong else "",
      " (and %d in rows a write left torn: the write hole)" % len(hole) if hole else ""))
PY

printf 'soak passphrase' >"$tmp/key"
sock=$tmp/s.sock
uri="nbd+unix:///?socket=$sock"
ctl=$tmp/ctl
FAST_PBKDF2=(--pbkdf pbkdf2 --pbkdf-force-iterations 1000)

# in_sync CTL: the served array is whole and not resyncing or recovering
in_sync() {
    local j
    j=$("$URAID" detail --json "$1" 2>/dev/null) || return 1
    python3 -c '
import json, sys
a = json.loads(sys.argv[1])["arrays"][0]
txt = json.dumps(a)
sys.exit(0 if not a["degraded"] and "resync" not in a.get("state", "") and
         "recover" not in a.get("state", "") else 1)' "$j"
}

# serve_up ARGS...: `uraid serve ARGS` on $sock in the background
# ($server_pid) until its socket is there: 0, or 1 once it exited
serve_up() {
    "$URAID" serve -f --socket "$sock" "$@" &
    server_pid=$!
    server_pids+=("$server_pid")
    for _ in $(seq 1200); do
        [ -S "$sock" ] && return 0
        kill -0 "$server_pid" 2>/dev/null || { wait "$server_pid" 2>/dev/null; return 1; }
        sleep 0.05
    done
    return 1
}

# keep_logs NAME [members]: the serve logs (and the members, as a failure
# left them) into $SOAK_LOGS/NAME.*
keep_logs() {
    [ -n "${SOAK_LOGS:-}" ] || return 0
    mkdir -p "$SOAK_LOGS"
    for l in serve serve2; do cp "$tmp/$l.log" "$SOAK_LOGS/$1.$l.log" 2>/dev/null || true; done
    [ $# -lt 2 ] || for f in "$tmp"/m.*; do cp --sparse=always "$f" "$SOAK_LOGS/$1.${f##*/}"; done
}

# one NAME SEED: one case, one seed; returns 1 after printing what failed
one() {
    local name=$1 seed=$2 opts=() key=() disks victim mode parity row_blocks files=() crash=()
    local cut out rc rows shift
    case $name in
    r5) opts=(--level=5 --raid-devices=4 --bitmap=internal) disks=4 mode=readd parity=1 ;;
    r5nb) opts=(--level=5 --raid-devices=4 --bitmap=none) disks=4 mode=rebuild parity=1 ;;
    r6) opts=(--level=6 --raid-devices=5 --bitmap=internal) disks=5 mode=readd parity=1 ;;
    f2) opts=(--level=10 --layout=f2 --raid-devices=4 --bitmap=internal) disks=4 mode=readd parity=0 ;;
    o2) opts=(--level=10 --layout=o2 --raid-devices=4 --bitmap=internal) disks=4 mode=readd parity=0 ;;
    luks5) opts=(--level=5 --raid-devices=4 --bitmap=internal) disks=4 mode=readd parity=1
        key=(--key-file "$tmp/key") ;;
    r5eio) opts=(--level=5 --raid-devices=4 --bitmap=internal) disks=4 mode=eio parity=1 ;;
    r6eio) opts=(--level=6 --raid-devices=5 --bitmap=internal) disks=5 mode=eio parity=1 ;;
    f2eio) opts=(--level=10 --layout=f2 --raid-devices=4 --bitmap=internal) disks=4 mode=eio parity=0 ;;
    *) fail "unknown case $name" ;;
    esac
    victim=$((seed % disks)) row_blocks=48 shift=0 # 3 data chunks of 64 KiB a row
    [ "$name" != luks5 ] || shift=4096          # LUKS2's 16 MiB before the payload
    h=$(((seed * 2654435761) % 4294967291))
    cut=$((100 + h % 5000)) # member writes: about 2 a client write
    fail_at=$((50 + h / 5000 % 600)) back_at=$((fail_at + 100 + h / 3000000 % 800))
    rm -f "$tmp"/m.* "$sock"
    for i in $(seq 0 $((disks - 1))); do
        truncate -s 12M "$tmp/m.$i"
        files+=("$tmp/m.$i")
        o=crash=g$seed,seed=$seed
        [ "$i" != 0 ] || o+=,cut-after=$cut
        # mode eio: the victim's writes fail (EIO) after fail_at of them
        [ "$mode" != eio ] || [ "$i" != "$victim" ] || o+=,after=$fail_at,mode=write
        crash+=("fault:$o:$tmp/m.$i")
    done
    # odd seeds: a bitmap of 64 KiB chunks (else mdadm's default, one
    # chunk for these small members)
    [ $((seed % 2)) = 0 ] || [ "$mode" != readd ] || opts+=(--bitmap-chunk=64)
    "$URAID" create "${opts[@]}" --chunk=64 "${files[@]}" >/dev/null 2>&1 || fail "$name: create"
    [ "$name" != luks5 ] || "$URAID" luks-format --batch --key-file "$tmp/key" \
        "${FAST_PBKDF2[@]}" "${files[@]}" >/dev/null 2>&1 || fail "$name: luks-format"
    # the fill, in a clean session
    size=$("$URAID" serve --readonly "${key[@]}" --run 'nbdinfo --size "$uri"' "${files[@]}" 2>/dev/null)
    python3 -c "import random,sys; sys.stdout.buffer.write(random.Random($seed).randbytes($size))" \
        >"$tmp/ref"
    "$URAID" serve "${key[@]}" --run "nbdcopy --flush '$tmp/ref' \"\$uri\"" "${files[@]}" \
        2>/dev/null || fail "$name: fill"
    # the crash session (the victim named as serve names it: its spec)
    # the resync or rebuild slowed (SOAK_SYNC_SPEED), so that writes and
    # the cut meet it
    start_server "$sock" --control "$ctl" --sync-speed-max "${SOAK_SYNC_SPEED:-4M}" \
        "${key[@]}" "${crash[@]}" 2>"$tmp/serve.log"
    out=$(/usr/bin/python3 "$tmp/client.py" "$uri" "$tmp/ref" "$tmp/unknown" "$seed" "$ctl" \
        "$URAID" "${crash[$victim]}" "$mode" "$fail_at" "$back_at" 2>&1) || { echo "$name seed $seed: client: $out"; return 1; }
    kill -KILL "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    rm -f "$sock" "$ctl"
    local when="before the fail"
    grep -q "marked faulty" "$tmp/serve.log" && when="degraded"
    grep -qE "re-adding|takes role|rebuilding|recovering" "$tmp/serve.log" && when="during the resync"
    grep -qE "in sync" "$tmp/serve.log" && when="after the resync"
    echo "$name seed $seed cut-after=$cut victim=$victim fail/back at $fail_at/$back_at, cut $when: $out"
    # every member, writable: what was durable reads back.  Cut while the
    # victim was out (failed, or not yet in sync), a RAID5/6 is dirty and
    # degraded: refused, naming the write hole, as md refuses it; then
    # started with --force, and a wrong block is the hole's (not judged)
    # where its row held a write that was not durable.
    rows=0
    local sargs=()
    until serve_up "${sargs[@]}" --control "$ctl" "${key[@]}" "${files[@]}" 2>"$tmp/serve2.log"; do
        keep_logs "$name-$seed"
        if [[ " ${sargs[*]} " != *" --degraded "* ]] && grep -q "with --degraded" "$tmp/serve2.log"; then
            # the victim taken as a spare (its slot a spare's, md's rule)
            echo "  $name seed $seed: a role missing: started with --degraded"
            sargs+=(--degraded)
        elif [[ " ${sargs[*]} " != *" --force "* ]] && [ "$parity" = 1 ] &&
            grep -q "write hole" "$tmp/serve2.log"; then
            echo "  $name seed $seed: dirty and degraded, refused (write hole): started with --force"
            rows=$row_blocks
            sargs+=(--force)
        else
            keep_logs "$name-$seed" members
            echo "FAIL: $name seed $seed: restart ${sargs[*]}: $(tail -n3 "$tmp/serve2.log" | tr '\n' ' ')"
            return 1
        fi
    done
    out=$(grep -m1 -iE "resync|recover|rebuil|re-add|degraded" "$tmp/serve2.log" | cut -c1-160) &&
        echo "  restart: $out"
    out=$(/usr/bin/python3 "$tmp/verify.py" "$uri" "$tmp/ref" "$tmp/unknown" "$rows" "$shift" 2>&1) ||
        { echo "$name seed $seed: verify: $out"; return 1; }
    rc=0
    case $out in
    wrong=0*) [ "$out" = wrong=0 ] || echo "  $name seed $seed: $out" ;;
    *) echo "FAIL: $name seed $seed: restart: $out ($(grep -v '^$' "$tmp/serve2.log" | tail -n3 | tr '\n' ' '))"; rc=1 ;;
    esac
    # a member that was failed stays out (as md leaves it; the serve holds
    # it, an export of its own): stopped, added back and rebuilt offline
    if "$URAID" detail "$ctl" 2>/dev/null | grep -q " removed"; then
        stop_server "$server_pid" || { echo "FAIL: $name seed $seed: stop"; return 1; }
        rm -f "$ctl"
        local others=()
        for f in "${files[@]}"; do [ "$f" = "$tmp/m.$victim" ] || others+=("$f"); done
        out=$("$URAID" add --force "$tmp/m.$victim" "${others[@]}" 2>&1) ||
            { echo "FAIL: $name seed $seed: adding m.$victim back: $out"; return 1; }
        echo "  restart left m.$victim out: added back offline" | cut -c1-200
        serve_up --control "$ctl" "${key[@]}" "${files[@]}" 2>>"$tmp/serve2.log" ||
            { echo "FAIL: $name seed $seed: start after the add: $(tail -n3 "$tmp/serve2.log")"; return 1; }
    fi
    for _ in $(seq 1200); do
        in_sync "$ctl" && break
        sleep 0.1
    done
    in_sync "$ctl" || { echo "FAIL: $name seed $seed: never in sync: $("$URAID" detail "$ctl" 2>&1 | tr '\n' ' ')"; rc=1; }
    stop_server "$server_pid" || { echo "FAIL: $name seed $seed: stop"; return 1; }
    rm -f "$ctl"
    out=$("$URAID" check "${files[@]}" 2>&1) || { echo "FAIL: $name seed $seed: check: $out"; rc=1; }
    grep -q "agree" <<<"$out" || { echo "FAIL: $name seed $seed: check: $out"; rc=1; }
    for i in $(seq 0 $((disks - 1))); do
        local rest=()
        for f in "${files[@]}"; do [ "$f" = "$tmp/m.$i" ] || rest+=("$f"); done
        start_server "$sock" --readonly --degraded "${key[@]}" "${rest[@]}" 2>"$tmp/serve3.log"
        out=$(/usr/bin/python3 "$tmp/verify.py" "$uri" "$tmp/ref" "$tmp/unknown" "$rows" "$shift" 2>&1) || true
        stop_server "$server_pid" || true
        case $out in wrong=0*) ;; *) echo "FAIL: $name seed $seed: without member $i: $out"; rc=1 ;; esac
    done
    keep_logs "$name-$seed" $([ "$rc" = 0 ] || echo members)
    return $rc
}

bad=0 runs=0
base=${URAID_TEST_SEED_BASE:-0}
for name in ${SOAK_CASES:-r5 r5nb r6 f2 o2 luks5 r5eio r6eio f2eio}; do
    for s in $(seq $((base + 1)) $((base + ${SOAK_SEEDS:-1}))); do
        runs=$((runs + 1))
        one "$name" "$s" || bad=$((bad + 1))
    done
done
echo "soak-serve: $runs runs, $bad failed"
[ "$bad" = 0 ]
