#!/usr/bin/env python3
"""make_corpus_fwraid.py — fuzz_fwraid inputs from real firmware RAID disks,
and back.

  make_corpus_fwraid.py pack OUT DISK...     the metadata sectors of up to 4
                                             disks (images mdadm made, as
                                             tests/sh/fwraid-kernel.sh does)
  make_corpus_fwraid.py unpack IN DIR        sparse images vda.img ... in DIR
                                             holding those sectors again

The format is fuzz_fwraid.c's: flags, disk count, le32 sectors per disk,
then records (disk, le32 sector back from the end, 512 bytes).  Only the
metadata is kept: IMSM's MPB (the anchor two sectors from the end and the
sectors before it that mpb_size covers); DDF's anchor and, for both the
primary and the secondary header, the header and its sections, less the
sectors that read as 0xff (the fill the input's flag asks for).  All the
disks of an input have the size of the first.
"""
import struct
import sys

SECTOR = 512


def imsm_sectors(img, nsec):
    img.seek((nsec - 2) * SECTOR)
    anchor = img.read(SECTOR)
    if not anchor.startswith(b"Intel Raid ISM Cfg Sig. "):
        return None
    size = struct.unpack_from("<I", anchor, 0x24)[0]
    ext = (size + SECTOR - 1) // SECTOR - 1
    return list(range(nsec - 2 - ext, nsec - 1))


def ddf_sectors(img, nsec):
    img.seek((nsec - 1) * SECTOR)
    anchor = img.read(SECTOR)
    if struct.unpack_from(">I", anchor, 0)[0] != 0xDE11DE11:
        return None
    out = [nsec - 1]
    for at in (96, 104):
        lba = struct.unpack_from(">Q", anchor, at)[0]
        if lba >= nsec:
            continue
        img.seek(lba * SECTOR)
        hdr = img.read(SECTOR)
        out.append(lba)
        for i in range(8):
            off, length = struct.unpack_from(">II", hdr, 192 + 8 * i)
            if off == 0xFFFFFFFF or length == 0 or length > 1024:
                continue
            out.extend(s for s in range(lba + off, lba + off + length) if s < nsec)
    return out


def pack(out, disks):
    recs = []
    nsec = None
    fill = 0
    for i, path in enumerate(disks[:4]):
        with open(path, "rb") as img:
            img.seek(0, 2)
            n = img.tell() // SECTOR
            nsec = nsec or n
            secs = imsm_sectors(img, n)
            if secs is None:
                secs = ddf_sectors(img, n)
                fill = 1
            for s in sorted(set(secs or [])):
                img.seek(s * SECTOR)
                data = img.read(SECTOR)
                if fill and data == b"\xff" * SECTOR:
                    continue
                if not fill and data == b"\0" * SECTOR:
                    continue
                recs.append(struct.pack("<BI", i, n - 1 - s) + data)
    with open(out, "wb") as f:
        f.write(struct.pack("<BBI", fill, len(disks[:4]) - 1, nsec))
        f.write(b"".join(recs))


def unpack(path, outdir):
    with open(path, "rb") as f:
        blob = f.read()
    fill, ndisks, nsec = struct.unpack_from("<BBI", blob, 0)
    ndisks = 1 + ndisks % 4
    imgs = []
    for i in range(ndisks):
        name = "%s/vd%s.img" % (outdir, chr(ord("a") + i))
        with open(name, "wb") as img:
            img.truncate(nsec * SECTOR)
        imgs.append(name)
    for at in range(6, len(blob) - 516, 517):
        disk, back = struct.unpack_from("<BI", blob, at)
        if disk >= ndisks or back >= nsec:
            continue
        with open(imgs[disk], "r+b") as img:
            img.seek((nsec - 1 - back) * SECTOR)
            img.write(blob[at + 5 : at + 517])
    if fill:
        # the sectors the input leaves out read as 0xff: only DDF's
        # metadata ranges matter, and those are all rewritten above
        # or 0xff-filled here
        for name in imgs:
            with open(name, "r+b") as img:
                for s in ddf_fill(img, nsec, blob, imgs.index(name)):
                    img.seek(s * SECTOR)
                    img.write(b"\xff" * SECTOR)
                for at in range(6, len(blob) - 516, 517):
                    disk, back = struct.unpack_from("<BI", blob, at)
                    if disk == imgs.index(name) and back < nsec:
                        img.seek((nsec - 1 - back) * SECTOR)
                        img.write(blob[at + 5 : at + 517])
    print(" ".join(imgs))


def ddf_fill(img, nsec, blob, disk):
    """The DDF metadata sectors of disk (from its records): to 0xff-fill."""
    for at in range(6, len(blob) - 516, 517):
        d, back = struct.unpack_from("<BI", blob, at)
        if d == disk and back == 0:
            anchor = blob[at + 5 : at + 517]
            break
    else:
        return []
    out = []
    for a in (96, 104):
        lba = struct.unpack_from(">Q", anchor, a)[0]
        if lba >= nsec:
            continue
        img.seek(lba * SECTOR)
        hdr = img.read(SECTOR)
        for i in range(8):
            off, length = struct.unpack_from(">II", hdr, 192 + 8 * i)
            if off == 0xFFFFFFFF or length == 0 or length > 1024:
                continue
            out.extend(s for s in range(lba + off, lba + off + length) if s < nsec)
    return out


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "pack":
        pack(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "unpack":
        unpack(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
