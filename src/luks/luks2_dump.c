/* luks2_dump.c — LUKS2's part of the luksDump-style report (luks_dump.c
 * prints the volume key after it when asked): the header copies, the data
 * segment, key slots with their KDF and area, and the digests.  Salts and
 * digests are public; no key material is printed. */
#include "luks/luks_hdr.h"
#include "luks/luks_kdf.h"
#include "luks/luks_version.h"

#include <inttypes.h>

static const char *dump_priority(int p)
{
	return p == 0 ? "ignored" : p == 2 ? "preferred" : "normal";
}

void luks2_dump(const struct luks_hdr *h, FILE *f)
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
		luks_dump_hex(f, "\tSalt:       ", s->kdf.salt, s->kdf.salt_len, "\t            ");
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
		luks_dump_hex(f, "\tSalt:       ", g->salt, g->salt_len, "\t            ");
		luks_dump_hex(f, "\tDigest:     ", g->digest, g->digest_len, "\t            ");
	}
}
