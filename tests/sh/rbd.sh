#!/bin/bash
# rbd.sh — rbd: members against a real one-host Ceph cluster the test
# starts itself (ceph-lib.sh: a monitor and one memstore OSD on 127.0.0.1):
#   plain: fio's crc32c verify through `uraid serve rbd:rbd/plain`, and
#     bytes written through uraid read back by `rbd export`; a snapshot
#     serves read-only the bytes it was taken with, and a writable open of
#     it is refused; the member's op timeouts (60 s where Ceph would wait
#     forever, unless the conf or the spec sets them), read from the
#     client's admin socket;
#   LUKS2 on RBD: `uraid luks-format` onto the image, served, written and
#     read; the exported image opens in cryptsetup (luksDump,
#     --test-passphrase); and a LUKS2 image cryptsetup made, imported with
#     `rbd import`, is unlocked by uraid with the same bytes;
#   RAID0 over two images under fio verify, mdadm reading the superblock
#     of one exported with `rbd export`;
#   RAID1 of a local file and an RBD image under fio verify, the OSD
#     killed mid-run: no client error, the rbd member is faulty within the
#     op timeout (CEPH_OP_TIMEOUT, set in ceph.conf's [client]), the array
#     serves on, the data verifies, and mdadm reads the local member's
#     superblock saying so.
. "$(dirname "$0")/nbd-lib.sh"
requires fio nbdcopy nbdinfo cmp cryptsetup mdadm python3
fio --enghelp=nbd >/dev/null 2>&1 || { echo "SKIP: fio lacks ioengine=nbd"; exit 77; }
. "$(dirname "$0")/ceph-lib.sh"

export CEPH_OP_TIMEOUT=8
ceph_start
echo "ceph: one monitor and one OSD up in ${ceph_startup_s} s"
out=$("$URAID" probe rbd:rbd/absent 2>&1 || true)
if grep -q "built without librbd" <<<"$out"; then
    echo "SKIP: this uraid was built without librbd (librbd-dev)"; exit 77
fi
rbdc() { timeout 120 rbd -c "$CEPH_CONF" "$@"; }
uri() { echo "nbd+unix:///?socket=$1"; }

run_fio() { # URI NAME ARGS...
    local u=$1 name=$2; shift 2
    (cd "$tmp" && timeout 300 fio --name="$name" --ioengine=nbd --uri="$u" \
        --verify=crc32c --verify_fatal=1 --do_verify=1 --output="$tmp/$name.out" "$@") \
        || { cat "$tmp/$name.out" >&2; fail "fio $name"; }
    grep -q "err= 0" "$tmp/$name.out" || { cat "$tmp/$name.out" >&2; fail "fio $name errors"; }
}

# --- plain image ---------------------------------------------------------
ceph_rbd_create plain 64M
start_server "$tmp/p.sock" rbd:rbd/plain
run_fio "$(uri "$tmp/p.sock")" seq --size=16M --offset_increment=16M --rw=write --bs=1M \
    --iodepth=8 --numjobs=2
run_fio "$(uri "$tmp/p.sock")" rand --size=8M --offset_increment=8M --rw=randwrite --bs=4k \
    --iodepth=32 --numjobs=4
head -c 40M /dev/urandom >"$tmp/data"
nbdcopy "$tmp/data" "$(uri "$tmp/p.sock")"
# nbdcopy writes the zero run of this one as NBD WRITE_ZEROES (rbd_aio_write_zeroes).
cp "$tmp/data" "$tmp/holed"
dd if=/dev/zero of="$tmp/holed" bs=1M seek=8 count=8 conv=notrunc status=none
nbdcopy "$tmp/holed" "$(uri "$tmp/p.sock")"
stop_server "$server_pid"
rbdc export rbd/plain "$tmp/plain.out" >/dev/null 2>&1 || fail "rbd export rbd/plain"
cmp -n 40M "$tmp/holed" "$tmp/plain.out" || fail "rbd export does not read what uraid wrote"
start_server "$tmp/p.sock" rbd:rbd/plain
nbdcopy "$tmp/data" "$(uri "$tmp/p.sock")"
stop_server "$server_pid"

# Ceph's "wait forever" (0) becomes 60 s unless the conf or the spec says,
# read from the serving client's admin socket.
client_opt() { # PID OPT
    local a=$ceph_dir/run/client.$1.asok
    for _ in $(seq 100); do [ -S "$a" ] && break; sleep 0.1; done
    timeout 30 ceph --admin-daemon "$a" config get "$2" | sed -n 's/.*": "\(.*\)".*/\1/p'
}
grep -v "op timeout\|mount timeout" "$CEPH_CONF" >"$tmp/plain.conf"
for c in "conf=$tmp/plain.conf:60:60" "conf=$tmp/plain.conf,rados_osd_op_timeout=5:5:60" \
    "conf=$tmp/plain.conf,rados mon op timeout=0:60:0" \
    "conf=$CEPH_CONF:$CEPH_OP_TIMEOUT:$CEPH_OP_TIMEOUT"; do
    IFS=: read -r opts osd mon <<<"$c"
    start_server "$tmp/p.sock" "rbd:rbd/plain,$opts"
    got="$(client_opt "$server_pid" rados_osd_op_timeout) $(client_opt "$server_pid" rados_mon_op_timeout)"
    [ "$got" = "$osd $mon" ] || fail "rbd:rbd/plain,$opts: op timeouts $got, not $osd $mon"
    stop_server "$server_pid"
done

# A snapshot keeps those bytes after the image changes.
rbdc snap create rbd/plain@s1 >/dev/null 2>&1 || fail "rbd snap create"
dd if=/dev/urandom of="$tmp/more" bs=1M count=4 status=none
start_server "$tmp/p.sock" rbd:rbd/plain
nbdcopy "$tmp/more" "$(uri "$tmp/p.sock")"
stop_server "$server_pid"
start_server "$tmp/s.sock" --readonly rbd:rbd/plain@s1
nbdcopy "$(uri "$tmp/s.sock")" "$tmp/snap.out"
stop_server "$server_pid"
cmp -n 40M "$tmp/data" "$tmp/snap.out" || fail "the snapshot does not hold the bytes it was taken with"
if out=$("$URAID" serve -f --socket "$tmp/x.sock" rbd:rbd/plain@s1 2>&1); then
    fail "a writable serve of a snapshot was accepted"
fi
grep -q "rbd:rbd/plain@s1: a snapshot is read-only" <<<"$out" || fail "unclear refusal: $out"
if out=$("$URAID" serve -f --socket "$tmp/x.sock" rbd:rbd/absent 2>&1); then
    fail "an absent image was accepted"
fi
grep -q "rbd:rbd/absent: opening the image: No such file" <<<"$out" || fail "unclear error: $out"

# --- LUKS2 on RBD ----------------------------------------------------------
FAST_ARGON=(--pbkdf argon2id --pbkdf-memory 32768 --pbkdf-force-iterations 4)
printf 'rbd secret' >"$tmp/key"
chmod 600 "$tmp/key"
ceph_rbd_create luks 64M
"$URAID" luks-format -q --key-file "$tmp/key" "${FAST_ARGON[@]}" rbd:rbd/luks ||
    fail "luks-format rbd:rbd/luks"
start_server "$tmp/l.sock" --key-file "$tmp/key" rbd:rbd/luks
size=$(nbdinfo --size "$(uri "$tmp/l.sock")")
[ "$size" -gt $((40 << 20)) ] || fail "LUKS2 on rbd:rbd/luks serves $size bytes"
nbdcopy "$tmp/data" "$(uri "$tmp/l.sock")"
nbdcopy "$(uri "$tmp/l.sock")" "$tmp/luks.plain"
cmp -n 40M "$tmp/data" "$tmp/luks.plain" || fail "LUKS2 on RBD does not read back"
stop_server "$server_pid"
rbdc export rbd/luks "$tmp/luks.img" >/dev/null 2>&1 || fail "rbd export rbd/luks"
cmp -n 40M "$tmp/data" "$tmp/luks.img" >/dev/null 2>&1 && fail "plaintext on the image"
cryptsetup luksDump "$tmp/luks.img" | grep -q "^Version:.*2" || fail "cryptsetup: not LUKS2"
cryptsetup open --test-passphrase --key-file "$tmp/key" "$tmp/luks.img" ||
    fail "cryptsetup does not take the passphrase of uraid's LUKS2 on RBD"

# The other way: cryptsetup's LUKS2, imported into RBD, unlocked by uraid.
truncate -s 48M "$tmp/cs.img"
cryptsetup luksFormat -q --type luks2 --key-file "$tmp/key" "${FAST_ARGON[@]}" "$tmp/cs.img" ||
    fail "cryptsetup luksFormat"
rbdc import --no-progress "$tmp/cs.img" rbd/cs >/dev/null 2>&1 || fail "rbd import"
start_server "$tmp/c.sock" --key-file "$tmp/key" rbd:rbd/cs
n=$(nbdinfo --size "$(uri "$tmp/c.sock")")
[ "$n" -ge $((16 << 20)) ] || fail "cryptsetup's LUKS2 on RBD serves $n bytes"
head -c "$n" "$tmp/data" >"$tmp/cs.data"
nbdcopy "$tmp/cs.data" "$(uri "$tmp/c.sock")"
nbdcopy "$(uri "$tmp/c.sock")" "$tmp/cs.plain"
cmp "$tmp/cs.data" "$tmp/cs.plain" || fail "cryptsetup's LUKS2 on RBD does not read back"
stop_server "$server_pid"

# --- RAID0 over two images ---------------------------------------------------
ceph_rbd_create s0 32M
ceph_rbd_create s1 32M
"$URAID" create --level=0 --chunk=64K rbd:rbd/s0 rbd:rbd/s1 >/dev/null || fail "create RAID0"
start_server "$tmp/z.sock" rbd:rbd/s0 rbd:rbd/s1
run_fio "$(uri "$tmp/z.sock")" stripe --size=16M --offset_increment=16M --rw=randwrite \
    --bs=64k --iodepth=16 --numjobs=2
stop_server "$server_pid"
rbdc export rbd/s1 "$tmp/s1.img" >/dev/null 2>&1 || fail "rbd export rbd/s1"
mdadm --examine "$tmp/s1.img" 2>&1 | grep -q "Raid Level : raid0" ||
    fail "mdadm does not see a RAID0 member in rbd/s1: $(mdadm --examine "$tmp/s1.img" 2>&1)"
rm -f "$tmp/s1.img"

# --- RAID1: a local file and an RBD image, the OSD killed mid-run -----------
truncate -s 64M "$tmp/local.img"
ceph_rbd_create mirror 64M
"$URAID" create --level=1 "$tmp/local.img" rbd:rbd/mirror >/dev/null || fail "create RAID1"
start_server "$tmp/m.sock" --control "$tmp/m.ctl" "$tmp/local.img" rbd:rbd/mirror
state() { # the rbd member's state in `uraid detail --json`
    "$URAID" detail --json "$tmp/m.ctl" | python3 -c "import json,sys
j=json.load(sys.stdin)
print(' '.join(m['state'] for m in j['arrays'][0]['members'] if m['device'].startswith('rbd:')))"
}
[ "$(state)" = "active sync" ] || fail "rbd member not in sync: $(state)"
# Rate-limited so that the write phase spans the kill: 40 MiB at 4 MiB/s.
(cd "$tmp" && timeout 300 fio --name=mirror --ioengine=nbd --uri="$(uri "$tmp/m.sock")" \
    --size=40M --rw=randwrite --bs=64k --iodepth=8 --rate=4m --verify=crc32c --verify_fatal=1 \
    --do_verify=1 --output="$tmp/mirror.out") &
fio_pid=$!
sleep 3
kill -0 "$fio_pid" 2>/dev/null || fail "fio finished before the OSD was stopped"
ceph_osd_kill 0
t_kill=$SECONDS
faulty=0
for _ in $(seq $((4 * (CEPH_OP_TIMEOUT + 20)))); do
    [ "$(state)" = faulty ] && { faulty=1; break; }
    sleep 0.25
done
[ $faulty = 1 ] || fail "the rbd member is '$(state)' $((SECONDS - t_kill)) s after its OSD died"
echo "rbd member faulty $((SECONDS - t_kill)) s after the OSD was killed (op timeout ${CEPH_OP_TIMEOUT} s)"
wait "$fio_pid" || { cat "$tmp/mirror.out" >&2; fail "fio on the RAID1 failed"; }
grep -q "err= 0" "$tmp/mirror.out" || { cat "$tmp/mirror.out" >&2; fail "fio on the RAID1: errors"; }
# The array serves on: a new write and read after the failure.
head -c 8M /dev/urandom >"$tmp/after"
nbdcopy "$tmp/after" "$(uri "$tmp/m.sock")"
nbdcopy "$(uri "$tmp/m.sock")" "$tmp/after.out"
cmp -n 8M "$tmp/after" "$tmp/after.out" || fail "the degraded RAID1 does not read back"
stop_server "$server_pid"
mdadm --examine "$tmp/local.img" >"$tmp/examine" 2>&1 || fail "mdadm --examine: $(cat "$tmp/examine")"
grep -q "Array State : A\." "$tmp/examine" || fail "the local member's superblock: $(cat "$tmp/examine")"
echo PASS
