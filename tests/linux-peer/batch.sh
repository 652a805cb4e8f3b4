#!/bin/bash
# batch.sh MEMBER...: run several kernel tests (tests/sh/*.sh scripts or unit test programs
# that call run.sh) with one VM boot per round instead of one per run.sh call.  Each member
# runs as it would alone, but its run.sh hands the job and images to this script
# (LINUX_PEER_BATCH) and waits; once every member is waiting or has ended, one VM runs all
# the waiting jobs one after another, each on its own disks, with a fresh /tmp and the
# guest's arrays, dm tables, loop devices and brd/nbd modules cleared after it; each member
# then gets its own job's output and exit status and goes on (a member that boots twice
# waits again: a second round).  The members' reports come out one by one, each under its
# name; the batch fails if one fails and names it, and skips (77) only if all skip.
#
# Members start one at a time, so that each one's disks can come after the previous one's:
# member k sees LINUX_PEER_DEV_BASE (peer-lib.sh's peer_dev adds it), the guest name of its
# first disk, and a job that names a disk outside its own range fails instead of running.
# A round's VM gets the disks of all members (blank 1 MiB ones for a member with no job in
# that round), the largest LINUX_PEER_SMP they ask, and the sum of their LINUX_PEER_TIMEOUT.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 MEMBER..." >&2; exit 2; }
S=$(mktemp -d "${TMPDIR:-/tmp}/linux-peer-batch.XXXXXX")
trap 'for p in "${pid[@]}"; do [ -z "$p" ] || kill "$p" 2>/dev/null; done; rm -rf "$S"' EXIT
MAX_DISKS=60   # what run.sh attaches: 29 on the root PCI bus, 31 behind a bridge
members=("$@")
N=${#members[@]}
declare -a pid base reserved served rc
name() { basename "${members[$1]}" .sh; }

# blocked K: member K waits on a request the batch has not answered
blocked() {
    local r
    r=$(cat "$S/m$1/rounds" 2>/dev/null) || return 1
    [ "$r" -gt "${served[$1]}" ]
}
settle() { # K: until member K waits or has ended
    while kill -0 "${pid[$1]}" 2>/dev/null && ! blocked "$1"; do sleep 0.2; done
}
report() { # K: the member ended; print its report under its name
    local k=$1
    wait "${pid[$k]}"
    rc[$k]=$?
    echo "==== $(name "$k") (exit ${rc[$k]})"
    cat "$S/m$k.log"
    pid[$k]=""
}

# index of a guest disk name (vda 0 ... vdz 25, vdaa 26 ...)
dev_index() {
    local s=$1 i=0 c
    while [ -n "$s" ]; do
        c=$(printf '%d' "'${s:0:1}")
        i=$((i * 26 + c - 96)); s=${s:1}
    done
    echo $((i - 1))
}

next=0
for ((k = 0; k < N; k++)); do
    mkdir -p "$S/m$k"
    served[$k]=0 reserved[$k]=0 rc[$k]=""
    base[$k]=$next
    LINUX_PEER_BATCH="$S/m$k" LINUX_PEER_DEV_BASE=$next "${members[$k]}" > "$S/m$k.log" 2>&1 &
    pid[$k]=$!
    settle "$k"
    if blocked "$k"; then
        reserved[$k]=$(wc -l < "$S/m$k/1/images")
        next=$((next + reserved[k]))
        [ "$next" -le $MAX_DISKS ] || {
            echo "batch.sh: with $(name "$k") the batch has $next disks, more than one VM takes ($MAX_DISKS): split it"
            exit 1; }
    else
        report "$k"
    fi
done

round=0
while :; do
    pending=()
    for ((k = 0; k < N; k++)); do
        [ -n "${pid[$k]}" ] || continue
        settle "$k"
        if blocked "$k"; then pending+=("$k"); else report "$k"; fi
    done
    [ ${#pending[@]} -gt 0 ] || break
    round=$((round + 1))
    R="$S/round$round"
    mkdir -p "$R"
    # the round's disks, its guest job, its limits
    slots=() snap="" tmo=0 smp=1 run=()
    for k in "${pending[@]}"; do
        q="$S/m$k/$((served[k] + 1))"
        mapfile -t im < "$q/images"
        read -r t c s < "$q/opts"
        bad=""
        [ ${#im[@]} -le "${reserved[$k]}" ] ||
            bad="its job has ${#im[@]} disks, more than the ${reserved[$k]} of its first"
        for d in $(grep -oE '(^|[^a-z0-9_])vd[a-z]{1,2}[0-9]*([^a-z0-9_]|$)' "$q/job.sh" |
            grep -oE 'vd[a-z]+' | sort -u); do
            i=$(dev_index "${d#vd}")
            [ "$i" -ge "${base[$k]}" ] && [ "$i" -lt $((base[k] + ${#im[@]})) ] ||
                bad="its job names /dev/$d, not one of its ${#im[@]} disks (from disk index ${base[$k]} on)"
        done
        if [ -n "$bad" ]; then
            printf 'batch.sh: %s cannot run in a batch: %s\nGUEST-EXIT 2\n' "$(name "$k")" "$bad" > "$q/out"
            echo 2 > "$q/rc"; served[$k]=$((served[k] + 1))
            continue
        fi
        for ((j = 0; j < ${#im[@]}; j++)); do
            slots[$((base[k] + j))]=${im[$j]}
            [ "$s" = 1 ] && snap+="${im[$j]} "
        done
        tmo=$((tmo + t)); [ "$c" -gt "$smp" ] && smp=$c
        run+=("$k")
    done
    [ ${#run[@]} -gt 0 ] || continue
    disks=()
    for ((j = 0; j < next; j++)); do
        if [ -n "${slots[$j]:-}" ]; then disks+=("${slots[$j]}"); else
            truncate -s 1M "$R/blank$j.img"; disks+=("$R/blank$j.img"); fi
    done
    {
        echo '#!/bin/sh'
        echo "# batch round $round: $(for k in "${run[@]}"; do printf '%s ' "$(name "$k")"; done)"
        cat <<'EOF'
cleanup() {
    [ -s /batch/$1.pid ] && kill -KILL -- -"$(cat /batch/$1.pid)" 2>/dev/null
    cd /
    for m in $(awk '$2 ~ "^/(mnt|tmp)/" { print $2 }' /proc/mounts | sort -r); do umount -l "$m"; done
    for _ in 1 2 3; do
        dmsetup remove_all >/dev/null 2>&1
        mdadm --stop --scan >/dev/null 2>&1
    done
    for l in /dev/loop[0-9]*; do losetup -d "$l" 2>/dev/null; done
    echo 1000 > /proc/sys/dev/raid/speed_limit_min; echo 200000 > /proc/sys/dev/raid/speed_limit_max
    for m in nbd brd; do rmmod $m 2>/dev/null; done
    umount -l /tmp
}
run_member() {
    echo "URAID-BATCH-BEGIN $1 $(cut -d' ' -f1 /proc/uptime)"
    mount -t tmpfs tmpfs /tmp
    ( cd /tmp && . /batch/$1.env && exec sh -c 'echo $$ > /batch/'$1'.pid; exec setsid /batch/'$1'.sh' ) < /dev/null 2>&1
    rc=$?
    cleanup $1
    echo "URAID-BATCH-END $1 $rc $(cut -d' ' -f1 /proc/uptime)"
}
mkdir -p /batch
EOF
        for k in "${run[@]}"; do
            q="$S/m$k/$((served[k] + 1))"
            printf "cat > /batch/%s.sh <<'URAID_BATCH_EOF_%s'\n" "$k" "$k"; cat "$q/job.sh"
            printf '\nURAID_BATCH_EOF_%s\n' "$k"
            printf "cat > /batch/%s.env <<'URAID_BATCH_EOF_%s'\n" "$k" "$k"; cat "$q/job.env"
            printf 'URAID_BATCH_EOF_%s\nchmod 755 /batch/%s.sh\n' "$k" "$k"
        done
        for k in "${run[@]}"; do echo "run_member $k"; done
        echo 'exit 0'
    } > "$R/batch-round$round.sh"
    LINUX_PEER_TIMEOUT=$tmo LINUX_PEER_SMP=$smp LINUX_PEER_SNAPSHOT_IMAGES="$snap" \
        "$HERE/run.sh" "$R/batch-round$round.sh" "${disks[@]}" > "$R/out" 2> "$R/err"
    vm=$?
    for k in "${run[@]}"; do
        q="$S/m$k/$((served[k] + 1))"
        awk -v k="$k" '$1 == "URAID-BATCH-BEGIN" && $2 == k { on = 1; next }
            $1 == "URAID-BATCH-END" && $2 == k { on = 0; next } on' "$R/out" > "$q/out"
        end=$(awk -v k="$k" '$1 == "URAID-BATCH-END" && $2 == k' "$R/out")
        if [ -n "$end" ]; then
            r=$(cut -d' ' -f3 <<< "$end")
            [ -z "${LINUX_PEER_TIMES:-}" ] || awk -v who="$(basename "${members[$k]}")" -v r="$round" \
                -v b="$(awk -v k="$k" '$1 == "URAID-BATCH-BEGIN" && $2 == k { print $3 }' "$R/out")" -v e="$(cut -d' ' -f4 <<< "$end")" \
                'BEGIN { printf "%s batch-round%s member job=%.1f\n", who, r, e - b }' >> "$LINUX_PEER_TIMES"
        else
            r=125
            { echo "batch.sh: the batch VM (round $round) ended before this job did (run.sh exit $vm):"
              tail -n 30 "$R/err"; } >> "$q/out"
        fi
        echo "GUEST-EXIT $r" >> "$q/out"
        echo "$r" > "$q/rc"
        served[$k]=$((served[k] + 1))
    done
done

fail=0 ran=0
echo "==== batch: $N members"
for ((k = 0; k < N; k++)); do
    case "${rc[$k]}" in
    0) echo "batch: $(name "$k") ok"; ran=1 ;;
    77) echo "batch: $(name "$k") skipped: $(tail -n 1 "$S/m$k.log")" ;;
    *) echo "batch: $(name "$k") FAILED (exit ${rc[$k]})"; fail=1 ;;
    esac
done
[ $fail = 0 ] || exit 1
[ $ran = 1 ] || exit 77
exit 0
