#!/usr/bin/env python3
"""fwraid_meta.py — damage real IMSM and DDF metadata in a disk image, one
field at a time, for tests/sh/fwraid-bad.sh (and fwraid-kernel.sh).

  imsm IMG flip                  flip a byte of the MPB, checksum left stale
  imsm IMG ord VOL K DISK        volume VOL's member K is disk-table entry DISK
  imsm IMG pba VOL SECTOR        volume VOL starts at SECTOR on its members
  imsm IMG blocks DISK SECTORS   the disk table says disk DISK has SECTORS
  imsm IMG migrate VOL           VOL (the last volume) is mid-rebuild: a
                                 second map follows the first
  ddf IMG flip REC               flip a byte of configuration record REC (both
                                 header copies), CRC left stale
  ddf IMG lba REC K SECTOR       record REC's member K starts at SECTOR

Every change but the flips fixes the checksum (IMSM) or CRC (DDF) after it,
as a writer would, so that the reader meets the damage itself.
"""
import struct
import sys

S = 512


def imsm_load(f):
    f.seek(-2 * S, 2)
    anchor = f.read(S)
    size = struct.unpack_from("<I", anchor, 0x24)[0]
    ext = (size + S - 1) // S - 1
    f.seek(-(2 + ext) * S, 2)
    rest = f.read(ext * S)
    return bytearray(anchor + rest), ext


def imsm_store(f, mpb, ext, fix=True):
    size = struct.unpack_from("<I", mpb, 0x24)[0]
    if fix:
        s = sum(struct.unpack_from("<%dI" % (size // 4), mpb, 0)) - struct.unpack_from("<I", mpb, 0x20)[0]
        struct.pack_into("<I", mpb, 0x20, s & 0xFFFFFFFF)
    f.seek(-2 * S, 2)
    f.write(mpb[:S])
    f.seek(-(2 + ext) * S, 2)
    f.write(mpb[S : S + ext * S])


def imsm_dev(mpb, vol):
    off = 0xD8 + 48 * mpb[0x38]
    for _ in range(vol):
        nmem = mpb[off + 112 + 16]
        size = 112 + 48 + 4 * nmem
        if mpb[off + 88]:
            size += 48 + 4 * mpb[off + size + 16]
        off += size
    return off


def imsm(img, what, args):
    with open(img, "r+b") as f:
        mpb, ext = imsm_load(f)
        fix = True
        if what == "flip":
            mpb[0x58] ^= 0x01
            fix = False
        elif what == "ord":
            d = imsm_dev(mpb, int(args[0]))
            struct.pack_into("<I", mpb, d + 112 + 48 + 4 * int(args[1]), int(args[2]))
        elif what == "pba":
            struct.pack_into("<I", mpb, imsm_dev(mpb, int(args[0])) + 112, int(args[1]))
        elif what == "blocks":
            struct.pack_into("<I", mpb, 0xD8 + 48 * int(args[0]) + 16, int(args[1]))
        elif what == "migrate":
            d = imsm_dev(mpb, int(args[0]))
            nmem = mpb[d + 112 + 16]
            mlen = 48 + 4 * nmem
            size = struct.unpack_from("<I", mpb, 0x24)[0]
            assert d + 112 + mlen == size, "migrate: not the last volume"
            if len(mpb) < size + mlen:
                sys.exit("migrate: the MPB would need another sector")
            mpb[d + 88] = 1  # migr_state: migrating
            mpb[d + 89] = 1  # migr_type: rebuild
            mpb[size : size + mlen] = mpb[d + 112 : d + 112 + mlen]
            struct.pack_into("<I", mpb, 0x24, size + mlen)
        else:
            sys.exit(__doc__)
        imsm_store(f, mpb, ext, fix)


def ddf_crc(buf):
    b = bytearray(buf)
    b[4:8] = b"\xff\xff\xff\xff"
    crc = 0
    for x in b:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc


def ddf(img, what, args):
    with open(img, "r+b") as f:
        f.seek(-S, 2)
        anchor = f.read(S)
        for at in (96, 104):
            lba = struct.unpack_from(">Q", anchor, at)[0]
            f.seek(lba * S)
            hdr = f.read(S)
            crl, mppe = struct.unpack_from(">HH", hdr, 134)
            coff = struct.unpack_from(">I", hdr, 192 + 8 * 3)[0]
            pos = (lba + coff + int(args[0]) * crl) * S
            f.seek(pos)
            rec = bytearray(f.read(crl * S))
            if what == "flip":
                rec[100] ^= 0x01
            elif what == "lba":
                struct.pack_into(">Q", rec, 512 + 4 * mppe + 8 * int(args[1]), int(args[2]))
                struct.pack_into(">I", rec, 4, ddf_crc(rec))
            else:
                sys.exit(__doc__)
            f.seek(pos)
            f.write(rec)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    {"imsm": imsm, "ddf": ddf}.get(sys.argv[1], lambda *a: sys.exit(__doc__))(
        sys.argv[2], sys.argv[3], sys.argv[4:]
    )
