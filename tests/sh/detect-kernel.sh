#!/bin/bash
# detect-kernel.sh — arrays without metadata, made by the Linux kernel: in
# one linux-peer VM boot, mdadm makes RAID0 and RAID5 arrays (3..6
# members, chunks 16K..512K, the four RAID5 layouts over the set), each
# gets an ext4 file system by mkfs.ext4 and the guest's own programs and
# modules copied in by the kernel's ext4, and the guest prints the md5
# of each /dev/mdX (md5, not sha256: busybox's sha256 takes twice as long
# under TCG over these 48-120 MiB arrays; it only has to tell equal bytes)
# and mdadm's data offset.  On the host the v1.2
# superblocks are zeroed and the members shuffled: `uraid detect` must
# rank the creation parameters first, and the `uraid serve --readonly
# --assume ...` line it prints must export the md5 the kernel printed,
# changing no image.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=1
. "$(dirname "$0")/peer-lib.sh"
command -v mkfs.ext4 >/dev/null || { echo "skip: mkfs.ext4 missing (e2fsprogs)"; exit 77; }
command -v jq >/dev/null || { echo "skip: jq missing"; exit 77; }

# name level members chunk(K) layout
arrays=("r0a 0 3 16 -" "r5ra 5 3 32 right-asymmetric" "r5la 5 4 64 left-asymmetric"
        "r5rs 5 5 128 right-symmetric" "r0b 0 4 512 -" "r5ls 5 6 256 left-symmetric")
for spec in "${arrays[@]}"; do
    set -- $spec
    add_images "$1" "$3" 24M
done

{
    guest_header
    echo 'mkdir -p /mnt'
    i=0
    for spec in "${arrays[@]}"; do
        set -- $spec
        lay=""
        [ "$2" = 5 ] && lay="--layout=$5"
        first=${devs[$1]%% *}
        echo "mdadm --create /dev/md$i --run --metadata=1.2 --level=$2 --chunk=$4 $lay --assume-clean --raid-devices=$3 ${devs[$1]} >/tmp/c.log 2>&1 || { echo 'create-failed $1'; cat /tmp/c.log; }"
        echo "mkfs.ext4 -q -F /dev/md$i && mount -t ext4 /dev/md$i /mnt && { cp -a /lib /sbin /bin /mnt/ 2>/dev/null; umount /mnt; } || echo 'fill-failed $1'"
        echo "echo \"sum $1 \$(md5sum < /dev/md$i | cut -d' ' -f1) \$(mdadm --examine $first | awk '/Data Offset/ { print \$4 }')\""
        echo "mdadm --stop /dev/md$i >/dev/null 2>&1"
        i=$((i + 1))
    done
    echo 'sync; exit 0'
} > "$D/job.sh"
LINUX_PEER_TIMEOUT=${LINUX_PEER_TIMEOUT:-500} run_peer "${imgs[@]}"

fail=0
for spec in "${arrays[@]}"; do
    set -- $spec
    name=$1 level=$2 chunk=$(($4 * 1024)) layout=$5
    line=$(grep "^sum $name " <<< "$out" || true)
    want=$(cut -d' ' -f3 <<< "$line")
    off=$(($(cut -d' ' -f4 <<< "$line") * 512))
    if [ -z "$want" ] || grep -q "failed $name" <<< "$out"; then
        echo "FAIL: the kernel could not make $name:"; echo "$out" | grep -A5 "failed $name" || true
        fail=1; continue
    fi
    read -r -a members <<< "${files[$name]}"
    for m in "${members[@]}"; do  # the v1.2 superblock, 4 KiB in
        dd if=/dev/zero of="$m" bs=4096 seek=1 count=1 conv=notrunc status=none
    done
    before=$(sha256sum "${members[@]}")
    mapfile -t shuffled < <(printf '%s\n' "${members[@]}" | shuf)
    if ! $URAID detect --json "${shuffled[@]}" > "$D/det.json" 2>"$D/det.log"; then
        echo "FAIL: detect $name:"; cat "$D/det.log"; fail=1; continue
    fi
    got=$(jq -r '.candidates[0] | "\(.level) \(.chunk) \(.layout) \(.offset) \(.order | join(" "))"' "$D/det.json")
    [ "$level" = 5 ] || layout=null
    exp="$level $chunk $layout $off ${members[*]}"
    if [ "$got" != "$exp" ]; then
        echo "FAIL: $name: detect ranks first '$got', not '$exp'"
        jq -r '.candidates[] | "\(.score) \(.assume)"' "$D/det.json"; fail=1; continue
    fi
    cmd=$(jq -r .command "$D/det.json")
    sum=$(eval "${cmd/#uraid /$URAID }" --run "'nbdcopy \"\$uri\" - | md5sum'" 2>"$D/serve.log" | cut -d' ' -f1)
    if [ "$sum" != "$want" ]; then
        echo "FAIL: $name: '$cmd' exports $sum, the kernel's array was $want"; cat "$D/serve.log"; fail=1
    else
        echo "ok: $name (raid$level, ${#members[@]} members, ${4}K $5): detect ranks it first, $(jq .scored "$D/det.json") candidates in $(jq '.seconds * 100 | floor / 100' "$D/det.json") s; the export is the kernel's"
    fi
    [ "$before" = "$(sha256sum "${members[@]}")" ] || { echo "FAIL: $name: an image changed"; fail=1; }
done
exit $fail
