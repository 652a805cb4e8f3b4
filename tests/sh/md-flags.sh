#!/bin/bash
# md-flags.sh — md's device flags from the command line, read by mdadm:
# `uraid create --level=1 A --write-mostly --failfast B` flags B only (a
# flag applies to the members after it, as mdadm's do) and `uraid add
# --write-mostly C A B` flags C; `uraid examine` and `mdadm --examine`
# both say "Flags : write-mostly failfast" / "write-mostly" for them and
# nothing for A.
. "$(dirname "$0")/md-lib.sh"
requires mdadm

SIZE=20M
for i in 0 1 2; do truncate -s $SIZE "$tmp/f.$i"; done
"$URAID" create --level=1 --bitmap=none "$tmp/f.0" --write-mostly --failfast "$tmp/f.1" > /dev/null ||
    fail "create"
"$URAID" add --no-rebuild --spare --write-mostly "$tmp/f.2" "$tmp/f.0" "$tmp/f.1" > /dev/null ||
    fail "add"
flags() { sed -n 's/^ *Flags : //p'; }
for tool in "$URAID examine" "mdadm --examine"; do
    [ -z "$($tool "$tmp/f.0" | flags)" ] || fail "$tool: f.0 has flags: $($tool "$tmp/f.0" | flags)"
    [ "$($tool "$tmp/f.1" | flags)" = "write-mostly failfast" ] ||
        fail "$tool: f.1: '$($tool "$tmp/f.1" | flags)'"
    [ "$($tool "$tmp/f.2" | flags)" = "write-mostly" ] || fail "$tool: f.2: '$($tool "$tmp/f.2" | flags)'"
done
echo "md-flags: ok"
