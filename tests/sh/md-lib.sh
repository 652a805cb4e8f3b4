# md-lib.sh — what the md member tests share (md-rebuild.sh,
# md-online-rebuild.sh), on top of nbd-lib.sh: `field FILE NAME`, a number
# from `uraid examine` ("Data Offset" ...), and `make_array NAME LEVEL DISKS
# OPTS...`, which creates an array on DISKS blank files of $SIZE
# ($tmp/NAME.0 ...; their list in files[]) and fills it through
# `uraid serve` with random data, kept in $tmp/NAME.data.
. "$(dirname "${BASH_SOURCE[0]}")/nbd-lib.sh"

field() { "$URAID" examine "$1" 2>/dev/null | sed -n "s/^ *$2 : \([0-9]*\).*/\1/p"; }

make_array() {
    local name=$1 level=$2 disks=$3
    shift 3
    files=()
    for i in $(seq 0 $((disks - 1))); do
        truncate -s "$SIZE" "$tmp/$name.$i"
        files+=("$tmp/$name.$i")
    done
    "$URAID" create --level="$level" "$@" "${files[@]}" >/dev/null 2>&1 || fail "$name: create"
    "$URAID" serve --run "head -c \$(nbdinfo --size \"\$uri\") /dev/urandom > $tmp/$name.data &&
        nbdcopy $tmp/$name.data \"\$uri\"" "${files[@]}" 2>/dev/null || fail "$name: write"
}
