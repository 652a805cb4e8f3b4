#!/usr/bin/env python3
"""make_corpus_journal.py — seeds for fuzz_journal (tests/fuzz/fuzz_journal.c):
logs in md's raid5-cache format (drivers/md/raid5-cache.c: meta blocks of
DATA and PARITY payloads, crc32c seeded with crc32c(~0, uuid)) for the
target's geometry (RAID5 on 4 or RAID6 on 5 members, 16 KiB chunks, 128
KiB per member, a 32-page log): an empty block at the tail, then units of
data pages and their parity, one wrapping at the end of the log, one
FLUSH.  Writes into corpus-journal/ (or $CORPUS_OUT) only its own seeds."""
import os
import struct

def crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        t.append(c)
    return t

T = crc32c_table()

def crc32c(crc, data):  # the kernel's crc32c_le: no inversion
    for b in data:
        crc = T[(crc ^ b) & 0xff] ^ (crc >> 8)
    return crc

UUID = b"fuzz-journal-uid"
SEED = crc32c(0xffffffff, UUID)
PAGES, CHUNK = 32, 16384

def meta(pos, seq, payload):
    b = bytearray(4096)
    struct.pack_into("<IIBBHIQQ", b, 0, 0x6433C509, 0, 1, 0, 0, 32 + len(payload), seq, pos)
    b[32:32 + len(payload)] = payload
    struct.pack_into("<I", b, 4, crc32c(SEED, bytes(b)))
    return bytes(b)

def page(fill):
    return bytes([fill & 0xff]) * 4096

def build(level, tail_page, units, flush=False):
    n = 5 if level == 6 else 4
    ndata = n - (2 if level == 6 else 1)
    log = [bytes(4096)] * PAGES
    seq = 1000
    pos = tail_page
    log[pos] = meta(pos * 8, seq, b"")
    seq += 1
    pos = (pos + 1) % PAGES
    for u, (row, pg, dcount) in enumerate(units):
        datas = [page(u * 16 + d + 1) for d in range(dcount)]
        par = [page(0x80 + u), page(0xc0 + u)][: 2 if level == 6 else 1]
        pl = b""
        for d in range(dcount):
            asect = (row * ndata * CHUNK + d * CHUNK + pg * 4096) // 512
            pl += struct.pack("<HHIQ", 0, 0, 8, asect) + struct.pack("<I", crc32c(SEED, datas[d]))
        msect = (row * CHUNK + pg * 4096) // 512
        pl += struct.pack("<HHIQ", 1, 0, 8 * len(par), msect)
        for p in par:
            pl += struct.pack("<I", crc32c(SEED, p))
        if flush and u == len(units) - 1:
            pl += struct.pack("<HHI", 2, 0, 8) + struct.pack("<Q", msect)
        mpos = pos
        pos = (pos + 1) % PAGES
        for p in datas + par:
            log[pos] = p
            pos = (pos + 1) % PAGES
        log[mpos] = meta(mpos * 8, seq, pl)
        seq += 1
    return bytes(log[0]) if False else b"".join(log)

def main():
    out = os.environ.get("CORPUS_OUT") or os.path.join(os.path.dirname(__file__), "corpus-journal")
    os.makedirs(out, exist_ok=True)
    seeds = {
        "raid5-units": (5, 0, [(0, 0, 1), (1, 2, 3), (0, 0, 2)], False),
        "raid6-units": (6, 3, [(2, 1, 2), (7, 3, 1)], False),
        "raid5-wrap": (5, 26, [(3, 0, 3), (4, 1, 3)], False),
        "raid6-flush": (6, 0, [(5, 0, 3), (5, 0, 1)], True),
    }
    for name, (level, tail, units, flush) in seeds.items():
        flags = 1 if level == 6 else 0
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes([flags, tail]) + build(level, tail, units, flush))

if __name__ == "__main__":
    main()
