#!/bin/bash
# nbd-modes.sh — the ways `uraid serve` runs: --readonly refusing writes,
# --direct (O_DIRECT members: file, md, LUKS),
# --run with $uri and its exit status, --stdio, systemd socket activation
# (nbdinfo's [ CMD ]), TCP with --port, and daemon mode with --pid-file
# and a clean exit on SIGTERM.
. "$(dirname "$0")/nbd-lib.sh"
requires nbdinfo qemu-io nbdcopy

# --readonly: flagged read-only, writes refused, data unchanged.
head -c 4M /dev/urandom > "$tmp/ro.img"
cp "$tmp/ro.img" "$tmp/ro.orig"
s=$tmp/ro.sock
start_server "$s" --readonly "$tmp/ro.img"
uri="nbd+unix:///?socket=$s"
nbdinfo "$uri" | grep -q "is_read_only: true" || fail "--readonly not advertised"
if qemu-io -f raw "$uri" -c 'write -P 1 0 4k' 2>&1 | grep -q "wrote"; then fail "write accepted on --readonly"; fi
nbdcopy "$uri" "$tmp/ro.back"
cmp "$tmp/ro.orig" "$tmp/ro.back" || fail "readonly read-back"
stop_server "$server_pid"
cmp "$tmp/ro.orig" "$tmp/ro.img" || fail "readonly export was modified"

# --direct: every member O_DIRECT, under a file, md RAID1, LUKS2 and LUKS2
# on RAID1, in a dir whose file system takes O_DIRECT (probed: the build
# dir where the scratch dir has none).  The minimum block size is what
# direct I/O needs there: a power of two, 512 at least.
ddir=$tmp
if ! dd if=/dev/zero of="$ddir/probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null; then
    ddir=$(mktemp -d "${BUILDDIR:-.}/uraid-direct.XXXXXX")
    cleanup_hooks+=("rm -rf '$ddir'")
    dd if=/dev/zero of="$ddir/probe" bs=4096 count=1 oflag=direct status=none ||
        fail "--direct: neither $tmp nor ${BUILDDIR:-.} takes O_DIRECT"
fi
printf 'direct passphrase' > "$ddir/key"
head -c 8M /dev/urandom > "$ddir/dio.src"
# direct_round_trip WHAT SERVE-ARGS... — 8 MiB in and back out with --direct
direct_round_trip() {
    local what=$1 out min; shift
    out=$("$URAID" serve --direct "$@" --run 'nbdinfo "$uri"') || fail "--direct $what: serve failed"
    min=$(sed -n 's/.*block_size_minimum: //p' <<<"$out")
    [ -n "$min" ] && [ "$min" -ge 512 ] && [ $((min & (min - 1))) = 0 ] ||
        fail "--direct $what: block size minimum '$min'"
    "$URAID" serve --direct "$@" --run "nbdcopy '$ddir/dio.src' \"\$uri\"" ||
        fail "--direct $what: write"
    "$URAID" serve --direct --readonly "$@" --run "nbdcopy \"\$uri\" '$ddir/dio.back'" ||
        fail "--direct $what: read"
    cmp -n 8388608 "$ddir/dio.src" "$ddir/dio.back" || fail "--direct $what: round trip"
}
truncate -s 8M "$ddir/dio.img"
direct_round_trip file "$ddir/dio.img"
cmp "$ddir/dio.src" "$ddir/dio.img" || fail "--direct: the file does not hold the data"
truncate -s 32M "$ddir/l.img"
"$URAID" luks-format --batch --key-file "$ddir/key" --pbkdf pbkdf2 \
    --pbkdf-force-iterations 1000 "$ddir/l.img"
direct_round_trip luks2 --key-file "$ddir/key" "$ddir/l.img"
truncate -s 40M "$ddir/r0.img" "$ddir/r1.img"
"$URAID" create --level=1 --assume-clean --force "$ddir/r0.img" "$ddir/r1.img" >/dev/null
direct_round_trip raid1 "$ddir/r0.img" "$ddir/r1.img"
"$URAID" luks-format --batch --key-file "$ddir/key" --pbkdf pbkdf2 \
    --pbkdf-force-iterations 1000 "$ddir/r0.img" "$ddir/r1.img"
direct_round_trip "luks2 on raid1" --key-file "$ddir/key" "$ddir/r0.img" "$ddir/r1.img"
# The stack's own I/O buffers are aligned (vol_buf_alloc), so members that
# refuse any other, as O_DIRECT may (fault:align=512), take the same stacks
# from create and luks-format to serve: LUKS2 on RAID1, and RAID5.
align_round_trip() {   # WHAT SERVE-ARGS...
    local what=$1; shift
    "$URAID" serve "$@" --run "nbdcopy '$ddir/dio.src' \"\$uri\" && nbdcopy \"\$uri\" '$ddir/dio.back'" ||
        fail "aligned buffers, $what: serve"
    cmp -n 8388608 "$ddir/dio.src" "$ddir/dio.back" || fail "aligned buffers, $what: round trip"
}
rm -f "$ddir"/r*.img
truncate -s 40M "$ddir"/r0.img "$ddir"/r1.img "$ddir"/r2.img
fa=(fault:align=512:"$ddir"/r0.img fault:align=512:"$ddir"/r1.img)
"$URAID" create --level=1 --assume-clean --force "${fa[@]}" >/dev/null ||
    fail "aligned buffers: create raid1"
"$URAID" luks-format --batch --key-file "$ddir/key" --pbkdf pbkdf2 \
    --pbkdf-force-iterations 1000 "${fa[@]}" || fail "aligned buffers: luks-format"
align_round_trip "luks2 on raid1" --key-file "$ddir/key" "${fa[@]}"
fa+=(fault:align=512:"$ddir"/r2.img)
"$URAID" create --level=5 --force "${fa[@]}" >/dev/null || fail "aligned buffers: create raid5"
align_round_trip raid5 "${fa[@]}"
rm -f "$ddir"/*.img "$ddir/dio.src" "$ddir/dio.back"

# --direct on a file system of 4096-byte sectors: the export's minimum
# block size is 4096 (what O_DIRECT needs there, not 512), a client that
# sends less is refused, and qemu, which honours the minimum, writes 512
# bytes by read-modify-write.  Needs root for a loop device and a mount.
if [ "$(id -u)" = 0 ] && command -v losetup mkfs.ext4 >/dev/null &&
    truncate -s 64M "$tmp/4k.fs" && loop=$(losetup -b 4096 --show -f "$tmp/4k.fs" 2>/dev/null); then
    cleanup_hooks+=("losetup -d $loop")
    mkfs.ext4 -q -b 4096 "$loop" || fail "4k: mkfs.ext4"
    mkdir "$tmp/4k"
    mount "$loop" "$tmp/4k" || fail "4k: mount"
    cleanup_hooks=("umount '$tmp/4k'" "${cleanup_hooks[@]}")
    truncate -s 8M "$tmp/4k/f.img"
    out=$("$URAID" serve --direct --run 'nbdinfo "$uri"' "$tmp/4k/f.img")
    grep -q "block_size_minimum: 4096" <<<"$out" || fail "--direct on 4k sectors: block size"
    out=$("$URAID" serve --direct --run 'qemu-io -f raw "$uri" -c "write -P 7 512 512" -c "read -P 7 512 512" -c "read -P 0 0 512"' "$tmp/4k/f.img" 2>&1)
    grep -q "read 512/512 bytes at offset 512" <<<"$out" && ! grep -qi "pattern verification failed\|error" <<<"$out" ||
        fail "--direct on 4k sectors: 512-byte write: $out"
else
    echo "note: --direct on 4096-byte sectors not run (needs root and a loop device)"
fi

# --run: $uri is set, the server stops with the command, its status is ours.
out=$("$URAID" serve --run 'nbdinfo --size "$uri"' mem:8M)
[ "$out" = 8388608 ] || fail "--run output '$out'"
rc=0; "$URAID" serve --run 'exit 7' mem:8M || rc=$?
[ "$rc" = 7 ] || fail "--run exit status $rc, want 7"
out=$("$URAID" serve --export-name 'a b' --run 'echo "$uri"' mem:8M)
case $out in "nbd+unix:///a%20b?socket="*) ;; *) fail "--run uri '$out'";; esac

# --stdio and socket activation.
[ "$(nbdinfo --size -- [ "$URAID" serve mem:16M ])" = 16777216 ] || fail "socket activation"
if command -v nbdsh >/dev/null && /usr/bin/python3 -c 'import nbd' 2>/dev/null; then
    out=$(/usr/bin/python3 - "$URAID" <<'PY'
import nbd, sys
h = nbd.NBD()
h.connect_command([sys.argv[1], "serve", "--stdio", "mem:1M"])
h.pwrite(b"\x42" * 4096, 8192)
assert h.pread(4096, 8192) == b"\x42" * 4096
print(h.get_size())
h.shutdown()
PY
)
    [ "$out" = 1048576 ] || fail "--stdio '$out'"
fi

# TCP on a port the kernel picks, reported through $uri.
out=$("$URAID" serve --port 0 --run 'nbdinfo --size "$uri"' mem:2M)
[ "$out" = 2097152 ] || fail "tcp --port 0 '$out'"

# Daemon: returns once listening; pid file; SIGTERM ends it cleanly and
# removes the socket and the pid file.
s=$tmp/d.sock
"$URAID" serve --socket "$s" --pid-file "$tmp/pid" mem:4M
[ -S "$s" ] || fail "daemon returned before listening"
pid=$(cat "$tmp/pid")
server_pids+=("$pid")
[ "$(nbdinfo --size "nbd+unix:///?socket=$s")" = 4194304 ] || fail "daemon size"
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$pid" 2>/dev/null; then fail "daemon did not exit on SIGTERM"; fi
[ ! -e "$s" ] || fail "socket left behind"
[ ! -e "$tmp/pid" ] || fail "pid file left behind"

# Usage errors.
rc=0; "$URAID" serve mem:1M 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "no listener must be a usage error, got $rc"
rc=0; "$URAID" serve --stdio --socket x mem:1M 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "--stdio --socket must be a usage error, got $rc"
help=$("$URAID" serve --help) || fail "--help exit"
grep -q -- "--export-name" <<< "$help" || fail "--help"
echo PASS
