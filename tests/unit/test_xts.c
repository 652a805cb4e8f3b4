/* test_xts.c — the IEEE 1619-2007 XTS-AES test vectors (Annex B, as
 * published in IEEE P1619/D16 and NIST SP 800-38E material), checked
 * through a crypt vol over a mem: member: plaintext written through the
 * vol must appear as the vector's ciphertext in the child, at the sector
 * whose number is the vector's data unit sequence number, and ciphertext
 * placed in the child must read back as the plaintext.
 *
 * Vectors 1-3 have 32-byte data units; XTS without ciphertext stealing
 * encrypts block j of a unit with the tweak times alpha^j whatever the
 * unit's length, so their ciphertext is the first 32 bytes of a 512-byte
 * sector whose first 32 plaintext bytes are theirs.  The same argument
 * checks the 512-byte vectors inside 4096-byte sectors. */
#include "check.h"

#include "core/log.h"
#include "disc/crypt.h"
#include "member/member.h"

#include <errno.h>
#include <string.h>

struct xts_vector {
	int n;
	uint64_t dusn; /* data unit sequence number */
	const char *key, *pt, *ct;
};

static const struct xts_vector vectors[] = {
	{ /* IEEE 1619 vector 1 */
		.n = 1,
		.dusn = 0,
		.key = "0000000000000000000000000000000000000000000000000000000000000000",
		.pt = "0000000000000000000000000000000000000000000000000000000000000000",
		.ct = "917cf69ebd68b2ec9b9fe9a3eadda692cd43d2f59598ed858c02c2652fbf922e",
	},
	{ /* IEEE 1619 vector 2 */
		.n = 2,
		.dusn = 0x3333333333,
		.key = "1111111111111111111111111111111122222222222222222222222222222222",
		.pt = "4444444444444444444444444444444444444444444444444444444444444444",
		.ct = "c454185e6a16936e39334038acef838bfb186fff7480adc4289382ecd6d394f0",
	},
	{ /* IEEE 1619 vector 3 */
		.n = 3,
		.dusn = 0x3333333333,
		.key = "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f022222222222222222222222222222222",
		.pt = "4444444444444444444444444444444444444444444444444444444444444444",
		.ct = "af85336b597afc1a900b2eb21ec949d292df4c047e0b21532186a5971a227a89",
	},
	{ /* IEEE 1619 vector 4 */
		.n = 4,
		.dusn = 0,
		.key = "2718281828459045235360287471352631415926535897932384626433832795",
		.pt = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
		  "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
		  "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
		  "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
		  "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
		  "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
		  "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
		  "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
		  "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
		  "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
		  "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
		  "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
		  "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
		  "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
		  "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
		  "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
		.ct = "27a7479befa1d476489f308cd4cfa6e2a96e4bbe3208ff25287dd3819616e89c"
		  "c78cf7f5e543445f8333d8fa7f56000005279fa5d8b5e4ad40e736ddb4d35412"
		  "328063fd2aab53e5ea1e0a9f332500a5df9487d07a5c92cc512c8866c7e860ce"
		  "93fdf166a24912b422976146ae20ce846bb7dc9ba94a767aaef20c0d61ad0265"
		  "5ea92dc4c4e41a8952c651d33174be51a10c421110e6d81588ede82103a252d8"
		  "a750e8768defffed9122810aaeb99f9172af82b604dc4b8e51bcb08235a6f434"
		  "1332e4ca60482a4ba1a03b3e65008fc5da76b70bf1690db4eae29c5f1badd03c"
		  "5ccf2a55d705ddcd86d449511ceb7ec30bf12b1fa35b913f9f747a8afd1b130e"
		  "94bff94effd01a91735ca1726acd0b197c4e5b03393697e126826fb6bbde8ecc"
		  "1e08298516e2c9ed03ff3c1b7860f6de76d4cecd94c8119855ef5297ca67e9f3"
		  "e7ff72b1e99785ca0a7e7720c5b36dc6d72cac9574c8cbbc2f801e23e56fd344"
		  "b07f22154beba0f08ce8891e643ed995c94d9a69c9f1b5f499027a78572aeebd"
		  "74d20cc39881c213ee770b1010e4bea718846977ae119f7a023ab58cca0ad752"
		  "afe656bb3c17256a9f6e9bf19fdd5a38fc82bbe872c5539edb609ef4f79c203e"
		  "bb140f2e583cb2ad15b4aa5b655016a8449277dbd477ef2c8d6c017db738b18d"
		  "eb4a427d1923ce3ff262735779a418f20a282df920147beabe421ee5319d0568",
	},
	{ /* IEEE 1619 vector 5 */
		.n = 5,
		.dusn = 1,
		.key = "2718281828459045235360287471352631415926535897932384626433832795",
		.pt = "27a7479befa1d476489f308cd4cfa6e2a96e4bbe3208ff25287dd3819616e89c"
		  "c78cf7f5e543445f8333d8fa7f56000005279fa5d8b5e4ad40e736ddb4d35412"
		  "328063fd2aab53e5ea1e0a9f332500a5df9487d07a5c92cc512c8866c7e860ce"
		  "93fdf166a24912b422976146ae20ce846bb7dc9ba94a767aaef20c0d61ad0265"
		  "5ea92dc4c4e41a8952c651d33174be51a10c421110e6d81588ede82103a252d8"
		  "a750e8768defffed9122810aaeb99f9172af82b604dc4b8e51bcb08235a6f434"
		  "1332e4ca60482a4ba1a03b3e65008fc5da76b70bf1690db4eae29c5f1badd03c"
		  "5ccf2a55d705ddcd86d449511ceb7ec30bf12b1fa35b913f9f747a8afd1b130e"
		  "94bff94effd01a91735ca1726acd0b197c4e5b03393697e126826fb6bbde8ecc"
		  "1e08298516e2c9ed03ff3c1b7860f6de76d4cecd94c8119855ef5297ca67e9f3"
		  "e7ff72b1e99785ca0a7e7720c5b36dc6d72cac9574c8cbbc2f801e23e56fd344"
		  "b07f22154beba0f08ce8891e643ed995c94d9a69c9f1b5f499027a78572aeebd"
		  "74d20cc39881c213ee770b1010e4bea718846977ae119f7a023ab58cca0ad752"
		  "afe656bb3c17256a9f6e9bf19fdd5a38fc82bbe872c5539edb609ef4f79c203e"
		  "bb140f2e583cb2ad15b4aa5b655016a8449277dbd477ef2c8d6c017db738b18d"
		  "eb4a427d1923ce3ff262735779a418f20a282df920147beabe421ee5319d0568",
		.ct = "264d3ca8512194fec312c8c9891f279fefdd608d0c027b60483a3fa811d65ee5"
		  "9d52d9e40ec5672d81532b38b6b089ce951f0f9c35590b8b978d175213f329bb"
		  "1c2fd30f2f7f30492a61a532a79f51d36f5e31a7c9a12c286082ff7d2394d18f"
		  "783e1a8e72c722caaaa52d8f065657d2631fd25bfd8e5baad6e527d763517501"
		  "c68c5edc3cdd55435c532d7125c8614deed9adaa3acade5888b87bef641c4c99"
		  "4c8091b5bcd387f3963fb5bc37aa922fbfe3df4e5b915e6eb514717bdd2a7407"
		  "9a5073f5c4bfd46adf7d282e7a393a52579d11a028da4d9cd9c77124f9648ee3"
		  "83b1ac763930e7162a8d37f350b2f74b8472cf09902063c6b32e8c2d9290cefb"
		  "d7346d1c779a0df50edcde4531da07b099c638e83a755944df2aef1aa31752fd"
		  "323dcb710fb4bfbb9d22b925bc3577e1b8949e729a90bbafeacf7f7879e7b114"
		  "7e28ba0bae940db795a61b15ecf4df8db07b824bb062802cc98a9545bb2aaeed"
		  "77cb3fc6db15dcd7d80d7d5bc406c4970a3478ada8899b329198eb61c193fb62"
		  "75aa8ca340344a75a862aebe92eee1ce032fd950b47d7704a3876923b4ad6284"
		  "4bf4a09c4dbe8b4397184b7471360c9564880aedddb9baa4af2e75394b08cd32"
		  "ff479c57a07d3eab5d54de5f9738b8d27f27a9f0ab11799d7b7ffefb2704c95c"
		  "6ad12c39f1e867a4b7b1d7818a4b753dfd2a89ccb45e001a03a867b187f225dd",
	},
	{ /* IEEE 1619 vector 10 */
		.n = 10,
		.dusn = 0xff,
		.key = "2718281828459045235360287471352662497757247093699959574966967627"
		  "3141592653589793238462643383279502884197169399375105820974944592",
		.pt = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
		  "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
		  "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
		  "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
		  "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
		  "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
		  "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
		  "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
		  "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
		  "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
		  "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
		  "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
		  "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
		  "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
		  "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
		  "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
		.ct = "1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b"
		  "5d31e276f8fe4a8d66b317f9ac683f44680a86ac35adfc3345befecb4bb188fd"
		  "5776926c49a3095eb108fd1098baec70aaa66999a72a82f27d848b21d4a741b0"
		  "c5cd4d5fff9dac89aeba122961d03a757123e9870f8acf1000020887891429ca"
		  "2a3e7a7d7df7b10355165c8b9a6d0a7de8b062c4500dc4cd120c0f7418dae3d0"
		  "b5781c34803fa75421c790dfe1de1834f280d7667b327f6c8cd7557e12ac3a0f"
		  "93ec05c52e0493ef31a12d3d9260f79a289d6a379bc70c50841473d1a8cc81ec"
		  "583e9645e07b8d9670655ba5bbcfecc6dc3966380ad8fecb17b6ba02469a020a"
		  "84e18e8f84252070c13e9f1f289be54fbc481457778f616015e1327a02b140f1"
		  "505eb309326d68378f8374595c849d84f4c333ec4423885143cb47bd71c5edae"
		  "9be69a2ffeceb1bec9de244fbe15992b11b77c040f12bd8f6a975a44a0f90c29"
		  "a9abc3d4d893927284c58754cce294529f8614dcd2aba991925fedc4ae74ffac"
		  "6e333b93eb4aff0479da9a410e4450e0dd7ae4c6e2910900575da401fc07059f"
		  "645e8b7e9bfdef33943054ff84011493c27b3429eaedb4ed5376441a77ed4385"
		  "1ad77f16f541dfd269d50d6a5f14fb0aab1cbb4c1550be97f7ab4066193c4caa"
		  "773dad38014bd2092fa755c824bb5e54c4f36ffda9fcea70b9c6e693e148c151",
	},
};

static size_t unhex(const char *h, unsigned char *out)
{
	size_t n = strlen(h) / 2;

	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(h + 2 * i, "%2x", &v);
		out[i] = (unsigned char)v;
	}
	return n;
}

static struct vol *open_mem(const char *spec)
{
	struct vol *m = NULL;
	int r = member_open(spec, 0, &m);

	CHECK_EQ(r, 0);
	return m;
}

/* Whether 4096-byte sectors count their IVs in 4096-byte units (dm-crypt's
 * iv_large_sectors, plain mappings) or in 512-byte units (LUKS). */
static bool large_ivs;

/* Open aes-xts-plain64 over m with the vector's key. */
static struct vol *open_xts(struct vol *m, const struct xts_vector *tv, uint32_t ss,
			    uint64_t iv_offset, int *err)
{
	unsigned char key[64];
	struct crypt_params p = { .cipher = "aes-xts-plain64", .key = key, .sector_size = ss,
				  .iv_offset = iv_offset, .iv_large_sectors = large_ivs };
	struct vol *c = NULL;

	p.key_len = unhex(tv->key, key);
	*err = crypt_open(m, &p, false, "xts-test", &c);
	return c;
}

/* Encrypt direction: plaintext at byte offset off of the crypt vol (whose
 * IV number there is the vector's DUSN) must land in the child as the
 * ciphertext; decrypt direction: the ciphertext written raw must read
 * back as the plaintext. */
static void check_at(const struct xts_vector *tv, uint32_t ss, uint64_t off, uint64_t iv_offset)
{
	unsigned char pt[512], ct[512], sector[4096], raw[4096];
	size_t n = unhex(tv->pt, pt);
	struct vol *m = open_mem("mem:4M");
	int err;
	struct vol *c = open_xts(m, tv, ss, iv_offset, &err);

	unhex(tv->ct, ct);
	CHECK_EQ(err, 0);
	if (!c) {
		vol_close(m);
		return;
	}
	memset(sector, 0xa5, sizeof(sector));
	memcpy(sector, pt, n);
	CHECK_EQ(vol_write(c, sector, ss, off, 0), 0);
	CHECK_EQ(vol_read(m, raw, ss, off), 0);
	if (memcmp(raw, ct, n) != 0)
		fprintf(stderr, "vector %d: ciphertext mismatch (ss %u, off %llu, iv_offset %llu)\n",
			tv->n, ss, (unsigned long long)off, (unsigned long long)iv_offset);
	CHECK(memcmp(raw, ct, n) == 0);

	/* Decrypt: the ciphertext in the child, the rest of the sector as
	 * written, must read back as the plaintext. */
	memcpy(raw, ct, n);
	CHECK_EQ(vol_write(m, raw, ss, off, 0), 0);
	memset(sector, 0, sizeof(sector));
	CHECK_EQ(vol_read(c, sector, ss, off), 0);
	CHECK(memcmp(sector, pt, n) == 0);
	vol_close(c);
	vol_close(m);
}

int main(void)
{
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const struct xts_vector *tv = &vectors[i];

		if (tv->n == 1) {
			/* Key1 == Key2: OpenSSL (and FIPS dm-crypt) refuse it. */
			struct vol *m = open_mem("mem:1M");
			int err;
			struct vol *c = open_xts(m, tv, 512, 0, &err);

			CHECK_EQ(err, -EINVAL);
			CHECK(c == NULL);
			CHECK(strstr(err_detail(err), "halves are equal") != NULL);
			vol_close(m);
			continue;
		}
		/* At the sector numbered DUSN when it fits in 4 MiB. */
		large_ivs = true;
		if (tv->dusn < (4u << 20) / 512)
			check_at(tv, 512, tv->dusn * 512, 0);
		if (tv->dusn < (4u << 20) / 4096)
			check_at(tv, 4096, tv->dusn * 4096, 0);
		/* At sector 0, with iv_offset (512-byte units) supplying DUSN. */
		check_at(tv, 512, 0, tv->dusn);
		check_at(tv, 4096, 0, tv->dusn * 8);
		/* At sector 3 with the rest in iv_offset. */
		if (tv->dusn >= 3) {
			check_at(tv, 512, 3 * 512, tv->dusn - 3);
			check_at(tv, 4096, 3 * 4096, (tv->dusn - 3) * 8);
		}
		/* LUKS's rule: a 4096-byte sector at byte offset o has IV
		 * o / 512 + iv_offset, so sector k is numbered 8k. */
		large_ivs = false;
		check_at(tv, 4096, 0, tv->dusn);
		if (tv->dusn % 8 == 0 && tv->dusn < (4u << 20) / 512)
			check_at(tv, 4096, tv->dusn * 512, 0);
		if (tv->dusn >= 24)
			check_at(tv, 4096, 3 * 4096, tv->dusn - 24);
	}
	return check_done();
}
