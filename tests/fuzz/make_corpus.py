#!/usr/bin/env python3
"""make_corpus.py [DIR] - write the seed corpus for fuzz_nbd (reproducibly).

Each seed is fuzz_nbd's input: one selector byte (bit 7: 4 worker threads
instead of 1; bit 6: the client hangs up after 40 x (low bits / 3) bytes of replies; the low six bits mod 3:
export 0 byte-addressed, 1 with 512-byte blocks, 2 read-only with
4096-byte blocks), then a client's byte stream:
valid handshakes in each style followed by a few requests, for each of
the exports' names ("fuzz" or "", "a/p1 x:2", the read-only "fuzz-ro").  Regression
seeds for past findings live beside these as regress-*; this script does
not touch them.
"""
import os
import struct
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
IHAVEOPT = 0x49484156454F5054
REQ = 0x25609513


def opt(o, data=b""):
    return struct.pack(">QII", IHAVEOPT, o, len(data)) + data


def go_data(name=b"", infos=()):
    return struct.pack(">I", len(name)) + name + struct.pack(">H", len(infos)) + \
        b"".join(struct.pack(">H", i) for i in infos)


def meta_data(name, query=b"base:allocation"):
    return struct.pack(">I", len(name)) + name + struct.pack(">II", 1, len(query)) + query


def req(cmd, off=0, n=0, flags=0, cookie=1, payload=b""):
    return struct.pack(">IHHQQI", REQ, flags, cmd, cookie, off, n) + payload


READ, WRITE, DISC, FLUSH, TRIM, CACHE, ZERO = 0, 1, 2, 3, 4, 5, 6
requests = (req(READ, 0, 4096, cookie=1) +
            req(WRITE, 4096, 4096, flags=1, cookie=2, payload=bytes(range(256)) * 16) +
            req(FLUSH, cookie=3) +
            req(TRIM, 8192, 8192, cookie=4) +
            req(ZERO, 16384, 4096, flags=2, cookie=5) +
            req(ZERO, 20480, 4096, flags=16, cookie=6) +
            req(CACHE, 0, 65536, cookie=7) +
            req(READ, 4096, 4096, cookie=8))
bad_requests = (req(READ, (1 << 64) - 512, 1024, cookie=9) +
                req(WRITE, 1 << 20, 512, cookie=10, payload=b"w" * 512) +
                req(READ, 1, 511, cookie=11) +
                req(0x99, cookie=12) +
                req(READ, 0, 65536 + 512, cookie=13) +
                req(READ, 0, 512, flags=0x8000, cookie=14))
disc = req(DISC, cookie=15)

seeds = {
    # OPT_GO, no structured replies, requests, disconnect.
    "go-simple": opt(7, go_data(b"", (3,))) + requests + disc,
    # Structured replies, OPT_INFO first, then GO by name.
    "go-structured": opt(8) + opt(6, go_data(b"fuzz", (1, 2, 3))) +
    opt(7, go_data(b"fuzz", (0, 1, 2, 3))) + requests + bad_requests + disc,
    # Old-style OPT_EXPORT_NAME (client did not ask for NO_ZEROES).
    "export-name": opt(1, b"fuzz") + requests + disc,
    # OPT_LIST, an unknown option, a too-long name, then GO.
    "list-unknown": opt(3) + opt(0x1234, b"xyz") + opt(7, go_data(b"n" * 5000)) +
    opt(7, go_data()) + bad_requests + disc,
    # Abort during the handshake.
    "abort": opt(8) + opt(2),
    # Client leaves mid-write.
    "mid-write": opt(7, go_data()) + req(WRITE, 0, 8192, cookie=1, payload=b"p" * 100),
    # The read-only export: every write, trim and zero must be refused.
    "go-ro": opt(8) + opt(7, go_data(b"fuzz-ro", (1, 2, 3))) + requests + bad_requests + disc,
    "export-name-ro": opt(1, b"fuzz-ro") + requests + disc,
    # Export names: INFO by an odd name and an unknown one, a context set
    # for one export, then GO for another.
    "names": opt(3) + opt(8) + opt(6, go_data(b"a/p1 x:2", (1, 2))) +
    opt(6, go_data(b"a/p1 x:")) + opt(10, meta_data(b"fuzz")) +
    opt(7, go_data(b"a/p1 x:2")) + req(7, 0, 4096, cookie=20) + requests + disc,
}
flags = {"export-name": 1, "export-name-ro": 1}  # FIXED_NEWSTYLE without NO_ZEROES
os.makedirs(out, exist_ok=True)
for name, stream in seeds.items():
    cflags = struct.pack(">I", flags.get(name, 3))
    for sel in (0, 1, 2, 0x80, 0x40, 0x40 + 3 * 3, 0x40 + 3 * 20 + 1):
        with open(os.path.join(out, "%s-%02x" % (name, sel)), "wb") as f:
            f.write(bytes([sel]) + cflags + stream)
print("%d seeds in %s" % (len(seeds) * 7, out))
