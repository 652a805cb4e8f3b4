#!/bin/bash
# md-kernel-journal.sh — md's raid5-cache write journal, both ways, with
# the Linux kernel in a linux-peer VM (tests/linux-peer): each side
# replays a journal the other wrote and left behind a crash, for a RAID5
# on 3 members and a RAID6 on 4.
# (a) uraid creates the array with --write-journal, a client writes
#     through `uraid serve`, which is killed -9 mid-write; the kernel
#     assembles it (replaying the journal: dmesg "recovering 0 data-only
#     stripes and N data-parity stripes", N > 0), and its parity check
#     finds 0 mismatches; uraid's own replay of a copy rewrites the same N
#     stripes and reads the same sha256.
# (b) the kernel creates the array with mdadm --write-journal, fio writes
#     and the VM is cut off (sysrq b); uraid replays a copy (N stripes, its
#     check agrees) and reads the same sha256 and count as the kernel's own
#     replay of another copy.
# (c) write-back (serve --journal-mode=write-back, RAID5 w5): every byte of
#     the pattern written and flushed, then uraid killed -9 with stripes
#     still cached (the log holds them as data-only stripes); the kernel
#     assembles it in the first boot, replays, reads the pattern, and its
#     check finds 0 mismatches; uraid's replay of a copy reads the same.
# (d) the kernel's write-back log (RAID5 kw5): journal_mode set to
#     write-back before fio, the VM cut off as in (b); uraid's replay of a
#     copy rewrites as many data-only stripes as the kernel's and reads the
#     same sha256 (data-parity counts differ: see below).  fio keeps to
#     512 KiB there (64 stripes): Linux 6.1's own replay of a write-back
#     log its crash left with a few hundred data-only stripes hung in
#     r5l_start (raid5_get_active_stripe) in one run of three, its stripe
#     cache short; uraid's cache keeps to 128 stripes for the same reason
#     (src/md/md_jcache.c).
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=8
. "$(dirname "$0")/peer-lib.sh"
command -v fio >/dev/null || { echo "skip: fio missing"; exit 77; }

# Per array: its name, level, data members; images NAME.0.img ... and
# NAME.j.img (the journal).
arrays=("o5 5 3" "o6 6 4" "k5 5 3" "k6 6 4" "kw5 5 3")
mk() { # NAME N: blank images
    local j
    for ((j = 0; j < $2; j++)); do truncate -s 16M "$D/$1.$j.img"; done
    truncate -s 16M "$D/$1.j.img"
}
imgs_of() { # NAME N [PREFIX]: its image paths, the journal last
    local j
    for ((j = 0; j < $2; j++)); do echo "$D/${3:-}$1.$j.img"; done
    echo "$D/${3:-}$1.j.img"
}
for a in "${arrays[@]}" "w5 5 3"; do set -- $a; mk "$1" "$3"; done
fail=0

# (c), first half: ours in write-back, every byte acknowledged and
# flushed, killed before the destage is through (slow members).
set -- $(imgs_of w5 3)
$URAID create --level=5 --chunk=64 --write-journal="${!#}" "${@:1:$#-1}" >/dev/null
sims=()
for f in "${@:1:$#-1}"; do sims+=("sim:20M:$f"); done
rm -f "$D/s.sock" "$D/pid"
$URAID serve -f --journal-mode=write-back --socket "$D/s.sock" --pid-file "$D/pid" "${sims[@]}" \
    "${!#}" 2>"$D/serve.log" &
for _ in $(seq 100); do [ -S "$D/s.sock" ] && [ -s "$D/pid" ] && break; sleep 0.1; done
nbdcopy --flush "$D/pat" "nbd+unix:///?socket=$D/s.sock" ||
    { echo "FAIL: write-back: nbdcopy into ours"; exit 1; }
kill -9 "$(cat "$D/pid")"
wait 2>/dev/null || true
for f in "$@"; do cp "$f" "$(dirname "$f")/u$(basename "$f")"; done

# (b), first half: the kernel makes and crashes its arrays.
{
    echo '#!/bin/sh'
    echo "MB=$MB"
    echo 'echo 1 > /proc/sys/kernel/sysrq'
    # (c): ours, written back, before the kernel's own are made.
    echo 'mdadm --assemble /dev/md3 /dev/vdn /dev/vdo /dev/vdp /dev/vdq >/tmp/a.log 2>&1 || { echo "ours w5 assemble-failed"; cat /tmp/a.log; }
    echo "recovw5 $(dmesg | grep "md3: recovering" | tail -1)"
    echo "ours w5 $(dd if=/dev/md3 bs=1M count=$MB 2>/dev/null | sha256sum | cut -d" " -f1) raid5"
    echo check > /sys/block/md3/md/sync_action
    while [ "$(cat /sys/block/md3/md/sync_action)" != idle ]; do sleep 0.2; done
    echo "mismatch w5 $(cat /sys/block/md3/md/mismatch_cnt)"
    mdadm --stop /dev/md3 >/dev/null 2>&1'
    echo 'mk() { md=$1 level=$2 n=$3 mode=$4; shift 4; j=$1; shift
    mdadm --create /dev/$md --run --metadata=1.2 --level=$level --chunk=64 --raid-devices=$n \
        --assume-clean "$@" --write-journal $j >/tmp/c.log 2>&1 || { echo "create-failed $md"; cat /tmp/c.log; exit 1; }
    echo $mode > /sys/block/$md/md/journal_mode
    echo "mode $md $(cat /sys/block/$md/md/journal_mode)"
    size=24M
    [ $mode = write-back ] && size=512k
    fio --name=$md --filename=/dev/$md --rw=randwrite --bs=12k --direct=1 --ioengine=psync \
        --numjobs=2 --size=$size --time_based --runtime=120 --randseed=7 >/dev/null 2>&1 &
}'
    echo 'mk md0 5 3 write-through /dev/vdd /dev/vda /dev/vdb /dev/vdc'
    echo 'mk md1 6 4 write-through /dev/vdi /dev/vde /dev/vdf /dev/vdg /dev/vdh'
    echo 'mk md2 5 3 write-back /dev/vdm /dev/vdj /dev/vdk /dev/vdl'
    echo 'sleep 10'
    echo 'echo crashing'
    echo 'sleep 2 # the line reaches the host before the reset'
    echo 'echo b > /proc/sysrq-trigger'
    echo 'sleep 30'
} > "$D/job1.sh"
out=$(LINUX_PEER_TIMEOUT=300 "$PEER/run.sh" "$D/job1.sh" $(imgs_of k5 3) $(imgs_of k6 4) \
    $(imgs_of kw5 3) $(imgs_of w5 3) 2>&1) || true
grep -q '^crashing\|sysrq: Resetting' <<< "$out" ||
    { echo "$out" | tail -20; echo "FAIL: the kernel's arrays were not made and crashed"; exit 1; }
grep '^mode md[01]' <<< "$out" | grep -v '\[write-through\]' | sed 's/^/note: /' || true
grep -q '^mode md2 .*\[write-back\]' <<< "$out" ||
    { echo "FAIL: the kernel's kw5 is not in write-back: $(grep '^mode md2' <<< "$out")"; fail=1; }
# (c), second half: the kernel read ours.
host_check_ours w5 1 "write-back array, killed -9 after a flushed write (RAID5)"
echo "note: the kernel's replay of w5: $(grep '^recovw5' <<< "$out" | sed 's/.*md3: //')"
got=$($URAID serve $(imgs_of w5 3 u) --run "nbdcopy \"\$uri\" - | head -c $((MB << 20)) | sha256sum" \
    2>"$D/r.log" | cut -d' ' -f1)
[ "$got" = "$want" ] && echo "ok: uraid's replay of w5 reads the pattern too" ||
    { echo "FAIL: uraid's replay of w5 reads $got: $(cat "$D/r.log")"; fail=1; }
for a in k5:3 k6:4 kw5:3; do
    IFS=: read -r name n <<< "$a"
    for f in $(imgs_of "$name" "$n"); do cp "$f" "$(dirname "$f")/u$(basename "$f")"; done
done

# (a), first half: ours, killed mid-write.
for a in o5:5:3 o6:6:4; do
    IFS=: read -r name level n <<< "$a"
    set -- $(imgs_of "$name" "$n")
    $URAID create --level="$level" --chunk=64 --write-journal="${!#}" "${@:1:$#-1}" >/dev/null
    sims=()
    for f in "${@:1:$#-1}"; do sims+=("sim:20M:$f"); done
    rm -f "$D/s.sock" "$D/pid"
    $URAID serve -f --socket "$D/s.sock" --pid-file "$D/pid" "${sims[@]}" "${!#}" 2>"$D/serve.log" &
    for _ in $(seq 100); do [ -S "$D/s.sock" ] && [ -s "$D/pid" ] && break; sleep 0.1; done
    nbdcopy "$D/pat" "nbd+unix:///?socket=$D/s.sock" 2>/dev/null &
    copier=$!
    sleep 1.5
    kill -9 "$(cat "$D/pid")"
    wait "$copier" 2>/dev/null || true
    for f in "$@"; do cp "$f" "$(dirname "$f")/u$(basename "$f")"; done
done

# uraid replays the copies: how many stripes, then what the array reads.
replay() { # IMAGES...: "N D SHA256" (N: stripes with parity rewritten, D: data-only)
    local n d sha
    sha=$($URAID serve "$@" --run 'nbdcopy "$uri" - | sha256sum' 2>"$D/r.log" | cut -d' ' -f1)
    n=$(grep -o 'journal replayed: [0-9]* stripes' "$D/r.log" | grep -o '[0-9]*' || echo 0)
    d=$(grep -o '[0-9]* data-only' "$D/r.log" | grep -o '[0-9]*' || echo 0)
    echo "$n $d $sha"
}
declare -A un ud usha
for a in "${arrays[@]}"; do
    set -- $a
    read -r "un[$1]" "ud[$1]" "usha[$1]" <<< "$(replay $(imgs_of "$1" "$3" u))"
    $URAID check $(imgs_of "$1" "$3" u) 2>&1 | grep -q 'the copies agree' ||
        { echo "FAIL: uraid's replay of $1 left parity wrong"; fail=1; }
done

# The kernel replays ours and its own (the copies it has not seen replayed).
{
    echo '#!/bin/sh'
    echo 'one() { # MD NAME DEVS...
    md=$1 name=$2; shift 2
    mdadm --assemble /dev/$md "$@" >/tmp/a.log 2>&1 || { echo "$name assemble-failed"; cat /tmp/a.log; return; }
    echo "recov $name $(dmesg | grep "$md: recovering" | tail -1 | sed "s/.*and \([0-9]*\) data-parity.*/\1/")"
    echo "donly $name $(dmesg | grep "$md: recovering" | tail -1 | sed "s/.*recovering \([0-9]*\) data-only.*/\1/")"
    echo "sha $name $(dd if=/dev/$md bs=1M 2>/dev/null | sha256sum | cut -d" " -f1)"
    echo check > /sys/block/$md/md/sync_action
    while [ "$(cat /sys/block/$md/md/sync_action)" != idle ]; do sleep 0.2; done
    echo "mismatch $name $(cat /sys/block/$md/md/mismatch_cnt)"
    mdadm --stop /dev/$md >/dev/null 2>&1
}'
    i=0 dev=0
    for a in "${arrays[@]}"; do
        set -- $a
        devs=""
        for ((k = 0; k <= $3; k++)); do devs+="$(peer_dev $dev) "; dev=$((dev + 1)); done
        echo "one md$i $1 $devs"
        i=$((i + 1))
    done
    echo 'exit 0'
} > "$D/job2.sh"
all=()
for a in "${arrays[@]}"; do set -- $a; all+=($(imgs_of "$1" "$3")); done
out=$(LINUX_PEER_TIMEOUT=400 "$PEER/run.sh" "$D/job2.sh" "${all[@]}" 2>&1) ||
    { echo "$out" | tail -20; echo "FAIL: the second linux-peer job did not finish"; exit 1; }
field() { grep "^$1 $2 " <<< "$out" | cut -d' ' -f3; }
for a in "${arrays[@]}"; do
    set -- $a
    who=$1 n=${un[$1]} sha=${usha[$1]}
    kr=$(field recov "$who") ks=$(field sha "$who") km=$(field mismatch "$who")
    if [ "$who" = kw5 ] && [ "$kr" -ge 0 ] 2>/dev/null && [ "$n" -ge 0 ]; then
        # A write-back log holds FLUSH payloads: the kernel, short of
        # stripe cache, replays some stripes early that a later FLUSH
        # would drop (and counts them); uraid holds every one.  The
        # data-only count (some there must be) and the sha256 below are
        # the comparison; with fio inside 64 stripes there may be no
        # stripe with parity at all.
        echo "ok: $who (raid$2): data-parity stripes replayed: kernel $kr, uraid $n"
    elif [ -n "$kr" ] && [ "$kr" -gt 0 ] 2>/dev/null && [ "$kr" = "$n" ]; then
        echo "ok: $who (raid$2): the kernel and uraid each replay $n stripes with parity"
    else
        echo "FAIL: $who (raid$2): kernel replayed '$kr' stripes, uraid $n"; fail=1
    fi
    if [ "$ks" = "$sha" ]; then echo "ok: $who: the same sha256 after either replay"; else
        echo "FAIL: $who: kernel reads $ks, uraid $sha"; fail=1; fi
    [ "$km" = 0 ] && echo "ok: $who: the kernel's check finds 0 mismatches" ||
        { echo "FAIL: $who: kernel check mismatch_cnt '$km'"; fail=1; }
    kd=$(field donly "$who")
    if [ "$who" = kw5 ]; then
        [ "$kd" = "${ud[$1]}" ] && [ "$kd" -gt 0 ] && echo "ok: $who: both replay $kd data-only stripes" ||
            { echo "FAIL: $who: data-only stripes: kernel '$kd', uraid ${ud[$1]}"; fail=1; }
    fi
done
[ $fail = 0 ] || echo "$out" | tail -30
exit $fail
