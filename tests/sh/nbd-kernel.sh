#!/bin/bash
# nbd-kernel.sh — the Linux kernel's own NBD client against `uraid serve`.
# In a linux-peer VM (tests/linux-peer) the Debian kernel's nbd.ko and
# nbd-client (the README's `nbd-client -unix` recipe) attach /dev/nbd0 to
# uraid serving the VM's second disk, an image from this host.  The
# kernel writes a pattern through its page cache and fsync (so WRITE and
# FLUSH), drops its caches and reads it back; it sees the export's size;
# a discard of the tail is accepted.  On the host the image must then hold
# the pattern: what the kernel wrote reached the member.
# uraid, nbd-client, their libraries and nbd.ko go into the VM as a tar
# archive on its first disk (the VM has no network and no other way in).
# Skips (77) when the linux-peer harness or a package it needs, nbd-client
# or the kernel's nbd module is missing.
MB=8
. "$(dirname "$0")/peer-lib.sh"
command -v nbd-client >/dev/null || { echo "skip: nbd-client missing"; exit 77; }

# The kernel linux-peer boots: the newest with both modules and an image.
kver=""
for d in $(ls -d /lib/modules/* | sort -V -r); do
    [ -e "/boot/vmlinuz-$(basename "$d")" ] && { kver=$(basename "$d"); break; }
done
ko=$(modprobe -S "$kver" --show-depends nbd 2>/dev/null | awk '$1 == "insmod" { print $2 }' | tail -n 1)
[ -n "$ko" ] || { echo "skip: no nbd module for kernel $kver"; exit 77; }

# The payload: binaries, every library they load, the module.
P=$D/payload
mkdir -p "$P/lib"
cp -L "$URAID" "$P/uraid"
cp -L "$(command -v nbd-client)" "$P/nbd-client"
cp "$D/pat" "$P/pat"  # the pattern, made here: awk takes ~2 s a MiB under TCG
for b in "$P/uraid" "$P/nbd-client"; do
    ldd "$b" | awk '/=> \// { print $3 } /^[ \t]*\// { print $1 }' | while read -r lib; do
        cp -Ln "$lib" "$P/lib/"
    done
done
case $ko in
*.xz) xz -dc "$ko" > "$P/nbd.ko" ;;
*.zst) zstd -qdc "$ko" > "$P/nbd.ko" ;;
*.gz) gzip -dc "$ko" > "$P/nbd.ko" ;;
*) cp "$ko" "$P/nbd.ko" ;;
esac
tar -cf "$D/payload.tar" -C "$P" .
size=$((32 << 20))
truncate -s $size "$D/member.img"

{
    guest_header
    echo "PAY=$(peer_dev 0) MEM=$(peer_dev 1)"  # the payload's disk, the member's
    cat <<'EOF'
P=/tmp/payload
mkdir -p $P && cd $P && tar -xf $PAY || echo "payload-failed"
LD=$P/lib/ld-linux-x86-64.so.2
run() { $LD --library-path $P/lib "$@"; }
insmod $P/nbd.ko || echo "insmod-failed"
# Not through run(): $! must be the server itself, not a subshell.
$LD --library-path $P/lib $P/uraid serve --foreground --socket /tmp/s.sock $MEM \
    </dev/null >/dev/null 2>/tmp/serve.err &
spid=$!
i=0; while [ ! -S /tmp/s.sock ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
run $P/nbd-client -unix /tmp/s.sock /dev/nbd0 </dev/null >/tmp/client.out 2>&1 ||
    { echo "client-failed"; cat /tmp/client.out; }
echo "size $(blockdev --getsize64 /dev/nbd0)"
dd if=$P/pat of=/dev/nbd0 bs=1M conv=fsync 2>/dev/null
echo 3 > /proc/sys/vm/drop_caches
echo "read $(dd if=/dev/nbd0 bs=1M count=$MB 2>/dev/null | sha256sum | cut -d' ' -f1)"
blkdiscard -o $((MB << 20)) /dev/nbd0 && echo "discard ok"
run $P/nbd-client -d /dev/nbd0 >/dev/null 2>&1
kill $spid; wait $spid
echo "serve-exit $?"
sed 's/^/serve: /' /tmp/serve.err
EOF
} > "$D/job.sh"

run_peer "$D/payload.tar" "$D/member.img"
fail=0
expect() { # LINE DESCRIPTION
    if grep -qx "$1" <<< "$out"; then echo "ok: $2"; else echo "FAIL: $2 (want '$1')"; fail=1; fi
}
expect "size $size" "the kernel sees the export's size"
expect "read $want" "the kernel reads back what it wrote, after dropping its caches"
expect "discard ok" "the kernel's discard is accepted"
expect "serve-exit 0" "uraid serve stops cleanly on SIGTERM"
got=$(head -c $((MB << 20)) "$D/member.img" | sha256sum | cut -d' ' -f1)
if [ "$got" = "$want" ]; then echo "ok: the member holds what the kernel wrote"
else echo "FAIL: the member holds $got, want $want"; fail=1; fi
if [ $fail != 0 ]; then echo "$out"; fi
exit $fail
