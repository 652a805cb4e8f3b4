#!/bin/bash
# probe.sh — `uraid probe` finds every volume the members hold and names
# each as `uraid serve` exports it, changes no byte, and shows what a layer
# refused and why: two arrays and a plain file given together, a stale
# member, a damaged superblock.
. "$SRCDIR/tests/sh/lib.sh"
requires python3
cd "$tmp"
mk() { for f in "$@"; do rm -f "$f"; truncate -s 8M "$f"; done; }

mk a.img b.img c.img d.img e.img plain.img
$URAID create --level=1 --name=x a.img b.img >/dev/null
$URAID create --level=5 --name=y c.img d.img e.img >/dev/null
before=$(sha256sum ./*.img)
$URAID probe a.img b.img c.img d.img e.img plain.img > tree 2>/dev/null || fail "probe failed"
$URAID probe --json a.img b.img c.img d.img e.img plain.img > probe.json 2>/dev/null ||
    fail "probe --json failed"
[ "$before" = "$(sha256sum ./*.img)" ] || fail "probe changed a member"
grep -q '^└─md/x ' tree || grep -q '└─md/x ' tree || fail "no md/x under its members: $(cat tree)"
ysize=$($URAID serve --readonly --run 'nbdinfo --size "$uri"' c.img d.img e.img 2>/dev/null)
python3 - probe.json "$ysize" <<'PY' || fail "probe --json: $(cat probe.json)"
import json, sys
v = json.load(open(sys.argv[1]))["volumes"]
by = {x["name"]: x for x in v}
exports = sorted(x["name"] for x in v if x["export"])
assert exports == ["md/x", "md/y", "plain.img"], exports
assert by["md/y"]["type"] == "md" and by["md/y"]["from"] == ["c.img", "d.img", "e.img"], by["md/y"]
assert by["md/y"]["size"] == int(sys.argv[2]), (by["md/y"]["size"], sys.argv[2])
assert not by["a.img"]["export"] and by["a.img"]["refused"] is None
PY
echo "ok: two arrays and a plain file, each an export under its name"

# A stale member: left out, shown refused with the reason; the array runs.
$URAID serve --degraded --run 'head -c 65536 /dev/urandom | nbdcopy - "$uri"' a.img 2>/dev/null
$URAID probe --json a.img b.img > stale.json 2>/dev/null || fail "probe of a stale set failed"
python3 - stale.json <<'PY' || fail "stale member: $(cat stale.json)"
import json, sys
by = {x["name"]: x for x in json.load(open(sys.argv[1]))["volumes"]}
assert by["md/x"]["export"] and "degraded" in by["md/x"]["detail"], by["md/x"]
assert "left out of md/x" in (by["b.img"]["refused"] or ""), by["b.img"]
PY
echo "ok: a stale member is shown left out"

# A damaged superblock: refused, named; the other volumes still found.
printf '\xff' | dd of=e.img bs=1 seek=$((4096 + 40)) conv=notrunc 2>/dev/null
$URAID probe --json e.img plain.img > bad.json 2>/dev/null || fail "probe with a damaged member failed"
python3 - bad.json <<'PY' || fail "damaged superblock: $(cat bad.json)"
import json, sys
by = {x["name"]: x for x in json.load(open(sys.argv[1]))["volumes"]}
assert "checksum" in (by["e.img"]["refused"] or ""), by["e.img"]
assert by["plain.img"]["export"]
PY
echo "ok: a damaged superblock is refused with its reason"

