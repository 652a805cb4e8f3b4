#!/bin/bash
# secret-file-mode.sh — a LUKS key file (--key-file of luks-format and
# serve) or a TLS PSK file (--tls-psk) that its group or others may read is
# used with a warning naming the file and its mode; at 0600 nothing is said.
set -euo pipefail

D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
cd "$D"
fail=0
# warns WHAT FILE yes|no CMD...: CMD succeeds, and warns about FILE or not
warns() {
    local what=$1 file=$2 want=$3 out
    shift 3
    out=$("$@" 2>&1) || { echo "FAIL: $what: $out"; fail=1; return; }
    if [ "$want" = yes ]; then
        grep -q "warning: $file: mode 0$(stat -c %a "$file") lets its group or others" <<< "$out" ||
            { echo "FAIL: $what: no warning about $file: $out"; fail=1; return; }
    elif grep -q "warning: $file: mode" <<< "$out"; then
        echo "FAIL: $what: warns about a 0600 file: $out"; fail=1; return
    fi
    echo "ok: $what"
}

truncate -s 32M v.img
printf 'secret' > key
chmod 644 key
kdf=(--pbkdf pbkdf2 --pbkdf-force-iterations 1000)
warns "luks-format, key file 0644" key yes $URAID luks-format --batch "${kdf[@]}" --key-file key v.img
warns "serve, key file 0644" key yes $URAID serve --readonly --key-file key --run true v.img
chmod 640 key
warns "serve, key file 0640" key yes $URAID serve --readonly --key-file key --run true v.img
chmod 600 key
warns "serve, key file 0600" key no $URAID serve --readonly --key-file key --run true v.img

# A PSK file in psktool's format (user:hex key).
printf 'alice:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" > psk
chmod 604 psk
warns "serve, PSK file 0604" psk yes $URAID serve --tls-psk psk --run true mem:1M
chmod 600 psk
warns "serve, PSK file 0600" psk no $URAID serve --tls-psk psk --run true mem:1M
exit $fail
