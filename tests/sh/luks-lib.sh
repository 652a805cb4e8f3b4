# luks-lib.sh — helpers the luks-*.sh tests source: lib.sh's scratch dir,
# `requires` and `fail`, fast KDF settings, and small tools to look at and
# damage LUKS images.
lib_scratch_name=lukstest
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# userve ARGS... — `uraid serve ARGS` with a deadline, so that a server
# that hangs fails the test instead of outliving it.
userve() { timeout -k 5 "${USERVE_TIMEOUT:-60}" "$URAID" serve "$@"; }

# Cheap key slots: the tests check formats, not KDF strength.
FAST_ARGON=(--pbkdf argon2id --pbkdf-memory 32768 --pbkdf-force-iterations 4)
FAST_PBKDF2=(--pbkdf pbkdf2 --pbkdf-force-iterations 1000)

sha() { sha256sum "$@" | cut -d' ' -f1 | paste -sd' '; }

# vk_from < dump — the hex volume key from a "MK dump:" section (both
# cryptsetup luksDump --dump-volume-key and uraid luks-dump print it last).
vk_from() { sed -n '/^MK dump:/,$p' | sed 's/^MK dump://' | tr -cd '0-9a-f'; }

# luks2_edit IMG PYTHON — run PYTHON on the parsed JSON `j` of both LUKS2
# header copies and write them back with fresh checksums (to make headers
# uraid must refuse, e.g. an unknown cipher).  PYTHON may set `trailer`
# (bytes written after the JSON text's terminating NUL).
luks2_edit() {
    python3 - "$1" "$2" <<'PY'
import hashlib, json, struct, sys
path, code = sys.argv[1], sys.argv[2]
with open(path, 'r+b') as f:
    hdr_size = struct.unpack('>Q', f.read(16)[8:16])[0]
    for off in (0, hdr_size):
        f.seek(off)
        area = bytearray(f.read(hdr_size))
        j = json.loads(area[4096:].split(b'\0', 1)[0])
        trailer = b''
        exec(code)
        text = json.dumps(j, separators=(',', ':')).encode() + b'\0' + trailer
        area[4096:] = text + bytes(hdr_size - 4096 - len(text))
        area[448:512] = bytes(64)
        area[448:480] = hashlib.sha256(area).digest()
        f.seek(off)
        f.write(area)
PY
}

# damage IMG OFFSET — flip bytes of the uuid field of the header at OFFSET
damage() {
    printf 'XXXXXXXX' | dd of="$1" bs=1 seek=$(( $2 + 170 )) conv=notrunc status=none
}
