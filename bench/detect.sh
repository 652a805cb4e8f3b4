#!/bin/bash
# detect.sh — `uraid detect` on 6 members of 1 GiB (sparse files): for
# each case, an array made by `uraid create`, filled through `uraid serve`
# (ext4 made by mkfs.ext4 -d of DIR, or DIR as one tar stream with no file
# system: the worst case, no signature to prune by), superblocks zeroed,
# members shuffled; prints candidates scored, seconds, candidates per
# second and whether the creation parameters ranked first.
#   URAID=build/src/uraid bench/detect.sh [DIR]    (DIR: /usr/lib/x86_64-linux-gnu)
set -euo pipefail
: "${URAID:?URAID must point at the uraid binary}"
src=${1:-/usr/lib/x86_64-linux-gnu}
w=$(mktemp -d /tmp/uraid-detect-bench.XXXXXX)
trap 'rm -rf "$w"' EXIT
cd "$w"
m=(m0 m1 m2 m3 m4 m5)
tar -cf data.tar -C "$src" . 2>/dev/null || true
printf '%-34s %10s %8s %10s %s\n' case candidates seconds per-second first
for c in "5 128K right-asymmetric ext4" "0 64K - ext4" "5 64K left-symmetric tar"; do
    set -- $c
    rm -f m? fs.raw
    truncate -s 1G "${m[@]}"
    lay=()
    [ "$1" = 5 ] && lay=(--layout="$3")
    "$URAID" create --level="$1" --chunk="$2" "${lay[@]}" --assume-clean --force "${m[@]}" >/dev/null
    off=$("$URAID" examine m0 | awk '/Data Offset/ { print $4 * 512 }')
    if [ "$4" = ext4 ]; then
        size=$("$URAID" serve --readonly "${m[@]}" --run 'nbdinfo --size "$uri"' 2>/dev/null)
        truncate -s "$size" fs.raw
        mkfs.ext4 -q -F -d "$src" fs.raw 2>/dev/null ||
            { echo "mkfs.ext4 -d $src failed (too big?)"; exit 1; }
        "$URAID" serve "${m[@]}" --run 'nbdcopy --destination-is-zero fs.raw "$uri"' 2>/dev/null
    else
        "$URAID" serve "${m[@]}" --run 'nbdcopy data.tar "$uri"' 2>/dev/null
    fi
    for f in "${m[@]}"; do dd if=/dev/zero of=$f bs=4096 seek=1 count=1 conv=notrunc status=none; done
    sync
    mapfile -t sh < <(printf '%s\n' "${m[@]}" | shuf)
    "$URAID" detect --json "${sh[@]}" > det.json
    lname=null
    [ "$1" = 5 ] && lname=$3
    want="$1 $((${2%K} * 1024)) $lname $off m0,m1,m2,m3,m4,m5"
    got=$(jq -r '.candidates[0] | "\(.level) \(.chunk) \(.layout) \(.offset) \(.order | join(","))"' det.json)
    ok=no
    [ "$got" = "$want" ] && ok=yes
    jq -r --arg c "raid$1 $2 ${3#-} $4" --arg ok $ok \
        '"\($c)\t\(.scored)\t\(.seconds * 100 | floor / 100)\t\(.scored / .seconds | floor)\t\($ok)"' det.json |
        awk -F'\t' '{ printf "%-34s %10s %8s %10s %s\n", $1, $2, $3, $4, $5 }'
done
