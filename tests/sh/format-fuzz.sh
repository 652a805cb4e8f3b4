#!/bin/bash
# format-fuzz.sh — build the libFuzzer targets for the on-disk formats a
# foreign disk brings (tests/fuzz/fuzz_md.c: md v1.2 superblocks and
# read-only assembly, and built with -DFUZZ_MD090 the same for md 0.90;
# tests/fuzz/fuzz_luks.c: LUKS1/LUKS2 headers, dump, unlock, payload;
# tests/fuzz/fuzz_part.c: GPT and MBR partition tables; tests/fuzz/fuzz_lvm.c:
# LVM2 labels, metadata text, read-only LV assembly; tests/fuzz/fuzz_fwraid.c:
# IMSM and DDF metadata, read-only volume assembly) with clang, replay their
# seed and regression inputs (tests/fuzz/corpus-md/, corpus-md090/,
# corpus-luks/, corpus-part/, corpus-lvm/, corpus-fwraid/) once, then fuzz each for a
# bounded time (FUZZ_SECONDS, default 15 each).  Any crash, leak,
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
# md's files but those that open members by name (member/).
md=()
for f in "$src"/md/*.c; do
    case "$(basename "$f")" in md_create.c|md_grow.c|md_rebuild.c) ;; *) md+=("$f") ;; esac
done
# The two targets build side by side.
"$cc" "${fuzz_cflags[@]}" "$fz/fuzz_md.c" "${md[@]}" \
    "${disc[@]}" "$src"/core/*.c \
    $(pkg-config --cflags --libs libcrypto) -pthread -lm -o "$tmp/fuzz_md" &
md_build=$!
"$cc" "${fuzz_cflags[@]}" -DFUZZ_MD090 "$fz/fuzz_md.c" "${md[@]}" \
    "${disc[@]}" "$src"/core/*.c \
    $(pkg-config --cflags --libs libcrypto) -pthread -lm -o "$tmp/fuzz_md090" &
md090_build=$!
"$gcc" -c -O1 -g -std=gnu11 -D_GNU_SOURCE -I"$src" "$src"/disc/crypt.c -o "$tmp/crypt.o"
"$cc" "${fuzz_cflags[@]}" "$fz/fuzz_luks.c" "$src"/luks/*.c "$src"/disc/slice.c \
    "$src"/core/*.c "$tmp/crypt.o" \
    $(pkg-config --cflags --libs libcrypto libargon2 json-c) -pthread -lm -o "$tmp/fuzz_luks"
"$cc" "${fuzz_cflags[@]}" "$fz/fuzz_lvm.c" "$src"/lvm/*.c "${disc[@]}" "$src"/core/*.c \
    -pthread -lm -o "$tmp/fuzz_lvm"
"$cc" "${fuzz_cflags[@]}" "$fz/fuzz_fwraid.c" "$src"/fwraid/*.c "${disc[@]}" "$src"/core/*.c \
    -pthread -lm -o "$tmp/fuzz_fwraid"
wait "$md_build"
"$cc" "${fuzz_cflags[@]}" "$fz/fuzz_part.c" "$src"/disc/part.c "$src"/disc/slice.c \
    "$src"/core/*.c $(pkg-config --cflags --libs libcrypto) -pthread -lm -o "$tmp/fuzz_part"
wait "$md090_build"

extra_luks=()
if command -v cryptsetup >/dev/null && command -v python3 >/dev/null; then
    if CORPUS_OUT="$tmp/gen" LUKS_ONLY=1 python3 "$fz/make_corpus_formats.py" \
        "${URAID:-uraid}" --full "$tmp/full" >/dev/null 2>&1; then
        extra_luks=("$tmp/full")
        echo "fuzz_luks: $(ls "$tmp/full" | wc -l) unlockable seeds made with cryptsetup"
    fi
fi

secs=${FUZZ_SECONDS:-15}
fuzz_target fuzz_md "$tmp/fuzz_md" "$fz/corpus-md" "$secs" -rss_limit_mb=2048 -timeout=10
fuzz_target fuzz_md090 "$tmp/fuzz_md090" "$fz/corpus-md090" "$secs" -rss_limit_mb=2048 -timeout=10
fuzz_target fuzz_luks "$tmp/fuzz_luks" "$fz/corpus-luks" "$secs" -rss_limit_mb=2048 -timeout=10 \
    -dict="$fz/luks.dict" -- "${extra_luks[@]}"
fuzz_target fuzz_part "$tmp/fuzz_part" "$fz/corpus-part" "$secs" -rss_limit_mb=2048 -timeout=10
fuzz_target fuzz_lvm "$tmp/fuzz_lvm" "$fz/corpus-lvm" "$secs" -rss_limit_mb=2048 -timeout=10 \
    -dict="$fz/lvm.dict"
fuzz_target fuzz_fwraid "$tmp/fuzz_fwraid" "$fz/corpus-fwraid" "$secs" -rss_limit_mb=2048 -timeout=10
echo "PASS"
