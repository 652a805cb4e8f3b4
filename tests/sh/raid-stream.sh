#!/bin/bash
# raid-stream.sh — one stream with one request in flight, through NBD, on
# arrays of disk models, where write-behind and read-ahead engage: fio
# writes sequentially and verifies (crc32c) reading back the same way; then
# nbdcopy streams a random image in without a flush, the server is stopped,
# and the members, served again without models, hold exactly that image.
# (The server's exit path flushes as well as closing the array, so this
# does not single out the close's drain; test_raid.c's test_wb_durable
# does, and the flush's, reading the member files behind the array.)
. "$(dirname "$0")/nbd-lib.sh"
requires fio nbdcopy cmp
fio --enghelp=nbd >/dev/null 2>&1 || { echo "SKIP: fio lacks ioengine=nbd"; exit 77; }

head -c 12M /dev/urandom > "$tmp/ref.img"
n=0
# level, members, a member's rate for the slow pass (the array streams at
# about 16 MiB/s, so the 12 MiB image takes 0.75 s to reach the disks while
# nbdcopy is done in a fraction of that), create options
for geometry in "0 4 4M --chunk=64" "10 4 8M --layout=n2 --chunk=64" "1 2 16M"; do
    read -r level disks rate opts <<<"$geometry"
    n=$((n + 1))
    files=() models=()
    for i in $(seq "$disks"); do
        f=$tmp/a$n.$i
        truncate -s 40M "$f"
        files+=("$f")
        models+=("sim:200M:$f")
    done
    # shellcheck disable=SC2086
    "$URAID" create --level="$level" $opts "${files[@]}" >/dev/null 2>&1 \
        || fail "create level $level"
    s=$tmp/s$n.sock
    uri="nbd+unix:///?socket=$s"

    start_server "$s" -v "${models[@]}" 2>"$tmp/serve$n.log"
    (cd "$tmp" && fio --name=stream --ioengine=nbd --uri="$uri" --rw=write --bs=1M --iodepth=1 \
        --size=32M --verify=crc32c --verify_fatal=1 --do_verify=1 --output="$tmp/fio$n.out") \
        || { cat "$tmp/fio$n.out" >&2; fail "fio level $level"; }
    grep -q "err= 0" "$tmp/fio$n.out" || { cat "$tmp/fio$n.out" >&2; fail "fio level $level errors"; }
    stop_server "$server_pid"
    grep -q "writing a stream behind" "$tmp/serve$n.log" \
        || { cat "$tmp/serve$n.log" >&2; fail "level $level: write-behind never engaged"; }

    # Slow disks, so that most of the image is still in memory when
    # nbdcopy is done and the server is told to stop.
    slow=()
    for f in "${files[@]}"; do slow+=("sim:$rate:$f"); done
    start_server "$s" "${slow[@]}"
    nbdcopy --connections=1 --requests=1 --request-size=1048576 "$tmp/ref.img" "$uri" \
        || fail "nbdcopy in, level $level"
    stop_server "$server_pid"

    start_server "$s" "${files[@]}"
    nbdcopy "$uri" "$tmp/out.img" || fail "nbdcopy out, level $level"
    stop_server "$server_pid"
    cmp -n 12M "$tmp/ref.img" "$tmp/out.img" || fail "level $level: the image did not reach the members"
    rm -f "$tmp/out.img"
done
echo PASS
