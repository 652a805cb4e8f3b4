#!/bin/bash
# check-layers.sh SRC MODULE:BELOW,... ... — hold every #include "..." in
# SRC (src/) to the module graph: a file may include its own module's
# headers and those of the modules below it (BELOW, and theirs in turn),
# never one above or beside it.  The graph comes from src/meson.build's
# `modules` table (the `layers` test passes it), the same one the
# libraries are linked by; which folder or file belongs to which module is
# module_of() below.  Prints each upward include and each file that is in
# no module, and fails if there is one.  The link half, a call upward, is
# tests/layers/meson.build.
set -uo pipefail

[ $# -ge 2 ] || { echo "usage: $0 SRC MODULE:BELOW,... ..." >&2; exit 2; }
src=$1
shift
[ -d "$src" ] || { echo "$src: not a directory" >&2; exit 2; }

declare -A below
for m in "$@"; do
	below[${m%%:*}]=${m#*:}
done

# The module a path under src/ belongs to, or nothing.  md and luks are
# told apart by name while they share src/format/.
module_of() {
	case $1 in
	core/*) echo core ;;
	member/*) echo member ;;
	disc/*) echo disc ;;
	format/luks* | luks/*) echo luks ;;
	format/md* | format/probe* | md/*) echo md ;;
	lvm/*) echo lvm ;;
	fwraid/*) echo fwraid ;;
	stack/*) echo stack ;;
	ctl/*) echo ctl ;;
	nbd/*) echo nbd ;;
	bench/*) echo bench ;;
	cli/*) echo cli ;;
	esac
}

# allowed[M]: " M and every module below it, " (spaces around each name).
declare -A allowed
reach() {
	local m=$1 d x
	[ -n "${allowed[$m]:-}" ] && return
	allowed[$m]=" $m "
	for d in ${below[$m]//,/ }; do
		[ -n "${below[$d]+set}" ] || { echo "the table names $d, which has no entry" >&2; exit 2; }
		reach "$d"
		for x in ${allowed[$d]}; do
			[[ ${allowed[$m]} == *" $x "* ]] || allowed[$m]+="$x "
		done
	done
}
for m in "${!below[@]}"; do
	reach "$m"
done

bad=0
files=0
while IFS= read -r f; do
	rel=${f#"$src"/}
	me=$(module_of "$rel")
	files=$((files + 1))
	if [ -z "$me" ] || [ -z "${below[$me]+set}" ]; then
		echo "src/$rel: in no module of the layer table (scripts/check-layers.sh module_of, src/meson.build modules)"
		bad=1
		continue
	fi
	while IFS= read -r inc; do
		if [ -e "$(dirname "$f")/$inc" ]; then
			target=$(realpath -m --relative-to="$src" "$(dirname "$f")/$inc")
		elif [ -e "$src/$inc" ]; then
			target=$inc
		else
			echo "src/$rel: includes \"$inc\", which is no file under src/"
			bad=1
			continue
		fi
		them=$(module_of "$target")
		if [ -z "$them" ]; then
			echo "src/$rel: includes \"$inc\" (src/$target), which is in no module"
			bad=1
		elif [[ ${allowed[$me]} != *" $them "* ]]; then
			echo "src/$rel: includes \"$inc\" of $them, above or beside $me (which may use:${allowed[$me]% })"
			bad=1
		fi
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(find "$src" -type f \( -name '*.c' -o -name '*.h' \) | sort)

if [ "$files" -eq 0 ]; then
	echo "$src: no C files found"
	exit 1
fi
[ "$bad" -eq 0 ] && echo "layers: $files files, every include within its module or below"
exit "$bad"
