#!/bin/bash
# fwraid-kernel.sh — uraid reads the firmware RAID containers the real
# mdadm makes.  One linux-peer VM boot (tests/linux-peer): mdadm makes two
# IMSM containers of 4 disks (IMSM_NO_PLATFORM, IMSM_DEVNAME_AS_SERIAL:
# the disks' serials are their names, /dev/vda ...) holding a RAID5 and a
# RAID0, and a RAID10 and a RAID1; and one DDF container of 4 disks
# holding a RAID5, a RAID0, a RAID10 and a RAID1.  mdmon runs the
# writes; each volume is filled with random bytes and the guest prints
# its sha256 and size.  On the host `uraid probe` must show each volume,
# `uraid serve --readonly --export NAME` of each must read the guest's
# sha256, a writable serve must be refused, and the images must come out
# unchanged.  The images are named after the guest's disks (vda.img ...)
# so that the IMSM members are found by serial.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=1
. "$(dirname "$0")/peer-lib.sh"

URAID=${URAID:-${BUILDDIR:-$SRCDIR/build}/src/uraid}
[ -x "$URAID" ] || { echo "FAIL: $URAID not built"; exit 1; }
command -v mdmon >/dev/null || { echo "skip: mdmon missing (mdadm)"; exit 77; }

# vda..vdh: IMSM (32 MiB each); vdi..vdl: DDF (96 MiB: mdadm keeps 32 MiB
# of each DDF disk for its metadata).
for i in $(seq 0 11); do
    f="$D/$(basename "$(peer_dev "$i")").img"
    truncate -s $([ "$i" -lt 8 ] && echo 32M || echo 96M) "$f"
    imgs+=("$f")
done

cat > "$D/job.sh" <<'EOF'
#!/bin/sh
export IMSM_NO_PLATFORM=1 IMSM_DEVNAME_AS_SERIAL=1 MDADM_NO_SYSTEMCTL=1
mkdir -p /run/mdadm /dev/md
mk() {
	n=$1; shift
	mdadm -C /dev/md/$n --run "$@" >/tmp/c.log 2>&1 || { echo "create $n failed"; cat /tmp/c.log; }
}
fill() {
	[ -b /dev/md/$1 ] || { echo "vol $1 missing"; return; }
	dd if=/dev/urandom of=/dev/md/$1 bs=64k oflag=direct 2>/dev/null
	sync
	echo "vol $1 $(dd if=/dev/md/$1 bs=64k 2>/dev/null | sha256sum | cut -d' ' -f1) $(blockdev --getsize64 /dev/md/$1)"
}
mk imsm0 -e imsm -n 4 /dev/vda /dev/vdb /dev/vdc /dev/vdd
mk Volume0 -l 5 -n 4 -c 64 -z 8M /dev/md/imsm0
mk Volume1 -l 0 -n 4 -c 32 -z 4M /dev/md/imsm0
mk imsm1 -e imsm -n 4 /dev/vde /dev/vdf /dev/vdg /dev/vdh
mk Volume2 -l 10 -n 4 -c 64 -z 8M /dev/md/imsm1
mk Volume3 -l 1 -n 2 -z 6M /dev/vde /dev/vdf
mk ddf0 -e ddf -n 4 /dev/vdi /dev/vdj /dev/vdk /dev/vdl
mk VD0 -l 5 -n 4 -c 64 -z 8M /dev/md/ddf0
mk VD1 -l 0 -n 4 -c 32 -z 6M /dev/md/ddf0
mk VD2 -l 10 -n 4 -c 64 -z 8M /dev/md/ddf0
mk VD3 -l 1 -n 2 -z 3M /dev/vdi /dev/vdj
vols="Volume0 Volume1 Volume2 Volume3 VD0 VD1 VD2 VD3"
# The initial resyncs end first: until then IMSM records a migration.
for v in $vols; do mdadm --wait /dev/md/$v >/dev/null 2>&1; done
for v in $vols; do fill $v; done
for v in $vols; do mdadm --wait /dev/md/$v >/dev/null 2>&1; done
for v in $vols; do mdadm --stop /dev/md/$v >/dev/null 2>&1 || echo "stop $v failed"; done
sleep 1
for c in imsm0 imsm1 ddf0; do mdadm --stop /dev/md/$c >/dev/null 2>&1 || echo "stop $c failed"; done
sync
echo done
EOF
# In a batch (tests/linux-peer/batch.sh) the disks are others than vda..vdl: rename them
# in the job, last first, so that no new name is renamed again.
letters=(a b c d e f g h i j k l)
for i in $(seq 11 -1 0); do
    sed -i "s|/dev/vd${letters[$i]}\b|$(peer_dev "$i")|g" "$D/job.sh"
done

run_peer "${imgs[@]}"
grep -q '^done$' <<< "$out" || { echo "$out"; echo "FAIL: the guest job did not finish"; exit 1; }
if grep -q 'failed\|missing' <<< "$out"; then echo "$out"; echo "FAIL: the guest could not make the containers"; exit 1; fi
after_guest=$(sha256sum "${imgs[@]}")
fail=0
imsm0=("${imgs[@]:0:4}") imsm1=("${imgs[@]:4:4}") ddf=("${imgs[@]:8:4}")

probe=$("$URAID" probe "${imgs[@]}" 2>&1) || { echo "$probe"; echo "FAIL: uraid probe"; fail=1; }
while read -r _ vol sha size; do
    case $vol in
    Volume0 | Volume1) name=imsm/$vol disks=("${imsm0[@]}") ;;
    Volume2 | Volume3) name=imsm/$vol disks=("${imsm1[@]}") ;;
    *) name=ddf/$vol disks=("${ddf[@]}") ;;
    esac
    grep -q "$name .* export " <<< "$probe" || { echo "$probe"; echo "FAIL: uraid probe shows no $name"; fail=1; }
    got=$("$URAID" serve --readonly --export "$name" --run 'nbdcopy "$uri" - | sha256sum' "${disks[@]}" 2>"$D/err" | cut -d' ' -f1)
    if [ "$got" = "$sha" ]; then
        echo "ok: $name ($size bytes) reads as the kernel wrote it"
    else
        cat "$D/err"; echo "FAIL: $name reads $got, the guest wrote $sha"; fail=1
    fi
done < <(grep '^vol ' <<< "$out")
n=$(grep -c '^vol ' <<< "$out")
[ "$n" -eq 8 ] || { echo "FAIL: the guest made $n volumes, not 8"; fail=1; }

for name in imsm/Volume0 ddf/VD0; do
    disks=("${imsm0[@]}")
    [ "$name" = ddf/VD0 ] && disks=("${ddf[@]}")
    if err=$("$URAID" serve --export "$name" --run true "${disks[@]}" 2>&1); then
        echo "FAIL: a writable serve of $name started"; fail=1
    elif grep -q "$name: .* volumes open read-only only" <<< "$err"; then
        echo "ok: a writable serve of $name is refused"
    else
        echo "$err"; echo "FAIL: a writable serve of $name: not the read-only message"; fail=1
    fi
done
[ "$(sha256sum "${imgs[@]}")" = "$after_guest" ] || { echo "FAIL: the images changed on the host"; fail=1; }
[ $fail = 0 ] && echo "ok: uraid reads the $n IMSM and DDF volumes mdadm made, read-only"
exit $fail
