/* luks_hdr.c — the in-memory LUKS header that luks1.c and luks2.c fill
 * and luks.c uses (luks_hdr.h): freeing it with its version's state, which
 * key slots are bound to the data segment, and the locked buffers that
 * hold secrets. */
#include "luks/luks_hdr.h"

#include "core/secmem.h"
#include "luks/luks_version.h"

#include <stdlib.h>
#include <string.h>

struct luks_secret *luks_secret_alloc(size_t len)
{
	struct luks_secret *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->data = secmem_alloc(len ? len : 1);
	if (!s->data) {
		free(s);
		return NULL;
	}
	s->len = len;
	return s;
}

void luks_secret_free(struct luks_secret *s)
{
	if (!s)
		return;
	secmem_free(s->data);
	free(s);
}

void luks_hdr_free(struct luks_hdr *h)
{
	if (!h)
		return;
	if (h->ops && h->ops->free)
		h->ops->free(h->state);
	explicit_bzero(h, sizeof(*h));
	free(h);
}

/* LUKS1 binds every key slot: its loader puts them all, and the segment,
 * on digest 0. */
bool luks_slot_bound(const struct luks_hdr *h, int i)
{
	return h->seg_digest >= 0 && h->slots[i].digest == h->seg_digest;
}
