/* luks_dump.c — a report of a LUKS header in the shape of cryptsetup's
 * luksDump, so that people (and scripts) used to one can read the other.
 * Prints salts and digests (public) but never key material, unless the
 * caller passes the volume key it was explicitly asked for. */
#include "luks/luks.h"

#include <inttypes.h>

static void dump_hex(FILE *f, const char *title, const unsigned char *p, size_t n,
                     const char *indent)
{
	fprintf(f, "%s", title);
	for (size_t i = 0; i < n; i++) {
		if (i && i % 16 == 0)
			fprintf(f, "\n%s", indent);
		fprintf(f, "%02x ", p[i]);
	}
	fprintf(f, "\n");
}

static void dump_luks1(const struct luks_hdr *h, FILE *f)
{
	const struct luks_digest *g = &h->digests[0];

	fprintf(f, "LUKS header information for LUKS1\n\n");
	fprintf(f, "Version:       \t1\n");
	fprintf(f, "Cipher name+mode:\t%s\n", h->seg.cipher);
	fprintf(f, "Hash spec:     \t%s\n", g->hash);
	fprintf(f, "Payload offset:\t%" PRIu64 "\n", h->seg.offset / 512);
	fprintf(f, "MK bits:       \t%u\n", h->seg.key_size * 8);
	dump_hex(f, "MK digest:     \t", g->digest, g->digest_len, "               \t");
	dump_hex(f, "MK salt:       \t", g->salt, g->salt_len, "               \t");
	fprintf(f, "MK iterations: \t%u\n", g->iterations);
	fprintf(f, "UUID:          \t%s\n\n", h->uuid);
	for (int i = 0; i < LUKS1_SLOTS; i++) {
		const struct luks_keyslot *s = &h->slots[i];
		if (!s->active) {
			fprintf(f, "Key Slot %d: DISABLED\n", i);
			continue;
		}
		fprintf(f, "Key Slot %d: ENABLED\n", i);
		fprintf(f, "\tIterations:         \t%u\n", s->kdf.iterations);
		dump_hex(f, "\tSalt:               \t", s->kdf.salt, s->kdf.salt_len,
		         "\t                      \t");
		fprintf(f, "\tKey material offset:\t%" PRIu64 "\n", s->area_offset / 512);
		fprintf(f, "\tAF stripes:         \t%u\n", s->stripes);
	}
}

static const char *dump_priority(int p)
{
	return p == 0 ? "ignored" : p == 2 ? "preferred" : "normal";
}

static void dump_luks2(const struct luks_hdr *h, FILE *f)
{
	const struct luks_segment *sg = &h->seg;

	fprintf(f, "LUKS header information\n");
	fprintf(f, "Version:       \t2\n");
	fprintf(f, "Epoch:         \t%" PRIu64 "\n", h->seqid);
	fprintf(f, "Metadata area: \t%" PRIu64 " [bytes]\n", h->hdr_size);
	fprintf(f, "Keyslots area: \t%" PRIu64 " [bytes]\n", h->keyslots_size);
	fprintf(f, "UUID:          \t%s\n", h->uuid);
	fprintf(f, "Label:         \t%s\n", h->label[0] ? h->label : "(no label)");
	fprintf(f, "Subsystem:     \t%s\n", h->subsystem[0] ? h->subsystem : "(no subsystem)");
	if (h->needs_repair)
		fprintf(f, "Header copies: \t%s\n",
		        !h->primary_ok     ? "primary damaged (read from secondary)"
		        : !h->secondary_ok ? "secondary damaged"
		                           : "out of step (different seqid)");
	fprintf(f, "\nData segments:\n");
	if (sg->cipher[0]) {
		fprintf(f, "  0: crypt\n");
		fprintf(f, "\toffset: %" PRIu64 " [bytes]\n", sg->offset);
		if (sg->size)
			fprintf(f, "\tlength: %" PRIu64 " [bytes]\n", sg->size);
		else
			fprintf(f, "\tlength: (whole device)\n");
		fprintf(f, "\tcipher: %s\n", sg->cipher);
		fprintf(f, "\tsector: %u [bytes]\n", sg->sector_size);
		if (sg->iv_tweak)
			fprintf(f, "\tIV tweak: %" PRIu64 "\n", sg->iv_tweak);
	}
	fprintf(f, "\nKeyslots:\n");
	for (int i = 0; i < LUKS_SLOTS_MAX; i++) {
		const struct luks_keyslot *s = &h->slots[i];
		if (!s->active)
			continue;
		fprintf(f, "  %d: luks2%s\n", i, luks_slot_bound(h, i) ? "" : " (unbound)");
		fprintf(f, "\tKey:        %u bits\n", s->key_size * 8);
		fprintf(f, "\tPriority:   %s\n", dump_priority(s->priority));
		fprintf(f, "\tCipher:     %s\n", s->area_cipher);
		fprintf(f, "\tCipher key: %u bits\n", s->area_key_size * 8);
		if (s->unusable[0]) {
			fprintf(f, "\tPBKDF:      (%s)\n", s->unusable);
		} else if (s->kdf.type == LUKS_KDF_PBKDF2) {
			fprintf(f, "\tPBKDF:      pbkdf2\n");
			fprintf(f, "\tHash:       %s\n", s->kdf.hash);
			fprintf(f, "\tIterations: %u\n", s->kdf.iterations);
		} else {
			fprintf(f, "\tPBKDF:      %s\n", luks_kdf_name(s->kdf.type));
			fprintf(f, "\tTime cost:  %u\n", s->kdf.iterations);
			fprintf(f, "\tMemory:     %u\n", s->kdf.memory);
			fprintf(f, "\tThreads:    %u\n", s->kdf.cpus);
		}
		dump_hex(f, "\tSalt:       ", s->kdf.salt, s->kdf.salt_len, "\t            ");
		fprintf(f, "\tAF stripes: %u\n", s->stripes);
		fprintf(f, "\tAF hash:    %s\n", s->af_hash);
		fprintf(f, "\tArea offset:%" PRIu64 " [bytes]\n", s->area_offset);
		fprintf(f, "\tArea length:%" PRIu64 " [bytes]\n", s->area_size);
		fprintf(f, "\tDigest ID:  %d\n", s->digest);
	}
	fprintf(f, "Digests:\n");
	for (int i = 0; i < LUKS_SLOTS_MAX; i++) {
		const struct luks_digest *g = &h->digests[i];
		if (!g->used)
			continue;
		fprintf(f, "  %d: pbkdf2\n", i);
		fprintf(f, "\tHash:       %s\n", g->hash);
		fprintf(f, "\tIterations: %u\n", g->iterations);
		dump_hex(f, "\tSalt:       ", g->salt, g->salt_len, "\t            ");
		dump_hex(f, "\tDigest:     ", g->digest, g->digest_len, "\t            ");
	}
}

void luks_dump(const struct luks_hdr *h, const struct luks_secret *vk, FILE *f)
{
	if (h->version == 1)
		dump_luks1(h, f);
	else
		dump_luks2(h, f);
	if (vk)
		dump_hex(f, "MK dump:\t", vk->data, vk->len, "        \t");
}
