/* view_gather.h — a vol_view_fn for tests: gathers a view's pieces into
 * one buffer, counting breaches of vol.h's promises on them (in order,
 * contiguous, cut only at multiples of 4096 of the vol, none empty). */
#ifndef URAID_TEST_VIEW_GATHER_H
#define URAID_TEST_VIEW_GATHER_H

#include <stdint.h>
#include <string.h>

struct view_gather {
	void *buf;     /* receives [off, next) */
	uint64_t off;  /* where the view began */
	uint64_t next; /* where the next piece must begin; start at off */
	int bad;       /* pieces that broke a promise */
};

static inline int view_gather_piece(void *arg, const void *src, uint64_t len, uint64_t off)
{
	struct view_gather *g = arg;

	if (off != g->next || (off != g->off && off % 4096) || len == 0)
		g->bad++;
	memcpy((char *)g->buf + (off - g->off), src, len);
	g->next = off + len;
	return 0;
}

#endif
