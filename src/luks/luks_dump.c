/* luks_dump.c — a report of a LUKS header in the shape of cryptsetup's
 * luksDump, so that people (and scripts) used to one can read the other.
 * The version prints its own part (ops->dump: luks1.c, luks2_dump.c) with
 * the hex layout here.  Salts and digests are public; key material is
 * never printed, unless the caller passes the volume key it was
 * explicitly asked for. */
#include "luks/luks_dump.h"

#include "luks/luks_version.h"

void luks_dump_hex(FILE *f, const char *title, const unsigned char *p, size_t n, const char *indent)
{
	fprintf(f, "%s", title);
	for (size_t i = 0; i < n; i++) {
		if (i && i % 16 == 0)
			fprintf(f, "\n%s", indent);
		fprintf(f, "%02x ", p[i]);
	}
	fprintf(f, "\n");
}

void luks_dump(const struct luks_hdr *h, const struct luks_secret *vk, FILE *f)
{
	h->ops->dump(h, f);
	if (vk)
		luks_dump_hex(f, "MK dump:\t", vk->data, vk->len, "        \t");
}
