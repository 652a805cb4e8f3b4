# md-lib.sh — what the md member tests share (md-rebuild.sh,
# md-online-rebuild.sh, md-control.sh), on top of nbd-lib.sh: `field FILE NAME`, a number
# from `uraid examine` ("Data Offset" ...), and `make_array NAME LEVEL DISKS
# OPTS...`, which creates an array on DISKS blank files of $SIZE
# ($tmp/NAME.0 ...; their list in files[]) and fills it through
# `uraid serve` with random data, kept in $tmp/NAME.data; and `verify NAME
# PATTERN MEMBERS...`, the checks once a server is stopped (uraid check,
# the data read back, mdadm --examine on every member); and `refuse WANT
# CMD...`, an offline command that must fail, say WANT and change no file.
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

# verify NAME PATTERN MEMBERS...: checks after the server stopped
verify() {
    local name=$1 pat=$2 out ev="" e state
    shift 2
    out=$("$URAID" check "$@" 2>&1) || fail "$name: check: $out"
    grep -q "the copies agree" <<<"$out" || fail "$name: $out"
    "$URAID" serve --readonly --run "nbdcopy \"\$uri\" $tmp/out" "$@" 2>/dev/null ||
        fail "$name: read back"
    cmp -s "$tmp/out" "$pat" || fail "$name: what the client reads differs from what it wrote"
    rm -f "$tmp/out"
    for f in "$@"; do
        out=$(mdadm --examine "$f" 2>&1) || fail "$name: mdadm --examine $f: $out"
        grep -q "Checksum : .* - correct" <<<"$out" || fail "$name: $f: mdadm checksum: $out"
        grep -q "Device Role : Active device" <<<"$out" || fail "$name: $f: $(grep Role <<<"$out")"
        grep -q "Recovery Offset" <<<"$out" && fail "$name: $f still being recovered"
        state=$(sed -n 's/ *Array State : \([^ ]*\) .*/\1/p' <<<"$out")
        [ "$state" = "$(printf 'A%.0s' "$@")" ] || fail "$name: $f: array state '$state'"
        e=$(sed -n 's/ *Events : //p' <<<"$out")
        [ -z "$ev" ] || [ "$e" = "$ev" ] || fail "$name: events $e on $f, $ev on another member"
        ev=$e
    done
}

# refuse WANT CMD...: `uraid CMD` must fail saying WANT and change none of
# the files it names
refuse() {
    local want=$1 rc=0 out a
    shift
    : > "$tmp/sums"
    for a in "$@"; do [ -f "$a" ] && md5sum "$a" >> "$tmp/sums"; done
    out=$("$URAID" "$@" 2>&1) || rc=$?
    [ "$rc" != 0 ] || fail "uraid $* succeeded"
    grep -q -- "$want" <<<"$out" || fail "uraid $*: wanted '$want', got: $out"
    md5sum --quiet -c "$tmp/sums" || fail "uraid $* changed a file"
}
