#!/usr/bin/env python3
"""make_corpus_formats.py URAID [--full DIR] - write the seed corpora for
fuzz_md (tests/fuzz/corpus-md) and fuzz_luks (tests/fuzz/corpus-luks).

Seeds come from real headers: `uraid create` (the md v1.2 superblocks
mdadm reads; raid5/6 and nested arrays are derived from those by editing
fields) and `cryptsetup luksFormat` with cheap PBKDF settings.  Member
images are trimmed to their superblock regions (the harnesses read zeros
beyond the given bytes), so the committed corpora stay small; UUIDs and
salts differ from run to run.

fuzz_md input: flags byte (bits 0-1 members - 1, bit 2 run degraded, bit 3
fix checksums, bit 4 4096-byte blocks, bit 7 member (bits 5-6) fails
reads), then per member le32 size in sectors + le16 blob length, then the
blobs (each placed at the member's byte 4096).
fuzz_luks input: flags byte (bit 0 fix LUKS2 checksums, bit 1 unlock with
"fuzz", bit 2 4096-byte blocks, bit 3 payload with a made-up key, bits 4-7 slot + 1),
le32 device size in 4 KiB units, then the device's first bytes.

--full DIR also writes LUKS seeds with their whole key material (about
150 KiB each, too big to commit) whose passphrase "fuzz" unlocks them, so
that the fuzzer reaches the payload with the real key; format-fuzz.sh
makes those in its scratch directory.  Regression inputs (regress-*) are
never touched.
"""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MD_MAGIC = 0xA92B4EFC


def md_csum(sb):
    max_dev = min(struct.unpack_from("<I", sb, 220)[0], 1920)
    size = 256 + 2 * max_dev
    buf = bytearray(sb[:size].ljust(size, b"\0"))
    buf[216:220] = b"\0\0\0\0"
    s = sum(struct.unpack_from("<%dI" % (size // 4), buf))
    if size % 4:
        s += struct.unpack_from("<H", buf, size - 2)[0]
    return ((s & 0xFFFFFFFF) + (s >> 32)) & 0xFFFFFFFF


def md_set(sb, fmt, off, *v):
    struct.pack_into(fmt, sb, off, *v)


def md_seal(sb):
    md_set(sb, "<I", 216, md_csum(sb))
    return sb


def md_trim(sb):
    """The superblock's bytes that matter: 256 + 2 * max_dev, at least."""
    need = 256 + 2 * struct.unpack_from("<I", sb, 220)[0]
    end = len(sb.rstrip(b"\0"))
    return bytes(sb[:max(need, end)])


def uraid_create(uraid, tmp, name, args, n, size=8 << 20, at=lambda size: 4096):
    paths = []
    for i in range(n):
        p = os.path.join(tmp, "%s-%d.img" % (name, i))
        with open(p, "wb") as f:
            f.truncate(size)
        paths.append(p)
    given = [p if p else "missing" for p in paths]
    subprocess.run([uraid, "create", "--assume-clean", "--name=" + name] + args + given,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sbs = []
    for p in paths:
        with open(p, "rb") as f:
            f.seek(at(size))
            sbs.append(bytearray(f.read(4096)))
    return sbs, size // 512


def md_seed(flags, members):
    """members: list of (size_sectors, blob)."""
    out = bytes([flags | (len(members) - 1)])
    for sectors, blob in members:
        out += struct.pack("<IH", sectors, len(blob))
    return out + b"".join(blob for _, blob in members)


def raid10_reshape_seed(fix, sbs, sec):
    """A raid10 near-2 3 -> 4 reshape under way (RESHAPE_ACTIVE | NEW_OFFSET),
    a chunk and a page moved (raid10 stops on any page), the data offset
    512 KiB lower: md_reshape_parse's raid10 rules."""
    derived = []
    for s in sbs:
        s = bytearray(s)
        chunk = struct.unpack_from("<I", s, 88)[0]
        md_set(s, "<I", 8, struct.unpack_from("<I", s, 8)[0] | 0x44)
        md_set(s, "<IQiIIi", 100, 10, chunk + 8, 1, 0x102, chunk, -1024)
        derived.append((sec, md_trim(md_seal(s))))
    return md_seed(fix, derived)


def make_md(uraid, out):
    seeds = {}
    with tempfile.TemporaryDirectory() as tmp:
        fix = 0x08
        sbs, sec = uraid_create(uraid, tmp, "r1", ["--level=1", "--raid-devices=2"], 2)
        seeds["md-raid1"] = md_seed(fix, [(sec, md_trim(s)) for s in sbs])
        seeds["md-raid1-nofix"] = md_seed(0, [(sec, md_trim(s)) for s in sbs])
        seeds["md-raid1-degraded"] = md_seed(fix | 0x04, [(sec, md_trim(sbs[0]))])
        seeds["md-raid1-failread"] = md_seed(fix | 0x80 | 0x20, [(sec, md_trim(s)) for s in sbs])
        seeds["md-raid1-4k"] = md_seed(fix | 0x10, [(sec, md_trim(s)) for s in sbs])
        # one member stale (older events): left out, started degraded
        stale = bytearray(sbs[1])
        md_set(stale, "<Q", 200, struct.unpack_from("<Q", stale, 200)[0] + 5)
        seeds["md-raid1-stale"] = md_seed(0x04, [(sec, md_trim(sbs[0])), (sec, md_trim(md_seal(stale)))])

        sbs, sec = uraid_create(uraid, tmp, "r0", ["--level=0", "--raid-devices=4", "--chunk=64"], 4)
        seeds["md-raid0"] = md_seed(fix, [(sec, md_trim(s)) for s in sbs])
        # raid5 and raid6 from the raid0 superblocks: level, layout, size
        for level, n, layout in ((5, 3, 2), (6, 4, 18)):
            derived = []
            for s in sbs[:n]:
                s = bytearray(s)
                chunk = struct.unpack_from("<I", s, 88)[0]
                dsize = struct.unpack_from("<Q", s, 136)[0]
                md_set(s, "<I", 72, level)
                md_set(s, "<I", 76, layout)
                md_set(s, "<Q", 80, dsize // chunk * chunk)
                md_set(s, "<I", 92, n)
                derived.append((sec, md_trim(md_seal(s))))
            seeds["md-raid%d" % level] = md_seed(fix, derived)
            seeds["md-raid%d-degraded" % level] = md_seed(fix | 0x04, derived[1:])
            seeds["md-raid%d-failread" % level] = md_seed(fix | 0x80 | 0x40, derived)
        # a raid5 3 -> 4 reshape under way (RESHAPE_ACTIVE | NEW_OFFSET), one
        # stripe of the new geometry moved, the data offset 512 KiB lower
        derived = []
        for s in sbs:
            s = bytearray(s)
            chunk = struct.unpack_from("<I", s, 88)[0]
            dsize = struct.unpack_from("<Q", s, 136)[0]
            md_set(s, "<I", 8, struct.unpack_from("<I", s, 8)[0] | 0x44)
            md_set(s, "<II", 72, 5, 2)
            md_set(s, "<Q", 80, dsize // chunk * chunk)
            md_set(s, "<I", 92, 4)
            md_set(s, "<IQiIIi", 100, 5, chunk * 3, 1, 2, chunk, -1024)
            derived.append((sec, md_trim(md_seal(s))))
        seeds["md-raid5-reshape"] = md_seed(fix, derived)

        sbs, sec = uraid_create(uraid, tmp, "r10", ["--level=10", "--raid-devices=4", "--layout=n2",
                                                    "--chunk=64"], 4)
        seeds["md-raid10-n2"] = md_seed(fix, [(sec, md_trim(s)) for s in sbs])
        seeds["md-raid10-n2-degraded"] = md_seed(fix | 0x04, [(sec, md_trim(s)) for s in sbs[:3]])
        seeds["md-raid10-reshape"] = raid10_reshape_seed(fix, sbs, sec)
        for lay in ("f2", "o2"):
            sbs, sec = uraid_create(uraid, tmp, "r10" + lay, ["--level=10", "--raid-devices=3",
                                                              "--layout=" + lay, "--chunk=64"], 3)
            seeds["md-raid10-" + lay] = md_seed(fix, [(sec, md_trim(s)) for s in sbs])

        sbs, sec = uraid_create(uraid, tmp, "lin", ["--level=linear", "--raid-devices=2"], 2)
        seeds["md-linear"] = md_seed(fix, [(sec, md_trim(s)) for s in sbs])

        # Nested: a raid1 of two members whose data area starts 4.5 KiB in
        # (right after the superblock's first sector), holding a one-member linear
        # array's superblock 4 KiB into its data.
        sbs, sec = uraid_create(uraid, tmp, "inner", ["--level=1", "--raid-devices=2"], 2)
        inner_sectors = 64 << 11  # 64 MiB members
        blobs = []
        outer = bytearray(sbs[0])
        md_set(outer, "<16s", 16, b"nested-outer-uu!")
        md_set(outer, "<32s", 32, b"vm:outer")
        md_set(outer, "<I", 72, 0xFFFFFFFF)  # linear
        md_set(outer, "<I", 92, 1)
        md_set(outer, "<QQ", 128, 16, inner_sectors - 9 - 16 - 64)
        md_set(outer, "<Q", 80, 0)
        md_set(outer, "<I", 160, 0)
        md_set(outer, "<I", 220, 1)
        md_set(outer, "<H", 256, 0)
        outer = md_trim(md_seal(outer))
        for s in sbs:
            s = bytearray(s)
            md_set(s, "<QQ", 128, 9, inner_sectors - 9)
            md_set(s, "<Q", 80, inner_sectors - 9 - 64)
            blob = md_trim(md_seal(s)).ljust(512 + 4096, b"\0") + outer
            blobs.append((inner_sectors, blob))
        seeds["md-nested"] = md_seed(fix, blobs)
        md_version_seeds(uraid, tmp, seeds)
    write_seeds(os.path.join(out, "corpus-md"), seeds)


def md_version_seeds(uraid, tmp, seeds):
    """v1.1 (blob at byte 0: place 1) and v1.0 (near the end: place 2)
    arrays, one with an internal bitmap."""
    v10 = lambda size: ((size // 512 - 16) & ~7) * 512
    for name, v, place, at in (("v11", "1.1", 1, lambda size: 0), ("v10", "1.0", 2, v10)):
        for level, n, extra in (("1", 2, ["--bitmap=internal"]), ("5", 3, ["--chunk=64"])):
            sbs, sec = uraid_create(uraid, tmp, "%s-r%s" % (name, level),
                                    ["--metadata=" + v, "--level=" + level,
                                     "--raid-devices=%d" % n] + extra, n, at=at)
            seeds["md-%s-raid%s" % (name, level)] = md_seed(
                0x08, [(sec | place << 30, md_trim(s)) for s in sbs])


def luks_format(tmp, name, args, size=1 << 20, offset=1024):
    p = os.path.join(tmp, name + ".img")
    with open(p, "wb") as f:
        f.truncate(size)
    off = ["--offset", str(offset)] if offset else []
    subprocess.run(["cryptsetup", "luksFormat", "-q", "--key-file", "-"] + off + args + [p], input=b"fuzz", check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(p, "rb") as f:
        return f.read(), size


def luks_seed(flags, dev_size, img):
    return struct.pack("<BI", flags, dev_size // 4096) + img.rstrip(b"\0")


def make_luks(out, full):
    seeds, big = {}, {}
    pb = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000", "--key-size", "256"]
    l2 = ["--type", "luks2", "--luks2-metadata-size", "16k", "--luks2-keyslots-size", "256k"]
    std = 0x01 | 0x02 | 0x08
    with tempfile.TemporaryDirectory() as tmp:
        img, size = luks_format(tmp, "l2", l2 + pb)
        seeds["luks2-pbkdf2"] = luks_seed(std, size, img[:16384])
        seeds["luks2-pbkdf2-nofix"] = luks_seed(0x02, size, img[:16384])
        seeds["luks2-pbkdf2-both"] = luks_seed(std, size, img[:32768])
        seeds["luks2-pbkdf2-secondary"] = luks_seed(std, size, bytes(16384) + img[16384:32768])
        big["luks2-pbkdf2-full"] = luks_seed(0x03, size, img[:32768 + 131072])
        # a second key slot (and, in the JSON, a second area and digest link)
        p, k2 = os.path.join(tmp, "l2.img"), os.path.join(tmp, "key2")
        with open(k2, "wb") as f:
            f.write(b"fuzz2")
        subprocess.run(["cryptsetup", "luksAddKey", "-q", "--key-file", "-"] + pb[:4] + [p, k2],
                       input=b"fuzz", check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        with open(p, "rb") as f:
            img2 = f.read(16384)
        seeds["luks2-two-slots"] = luks_seed(std, size, img2)
        img, size = luks_format(tmp, "l2a", l2 + ["--pbkdf", "argon2id", "--pbkdf-memory", "32",
                                                   "--pbkdf-force-iterations", "4",
                                                   "--pbkdf-parallel", "1", "--key-size", "256"])
        seeds["luks2-argon2id"] = luks_seed(std, size, img[:16384])
        big["luks2-argon2id-full"] = luks_seed(0x03, size, img[:32768 + 131072])
        img, size = luks_format(tmp, "l2s", l2 + pb + ["--sector-size", "4096", "--label", "fz",
                                                        "--subsystem", "sub", "--cipher",
                                                        "aes-cbc-essiv:sha256"])
        seeds["luks2-4k-cbc"] = luks_seed(std | 0x04, size, img[:16384])
        img, size = luks_format(tmp, "l1", ["--type", "luks1"] + pb, 4 << 20, None)
        seeds["luks1-pbkdf2"] = luks_seed(std, size, img[:4096])
        big["luks1-pbkdf2-full"] = luks_seed(0x02 | 0x10, size, img[:4096 + 131072])
        img, size = luks_format(tmp, "l1c", ["--type", "luks1", "--cipher",
                                             "aes-cbc-essiv:sha256", "--hash", "sha1"] + pb,
                                 4 << 20, None)
        seeds["luks1-cbc-sha1"] = luks_seed(std, size, img[:4096])
    write_seeds(os.path.join(out, "corpus-luks"), seeds)
    if full:
        write_seeds(full, big)


def write_seeds(d, seeds):
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


def main():
    args = sys.argv[1:]
    full = None
    if "--full" in args:
        i = args.index("--full")
        full = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit(__doc__)
    out = os.environ.get("CORPUS_OUT", HERE)
    if not os.environ.get("LUKS_ONLY"):
        make_md(args[0], out)
    make_luks(out, full)


if __name__ == "__main__":
    main()
