#!/usr/bin/env python3
"""make_corpus_md090.py — seeds for fuzz_md090 (fuzz_md.c built with
-DFUZZ_MD090) from members of real md 0.90 arrays (made by mdadm -e 0.90
and the kernel, e.g. in a linux-peer VM, see tests/sh/md-kernel-090.sh):

    make_corpus_md090.py OUTDIR R1A R1B R5A R5B R5C

R1A/R1B: the two members of a raid1 with an internal bitmap; R5A..R5C the
three of a raid5.  Each seed is fuzz_md.c's input: a flags byte, per member
le32 size in sectors and le16 blob length, then the blobs (the 0.90
superblock and, for the raid1, the first 4 KiB of its bitmap).  It also
writes each raid1 member as a big-endian machine would have (every word
swapped, events hi/lo exchanged), degraded and failing variants."""
import os
import struct
import sys


def block(path, nbytes):
    with open(path, 'rb') as f:
        size = os.fstat(f.fileno()).st_size
        at = (size & ~65535) - 65536
        f.seek(at)
        return size // 512, f.read(nbytes)


def big_endian(sb):
    w = list(struct.unpack('<1024I', sb[:4096]))
    w[39], w[40] = w[40], w[39]  # events_lo/hi
    w[41], w[42] = w[42], w[41]  # cp_events_lo/hi
    return struct.pack('>1024I', *w) + sb[4096:]


def seed(flags, members):
    out = bytes([flags])
    for sectors, blob in members:
        out += struct.pack('<IH', sectors, len(blob))
    for _, blob in members:
        out += blob
    return out


def main():
    outdir, r1a, r1b, r5a, r5b, r5c = sys.argv[1:7]
    r1 = [block(p, 8192) for p in (r1a, r1b)]
    r5 = [block(p, 4096) for p in (r5a, r5b, r5c)]
    r1be = [(s, big_endian(b)) for s, b in r1]
    seeds = {
        'md090-raid1-bitmap': seed(1, r1),
        'md090-raid5': seed(2, r5),
        'md090-raid1-bigendian': seed(1, r1be),
        'md090-raid1-degraded': seed(0 | 0x04, r1[:1]),
        'md090-raid5-degraded-failread': seed(1 | 0x04 | 0x80, r5[:2]),
        'md090-raid5-fixcsum': seed(2 | 0x08, r5),
    }
    os.makedirs(outdir, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(outdir, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()
