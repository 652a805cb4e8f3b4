#!/bin/bash
# install.sh — `meson install` into a DESTDIR puts where Debian expects
# them: the binary, one man page per command (each renders without a
# warning), the systemd units (systemd-analyze verify passes, and their
# Documentation= resolves to the installed page), the bash completion (it
# completes a command's options from its --help) and the example instance
# file.
. "$SRCDIR/tests/sh/lib.sh"
requires meson man systemd-analyze python3

dest=$tmp/dest
meson install -C "$BUILDDIR" --destdir "$dest" --no-rebuild --quiet > "$tmp/log" 2>&1 ||
    { cat "$tmp/log" >&2; fail "meson install failed"; }
opt() { # NAME: a build option's value
    meson introspect --buildoptions "$BUILDDIR" |
        python3 -c "import json, sys; print(next(o['value'] for o in json.load(sys.stdin) if o['name'] == '$1'))"
}
prefix=$(opt prefix)
root=$dest$prefix
mandir=$root/$(opt mandir)

[ -x "$root/$(opt bindir)/uraid" ] || fail "no $(opt bindir)/uraid under $root"
pages=$(cd "$SRCDIR/docs/man" && ls uraid*.8.scd | sed 's/\.scd$//')
for p in $pages; do
    f=$mandir/man8/$p
    [ -s "$f" ] || fail "man page $p not installed at $f"
    warn=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
    [ -z "$warn" ] || fail "$p renders with warnings: $warn"
    MANWIDTH=80 man -l "$f" 2>/dev/null | grep -q "^NAME" || fail "$p: no NAME section when rendered"
done

units=$root/lib/systemd/system
for u in uraid@.service uraid@.socket; do
    [ -s "$units/$u" ] || fail "unit $u not installed in $units"
done
grep -q "^ExecStart=$prefix/$(opt bindir)/uraid serve " "$units/uraid@.service" ||
    fail "uraid@.service does not start the installed binary"
# verify wants an instance and an executable at ExecStart's path: the
# installed units, named for an instance, pointing into the DESTDIR.
mkdir "$tmp/verify"
sed "s|^ExecStart=$prefix|ExecStart=$root|" "$units/uraid@.service" > "$tmp/verify/uraid@test.service"
cp "$units/uraid@.socket" "$tmp/verify/uraid@test.socket"
out=$(MANPATH=$mandir systemd-analyze verify "$tmp/verify/uraid@test.service" \
    "$tmp/verify/uraid@test.socket" 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify warns: $out"

comp=$root/$(opt datadir)/bash-completion/completions/uraid
[ -s "$comp" ] || fail "no bash completion at $comp"
got=$(PATH=$(dirname "$URAID"):$PATH bash -c '. "$1"; COMP_WORDS=(uraid serve --tls-p); COMP_CWORD=2; _uraid; echo "${COMPREPLY[*]}"' _ "$comp")
[ "$got" = "--tls-psk" ] || fail "completing 'uraid serve --tls-p' gave '$got'"
[ -s "$root/$(opt datadir)/doc/uraid/uraid.conf.example" ] || fail "no uraid.conf.example"
echo "ok: binary, $(echo $pages | wc -w) man pages, units verified, completion, example config"
