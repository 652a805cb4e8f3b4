#!/bin/bash
# man-options.sh — the man pages and --help say the same thing: every
# command `uraid help` lists has a page docs/man/uraid-COMMAND.8.scd, every
# --option a command's --help names is in its page, and every option a page
# lists as a term (*--option*) is one that --help names.  (Pages are
# checked as scdoc sources, so this runs without scdoc; install.sh renders them.)
. "$SRCDIR/tests/sh/lib.sh"

man=$SRCDIR/docs/man
cmds=$("$URAID" help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ -n "$cmds" ] || fail "uraid help lists no commands"
n=0
for c in $cmds; do
    case $c in version | help) continue ;; esac
    page=$man/uraid-$c.8.scd
    [ -f "$page" ] || fail "$c: no man page $page"
    grep -q "uraid-$c\*(8)" "$man/uraid.8.scd" || fail "$c: uraid(8) does not name uraid-$c(8)"
    "$URAID" "$c" --help > "$tmp/help" 2>&1 || true
    # Options of other programs named in the prose (mdadm --add, serve
    # --control) are not this command's.
    perl -0pe 's/\b(mdadm|serve)\s+--[a-z-]+//g' "$tmp/help" |
        { grep -o -- '--[a-z][a-z0-9-]*' || true; } | sort -u > "$tmp/help.opts"
    { grep -o -- '\*--[a-z][a-z0-9-]*\*' "$page" || true; } | tr -d '*' | sort -u > "$tmp/page.opts"
    missing=$(comm -23 "$tmp/help.opts" "$tmp/page.opts" | tr '\n' ' ')
    [ -z "$missing" ] || fail "$c: --help names $missing but uraid-$c(8) does not"
    stale=$(comm -13 "$tmp/help.opts" "$tmp/page.opts" | tr '\n' ' ')
    [ -z "$stale" ] || fail "$c: uraid-$c(8) names $stale but --help does not"
    n=$((n + 1))
done
echo "ok: $n commands, their man pages and --help name the same options"
