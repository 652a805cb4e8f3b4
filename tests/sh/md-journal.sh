#!/bin/bash
# md-journal.sh — md's raid5-cache write journal on the host (the kernel
# side is md-kernel-journal.sh):
#   - `uraid create --write-journal`: mdadm --examine reads the journal
#     member as "Device Role : Journal" and the data members with the
#     journal feature (0x200); uraid examine says the same; a bitmap or a
#     level without parity beside a journal is refused;
#   - a clean serve writes through the journal (its tail moves) and reads
#     back what it wrote; its checkpoints write the journal member's
#     superblock alone (the data members' events move twice a session);
#   - `uraid serve` killed -9 mid-write: the next writable start replays
#     the journal instead of a resync, and the parity check agrees;
#   - the journal member missing: a writable start is refused (md writes
#     nothing without it), a read-only one serves the data;
#   - write-back (serve --journal-mode=write-back) over slow members: reads
#     see what is cached, a clean stop destages it all (a read-only start,
#     which replays nothing, reads it from the members); killed -9 right
#     after a flushed write, the next start replays the log's data-only
#     stripes and reads every acknowledged byte, parity agreeing.
# Skips (77) without mdadm or nbdcopy.
. "$SRCDIR/tests/sh/lib.sh"
requires mdadm nbdcopy

cd "$tmp"
for f in a b c; do truncate -s 32M $f.img; done
truncate -s 8M j.img
"$URAID" create --level=5 --chunk=64 --write-journal=j.img --bitmap=internal a.img b.img c.img \
    2>err && fail "create took a bitmap beside a journal"
"$URAID" create --level=1 --write-journal=j.img a.img b.img 2>err && fail "create journalled raid1"
"$URAID" create --level=5 --chunk=64 --write-journal=j.img a.img b.img c.img >/dev/null
mdadm --examine j.img > mj || fail "mdadm --examine j.img: $(cat mj)"
grep -q 'Device Role : Journal' mj || fail "mdadm does not see the journal role: $(cat mj)"
grep -q 'Feature Map : 0x200' mj || fail "journal member's feature map: $(grep Feature mj)"
mdadm --examine a.img > ma || fail "mdadm --examine a.img"
grep -q 'Feature Map : 0x200' ma || fail "data member lacks the journal feature: $(grep Feature ma)"
grep -q 'Device Role : Active device 0' ma || fail "data member's role: $(grep Role ma)"
grep -q 'Checksum : .* - correct' mj || fail "mdadm: journal superblock checksum"
"$URAID" examine j.img > uj
grep -q 'Device Role : Journal' uj && grep -q 'Consistency Policy : journal' uj ||
    fail "uraid examine of the journal: $(cat uj)"
echo "ok: mdadm and uraid examine read the journal member and the data members"

head -c 4M /dev/urandom > pat
"$URAID" serve a.img b.img c.img j.img --run 'nbdcopy pat "$uri"' 2>log ||
    fail "serve: $(cat log)"
tail=$("$URAID" examine j.img | sed -n 's/.*Journal Tail : \([0-9]*\) sectors/\1/p')
[ "${tail:-0}" -gt 0 ] || fail "the journal tail did not move: '$tail'"
got=$("$URAID" serve --readonly a.img b.img c.img j.img --run 'nbdcopy "$uri" - | head -c 4194304 | sha256sum' 2>/dev/null)
[ "$got" = "$(sha256sum < pat)" ] || fail "read back after a journalled write differs"
echo "ok: writes go through the journal (tail at sector $tail) and read back"

# A checkpoint (the tail moved: 24 MiB through an 8 MiB log moves it at
# least twice) writes the journal member's superblock alone, as a
# rebuild's checkpoint writes the recovering member's: the data members'
# superblocks are written when the array turns active and clean, two
# events, not once more a checkpoint (each was two seeks on every disk).
events() { mdadm --examine "$1" | sed -n 's/^ *Events : \([0-9]*\).*/\1/p'; }
ev0=$(events a.img)
head -c 24M /dev/urandom > pat1
"$URAID" serve a.img b.img c.img j.img --run 'nbdcopy pat1 "$uri"' 2>log ||
    fail "serve: $(cat log)"
ev1=$(events a.img)
[ "$ev1" = $((ev0 + 2)) ] ||
    fail "a.img's events went from $ev0 to $ev1 over one session: checkpoints wrote it"
[ "$(events j.img)" = "$ev1" ] || fail "the journal's events $(events j.img), a.img's $ev1"
got=$("$URAID" serve --readonly a.img b.img c.img j.img --run 'nbdcopy "$uri" - | head -c 25165824 | sha256sum' 2>/dev/null)
[ "$got" = "$(sha256sum < pat1)" ] || fail "read back after 24 MiB through the journal differs"
echo "ok: 24 MiB through an 8 MiB journal: the data members' events $ev0 -> $ev1 (checkpoints wrote the journal's superblock alone)"

# Killed mid-write over slow members: stripes torn on the members, the
# journal holds them.
"$URAID" serve -f --socket s.sock --pid-file pid sim:20M:a.img sim:20M:b.img sim:20M:c.img \
    j.img 2>slog &
for _ in $(seq 100); do [ -S s.sock ] && break; sleep 0.1; done
head -c 16M /dev/urandom > pat2
nbdcopy pat2 "nbd+unix:///?socket=$tmp/s.sock" 2>/dev/null &
copier=$!
sleep 1
kill -9 "$(cat pid)"
wait "$copier" 2>/dev/null || true
"$URAID" examine a.img | grep -q 'State : active' || fail "the array is not marked unclean after kill -9"
"$URAID" check a.img b.img c.img j.img > before 2>&1 || true
echo "before replay (read-only, no replay): $(tail -1 before)"
for f in a b c j; do cp $f.img d$f.img; done
"$URAID" serve a.img b.img c.img j.img --run true 2>rlog || fail "writable start: $(cat rlog)"
grep -q 'journal replayed' rlog || fail "no journal replay: $(cat rlog)"
! grep -q 'resync' rlog || fail "a resync ran beside the journal: $(cat rlog)"
"$URAID" check a.img b.img c.img j.img 2>&1 | grep -q 'the copies agree' ||
    fail "parity disagrees after the replay"
echo "ok: after kill -9 the journal is replayed ($(grep -o 'journal replayed.*' rlog)), parity agrees"

# The same crash started degraded (c.img gone): md refuses a dirty
# degraded RAID5 without --force, but the journal's replay makes the
# stripes whole first, so it starts and reads what the full replay reads.
"$URAID" serve --degraded da.img db.img dj.img --run true 2>dlog ||
    fail "dirty degraded start with a journal: $(cat dlog)"
grep -q 'journal replayed' dlog || fail "no replay on the degraded start: $(cat dlog)"
full=$("$URAID" serve --readonly a.img b.img c.img j.img --run 'nbdcopy "$uri" - | sha256sum' 2>/dev/null)
deg=$("$URAID" serve --readonly --degraded da.img db.img dj.img --run 'nbdcopy "$uri" - | sha256sum' 2>/dev/null)
[ "$full" = "$deg" ] || fail "a degraded replay reads otherwise than the full one"
echo "ok: the crashed array starts degraded, replayed, and reads what the full replay reads"

"$URAID" serve a.img b.img c.img --run true 2>mlog && fail "served writable without its journal"
grep -q 'write journal member is missing' mlog || fail "missing journal message: $(cat mlog)"
"$URAID" serve --readonly a.img b.img c.img --run 'nbdcopy "$uri" - | head -c 1048576 >/dev/null' \
    2>/dev/null || fail "read-only start without the journal"
echo "ok: without its journal the array is served read-only only"

# Write-back.  A fresh array with a bigger journal (the cache holds at
# most a quarter of it).
for f in a b c; do truncate -s 32M w$f.img; done
truncate -s 32M wj.img
"$URAID" create --level=5 --chunk=64 --write-journal=wj.img wa.img wb.img wc.img >/dev/null
wsims="sim:20M:wa.img sim:20M:wb.img sim:20M:wc.img wj.img"
head -c 6M /dev/urandom > pat3
# shellcheck disable=SC2086
got=$("$URAID" serve --journal-mode=write-back $wsims \
    --run 'nbdcopy --flush pat3 "$uri" && nbdcopy "$uri" - | head -c 6291456 | sha256sum' 2>wlog) ||
    fail "write-back serve: $(cat wlog)"
grep -q 'write-back mode' wlog || fail "write-back not engaged: $(cat wlog)"
[ "$got" = "$(sha256sum < pat3)" ] || fail "write-back: reads do not see the cached writes"
got=$("$URAID" serve --readonly wa.img wb.img wc.img wj.img \
    --run 'nbdcopy "$uri" - | head -c 6291456 | sha256sum' 2>/dev/null)
[ "$got" = "$(sha256sum < pat3)" ] || fail "write-back: a clean stop did not destage everything"
echo "ok: write-back reads its cache, and a clean stop destages it onto the members"

head -c 6M /dev/urandom > pat4
# shellcheck disable=SC2086
"$URAID" serve -f --journal-mode=write-back --socket w.sock --pid-file wpid $wsims 2>wslog &
for _ in $(seq 100); do [ -S w.sock ] && break; sleep 0.1; done
nbdcopy --flush pat4 "nbd+unix:///?socket=$tmp/w.sock" || fail "write-back: nbdcopy"
kill -9 "$(cat wpid)"
wait 2>/dev/null || true
"$URAID" serve wa.img wb.img wc.img wj.img --run true 2>wrlog || fail "start after kill: $(cat wrlog)"
grep -q 'journal replayed' wrlog || fail "no replay after the write-back kill: $(cat wrlog)"
got=$("$URAID" serve --readonly wa.img wb.img wc.img wj.img \
    --run 'nbdcopy "$uri" - | head -c 6291456 | sha256sum' 2>/dev/null)
[ "$got" = "$(sha256sum < pat4)" ] || fail "write-back: acknowledged writes lost over kill -9"
"$URAID" check wa.img wb.img wc.img wj.img 2>&1 | grep -q 'the copies agree' ||
    fail "write-back: parity disagrees after the replay"
echo "ok: write-back killed -9 after a flushed write: replayed ($(grep -o 'journal replayed.*' wrlog)), every byte back, parity agrees"
