#!/bin/bash
# demo.sh — the main job, on built-in defaults: a small RAID1 + LUKS2
# volume on two temporary files, served over NBD and used by real clients
# (nbdinfo, nbdcopy, fio), managed while it serves (detail, a check), then
# `uraid bench`'s default run: a short table of layouts over disk models,
# each with the ceiling that binds it.
#
#   scripts/demo.sh            everything (about two minutes here)
#   DEMO_BENCH=0 scripts/demo.sh   skip the bench table
set -euo pipefail
cd "$(dirname "$0")/.."
uraid=$PWD/build/src/uraid
[ -x "$uraid" ] || { echo "demo: build first: scripts/setup.sh" >&2; exit 1; }

tmp=$(mktemp -d /tmp/uraid-demo.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
step() { printf '\n== %s\n' "$*"; }

step "two 256 MiB member files"
truncate -s 256M a.img b.img
(umask 077; printf 'demo passphrase' > key)

step "uraid create --level=1 a.img b.img   (md v1.2 superblocks, as mdadm writes them)"
"$uraid" create --level=1 --name=demo a.img b.img
"$uraid" examine a.img | grep -E 'Magic|Version|Raid Level|Raid Devices|Array UUID|Checksum|Device Role' || true

step "uraid luks-format on the RAID1   (LUKS2, argon2id; small KDF cost for the demo)"
"$uraid" luks-format --batch --key-file key --pbkdf-memory=65536 --iter-time=200 a.img b.img
"$uraid" luks-dump a.img b.img | grep -E 'Version|Cipher|Sector size|PBKDF|Keyslots|^ *[0-9]+: luks2' || true

step "uraid serve a.img b.img --key-file key: probe md -> RAID1 -> LUKS2 -> NBD, used by real clients"
# The client script runs with $uri pointing at the export; the server stops when it exits.
cat > client.sh <<'EOS'
set -e
nbdinfo "$uri" | grep -E 'export-size|is_read_only|can_multi_conn|can_flush|block_size'
head -c 64M /dev/urandom > data
nbdcopy data "$uri"
nbdcopy "$uri" - | head -c 64M | cmp - data && echo "nbdcopy: 64 MiB written and read back identical"
printf '\n%-26s %10s %10s\n' "fio job (ioengine=nbd)" "MB/s" "IOPS"
for spec in write:1M:1 read:1M:1 write:1M:16 read:1M:16 randread:4k:32 randwrite:4k:32; do
    IFS=: read -r rw bs qd <<<"$spec"
    line=$(fio --name=demo --ioengine=nbd --uri="$uri" --rw="$rw" --bs="$bs" --iodepth="$qd" \
               --size=192M --runtime=2 --time_based --output-format=terse --terse-version=3 2>/dev/null | grep '^3;')
    if [ "${rw#rand}" = read ]; then
        kb=$(cut -d';' -f7 <<<"$line"); io=$(cut -d';' -f8 <<<"$line")
    else
        kb=$(cut -d';' -f48 <<<"$line"); io=$(cut -d';' -f49 <<<"$line")
    fi
    printf '%-26s %10d %10d\n' "$rw bs=$bs qd=$qd" $((kb / 1024)) "$io"
done
EOS
"$uraid" serve --key-file key --run 'bash ./client.sh' a.img b.img

step "uraid serve --control ctl: manage the array while it serves (mdadm --detail, md's check)"
"$uraid" serve --key-file key --control ctl \
    --run "'$uraid' detail ctl | grep -E 'Raid Level|State :|Devices|active sync|Export'; '$uraid' check --wait ctl" \
    a.img b.img

step "after a clean stop both members are consistent:"
"$uraid" examine a.img b.img | grep -E 'State :|Events' || true

if [ "${DEMO_BENCH:-1}" != 0 ]; then
    step "uraid bench   (default run: layouts over models of seed 000's 80 MB/s SATA disks)"
    "$uraid" bench
fi
