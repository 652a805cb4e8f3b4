#!/usr/bin/env python3
"""make_corpus_part.py - write the seed corpus of fuzz_part
(tests/fuzz/corpus-part) from partition tables the real tools make:
sfdisk (dos with an extended partition and logicals; gpt with names),
sgdisk (gpt with type codes, a hybrid MBR) and fdisk -b 4096 (a gpt of
4096-byte sectors), in a scratch directory.

fuzz_part input: flags byte (bit 0 4096-byte blocks, bit 1 fix GPT CRCs),
le32 disk size in 512-byte sectors, then records: le32 sector (bit 31:
counted back from the last sector) and that sector's 512 bytes.  A seed
holds an image's non-zero sectors only, those in its second half counted
from the end.  Each image gives two seeds, without and with the CRC-fixing
flag.  GUIDs differ from run to run.  Regression inputs (regress-*) are
never touched.
"""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("CORPUS_OUT", os.path.join(HERE, "corpus-part"))
MB = 1 << 20


def sh(cmd, stdin=None):
    subprocess.run(cmd, shell=True, check=True, input=stdin, text=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def seed(path, flags):
    with open(path, "rb") as f:
        img = f.read()
    sectors = len(img) // 512
    out = bytearray(struct.pack("<BI", flags, sectors))
    n = 0
    for s in range(sectors):
        sec = img[s * 512:(s + 1) * 512]
        if not any(sec):
            continue
        where = s if s < sectors // 2 else 0x80000000 | (sectors - 1 - s)
        out += struct.pack("<I", where) + sec
        n += 1
    assert n <= 64, path
    return bytes(out)


def main():
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        imgs = {}

        def new(name, size):
            p = os.path.join(d, name + ".img")
            sh("truncate -s %d %s" % (size, p))
            imgs[name] = (p, 0)
            return p

        p = new("dos", 64 * MB)
        sh("sfdisk -q " + p, "label: dos\nlabel-id: 0x1234abcd\n,8M,83,*\n,8M,fd\n"
           ",,5\n,4M,83\n,4M,8e\n,4M,82\n,4M,fd\n")
        p = new("gpt", 64 * MB)
        sh("sfdisk -q " + p, 'label: gpt\nsize=8M, type=L, name=boot\n'
           'size=8M, type=R, name="md member"\nsize=8M, type=V\ntype=U, name=esp\n')
        p = new("sgdisk", 64 * MB)
        sh("sgdisk -n1:2048:+8M -t1:fd00 -c1:raid0 -n2:0:+8M -t2:8e00 -c2:'lvm \u00fc' "
           "-n3:0:+4M -t3:8200 -n5:0:0 -t5:ef00 " + p)
        p = new("hybrid", 32 * MB)
        sh("sgdisk -n1:2048:+8M -t1:fd00 -n2:0:0 -t2:8300 %s && sgdisk -h 1:EE %s" % (p, p))
        p = new("gpt4k", 256 * MB)
        sh("fdisk -b 4096 " + p, "g\nn\n\n\n+16M\nt\nA19D880F-05FC-4D3B-A006-743F0F84911E\n"
           "n\n\n\n+32M\nn\n\n\n\nx\nn\n1\nraid a\nr\nw\n")
        imgs["gpt4k"] = (p, 1)
        for name, (p, flags) in imgs.items():
            for fix in (0, 2):
                with open(os.path.join(OUT, "%s-%d" % (name, flags | fix)), "wb") as f:
                    f.write(seed(p, flags | fix))
    print("fuzz_part: %d seeds in %s" % (2 * len(imgs), OUT))


if __name__ == "__main__":
    sys.exit(main())
