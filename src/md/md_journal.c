/* md_journal.c — md's raid5-cache journal (md_journal.h): the meta-block
 * codec, the log appends made before each stripe update's member writes,
 * write-back's data appends (pinned units that md_jcache.c releases page
 * by page), the checkpoints that move the tail, and replay.
 *
 * Appends are serialised by one lock (j->mu): a request's meta blocks and
 * pages are written in log order and flushed before the next request
 * appends, so the log never holds a hole before a block that was
 * acknowledged (the kernel keeps io_units in order for the same reason).
 * Each request is one "unit"; done() marks it, and the tail may move to
 * the start of the last unit before which every unit is done, once the
 * members were flushed (the kernel's next_checkpoint: that unit is
 * replayed once more, harmlessly).  Past half the log a reclaim thread
 * checkpoints (the kernel's r5l_reclaim_thread), so that no writer waits
 * for the members' flush; a full log makes writers checkpoint, or wait
 * for units in flight. */
#include "md_journal.h"
#include "md.h"

#include "core/crc32c.h"
#include "core/exec.h"
#include "core/log.h"
#include "core/random.h"

#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- the codec ---- */

uint32_t md_journal_uuid_csum(const uint8_t uuid[16])
{
	return crc32c(~0u, uuid, 16);
}

static uint32_t meta_csum(const void *block, uint32_t seed)
{
	uint8_t tmp[R5L_PAGE];

	memcpy(tmp, block, R5L_PAGE);
	((struct r5l_meta_block *)tmp)->checksum = 0;
	return crc32c(seed, tmp, R5L_PAGE);
}

int md_journal_meta_check(const void *block, uint32_t seed, uint64_t pos, uint64_t seq,
                          bool check_seq)
{
	const struct r5l_meta_block *mb = block;

	if (le32toh(mb->magic) != R5L_MAGIC || mb->version != R5L_VERSION ||
	    le64toh(mb->position) != pos || (check_seq && le64toh(mb->seq) != seq))
		return -EINVAL;
	if (meta_csum(block, seed) != le32toh(mb->checksum))
		return -EINVAL;
	if (le32toh(mb->meta_size) > R5L_PAGE || le32toh(mb->meta_size) < sizeof(*mb))
		return -EINVAL;
	return 0;
}

static uint64_t ring_add(uint64_t size, uint64_t pos, uint64_t inc)
{
	pos += inc % size;
	return pos >= size ? pos - size : pos;
}

int md_journal_meta_decode(const void *block, uint64_t pos, uint64_t log_sectors, unsigned parity,
                           struct md_journal_payload *out, unsigned *n, unsigned *pages)
{
	const uint8_t *b = block;
	const struct r5l_meta_block *mb = block;
	uint32_t size = le32toh(mb->meta_size), off = sizeof(*mb);
	uint64_t page_pos = ring_add(log_sectors, pos, R5L_PAGE_SECTORS);

	*n = 0;
	*pages = 0;
	if (size > R5L_PAGE || log_sectors < 2 * R5L_PAGE_SECTORS)
		return -EINVAL;
	while (off < size) {
		struct md_journal_payload *p = &out[*n];
		struct r5l_payload_header h;

		if (*n >= R5L_MAX_PAYLOADS || size - off < sizeof(struct r5l_payload_flush))
			return -EINVAL;
		memcpy(&h, b + off, sizeof(h));
		memset(p, 0, sizeof(*p));
		p->type = le16toh(h.type);
		p->flags = le16toh(h.flags);
		if (p->type == R5L_PAYLOAD_FLUSH) {
			struct r5l_payload_flush f;
			memcpy(&f, b + off, sizeof(f));
			uint32_t bytes = le32toh(f.size);
			if (bytes % 8 || bytes > size - off - sizeof(f))
				return -EINVAL;
			p->flush_at = off + (unsigned)sizeof(f);
			p->nflush = bytes / 8;
			off += (uint32_t)sizeof(f) + bytes;
		} else if (p->type == R5L_PAYLOAD_DATA || p->type == R5L_PAYLOAD_PARITY) {
			struct r5l_payload_data_parity d;
			unsigned want = p->type == R5L_PAYLOAD_DATA ? 1 : parity;
			if (size - off < sizeof(d))
				return -EINVAL;
			memcpy(&d, b + off, sizeof(d));
			if (want < 1 || want > 2 || le32toh(d.size) != want * R5L_PAGE_SECTORS ||
			    size - off - sizeof(d) < 4 * want)
				return -EINVAL;
			p->pages = want;
			p->location = le64toh(d.location);
			for (unsigned i = 0; i < want; i++) {
				uint32_t c;
				memcpy(&c, b + off + sizeof(d) + 4 * i, 4);
				p->csum[i] = le32toh(c);
			}
			p->page_pos = page_pos;
			page_pos = ring_add(log_sectors, page_pos, want * R5L_PAGE_SECTORS);
			*pages += want;
			off += (uint32_t)sizeof(d) + 4 * want;
		} else {
			return -EINVAL;
		}
		(*n)++;
	}
	/* The block and its pages must fit in the log without lapping it. */
	if ((uint64_t)(*pages + 1) * R5L_PAGE_SECTORS >= log_sectors)
		return -EINVAL;
	return 0;
}

/* An empty meta block (meta_size 32) for pos and seq, checksummed. */
static void meta_init(void *block, uint64_t pos, uint64_t seq)
{
	struct r5l_meta_block *mb = block;

	memset(block, 0, R5L_PAGE);
	mb->magic = htole32(R5L_MAGIC);
	mb->version = R5L_VERSION;
	mb->meta_size = htole32(sizeof(*mb));
	mb->seq = htole64(seq);
	mb->position = htole64(pos);
}

static void meta_seal(void *block, uint32_t seed)
{
	struct r5l_meta_block *mb = block;
	mb->checksum = 0;
	mb->checksum = htole32(crc32c(seed, block, R5L_PAGE));
}

int md_journal_refuse(const struct md_super *s, const char *name, const char *what)
{
	if (!(s->feature_map & MD_FEATURE_JOURNAL))
		return 0;
	return err_set(-ENOTSUP,
	               "%s: an array with a write journal: %s is not supported by uraid yet "
	               "(serve, examine and check are; use mdadm for this)",
	               name, what);
}

/* ---- the running journal ---- */

struct md_journal_unit {
	const void *key; /* the raid_log_stripe array log() saw */
	uint64_t start;  /* its first meta block */
	bool done;
	unsigned pins; /* write-back: pages the cache still holds (md_journal_unpin) */
	struct md_journal_unit *next;
	/* Its append (struct jn_build): blocks and pages, written by whichever
	 * writer leads the batch it is in (state: 0 not yet, 1 durable,
	 * -errno). */
	const struct iovec *iov;
	unsigned niov;
	uint64_t total;
	int state;
	struct md_journal_unit *bnext;
};

struct md_journal {
	struct vol *log, *array;
	struct vol *const *members;
	unsigned n, parity;
	uint64_t chunk;
	uint32_t seed;
	uint64_t size; /* log sectors, whole blocks */
	struct md_journal_ops ops;

	pthread_mutex_t mu; /* appends; everything below */
	pthread_cond_t cond;
	uint64_t head, seq; /* where and with what seq the next block goes */
	uint64_t last_cp;   /* the tail as recorded */
	uint64_t next_cp;   /* the start of the last unit with all before it done */
	struct md_journal_unit *first, *last;
	/* Appends numbered but not yet written: one writer (writing) writes
	 * and flushes them all at once (a group commit); broken: an append
	 * failed, and every later one fails (the log has a hole). */
	struct md_journal_unit *batch_first, *batch_last;
	bool writing;
	int broken;
	pthread_mutex_t ckpt; /* one checkpoint at a time */
	bool tail_valid;      /* the block at the tail is a valid meta block */
	/* Write-back: the cache's call to destage what pins the tail. */
	int (*reclaim)(void *ctx);
	void *reclaim_ctx;
	uint64_t tail_seq;
	/* The reclaim thread (started at the first need): checkpoints once
	 * the log is past half full (want), until stop. */
	pthread_t reclaimer;
	pthread_cond_t rcond;
	bool reclaimer_on, reclaim_want, stop;
};

static uint64_t jn_used(const struct md_journal *j)
{
	return j->head >= j->last_cp ? j->head - j->last_cp : j->head + j->size - j->last_cp;
}

/* Read or write npages pages at log position pos, wrapping at the end. */
static int jn_io(struct md_journal *j, bool write, void *buf, uint64_t npages, uint64_t pos,
                 unsigned flags)
{
	while (npages) {
		uint64_t run = (j->size - pos) / R5L_PAGE_SECTORS;
		if (run > npages)
			run = npages;
		int r = write ? vol_write(j->log, buf, run * R5L_PAGE, pos * 512, flags)
		              : vol_read(j->log, buf, run * R5L_PAGE, pos * 512);
		if (r < 0)
			return r;
		buf = (char *)buf + run * R5L_PAGE;
		npages -= run;
		pos = ring_add(j->size, pos, run * R5L_PAGE_SECTORS);
	}
	return 0;
}

/* Write an append's parts iov[0..n) (npages pages) at log position pos,
 * split where the log wraps. */
static int jn_writev(struct md_journal *j, const struct iovec *iov, unsigned n, uint64_t npages,
                     uint64_t pos)
{
	uint64_t run = (j->size - pos) / R5L_PAGE_SECTORS;

	if (run >= npages)
		return vol_writev(j->log, iov, n, pos * 512, 0);
	/* Parts [0, k) and the first `cut` bytes of part k go before the
	 * end of the log, the rest at its start. */
	uint64_t want = run * R5L_PAGE;
	unsigned k = 0;
	while (want >= iov[k].iov_len) {
		want -= iov[k].iov_len;
		k++;
	}
	struct iovec *two = malloc((n + 1) * sizeof(*two));
	if (!two)
		return -ENOMEM;
	memcpy(two, iov, (size_t)k * sizeof(*two));
	unsigned first = k;
	if (want) {
		two[first++] = (struct iovec){iov[k].iov_base, (size_t)want};
	}
	two[first] = (struct iovec){(char *)iov[k].iov_base + want, iov[k].iov_len - want};
	memcpy(two + first + 1, iov + k + 1, (size_t)(n - k - 1) * sizeof(*two));
	int r = vol_writev(j->log, two, first, pos * 512, 0);
	if (r == 0)
		r = vol_writev(j->log, two + first, n - k, 0, 0);
	free(two);
	return r;
}

/* An append being put together: its meta blocks (nmeta, one buffer) and
 * the parts in log order, each meta block followed by the pages its
 * payloads describe, read where they lie (the stripes' buffers, the
 * cache's pages): no copy of them is made, and their checksums are taken
 * there. */
struct jn_build {
	char *meta;
	unsigned nmeta, used;
	struct iovec *iov;
	unsigned niov, cap;
	uint64_t total; /* pages: meta blocks and data */
};

static int jn_build_init(struct jn_build *b, unsigned nmeta, uint64_t npages)
{
	*b = (struct jn_build){.nmeta = nmeta, .total = nmeta + npages};
	if (b->total > UINT_MAX)
		return -ENOSPC;
	b->cap = (unsigned)b->total;
	b->meta = vol_buf_alloc((size_t)nmeta * R5L_PAGE);
	b->iov = malloc((size_t)b->cap * sizeof(*b->iov));
	return b->meta && b->iov ? 0 : -ENOMEM;
}

static void jn_build_free(struct jn_build *b)
{
	free(b->meta);
	free(b->iov);
}

/* One page (or meta block) more, joined to the last part where it lies
 * just after it. */
static void jn_build_push(struct jn_build *b, const char *page)
{
	struct iovec *l = b->niov ? &b->iov[b->niov - 1] : NULL;

	if (l && (const char *)l->iov_base + l->iov_len == page)
		l->iov_len += R5L_PAGE;
	else
		b->iov[b->niov++] = (struct iovec){(void *)page, R5L_PAGE};
}

/* The next meta block, empty, in the append. */
static char *jn_build_meta(struct jn_build *b)
{
	char *mb = b->meta + (size_t)b->used++ * R5L_PAGE;
	meta_init(mb, 0, 0);
	jn_build_push(b, mb);
	return mb;
}

int md_journal_open(struct vol *log, struct vol *array, struct vol *const *members,
                    unsigned raid_disks, unsigned parity, uint64_t chunk, const uint8_t uuid[16],
                    uint64_t tail, const struct md_journal_ops *ops, struct md_journal **out)
{
	struct md_journal *j = calloc(1, sizeof(*j));
	void *blk = vol_buf_alloc(R5L_PAGE);
	int r;

	if (!j || !blk) {
		r = -ENOMEM;
		goto fail;
	}
	j->log = log;
	j->array = array;
	j->members = members;
	j->n = raid_disks;
	j->parity = parity;
	j->chunk = chunk;
	j->seed = md_journal_uuid_csum(uuid);
	j->size = log->size / R5L_PAGE * R5L_PAGE_SECTORS;
	if (ops)
		j->ops = *ops;
	if (j->size < 16 * R5L_PAGE_SECTORS || chunk % R5L_PAGE || parity < 1 || parity > 2 ||
	    32 + (16 + 4) * (uint64_t)raid_disks > R5L_PAGE) {
		r = err_set(-EINVAL,
		            "%s: journal: %llu bytes is too small a log, or chunk %llu "
		            "not whole pages, or too many members",
		            log->name, (unsigned long long)log->size, (unsigned long long)chunk);
		goto fail;
	}
	/* The kernel's r5l_load_log(): a tail off the log or the blocks
	 * reads as 0. */
	if (tail >= j->size || tail % R5L_PAGE_SECTORS)
		tail = 0;
	r = vol_read(log, blk, R5L_PAGE, tail * 512);
	if (r < 0) {
		r = err_set(r, "%s: journal: cannot read the block at the tail", log->name);
		goto fail;
	}
	j->last_cp = j->next_cp = tail;
	j->tail_valid = md_journal_meta_check(blk, j->seed, tail, 0, false) == 0;
	j->tail_seq = le64toh(((struct r5l_meta_block *)blk)->seq);
	pthread_mutex_init(&j->mu, NULL);
	pthread_mutex_init(&j->ckpt, NULL);
	pthread_cond_init(&j->cond, NULL);
	pthread_cond_init(&j->rcond, NULL);
	free(blk);
	*out = j;
	return 0;
fail:
	free(blk);
	free(j);
	vol_close(log);
	return r;
}

uint64_t md_journal_tail(struct md_journal *j)
{
	pthread_mutex_lock(&j->mu);
	uint64_t t = j->last_cp;
	pthread_mutex_unlock(&j->mu);
	return t;
}

uint64_t md_journal_head(struct md_journal *j)
{
	pthread_mutex_lock(&j->mu);
	uint64_t h = j->head;
	pthread_mutex_unlock(&j->mu);
	return h;
}

/* ---- replay ---- */

/* A 4 KiB stripe seen in the log: for each role, where its page is in the
 * log (UINT64_MAX: none) and, for data, its array sector. */
struct jr_stripe {
	uint64_t sect;
	bool used, caching;
	uint64_t *pos, *loc;
};

/* A page replay writes onto a member: the last one for a (role, sect)
 * wins, as when the kernel writes them one after the other. */
struct jr_write {
	uint64_t sect, logpos, order;
	unsigned role;
};

struct jr_map {
	struct jr_stripe *t;
	size_t cap, count;
	unsigned n;
	uint64_t *store; /* cap * n * 2 */
	struct jr_write *w;
	size_t nw, wcap;
};

static void jr_reset(struct jr_map *m, struct jr_stripe *s)
{
	for (unsigned i = 0; i < m->n; i++)
		s->pos[i] = s->loc[i] = UINT64_MAX;
	s->caching = false;
}

static int jr_grow(struct jr_map *m)
{
	struct jr_map g = {.cap = m->cap ? m->cap * 2 : 1024, .n = m->n};

	g.t = calloc(g.cap, sizeof(*g.t));
	g.store = malloc(g.cap * m->n * 2 * sizeof(uint64_t));
	if (!g.t || !g.store) {
		free(g.t);
		free(g.store);
		return -ENOMEM;
	}
	for (size_t i = 0; i < g.cap; i++) {
		g.t[i].pos = g.store + i * m->n * 2;
		g.t[i].loc = g.t[i].pos + m->n;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->t[i].used)
			continue;
		size_t h = (m->t[i].sect * 0x9e3779b97f4a7c15ull) % g.cap;
		while (g.t[h].used)
			h = (h + 1) % g.cap;
		g.t[h].used = true;
		g.t[h].sect = m->t[i].sect;
		g.t[h].caching = m->t[i].caching;
		memcpy(g.t[h].pos, m->t[i].pos, m->n * 2 * sizeof(uint64_t));
	}
	g.count = m->count;
	g.w = m->w;
	g.nw = m->nw;
	g.wcap = m->wcap;
	free(m->t);
	free(m->store);
	*m = g;
	return 0;
}

/* The stripe of member sector sect, made (empty) if absent; NULL: -ENOMEM. */
static struct jr_stripe *jr_get(struct jr_map *m, uint64_t sect, bool make)
{
	if (make && (m->count + 1) * 2 > m->cap && jr_grow(m) < 0)
		return NULL;
	if (!m->cap)
		return NULL;
	size_t h = (sect * 0x9e3779b97f4a7c15ull) % m->cap;
	while (m->t[h].used) {
		if (m->t[h].sect == sect)
			return &m->t[h];
		h = (h + 1) % m->cap;
	}
	if (!make)
		return NULL;
	m->t[h].used = true;
	m->t[h].sect = sect;
	jr_reset(m, &m->t[h]);
	m->count++;
	return &m->t[h];
}

/* A data-and-parity stripe's logged pages go onto its members (the
 * kernel's r5l_recovery_replay_one_stripe: nothing without data); they
 * are recorded here and written, sorted, by jr_write_all. */
static int jr_replay_one(struct md_journal *j, struct jr_map *m, struct jr_stripe *s,
                         struct md_journal_stats *st)
{
	bool data = false;

	for (unsigned i = 0; i < j->n; i++)
		data |= s->pos[i] != UINT64_MAX && s->loc[i] != UINT64_MAX;
	if (data) {
		for (unsigned i = 0; i < j->n; i++) {
			if (s->pos[i] == UINT64_MAX || !j->members[i])
				continue;
			if (m->nw == m->wcap) {
				size_t cap = m->wcap ? m->wcap * 2 : 4096;
				struct jr_write *w = realloc(m->w, cap * sizeof(*w));
				if (!w)
					return -ENOMEM;
				m->w = w;
				m->wcap = cap;
			}
			m->w[m->nw] = (struct jr_write){s->sect, s->pos[i], m->nw, i};
			m->nw++;
		}
		st->data_parity++;
	}
	jr_reset(m, s);
	return 0;
}

static int jr_write_cmp(const void *a, const void *b)
{
	const struct jr_write *x = a, *y = b;
	if (x->role != y->role)
		return x->role < y->role ? -1 : 1;
	if (x->sect != y->sect)
		return x->sect < y->sect ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

struct jr_batch {
	struct md_journal *j;
	struct jr_map *m;
	size_t *first; /* [n + 1]: each role's writes in m->w */
};

#define JR_RUN_PAGES 256 /* 1 MiB written at once */

/* Role i's pages, in member order, runs of adjacent pages in one write. */
static int jr_write_role(void *arg, unsigned i)
{
	struct jr_batch *b = arg;
	struct md_journal *j = b->j;
	struct jr_write *w = b->m->w;
	char *buf = vol_buf_alloc((size_t)JR_RUN_PAGES * R5L_PAGE);
	int r = 0;

	if (!buf)
		return -ENOMEM;
	for (size_t k = b->first[i]; k < b->first[i + 1] && r == 0;) {
		size_t run = 0;
		uint64_t start = w[k].sect;
		while (k < b->first[i + 1] && run < JR_RUN_PAGES &&
		       w[k].sect == start + run * R5L_PAGE_SECTORS) {
			/* the last logged version of the page */
			while (k + 1 < b->first[i + 1] && w[k + 1].sect == w[k].sect)
				k++;
			r = jn_io(j, false, buf + run * R5L_PAGE, 1, w[k].logpos, 0);
			if (r < 0)
				break;
			run++;
			k++;
		}
		if (r == 0)
			r = vol_write(j->members[i], buf, run * R5L_PAGE, start * 512, 0);
		if (r < 0)
			r = err_set(r, "journal replay: member %u at sector %llu: %s", i,
			            (unsigned long long)start, strerror(-r));
	}
	free(buf);
	return r;
}

/* Every recorded page onto its member, members in parallel. */
static int jr_write_all(struct md_journal *j, struct jr_map *m)
{
	size_t *first = calloc(j->n + 1, sizeof(*first));
	struct jr_batch b = {j, m, first};
	int r;

	if (!first)
		return -ENOMEM;
	if (m->nw)
		qsort(m->w, m->nw, sizeof(*m->w), jr_write_cmp);
	for (unsigned i = 0, k = 0; i <= j->n; i++) {
		while (k < m->nw && m->w[k].role < i)
			k++;
		first[i] = k;
	}
	r = exec_parallel(j->n, jr_write_role, &b);
	free(first);
	return r;
}

/* The member sector, role and parity roles of array sector asect's page;
 * -EINVAL when it is not in the array. */
static int jr_locate_data(struct md_journal *j, uint64_t asect, uint64_t *sect, unsigned *role)
{
	uint64_t moff;
	int p, q;

	if (asect % R5L_PAGE_SECTORS || asect > UINT64_MAX / 512)
		return -EINVAL;
	int r = raid_log_locate(j->array, asect * 512, role, &moff, &p, &q);
	*sect = moff / 512;
	return r;
}

static int jr_locate_parity(struct md_journal *j, uint64_t sect, int *p, int *q)
{
	uint64_t ndata = j->n - j->parity, moff, row, aoff, m2;
	unsigned role;

	if (sect % R5L_PAGE_SECTORS || sect > UINT64_MAX / 512)
		return -EINVAL;
	moff = sect * 512;
	row = moff / j->chunk;
	if (row > UINT64_MAX / (ndata * j->chunk))
		return -EINVAL;
	aoff = row * ndata * j->chunk + moff % j->chunk;
	return raid_log_locate(j->array, aoff, &role, &m2, p, q);
}

/* Load one checked and decoded meta block's payloads into the map (the
 * kernel's r5c_recovery_analyze_meta_block). */
static int jr_apply(struct md_journal *j, struct jr_map *m, const void *block,
                    const struct md_journal_payload *pl, unsigned np, struct md_journal_stats *st)
{
	for (unsigned k = 0; k < np; k++) {
		const struct md_journal_payload *p = &pl[k];
		struct jr_stripe *s;
		uint64_t sect;
		int r;

		if (p->type == R5L_PAYLOAD_FLUSH) {
			for (unsigned i = 0; i < p->nflush; i++) {
				uint64_t v;
				memcpy(&v, (const uint8_t *)block + p->flush_at + 8 * i, 8);
				if ((s = jr_get(m, le64toh(v), false)))
					jr_reset(m, s);
			}
			continue;
		}
		if (p->type == R5L_PAYLOAD_DATA) {
			unsigned role;
			if (jr_locate_data(j, p->location, &sect, &role) < 0)
				return -EINVAL;
			if (!(s = jr_get(m, sect, true)))
				return -ENOMEM;
			int pr, qr;
			if (jr_locate_parity(j, sect, &pr, &qr) < 0)
				return -EINVAL;
			/* Data after the stripe's parity: what came before is
			 * on the members already; write it and start over. */
			if (!s->caching && s->pos[pr] != UINT64_MAX &&
			    (r = jr_replay_one(j, m, s, st)) < 0)
				return r;
			s->pos[role] = p->page_pos;
			s->loc[role] = p->location;
			s->caching = true;
		} else {
			int pr, qr;
			if (jr_locate_parity(j, p->location, &pr, &qr) < 0 ||
			    (qr >= 0) != (p->pages == 2))
				return -EINVAL;
			if (!(s = jr_get(m, p->location, true)))
				return -ENOMEM;
			s->pos[pr] = p->page_pos;
			if (qr >= 0)
				s->pos[qr] = ring_add(j->size, p->page_pos, R5L_PAGE_SECTORS);
			s->caching = false;
		}
	}
	return 0;
}

/* Every page a decoded block names matches its checksum (the kernel's
 * r5l_recovery_verify_data_checksum_for_mb). */
static int jr_verify(struct md_journal *j, const struct md_journal_payload *pl, unsigned np,
                     void *page)
{
	for (unsigned k = 0; k < np; k++)
		for (unsigned i = 0; i < pl[k].pages; i++) {
			uint64_t at = ring_add(j->size, pl[k].page_pos, i * R5L_PAGE_SECTORS);
			int r = jn_io(j, false, page, 1, at, 0);
			if (r < 0)
				return r;
			if (crc32c(j->seed, page, R5L_PAGE) != pl[k].csum[i])
				return -EINVAL;
		}
	return 0;
}

/* The remaining stripes: data and parity onto the members, data only
 * through the array (which computes their parity). */
static int jr_finish(struct md_journal *j, struct jr_map *m, void *page,
                     struct md_journal_stats *st)
{
	int r;

	for (size_t i = 0; i < m->cap; i++)
		if (m->t[i].used && !m->t[i].caching && (r = jr_replay_one(j, m, &m->t[i], st)) < 0)
			return r;
	r = jr_write_all(j, m);
	if (r < 0)
		return r;
	for (size_t i = 0; i < m->cap; i++) {
		struct jr_stripe *s = &m->t[i];
		if (!s->used || !s->caching)
			continue;
		for (unsigned d = 0; d < j->n; d++) {
			if (s->pos[d] == UINT64_MAX || s->loc[d] == UINT64_MAX)
				continue;
			r = jn_io(j, false, page, 1, s->pos[d], 0);
			if (r == 0)
				r = vol_write(j->array, page, R5L_PAGE, s->loc[d] * 512, 0);
			if (r < 0)
				return err_set(r, "journal replay: data at array sector %llu: %s",
				               (unsigned long long)s->loc[d], strerror(-r));
		}
		st->data_only++;
	}
	return 0;
}

int md_journal_recover(struct md_journal *j, struct md_journal_stats *st)
{
	struct md_journal_payload *pl = malloc(R5L_MAX_PAYLOADS * sizeof(*pl));
	struct jr_map m = {.n = j->n};
	void *blk = vol_buf_alloc(R5L_PAGE), *page = vol_buf_alloc(R5L_PAGE);
	uint64_t pos = j->last_cp, seq = j->tail_seq;
	int r = -ENOMEM;

	memset(st, 0, sizeof(*st));
	if (!pl || !blk || !page)
		goto out;
	if (!j->tail_valid) {
		/* No log at the tail: a new one, as the kernel starts it. */
		uint32_t rnd;
		if ((r = random_fill(&rnd, sizeof(rnd))) < 0)
			goto out;
		st->created = true;
		pos = 0;
		seq = rnd;
	} else {
		for (;;) {
			unsigned np, pages;
			r = jn_io(j, false, blk, 1, pos, 0);
			if (r < 0)
				goto out;
			if (md_journal_meta_check(blk, j->seed, pos, seq, true) < 0)
				break;
			st->meta_blocks++;
			if (md_journal_meta_decode(blk, pos, j->size, j->parity, pl, &np, &pages) <
			        0 ||
			    (r = jr_verify(j, pl, np, page)) == -EINVAL) {
				/* A bad payload drops the block; the kernel moves
				 * one block on (where a page lies: the log ends). */
				seq++;
				pos = ring_add(j->size, pos, R5L_PAGE_SECTORS);
				st->log_bytes += R5L_PAGE;
				continue;
			}
			if (r < 0)
				goto out;
			r = jr_apply(j, &m, blk, pl, np, st);
			if (r == -EINVAL) {
				/* a location outside the array: the block is not ours */
				break;
			}
			if (r < 0)
				goto out;
			seq++;
			pos = ring_add(j->size, pos, (uint64_t)(1 + pages) * R5L_PAGE_SECTORS);
			st->log_bytes += (uint64_t)(1 + pages) * R5L_PAGE;
			if (st->log_bytes >= j->size * 512)
				break; /* a lap: cannot be (seq), but bound it */
		}
		r = jr_finish(j, &m, page, st);
		if (r < 0)
			goto out;
		r = vol_flush(j->array);
		if (r < 0)
			goto out;
		seq += 10000; /* the kernel's gap: an old block past pos never chains on */
	}
	meta_init(blk, pos, seq);
	meta_seal(blk, j->seed);
	r = jn_io(j, true, blk, 1, pos, VOL_FUA);
	if (r < 0) {
		r = err_set(r, "%s: journal: cannot write a meta block", j->log->name);
		goto out;
	}
	pthread_mutex_lock(&j->mu);
	j->head = ring_add(j->size, pos, R5L_PAGE_SECTORS);
	j->seq = seq + 1;
	j->last_cp = j->next_cp = pos;
	j->tail_valid = true;
	pthread_mutex_unlock(&j->mu);
	r = j->ops.set_tail ? j->ops.set_tail(j->ops.ctx, pos) : 0;
out:
	free(m.t);
	free(m.store);
	free(m.w);
	free(pl);
	free(blk);
	free(page);
	return r;
}

/* ---- write-through logging ---- */

int md_journal_checkpoint(struct md_journal *j)
{
	int r;

	pthread_mutex_lock(&j->ckpt);
	pthread_mutex_lock(&j->mu);
	uint64_t cp = j->next_cp;
	bool moved = cp != j->last_cp;
	pthread_mutex_unlock(&j->mu);
	/* Flushed always: a caller (close) counts on the members' flush.
	 * Only the members: the units done are on them, and what
	 * write-behind holds is logged by lanes that may be waiting for this
	 * checkpoint's room (jn_wait_room_locked). */
	r = raid_flush_members(j->array);
	if (r == 0 && moved) {
		if (j->ops.set_tail)
			r = j->ops.set_tail(j->ops.ctx, cp);
		if (r == 0) {
			pthread_mutex_lock(&j->mu);
			j->last_cp = cp;
			pthread_cond_broadcast(&j->cond);
			pthread_mutex_unlock(&j->mu);
		}
	}
	pthread_mutex_unlock(&j->ckpt);
	return r;
}

/* Units done from the oldest on leave the list; the tail may move to the
 * start of the last of them (j->mu held). */
static void jn_pop_locked(struct md_journal *j)
{
	while (j->first && j->first->done) {
		struct md_journal_unit *u = j->first;
		j->next_cp = u->start;
		j->first = u->next;
		if (!j->first)
			j->last = NULL;
		free(u);
	}
	pthread_cond_broadcast(&j->cond);
}

/* The reclaim thread: a checkpoint each time it is asked for one; a
 * failure shows at the next checkpoint (a writer's, or close's). */
static void *jn_reclaim_run(void *arg)
{
	struct md_journal *j = arg;

	pthread_mutex_lock(&j->mu);
	for (;;) {
		while (!j->reclaim_want && !j->stop)
			pthread_cond_wait(&j->rcond, &j->mu);
		if (j->stop)
			break;
		j->reclaim_want = false;
		pthread_mutex_unlock(&j->mu);
		md_journal_checkpoint(j);
		pthread_mutex_lock(&j->mu);
	}
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* Ask the reclaim thread for a checkpoint, starting it the first time
 * (j->mu held).  Without a thread, the caller's next writer that finds
 * the log full checkpoints itself (jn_wait_room_locked). */
static void jn_reclaim_locked(struct md_journal *j)
{
	if (!j->reclaimer_on && !j->stop)
		j->reclaimer_on = pthread_create(&j->reclaimer, NULL, jn_reclaim_run, j) == 0;
	j->reclaim_want = true;
	pthread_cond_signal(&j->rcond);
}

/* Wait (j->mu held) until total more pages fit under limit: move the tail
 * (flushing the members) or wait for the units in flight to reach them
 * (write-back: ask the cache to destage what pins the tail).  0, or the
 * checkpoint's error. */
static int jn_wait_room_locked(struct md_journal *j, uint64_t total, uint64_t limit)
{
	int r;

	while (!j->broken && limit <= jn_used(j) + (total + 1) * R5L_PAGE_SECTORS) {
		if (j->next_cp != j->last_cp) {
			pthread_mutex_unlock(&j->mu);
			r = md_journal_checkpoint(j);
			pthread_mutex_lock(&j->mu);
			if (r < 0)
				return r;
		} else if (j->reclaim) {
			pthread_mutex_unlock(&j->mu);
			r = j->reclaim(j->reclaim_ctx);
			pthread_mutex_lock(&j->mu);
			if (r < 0)
				return r; /* the cache cannot destage: no room comes */
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 20 * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&j->cond, &j->mu, &ts);
		} else
			pthread_cond_wait(&j->cond, &j->mu);
	}
	return 0;
}

/* Append b (meta blocks, each followed by its pages, positions and seqs
 * filled in here) as one unit keyed by key, in log order, by group
 * commit: durable on the log on return.  A write-back
 * append (pins > 0: its pages are held in the cache) may fill at most
 * half the log, so that the parity of the stripes it pins always fits
 * beside it, and its unit stays until md_journal_unpin has been called
 * pins times (*out); a full log asks the cache to destage. */
static int jn_append(struct md_journal *j, struct jn_build *ap, const void *key, unsigned pins,
                     struct md_journal_unit **out)
{
	uint64_t limit = pins ? j->size / 2 : j->size, total = ap->total;
	int r;

	struct md_journal_unit *unit = calloc(1, sizeof(*unit));
	if (!unit)
		return -ENOMEM;
	pthread_mutex_lock(&j->mu);
	if (pins && !j->broken && limit <= jn_used(j) + (total + 1) * R5L_PAGE_SECTORS) {
		/* the cache waits (md_journal_wait_room) holding no stripe */
		pthread_mutex_unlock(&j->mu);
		free(unit);
		return -EAGAIN;
	}
	r = jn_wait_room_locked(j, total, limit);
	if (r < 0)
		goto fail;
	if (j->broken) {
		r = j->broken;
		goto fail;
	}
	unit->key = key ? key : unit;
	unit->pins = pins;
	unit->start = j->head;
	unit->iov = ap->iov;
	unit->niov = ap->niov;
	unit->total = total;
	/* Number the blocks in log order. */
	uint64_t at = 0; /* pages of the append before block k */
	for (unsigned k = 0; k < ap->nmeta; k++) {
		char *p = ap->meta + (size_t)k * R5L_PAGE;
		struct r5l_meta_block *m = (struct r5l_meta_block *)p;
		uint64_t pos = ring_add(j->size, j->head, at * R5L_PAGE_SECTORS);
		m->position = htole64(pos);
		m->seq = htole64(j->seq++);
		unsigned pages = 0; /* the block's pages: its payloads' */
		for (uint32_t off = 32; off < le32toh(m->meta_size);) {
			struct r5l_payload_data_parity d;
			memcpy(&d, p + off, sizeof(d));
			pages += le32toh(d.size) / R5L_PAGE_SECTORS;
			off += (uint32_t)sizeof(d) + 4 * (le32toh(d.size) / R5L_PAGE_SECTORS);
		}
		meta_seal(m, j->seed);
		at += 1 + pages;
	}
	j->head = ring_add(j->size, j->head, total * R5L_PAGE_SECTORS);
	/* In the units (done() marks it once the member writes are through,
	 * the last unpin a write-back one) and in the batch. */
	if (j->last)
		j->last->next = unit;
	else
		j->first = unit;
	j->last = unit;
	if (j->batch_last)
		j->batch_last->bnext = unit;
	else
		j->batch_first = unit;
	j->batch_last = unit;
	if (!j->writing) {
		/* Lead: write what is numbered, in log order, flush once;
		 * again while others numbered theirs meanwhile. */
		j->writing = true;
		while (j->batch_first) {
			struct md_journal_unit *b = j->batch_first;
			j->batch_first = j->batch_last = NULL;
			pthread_mutex_unlock(&j->mu);
			int e = 0;
			for (struct md_journal_unit *u = b; u && e == 0; u = u->bnext)
				e = jn_writev(j, u->iov, u->niov, u->total, u->start);
			if (e == 0)
				e = vol_flush(j->log);
			pthread_mutex_lock(&j->mu);
			for (struct md_journal_unit *u = b; u; u = u->bnext)
				u->state = e ? e : 1;
			if (e)
				j->broken = e;
			pthread_cond_broadcast(&j->cond);
		}
		j->writing = false;
	}
	while (unit->state == 0)
		pthread_cond_wait(&j->cond, &j->mu);
	if (unit->state < 0) {
		/* out of the units: no done() comes for it */
		r = unit->state;
		struct md_journal_unit **pp = &j->first, *prev = NULL;
		while (*pp != unit) {
			prev = *pp;
			pp = &(*pp)->next;
		}
		*pp = unit->next;
		if (j->last == unit)
			j->last = prev;
		goto fail;
	}
	unit->iov = NULL;
	/* Past half the log: a stream's pieces (write-through's, and
	 * write-back's while its cache is empty) keep the tail moving, by the
	 * reclaim thread, so that this writer does not wait for the members'
	 * flush (they are writing the pieces logged before this one); in
	 * steps of a quarter of the log at least, as the kernel reclaims
	 * (max_free_space), unless it is three quarters full. */
	uint64_t used = jn_used(j), movable = (j->next_cp + j->size - j->last_cp) % j->size;
	if (!pins && used * 2 > j->size && (movable * 4 >= j->size || used * 4 > j->size * 3))
		jn_reclaim_locked(j);
	pthread_mutex_unlock(&j->mu);
	if (out)
		*out = unit;
	return 0;
fail:
	pthread_mutex_unlock(&j->mu);
	free(unit);
	return err_set(r, "%s: journal write failed: %s", j->log->name, strerror(-r));
}

/* ---- write-back (md_jcache.c's side) ---- */

/* Set while this thread destages cached stripes through the array: their
 * data pages are in the log already, so jn_log records parity only (the
 * kernel's r5l_write_stripe for a stripe leaving the caching phase). */
static _Thread_local bool jn_destaging;
/* Set while this thread writes through the array what must be on the
 * members (or logged) when the write returns: a destage, or a write
 * that releases cached pages (md_journal_write_direct).  The RAID layer
 * asks it (raid_log_ops.direct) and writes such a write direct, never
 * behind. */
static _Thread_local bool jn_no_behind;

/* The pages and meta blocks of a data append of n pages. */
static uint64_t jn_data_total(unsigned n)
{
	const unsigned per_meta = (R5L_PAGE - 32) / (16 + 4);
	return (n + per_meta - 1) / per_meta + (uint64_t)n;
}

int md_journal_log_data(struct md_journal *j, const uint64_t *aoff, const char *const *page,
                        unsigned n, struct md_journal_unit **unit)
{
	const unsigned per_meta = (R5L_PAGE - 32) / (16 + 4);
	uint64_t total = jn_data_total(n);
	struct jn_build b;
	int r;

	if (!n || (total + 1) * R5L_PAGE_SECTORS * 4 >= j->size)
		return err_set(-ENOSPC,
		               "%s: journal: a write of %u pages does not fit a log of %llu",
		               j->log->name, n, (unsigned long long)(j->size / R5L_PAGE_SECTORS));
	if ((r = jn_build_init(&b, (unsigned)(total - n), n)) < 0)
		goto out;
	for (unsigned i = 0; i < n; i += per_meta) {
		char *mb = jn_build_meta(&b);
		uint32_t moff = 32;
		for (unsigned k = i; k < n && k < i + per_meta; k++) {
			struct r5l_payload_data_parity pd = {
			    .header = {htole16(R5L_PAYLOAD_DATA), 0},
			    .size = htole32(R5L_PAGE_SECTORS),
			    .location = htole64(aoff[k] / 512),
			};
			uint32_t c = htole32(crc32c(j->seed, page[k], R5L_PAGE));
			jn_build_push(&b, page[k]);
			memcpy(mb + moff, &pd, sizeof(pd));
			memcpy(mb + moff + sizeof(pd), &c, 4);
			moff += (uint32_t)sizeof(pd) + 4;
		}
		((struct r5l_meta_block *)mb)->meta_size = htole32(moff);
	}
	r = jn_append(j, &b, NULL, n, unit);
out:
	jn_build_free(&b);
	return r;
}

unsigned md_journal_max_data(struct md_journal *j)
{
	uint64_t pages = j->size / R5L_PAGE_SECTORS / 8;
	return pages > UINT_MAX ? UINT_MAX : (unsigned)pages;
}

int md_journal_wait_room(struct md_journal *j, unsigned n)
{
	pthread_mutex_lock(&j->mu);
	int r = jn_wait_room_locked(j, jn_data_total(n), j->size / 2);
	if (r == 0 && j->broken)
		r = j->broken;
	pthread_mutex_unlock(&j->mu);
	return r;
}

void md_journal_unpin(struct md_journal *j, struct md_journal_unit *unit)
{
	pthread_mutex_lock(&j->mu);
	if (unit->pins && --unit->pins == 0) {
		unit->done = true;
		jn_pop_locked(j);
	}
	pthread_mutex_unlock(&j->mu);
}

int md_journal_destage(struct md_journal *j, const void *buf, uint64_t len, uint64_t off)
{
	jn_destaging = jn_no_behind = true;
	int r = vol_write(j->array, buf, len, off, 0);
	jn_destaging = jn_no_behind = false;
	return r;
}

int md_journal_write_direct(struct md_journal *j, const void *buf, uint64_t len, uint64_t off,
                            unsigned flags)
{
	jn_no_behind = true;
	int r = vol_write(j->array, buf, len, off, flags);
	jn_no_behind = false;
	return r;
}

static bool jn_direct(void *ctx)
{
	(void)ctx;
	return jn_no_behind;
}

void md_journal_set_reclaim(struct md_journal *j, int (*reclaim)(void *ctx), void *ctx)
{
	pthread_mutex_lock(&j->mu);
	j->reclaim = reclaim;
	j->reclaim_ctx = ctx;
	pthread_mutex_unlock(&j->mu);
}

int md_journal_pressure(struct md_journal *j, bool *movable)
{
	pthread_mutex_lock(&j->mu);
	int quarters = (int)(jn_used(j) * 4 / j->size);
	*movable = j->next_cp != j->last_cp;
	pthread_mutex_unlock(&j->mu);
	return quarters;
}

/* One request's updates go into the log as, per 4 KiB page row of each
 * update, the written data pages, then P (and Q). */
static int jn_log(void *ctx, const struct raid_log_stripe *s, unsigned n, unsigned flags)
{
	struct md_journal *j = ctx;
	unsigned npar = j->parity, nmeta = 0;
	uint64_t npages = 0, total;
	uint32_t room = 0; /* bytes left in the current meta block */
	struct jn_build b;
	int r;

	(void)flags;                /* every append is flushed: FUA comes free */
	bool cached = jn_destaging; /* the data pages are in the log already */
	/* Count the meta blocks and pages: a stripe's payloads never span
	 * two meta blocks (the kernel's r5l_get_meta). */
	for (unsigned i = 0; i < n; i++) {
		unsigned w = 0;
		if (s[i].moff % R5L_PAGE || s[i].len % R5L_PAGE)
			return -EINVAL;
		for (unsigned d = 0; d < s[i].ndata && !cached; d++)
			w += s[i].written[d];
		uint32_t need = (16 + 4) * w + 16 + 4 * npar;
		for (uint64_t pg = 0; pg < s[i].len / R5L_PAGE; pg++) {
			if (room < need) {
				nmeta++;
				room = R5L_PAGE - 32;
			}
			room -= need;
			npages += w + npar;
		}
	}
	total = nmeta + npages;
	/* At most half the log, so that it always fits beside the unit the
	 * tail points at. */
	if ((total + 1) * R5L_PAGE_SECTORS * 2 >= j->size)
		return err_set(-ENOSPC,
		               "%s: journal: a request of %llu pages does not fit a log "
		               "of %llu",
		               j->log->name, (unsigned long long)total,
		               (unsigned long long)(j->size / R5L_PAGE_SECTORS));
	if ((r = jn_build_init(&b, nmeta, npages)) < 0)
		goto out;
	/* Descriptors and checksums of the pages where they lie; positions
	 * and seqs come under the lock. */
	char *mb = NULL;
	uint32_t moff_in = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct raid_log_stripe *u = &s[i];
		unsigned w = 0;
		for (unsigned d = 0; d < u->ndata && !cached; d++)
			w += u->written[d];
		uint32_t need = (16 + 4) * w + 16 + 4 * npar;
		for (uint64_t pg = 0; pg < u->len / R5L_PAGE; pg++) {
			uint64_t in = pg * R5L_PAGE;
			if (!mb || R5L_PAGE - moff_in < need) {
				if (mb)
					((struct r5l_meta_block *)mb)->meta_size = htole32(moff_in);
				mb = jn_build_meta(&b);
				moff_in = 32;
			}
			for (unsigned d = 0; d < u->ndata; d++) {
				if (!u->written[d] || cached)
					continue;
				struct r5l_payload_data_parity pd = {
				    .header = {htole16(R5L_PAYLOAD_DATA), 0},
				    .size = htole32(R5L_PAGE_SECTORS),
				    .location = htole64((u->aoff + d * j->chunk + in) / 512),
				};
				const char *src = u->data[d] + in;
				uint32_t c = htole32(crc32c(j->seed, src, R5L_PAGE));
				jn_build_push(&b, src);
				memcpy(mb + moff_in, &pd, sizeof(pd));
				memcpy(mb + moff_in + sizeof(pd), &c, 4);
				moff_in += (uint32_t)sizeof(pd) + 4;
			}
			struct r5l_payload_data_parity pp = {
			    .header = {htole16(R5L_PAYLOAD_PARITY), 0},
			    .size = htole32(npar * R5L_PAGE_SECTORS),
			    .location = htole64((u->moff + in) / 512),
			};
			memcpy(mb + moff_in, &pp, sizeof(pp));
			moff_in += (uint32_t)sizeof(pp);
			for (unsigned k = 0; k < npar; k++) {
				const char *src = (k == 0 ? u->pbuf : u->qbuf) + in;
				uint32_t c = htole32(crc32c(j->seed, src, R5L_PAGE));
				jn_build_push(&b, src);
				memcpy(mb + moff_in, &c, 4);
				moff_in += 4;
			}
		}
	}
	if (mb)
		((struct r5l_meta_block *)mb)->meta_size = htole32(moff_in);

	r = jn_append(j, &b, s, 0, NULL);
out:
	jn_build_free(&b);
	return r;
}

static void jn_done(void *ctx, const struct raid_log_stripe *s, unsigned n, int r)
{
	struct md_journal *j = ctx;

	(void)n;
	(void)r; /* a failed member write: the member is failed, the log is not needed */
	pthread_mutex_lock(&j->mu);
	for (struct md_journal_unit *u = j->first; u; u = u->next)
		if (u->key == s && !u->done) {
			u->done = true;
			break;
		}
	jn_pop_locked(j);
	pthread_mutex_unlock(&j->mu);
}

void md_journal_log_ops(struct md_journal *j, struct raid_log_ops *ops)
{
	*ops = (struct raid_log_ops){.log = jn_log,
	                             .done = jn_done,
	                             .ctx = j,
	                             .align = R5L_PAGE,
	                             .overlap = true,
	                             .direct = jn_direct};
}

void md_journal_close(struct md_journal *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->mu);
	j->stop = true;
	pthread_cond_signal(&j->rcond);
	bool on = j->reclaimer_on;
	pthread_mutex_unlock(&j->mu);
	if (on)
		pthread_join(j->reclaimer, NULL);
	while (j->first) {
		struct md_journal_unit *u = j->first;
		j->first = u->next;
		free(u);
	}
	pthread_mutex_destroy(&j->mu);
	pthread_mutex_destroy(&j->ckpt);
	pthread_cond_destroy(&j->cond);
	pthread_cond_destroy(&j->rcond);
	vol_close(j->log);
	free(j);
}
