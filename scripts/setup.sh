#!/bin/bash
# setup.sh — install what is missing (Debian 12 packages), then build.
#
#   scripts/setup.sh          build dependencies and the clients the main job uses
#   scripts/setup.sh --test   also every tool the test suite drives (mdadm,
#                             cryptsetup, qemu, the kernel, busybox-static and
#                             kmod for the linux-peer VM, tests/linux-peer ...)
#
# Builds two trees: build/ (optimised, what you run) and, with --test,
# build-test/ (AddressSanitizer + UBSan, -Werror: what the tests run).
set -euo pipefail
cd "$(dirname "$0")/.."

want_tests=0
[ "${1:-}" = --test ] && want_tests=1

pkgs=(gcc pkg-config meson ninja-build libssl-dev libargon2-dev
      libjson-c-dev libnbd-dev libgnutls28-dev python3 fio nbdkit libnbd-bin nbdfuse qemu-utils
      fuse3 e2fsprogs scdoc librbd-dev)
if [ $want_tests = 1 ]; then
    pkgs+=(clang llvm libclang-rt-14-dev mdadm cryptsetup-bin nbd-client
           busybox-static qemu-system-x86 cpio kmod dmsetup linux-image-amd64
           librsvg2-bin python3-libnbd openssl man-db systemd fdisk gdisk lvm2 tmux
           ceph-mon ceph-osd ceph-common)
fi

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# The kernel tests' harness names what it needs; the list above must hold it.
if [ $want_tests = 1 ]; then
    miss=$(tests/linux-peer/build-initramfs.sh --missing)
    [ -z "$miss" ] || { echo "setup: linux-peer still lacks $miss (add it to the --test list)" >&2; exit 1; }
fi

[ -d build ] || meson setup build --buildtype=release -Db_ndebug=if-release >&2
ninja -C build >&2
if [ $want_tests = 1 ]; then
    [ -d build-test ] || meson setup build-test --buildtype=debug -Dwerror=true \
        -Db_sanitize=address,undefined -Db_lundef=false >&2
    ninja -C build-test >&2
fi
