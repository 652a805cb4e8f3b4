#!/bin/bash
# format-fuzz.sh — build the libFuzzer targets for the on-disk formats a
# foreign disk brings (tests/fuzz/fuzz_md.c: md v1.2 superblocks and
# read-only assembly, and built with -DFUZZ_MD090 the same for md 0.90;
# tests/fuzz/fuzz_luks.c: LUKS1/LUKS2 headers, dump, unlock, payload;
# tests/fuzz/fuzz_part.c: GPT and MBR partition tables; tests/fuzz/fuzz_lvm.c:
# LVM2 labels, metadata text, read-only LV assembly; tests/fuzz/fuzz_fwraid.c:
# IMSM and DDF metadata, read-only volume assembly; tests/fuzz/fuzz_ppl.c: md's
# PPL areas, their scan and replay; tests/fuzz/fuzz_journal.c: md's raid5-cache
# journal, its meta blocks and replay) with clang, replay their seed and
# regression inputs (tests/fuzz/corpus-md/, corpus-md090/, corpus-ppl/, corpus-journal/,
# corpus-luks/, corpus-part/, corpus-lvm/, corpus-fwraid/) once, then fuzz each for a
# fixed number of executions (below: about 7 s each on the CI runner; FUZZ_RUNS=N
# for all, or FUZZ_SECONDS=N each by hand).  Any crash, leak,
# sanitizer report, hang or write to a member fails the test and leaves
# the input under $FUZZ_ARTIFACTS (default: the /tmp/uraid-fuzz-crash.*
# dir it prints) — add it to the corpus as regress-NAME with the fix.
#
# Like nbd-fuzz.sh the recipe compiles the sources straight from src/.
# disc/crypt.c (needed by the LUKS payload) uses GCC vector builtins clang
# does not have, so it is compiled by gcc without instrumentation and
# linked in.  With cryptsetup installed, LUKS seeds carrying their whole
# key material (too big to commit) are made in the scratch dir, so that
# the fuzzer also starts from headers the passphrase unlocks.
. "$(dirname "$0")/fuzz-lib.sh"
fuzz_init
gcc=${FUZZ_GCC:-gcc}
command -v "$gcc" >/dev/null || { echo "SKIP: $gcc not installed (for disc/crypt.c)"; exit 77; }

fz=$SRCDIR/tests/fuzz
disc=()
for f in "$src"/disc/*.c "$src"/disc/raid/*.c; do
    [ "$(basename "$f")" = crypt.c ] || disc+=("$f")
done
# md's files but those that open members by name (member/) or start a
# reshape or a level change on a running array (md_reshape_grow.c, md_takeover_live.c).
md=()
for f in "$src"/md/*.c; do
    case "$(basename "$f")" in md_create.c|md_grow.c|md_rebuild.c|md_reshape_grow.c|md_bitmap_grow.c|md_takeover_live.c) ;; *) md+=("$f") ;; esac
done
# Every source is compiled once (the targets share core/, disc/ and md/),
# FUZZ_JOBS (default 2) compilers at a time, then each target is linked.
jobs_max=${FUZZ_JOBS:-2}
running=0 build_fail=0
spawn() { # CMD...: run CMD in the background, at most $jobs_max at once
    if [ "$running" -ge "$jobs_max" ]; then wait -n || build_fail=1; running=$((running - 1)); fi
    "$@" &
    running=$((running + 1))
}
wait_all() {
    while [ "$running" -gt 0 ]; do wait -n || build_fail=1; running=$((running - 1)); done
    [ "$build_fail" = 0 ] || { echo "FAIL: a fuzz target did not build" >&2; exit 1; }
}
mkdir -p "$tmp/obj"
obj() { local f; for f; do f=${f#"$src"/}; echo "$tmp/obj/${f//\//_}.o"; done; }
pkg_cflags=$(pkg-config --cflags libcrypto libargon2 json-c)
for f in $(printf '%s\n' "${md[@]}" "${disc[@]}" "$src"/core/*.c "$src"/luks/*.c "$src"/lvm/*.c \
    "$src"/fwraid/*.c | sort -u); do
    spawn "$cc" "${fuzz_cflags[@]}" $pkg_cflags -c "$f" -o "$(obj "$f")"
done
spawn "$gcc" -c -O1 -g -std=gnu11 -D_GNU_SOURCE -I"$src" "$src"/disc/crypt.c -o "$tmp/crypt.o"
wait_all
link() { # NAME FUZZ.C [CFLAGS...] -- OBJECTS... -- LIBS...
    local name=$1 main=$2 cf=() ob=()
    shift 2
    while [ "$1" != -- ]; do cf+=("$1"); shift; done
    shift
    while [ "$1" != -- ]; do ob+=("$1"); shift; done
    shift
    "$cc" "${fuzz_cflags[@]}" "${cf[@]}" $pkg_cflags "$main" "${ob[@]}" "$@" -pthread -lm -o "$tmp/$name"
}
spawn link fuzz_md "$fz/fuzz_md.c" -- $(obj "${md[@]}" "${disc[@]}" "$src"/core/*.c) -- \
    $(pkg-config --libs libcrypto)
spawn link fuzz_md090 "$fz/fuzz_md.c" -DFUZZ_MD090 -- $(obj "${md[@]}" "${disc[@]}" "$src"/core/*.c) -- \
    $(pkg-config --libs libcrypto)
spawn link fuzz_luks "$fz/fuzz_luks.c" -- $(obj "$src"/luks/*.c "$src"/disc/slice.c "$src"/core/*.c) \
    "$tmp/crypt.o" -- $(pkg-config --libs libcrypto libargon2 json-c)
spawn link fuzz_lvm "$fz/fuzz_lvm.c" -- $(obj "$src"/lvm/*.c "${disc[@]}" "$src"/core/*.c) --
spawn link fuzz_fwraid "$fz/fuzz_fwraid.c" -- $(obj "$src"/fwraid/*.c "${disc[@]}" "$src"/core/*.c) --
spawn link fuzz_ppl "$fz/fuzz_ppl.c" -- $(obj "${md[@]}" "${disc[@]}" "$src"/core/*.c) -- \
    $(pkg-config --libs libcrypto)
spawn link fuzz_journal "$fz/fuzz_journal.c" -- $(obj "${md[@]}" "${disc[@]}" "$src"/core/*.c) -- \
    $(pkg-config --libs libcrypto)
spawn link fuzz_part "$fz/fuzz_part.c" -- $(obj "$src"/disc/part.c "$src"/disc/slice.c "$src"/core/*.c) -- \
    $(pkg-config --libs libcrypto)
wait_all

extra_luks=()
if command -v cryptsetup >/dev/null && command -v python3 >/dev/null; then
    if CORPUS_OUT="$tmp/gen" LUKS_ONLY=1 python3 "$fz/make_corpus_formats.py" \
        "${URAID:-uraid}" --full "$tmp/full" >/dev/null 2>&1; then
        extra_luks=("$tmp/full")
        echo "fuzz_luks: $(ls "$tmp/full" | wc -l) unlockable seeds made with cryptsetup"
    fi
fi

# Executions per target: about half of what 15 s each did on the CI runner (the
# rates differ 25-fold: fwraid assembles volumes, md090 parses one block).
fuzz_target fuzz_md "$tmp/fuzz_md" "$fz/corpus-md" 30000 -rss_limit_mb=2048 -timeout=10
fuzz_target fuzz_md090 "$tmp/fuzz_md090" "$fz/corpus-md090" 45000 -rss_limit_mb=2048 -timeout=10
fuzz_target fuzz_luks "$tmp/fuzz_luks" "$fz/corpus-luks" 4500 -rss_limit_mb=2048 -timeout=10 \
    -dict="$fz/luks.dict" -- "${extra_luks[@]}"
fuzz_target fuzz_ppl "$tmp/fuzz_ppl" "$fz/corpus-ppl" 18000 -rss_limit_mb=2048 -timeout=10
fuzz_target fuzz_journal "$tmp/fuzz_journal" "$fz/corpus-journal" 3000 -rss_limit_mb=2048 -timeout=10
fuzz_target fuzz_part "$tmp/fuzz_part" "$fz/corpus-part" 18000 -rss_limit_mb=2048 -timeout=10
fuzz_target fuzz_lvm "$tmp/fuzz_lvm" "$fz/corpus-lvm" 45000 -rss_limit_mb=2048 -timeout=10 \
    -dict="$fz/lvm.dict"
fuzz_target fuzz_fwraid "$tmp/fuzz_fwraid" "$fz/corpus-fwraid" 1800 -rss_limit_mb=2048 -timeout=10
echo "PASS"
