/* md_jcache.c — the write-back cache of md's raid5-cache journal
 * (md_jcache.h): pages by stripe row, the writers' path (log, then hold),
 * the readers' overlay, and the destage thread.
 *
 * The replay rule that shapes it (md_journal.c, the kernel's
 * r5c_recovery_analyze_meta_block): a page row's PARITY in the log is
 * paired with every DATA of that page row logged before it.  So a row's
 * parity may be logged only by a destage that writes every page the cache
 * holds of the row (the array may recompute the parity of the whole row:
 * its pages all go in one write, the hull from the first to the last, the
 * pages between read from the array and written back unchanged), and no
 * write may log data into a row between a destage's start and its end
 * (writers wait; a destage skips a row with a writer inside).  A write
 * that goes through (jc_write_rows) holds its rows as a destage does.
 *
 * While the cache holds nothing, a write of 64 KiB or more goes to the
 * array as it is (jc_write_stream), written through as write-through
 * writes it (a single one: partial rows read, modified and written) or,
 * where the RAID layer's write-behind may take
 * it as write-through's stream is taken: pieces whose log append and
 * member writes overlap, acknowledged once copied, made durable by the
 * next FLUSH (md_jcache_flush) or FUA.  Those pieces log DATA and PARITY
 * of rows no cached page is in; before a page is cached again, every
 * such write has returned and write-behind is drained (jc_write_piece), so
 * that no DATA cached meets an older piece logged after it, and no append
 * is pinned while a piece waits for log room.  Destages and the writes
 * that release cached pages go direct (md_journal_destage,
 * md_journal_write_direct): what they release counts as on the members
 * when they return.
 * Lock order: c->mu, then the journal's own. */
#include "md_jcache.h"

#include "core/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JC_PAGE R5L_PAGE
#define JC_BUCKETS 4096
#define JC_CKPT_ROWS 64 /* rows destaged between checkpoints under pressure */
/* 4 KiB stripes (the kernel's stripe_heads) holding cached data, at most:
 * half the kernel's default stripe cache (256).  A crash leaves them
 * data-only in the log, and the kernel's replay must hold every data-only
 * stripe in its stripe cache at once, in eight hash buckets of 32: when
 * one runs dry it grows the cache and then waits for a stripe without
 * NOBLOCK.  With 256 here, Linux 6.1's r5l_start hung there once
 * (md-kernel-journal.sh (c), in raid5_get_active_stripe), so the bound
 * keeps the replay inside the cache it starts with. */
#define JC_MAX_STRIPES 128
/* Destage threads: rows are independent, and a RAID5 row's update keeps
 * two or three members busy (reads of the others, then data and parity),
 * so several in flight keep every disk's queue fed. */
#define JC_DESTAGERS 4
/* Writes this long go to the array while the cache is empty (see the
 * top): write-behind's least (raid_wb.c), so that a stream's requests
 * are taken whole, their partial rows held for the next one there, and
 * none leaves a tail here that keeps the next from coming this way.
 * Shorter ones are cached. */
#define JC_STREAM_MIN (64u << 10)

struct jc_page {
	uint32_t idx; /* page in the row: data chunk * pages a chunk + page in it */
	char *data;
	struct md_journal_unit *unit; /* the append that logged this version */
};

struct jc_row {
	uint64_t row;
	struct jc_page *pg;
	unsigned npg, cap;
	unsigned writers;  /* writes logging into it now */
	unsigned reserved; /* pg[] entries they may add (allocated already) */
	unsigned nstripes; /* 4 KiB stripes (page offsets in the chunk) it holds */
	bool destaging;
	struct jc_row *hnext;       /* hash chain */
	struct jc_row *prev, *next; /* oldest first (first written) */
};

struct md_jcache {
	struct md_journal *j;
	struct vol *array;
	uint64_t row_bytes;
	uint32_t row_pages, chunk_pages;
	uint64_t cap; /* pages */
	unsigned piece;

	pthread_mutex_t mu;
	pthread_cond_t cond;  /* rows, room, drain: writers and drainers wait */
	pthread_cond_t wake;  /* the destage thread waits */
	pthread_rwlock_t rmw; /* aligned writes shared; partial pages and barriers alone */
	struct jc_row *bucket[JC_BUCKETS];
	struct jc_row *head, *tail;
	uint64_t pages;   /* held and reserved */
	uint64_t stripes; /* 4 KiB stripes held (JC_MAX_STRIPES) */
	uint64_t sres;    /* and reserved by writers inside */
	int err;          /* a destage failed: writes fail with it */
	unsigned paused;
	unsigned busy; /* destages (and a checkpoint) in progress */
	bool stop, drain, draining, ckpt;
	unsigned since_cp;
	unsigned waiting;   /* writers waiting for room */
	unsigned streaming; /* jc_write_stream writes in flight */
	bool stream_want;   /* one found the cache holding pages: destage them */
	bool behind;        /* one returned since the last md_jcache_flush */
	uint64_t cursor;    /* the elevator: the row after the last one taken */
	struct md_jcache_stats st;
	pthread_t thread[JC_DESTAGERS];
	unsigned nthreads;
};

static struct jc_row **jc_slot(struct md_jcache *c, uint64_t row)
{
	struct jc_row **p = &c->bucket[(row * 0x9e3779b97f4a7c15ull) >> 52];
	while (*p && (*p)->row != row)
		p = &(*p)->hnext;
	return p;
}

static struct jc_row *jc_find(struct md_jcache *c, uint64_t row)
{
	return *jc_slot(c, row);
}

/* row's entry, made (empty, newest) if absent; NULL: -ENOMEM. */
static struct jc_row *jc_get(struct md_jcache *c, uint64_t row)
{
	struct jc_row **p = jc_slot(c, row);
	if (*p)
		return *p;
	struct jc_row *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->row = row;
	*p = r;
	r->prev = c->tail;
	if (c->tail)
		c->tail->next = r;
	else
		c->head = r;
	c->tail = r;
	return r;
}

static void jc_remove(struct md_jcache *c, struct jc_row *r)
{
	*jc_slot(c, r->row) = r->hnext;
	if (r->prev)
		r->prev->next = r->next;
	else
		c->head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		c->tail = r->prev;
	for (unsigned i = 0; i < r->npg; i++)
		free(r->pg[i].data);
	free(r->pg);
	free(r);
}

static struct jc_page *jc_page_find(struct jc_row *r, uint32_t idx)
{
	for (unsigned i = 0; i < r->npg; i++)
		if (r->pg[i].idx == idx)
			return &r->pg[i];
	return NULL;
}

/* ---- destage ---- */

/* The first and last page (in row order) r holds. */
static void jc_row_span(const struct jc_row *r, uint32_t *lo, uint32_t *hi)
{
	*lo = UINT32_MAX;
	*hi = 0;
	for (unsigned i = 0; i < r->npg; i++) {
		*lo = r->pg[i].idx < *lo ? r->pg[i].idx : *lo;
		*hi = r->pg[i].idx > *hi ? r->pg[i].idx : *hi;
	}
}

/* Write rows rs[0..k) (consecutive, marked destaging by the caller, so
 * that nobody changes them) to the array: the hull of their pages in one
 * write.  c->mu not held. */
static int jc_destage_rows(struct md_jcache *c, struct jc_row *const *rs, unsigned k,
                           uint64_t *reads)
{
	uint32_t lo, hi, l2, h2;

	jc_row_span(rs[0], &lo, &hi);
	jc_row_span(rs[k - 1], &l2, &h2);
	uint64_t first = rs[0]->row * c->row_pages + lo;
	uint64_t n = rs[k - 1]->row * c->row_pages + h2 + 1 - first;
	char *buf = vol_buf_alloc((size_t)n * JC_PAGE);
	bool *have = calloc(n, sizeof(*have));
	int e = -ENOMEM;

	if (!buf || !have)
		goto out;
	for (unsigned j = 0; j < k; j++)
		for (unsigned i = 0; i < rs[j]->npg; i++) {
			uint64_t at = rs[j]->row * c->row_pages + rs[j]->pg[i].idx - first;
			memcpy(buf + at * JC_PAGE, rs[j]->pg[i].data, JC_PAGE);
			have[at] = true;
		}
	/* The pages between, as the array holds them (none is cached). */
	e = 0;
	*reads = 0;
	for (uint64_t p = 0; p < n && e == 0;) {
		if (have[p]) {
			p++;
			continue;
		}
		uint64_t run = 1;
		while (p + run < n && !have[p + run])
			run++;
		e = vol_read(c->array, buf + p * JC_PAGE, run * JC_PAGE, (first + p) * JC_PAGE);
		*reads += run;
		p += run;
	}
	if (e == 0)
		e = md_journal_destage(c->j, buf, n * JC_PAGE, first * JC_PAGE);
out:
	free(have);
	free(buf);
	return e;
}

#define JC_MERGE_ROWS 16 /* whole rows destaged in one write */

/* Destage r (c->mu held, r neither destaging nor written), and the rows
 * after it while each before is whole and the next starts at its first
 * page (a stream's: one write of whole stripes): on success their pages
 * leave the cache and unpin their appends. */
static int jc_destage_locked(struct md_jcache *c, struct jc_row *r)
{
	struct jc_row *rs[JC_MERGE_ROWS] = {r};
	unsigned k = 1;
	uint64_t reads = 0;

	while (k < JC_MERGE_ROWS && rs[k - 1]->npg == c->row_pages) {
		struct jc_row *nx = jc_find(c, rs[k - 1]->row + 1);
		uint32_t lo, hi;
		if (!nx || !nx->npg || nx->writers || nx->destaging)
			break;
		jc_row_span(nx, &lo, &hi);
		if (lo != 0)
			break;
		rs[k++] = nx;
	}
	for (unsigned j = 0; j < k; j++)
		rs[j]->destaging = true;
	c->cursor = rs[k - 1]->row + 1;
	c->busy++;
	pthread_mutex_unlock(&c->mu);
	int e = jc_destage_rows(c, rs, k, &reads);
	pthread_mutex_lock(&c->mu);
	c->busy--;
	for (unsigned j = 0; j < k; j++)
		rs[j]->destaging = false;
	if (e == 0) {
		c->st.rows += k;
		c->st.read_pages += reads;
		for (unsigned j = 0; j < k; j++) {
			struct jc_row *x = rs[j];
			if (x->npg == c->row_pages && reads == 0)
				c->st.whole_pages += x->npg;
			for (unsigned i = 0; i < x->npg; i++)
				md_journal_unpin(c->j, x->pg[i].unit);
			c->pages -= x->npg;
			c->stripes -= x->nstripes;
			c->since_cp++;
			jc_remove(c, x);
		}
	} else if (!c->err) {
		c->err = e;
		log_warn("journal write-back: destaging stripe rows %llu-%llu failed: %s; writes "
		         "fail from now on, the journal keeps what is cached",
		         (unsigned long long)r->row, (unsigned long long)rs[k - 1]->row,
		         err_detail(e));
	}
	pthread_cond_broadcast(&c->cond);
	return e;
}

/* The row a destage takes now, among those it may take (no writer
 * inside, not being destaged): short of urgency (a drain, the log half
 * full, the cache three quarters), only whole rows, else, when there is
 * none, any but the newest (a stream's partial row, which its next write
 * may complete: destaged now, it would read from the members, and write
 * its parity twice).  Of those, the oldest when the log is half full (it
 * pins the tail), else the next one up from the elevator's cursor (the
 * lowest past it, or the lowest of all): the members' heads move forward
 * from row to row instead of seeking back and forth in the order the
 * client wrote. */
static struct jc_row *jc_pick(struct md_jcache *c, bool urgent, bool oldest)
{
	struct jc_row *up = NULL, *low = NULL;

	for (int pass = urgent ? 1 : 0; pass < 2 && !low; pass++)
		for (struct jc_row *r = c->head; r; r = r->next) {
			if (!r->npg || r->writers || r->destaging)
				continue;
			if (pass == 0 && r->npg != c->row_pages)
				continue;
			if (pass == 1 && !urgent && r == c->tail)
				continue;
			if (oldest)
				return r;
			if (r->row >= c->cursor && (!up || r->row < up->row))
				up = r;
			if (!low || r->row < low->row)
				low = r;
		}
	return up ? up : low;
}

static void jc_timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(cv, mu, &ts);
}

/* Destage while the cache is over half full (down to a quarter), the
 * log a quarter full, or a drain asks; move the tail under pressure (one
 * thread at a time).  JC_DESTAGERS of these run. */
static void *jc_thread(void *arg)
{
	struct md_jcache *c = arg;

	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		bool movable;
		if (!c->head && !c->pages)
			c->stream_want = false;
		int quarters = md_journal_pressure(c->j, &movable);
		if (c->pages * 2 > c->cap || c->stripes * 2 > JC_MAX_STRIPES)
			c->draining = true;
		else if (c->pages * 4 <= c->cap && c->stripes * 4 <= JC_MAX_STRIPES)
			c->draining = false;
		bool want = !c->err && !c->paused &&
		            (c->drain || c->draining || c->waiting || c->stream_want ||
		             (quarters >= 1 && (c->head || movable)));
		if (!want) {
			pthread_cond_broadcast(&c->cond);
			jc_timed_wait(&c->wake, &c->mu, 100);
			continue;
		}
		bool urgent = c->drain || c->stream_want || quarters >= 2 ||
		              c->pages * 4 >= c->cap * 3 || c->stripes * 4 >= JC_MAX_STRIPES * 3;
		struct jc_row *r = jc_pick(c, urgent, quarters >= 2);
		if (!r && c->waiting)
			r = jc_pick(c, true, quarters >= 2); /* a writer waits for room */
		if (movable && quarters >= 1 && !c->ckpt &&
		    (quarters >= 2 || c->since_cp >= JC_CKPT_ROWS || !r)) {
			c->since_cp = 0;
			c->busy++;
			c->ckpt = true;
			pthread_mutex_unlock(&c->mu);
			int e = md_journal_checkpoint(c->j);
			pthread_mutex_lock(&c->mu);
			c->ckpt = false;
			c->busy--;
			if (e < 0 && !c->err) {
				c->err = e;
				log_warn("journal write-back: checkpoint failed: %s",
				         err_detail(e));
			}
			pthread_cond_broadcast(&c->cond);
			continue;
		}
		if (!r) {
			jc_timed_wait(&c->wake, &c->mu, 10); /* rows with writers inside */
			continue;
		}
		jc_destage_locked(c, r);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static int jc_reclaim(void *ctx)
{
	struct md_jcache *c = ctx;
	pthread_mutex_lock(&c->mu);
	pthread_cond_broadcast(&c->wake);
	int e = c->err;
	pthread_mutex_unlock(&c->mu);
	return e;
}

/* ---- writes ---- */

/* The pages of a write of n pages at off that fall in row. */
static unsigned jc_row_share(const struct md_jcache *c, uint64_t row, uint64_t off, unsigned n)
{
	uint64_t a = row * c->row_bytes, b = a + c->row_bytes, end = off + (uint64_t)n * JC_PAGE;
	a = a > off ? a : off;
	b = b < end ? b : end;
	return b > a ? (unsigned)((b - a) / JC_PAGE) : 0;
}

/* At most how many 4 KiB stripes a write of n pages at off adds. */
static uint64_t jc_stripes_of(const struct md_jcache *c, uint64_t off, unsigned n)
{
	uint64_t r0 = off / c->row_bytes, r1 = (off + (uint64_t)n * JC_PAGE - 1) / c->row_bytes,
	         s = 0;
	for (uint64_t row = r0; row <= r1; row++) {
		unsigned k = jc_row_share(c, row, off, n);
		s += k < c->chunk_pages ? k : c->chunk_pages;
	}
	return s;
}

/* Whether r holds a page of the 4 KiB stripe at page offset k of its chunks. */
static bool jc_stripe_held(const struct md_jcache *c, const struct jc_row *r, uint32_t k)
{
	for (unsigned i = 0; i < r->npg; i++)
		if (r->pg[i].idx % c->chunk_pages == k)
			return true;
	return false;
}

/* Log and hold n whole pages from buf at off (a multiple of 4 KiB),
 * n <= c->piece, rmw held shared or alone. */
static int jc_write_piece(struct md_jcache *c, const char *buf, unsigned n, uint64_t off)
{
	uint64_t r0 = off / c->row_bytes, r1 = (off + (uint64_t)n * JC_PAGE - 1) / c->row_bytes;
	uint64_t *aoff = calloc(n, sizeof(*aoff));
	const char **src = calloc(n, sizeof(*src));
	char **copy = calloc(n, sizeof(*copy));
	struct md_journal_unit *unit = NULL;
	uint64_t sneed = jc_stripes_of(c, off, n);
	int e = -ENOMEM;

	if (!aoff || !src || !copy)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		aoff[i] = off + (uint64_t)i * JC_PAGE;
		src[i] = buf + (uint64_t)i * JC_PAGE;
		if (!(copy[i] = malloc(JC_PAGE)))
			goto out;
		memcpy(copy[i], src[i], JC_PAGE);
	}
	for (;;) {
		pthread_mutex_lock(&c->mu);
		/* Room in the cache, and no row of the write being destaged. */
		for (;;) {
			bool busy = false;
			for (uint64_t row = r0; row <= r1 && !busy; row++) {
				struct jc_row *r = jc_find(c, row);
				busy = r && r->destaging;
			}
			bool room = (c->pages + n <= c->cap || c->pages == 0) &&
			            (c->stripes + c->sres + sneed <= JC_MAX_STRIPES ||
			             c->stripes + c->sres == 0);
			if (c->err || (!busy && room))
				break;
			pthread_cond_broadcast(&c->wake);
			c->waiting++;
			pthread_cond_wait(&c->cond, &c->mu);
			c->waiting--;
		}
		if (c->err) {
			e = c->err;
			pthread_mutex_unlock(&c->mu);
			goto out;
		}
		e = 0;
		uint64_t row = r0;
		for (; row <= r1 && e == 0; row++) {
			struct jc_row *r = jc_get(c, row);
			unsigned k = jc_row_share(c, row, off, n);
			if (r && r->cap < r->npg + r->reserved + k) {
				unsigned cap = r->npg + r->reserved + k;
				cap = cap < r->cap * 2 ? r->cap * 2 : cap;
				struct jc_page *g = realloc(r->pg, cap * sizeof(*g));
				if (g) {
					r->pg = g;
					r->cap = cap;
				}
			}
			if (!r || r->cap < r->npg + r->reserved + k) {
				if (r && !r->npg && !r->writers && !r->destaging)
					jc_remove(c, r);
				e = -ENOMEM;
				break;
			}
			r->writers++;
			r->reserved += k;
		}
		uint64_t entered = row; /* rows [r0, entered) */
		if (e == 0) {
			c->pages += n;
			c->sres += sneed;
			/* No stream write starts now (pages > 0); those in
			 * flight return, then what they left behind is
			 * written out, before this DATA is logged. */
			while (c->streaming)
				pthread_cond_wait(&c->cond, &c->mu);
		}
		pthread_mutex_unlock(&c->mu);
		if (e == 0)
			e = raid_drain_behind(c->array);
		if (e == 0)
			e = md_journal_log_data(c->j, aoff, src, n, &unit);
		pthread_mutex_lock(&c->mu);
		if (e == 0) {
			for (unsigned i = 0; i < n; i++) {
				struct jc_row *r = jc_find(c, aoff[i] / c->row_bytes);
				uint32_t idx = (uint32_t)(aoff[i] % c->row_bytes / JC_PAGE);
				struct jc_page *p = jc_page_find(r, idx);
				if (p) {
					/* a later version: the earlier append need not keep it */
					md_journal_unpin(c->j, p->unit);
					free(p->data);
					c->pages--;
				} else {
					if (!jc_stripe_held(c, r, idx % c->chunk_pages)) {
						r->nstripes++;
						c->stripes++;
					}
					p = &r->pg[r->npg++]; /* room reserved on entry */
					p->idx = idx;
				}
				p->data = copy[i];
				p->unit = unit;
				copy[i] = NULL;
			}
			c->st.written += n;
		} else {
			c->pages -= n;
		}
		if (entered > r1)
			c->sres -= sneed;
		for (uint64_t w = r0; w < entered; w++) {
			struct jc_row *r = jc_find(c, w);
			r->writers--;
			r->reserved -= jc_row_share(c, w, off, n);
			if (!r->npg && !r->writers && !r->destaging)
				jc_remove(c, r);
		}
		if (c->pages * 2 > c->cap || c->stripes * 2 > JC_MAX_STRIPES)
			pthread_cond_broadcast(&c->wake);
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->mu);
		if (e != -EAGAIN)
			break;
		/* The log is full: wait for room holding no row. */
		e = md_journal_wait_room(c->j, n);
		if (e < 0)
			break;
	}
out:
	for (unsigned i = 0; copy && i < n; i++)
		free(copy[i]);
	free(copy);
	free(src);
	free(aoff);
	return e;
}

/* Write [off, hi) (hi at a row boundary, off inside row off / row_bytes
 * or at its start) through the array, as write-through does: data and
 * parity logged, then the members, no page cached; with the cached pages
 * of that row before off when the cache holds all of them (the row the
 * write completes: *start is then that row's start, else the first row
 * boundary at or after off, and [off, *start) is left to the caller).
 * The rows are held as a destage holds them (writers wait, destages skip
 * them) and the pages they held leave the cache: the through write's
 * data and parity follow their DATA in the log, so replay pairs the two
 * and writes the newer (the kernel's write-out of a stripe with data in
 * the journal logs its parity the same way). */
static int jc_write_rows(struct md_jcache *c, const char *buf, uint64_t off, uint64_t hi,
                         uint64_t *start)
{
	uint64_t rb = c->row_bytes, h = off / rb * rb, lo = (off + rb - 1) / rb * rb;
	char *merged = NULL;
	int e = 0;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		bool busy = false;
		for (uint64_t row = h / rb; row < hi / rb && !busy; row++) {
			struct jc_row *r = jc_find(c, row);
			busy = r && (r->destaging || r->writers);
		}
		if (c->err || !busy)
			break;
		pthread_cond_wait(&c->cond, &c->mu);
	}
	if (c->err) {
		e = c->err;
		pthread_mutex_unlock(&c->mu);
		return e;
	}
	if (h < off) {
		/* the head row: through only if the cache holds [h, off) */
		struct jc_row *r = jc_find(c, h / rb);
		uint32_t want = (uint32_t)((off - h) / JC_PAGE), have = 0;
		for (unsigned i = 0; r && i < r->npg; i++)
			have += r->pg[i].idx < want;
		if (r && have == want && (merged = vol_buf_alloc(hi - h))) {
			for (unsigned i = 0; i < r->npg; i++)
				if (r->pg[i].idx < want)
					memcpy(merged + (uint64_t)r->pg[i].idx * JC_PAGE,
					       r->pg[i].data, JC_PAGE);
			memcpy(merged + (off - h), buf, hi - off);
			lo = h;
		}
	}
	*start = lo;
	uint64_t held = lo / rb;
	for (; held < hi / rb; held++) {
		struct jc_row *r = jc_get(c, held);
		if (!r) {
			e = -ENOMEM;
			break;
		}
		r->destaging = true;
	}
	pthread_mutex_unlock(&c->mu);
	if (e == 0 && hi > lo)
		e = md_journal_write_direct(c->j, merged ? merged : buf + (lo - off), hi - lo, lo,
		                            0);
	pthread_mutex_lock(&c->mu);
	for (uint64_t row = lo / rb; row < held; row++) {
		struct jc_row *r = jc_find(c, row);
		r->destaging = false;
		if (e == 0) {
			for (unsigned i = 0; i < r->npg; i++) {
				md_journal_unpin(c->j, r->pg[i].unit);
				free(r->pg[i].data);
			}
			c->pages -= r->npg;
			c->stripes -= r->nstripes;
			r->npg = r->nstripes = 0;
			c->st.through_rows++;
		}
		if (!r->npg && !r->writers)
			jc_remove(c, r);
	}
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
	free(merged);
	return e;
}

/* Log and hold [off, off+len) page-aligned, pieces of at most c->piece. */
static int jc_write_cached(struct md_jcache *c, const char *buf, uint64_t len, uint64_t off)
{
	int e = 0;

	while (len && e == 0) {
		uint64_t n = len / JC_PAGE;
		/* a piece stays inside the stripe rows it can fill whole */
		if (n > c->piece)
			n = c->piece;
		e = jc_write_piece(c, buf, (unsigned)n, off);
		buf += n * JC_PAGE;
		off += n * JC_PAGE;
		len -= n * JC_PAGE;
	}
	return e;
}

/* A write of [off, off+len) (whole pages, JC_STREAM_MIN at least)
 * straight to the array while the cache holds nothing, none of it being
 * entered: 0 or -errno, or 1 when the cache holds something (the caller
 * goes the cached way, and the destage is asked to empty the cache, so
 * that a stream after a few small writes soon comes this way).  See the
 * top. */
static int jc_write_stream(struct md_jcache *c, const char *buf, uint64_t len, uint64_t off,
                           unsigned flags)
{
	pthread_mutex_lock(&c->mu);
	if (c->err || c->head || c->pages || c->sres) {
		int e = c->err ? c->err : 1;
		if (!c->err && !c->stream_want) {
			c->stream_want = true;
			pthread_cond_broadcast(&c->wake);
		}
		pthread_mutex_unlock(&c->mu);
		return e;
	}
	c->streaming++;
	pthread_mutex_unlock(&c->mu);
	int e = vol_write(c->array, buf, len, off, flags);
	pthread_mutex_lock(&c->mu);
	c->streaming--;
	if (e == 0) {
		c->behind = true;
		c->st.stream_bytes += len;
	}
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
	return e;
}

/* A write's whole stripe rows, and the row it completes, go through the
 * array (jc_write_rows); the rest is cached.  A stream of writes then
 * reaches the members as write-through's does, in order, without the
 * destage writing each row it left whole behind the disks' heads. */
static int jc_write_aligned(struct md_jcache *c, const char *buf, uint64_t len, uint64_t off,
                            unsigned flags)
{
	uint64_t rb = c->row_bytes, hi = (off + len) / rb * rb, start = off;
	int e = 0;

	if (len >= JC_STREAM_MIN && (e = jc_write_stream(c, buf, len, off, flags)) <= 0)
		return e;
	e = 0;
	if (hi >= off / rb * rb + rb) {
		e = jc_write_rows(c, buf, off, hi, &start);
		if (e == 0 && start > off)
			e = jc_write_cached(c, buf, start - off, off);
	} else {
		hi = off;
	}
	if (e == 0)
		e = jc_write_cached(c, buf + (hi - off), off + len - hi, hi);
	return e;
}

int md_jcache_write(struct md_jcache *c, const void *buf, uint64_t len, uint64_t off,
                    unsigned flags)
{
	int e;

	/* Every append is flushed: FUA holds on return (a stream write
	 * passes it on). */
	if (off % JC_PAGE == 0 && len % JC_PAGE == 0) {
		pthread_rwlock_rdlock(&c->rmw);
		e = jc_write_aligned(c, buf, len, off, flags);
		pthread_rwlock_unlock(&c->rmw);
		return e;
	}
	/* Part of a page: the whole pages around it, read, merged, written,
	 * with no other write beside it. */
	uint64_t lo = off / JC_PAGE * JC_PAGE, hi = (off + len + JC_PAGE - 1) / JC_PAGE * JC_PAGE;
	char *tmp = vol_buf_alloc(hi - lo);
	if (!tmp)
		return -ENOMEM;
	pthread_rwlock_wrlock(&c->rmw);
	e = md_jcache_read(c, tmp, hi - lo, lo);
	if (e == 0) {
		memcpy(tmp + (off - lo), buf, len);
		e = jc_write_aligned(c, tmp, hi - lo, lo, flags);
	}
	pthread_rwlock_unlock(&c->rmw);
	free(tmp);
	return e;
}

/* ---- reads ---- */

struct jc_copy {
	uint64_t off;
	char data[JC_PAGE];
};

int md_jcache_read(struct md_jcache *c, void *buf, uint64_t len, uint64_t off)
{
	struct jc_copy *cp = NULL;
	size_t ncp = 0, capcp = 0;
	int e = 0;

	if (!len)
		return 0;
	/* What the cache holds of the range, copied before the array is read:
	 * a page destaged meanwhile is on the array by then. */
	pthread_mutex_lock(&c->mu);
	uint64_t r0 = off / c->row_bytes, r1 = (off + len - 1) / c->row_bytes;
	for (uint64_t row = r0; row <= r1 && e == 0 && c->head; row++) {
		struct jc_row *r = jc_find(c, row);
		for (unsigned i = 0; r && i < r->npg; i++) {
			uint64_t at = row * c->row_bytes + (uint64_t)r->pg[i].idx * JC_PAGE;
			if (at + JC_PAGE <= off || at >= off + len)
				continue;
			if (ncp == capcp) {
				size_t cap = capcp ? capcp * 2 : 8;
				struct jc_copy *g = realloc(cp, cap * sizeof(*g));
				if (!g) {
					e = -ENOMEM;
					break;
				}
				cp = g;
				capcp = cap;
			}
			cp[ncp].off = at;
			memcpy(cp[ncp].data, r->pg[i].data, JC_PAGE);
			ncp++;
		}
	}
	pthread_mutex_unlock(&c->mu);
	if (e == 0)
		e = vol_read(c->array, buf, len, off);
	for (size_t i = 0; e == 0 && i < ncp; i++) {
		uint64_t a = cp[i].off > off ? cp[i].off : off;
		uint64_t b = cp[i].off + JC_PAGE < off + len ? cp[i].off + JC_PAGE : off + len;
		memcpy((char *)buf + (a - off), cp[i].data + (a - cp[i].off), b - a);
	}
	free(cp);
	return e;
}

/* ---- barriers, drain, pause ---- */

int md_jcache_barrier(struct md_jcache *c, uint64_t off, uint64_t len)
{
	int e = 0;

	pthread_rwlock_wrlock(&c->rmw);
	pthread_mutex_lock(&c->mu);
	for (;;) {
		struct jc_row *r = c->head, *hit = NULL;
		bool wait = false;
		for (; r && !hit; r = r->next) {
			uint64_t a = r->row * c->row_bytes;
			if (a + c->row_bytes <= off || a >= off + len || !r->npg)
				continue;
			if (r->destaging || r->writers)
				wait = true;
			else
				hit = r;
		}
		if (hit) {
			if ((e = jc_destage_locked(c, hit)) < 0)
				break;
		} else if (wait)
			pthread_cond_wait(&c->cond, &c->mu);
		else
			break;
	}
	pthread_mutex_unlock(&c->mu);
	if (e < 0)
		pthread_rwlock_unlock(&c->rmw);
	return e;
}

void md_jcache_barrier_end(struct md_jcache *c)
{
	pthread_rwlock_unlock(&c->rmw);
}

int md_jcache_drain(struct md_jcache *c)
{
	pthread_mutex_lock(&c->mu);
	c->drain = true;
	pthread_cond_broadcast(&c->wake);
	while (!c->err && (c->pages || c->busy) && !c->paused)
		pthread_cond_wait(&c->cond, &c->mu);
	c->drain = false;
	int e = c->err;
	pthread_mutex_unlock(&c->mu);
	return e;
}

void md_jcache_pause(struct md_jcache *c, bool pause)
{
	pthread_mutex_lock(&c->mu);
	if (pause) {
		c->paused++;
		while (c->busy)
			pthread_cond_wait(&c->cond, &c->mu);
	} else {
		c->paused--;
		pthread_cond_broadcast(&c->wake);
	}
	pthread_mutex_unlock(&c->mu);
}

int md_jcache_flush(struct md_jcache *c)
{
	pthread_mutex_lock(&c->mu);
	bool behind = c->behind;
	c->behind = false;
	pthread_mutex_unlock(&c->mu);
	if (!behind)
		return 0; /* what was acknowledged is on the flushed journal */
	int e = vol_flush(c->array);
	if (e < 0) {
		pthread_mutex_lock(&c->mu);
		c->behind = true;
		pthread_mutex_unlock(&c->mu);
	}
	return e;
}

void md_jcache_stats(struct md_jcache *c, struct md_jcache_stats *st)
{
	pthread_mutex_lock(&c->mu);
	*st = c->st;
	st->cached_pages = c->pages;
	pthread_mutex_unlock(&c->mu);
}

/* ---- open, close ---- */

/* Stop the destage threads (what they hold in hand finished). */
static void jc_stop(struct md_jcache *c)
{
	pthread_mutex_lock(&c->mu);
	c->stop = true;
	pthread_cond_broadcast(&c->wake);
	pthread_mutex_unlock(&c->mu);
	for (unsigned i = 0; i < c->nthreads; i++)
		pthread_join(c->thread[i], NULL);
	c->nthreads = 0;
}

int md_jcache_open(struct md_journal *j, struct vol *array, uint64_t chunk, unsigned ndata,
                   uint64_t bytes, struct md_jcache **out)
{
	struct md_jcache *c;

	if (!chunk || chunk % JC_PAGE || !ndata)
		return err_set(-EINVAL, "%s: write-back cache: chunk %llu is not whole pages",
		               array->name, (unsigned long long)chunk);
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	c->j = j;
	c->array = array;
	c->row_bytes = chunk * ndata;
	c->row_pages = (uint32_t)(c->row_bytes / JC_PAGE);
	c->chunk_pages = (uint32_t)(chunk / JC_PAGE);
	c->piece = md_journal_max_data(j);
	c->cap = (bytes ? bytes : MD_JCACHE_DEFAULT) / JC_PAGE;
	/* The pinned appends' parity must fit the log beside them. */
	if (c->cap > (uint64_t)c->piece * 2)
		c->cap = (uint64_t)c->piece * 2;
	if (c->cap < 8)
		c->cap = 8;
	if (c->piece > 256)
		c->piece = 256; /* 1 MiB a data append */
	if (c->piece > c->cap / 2)
		c->piece = (unsigned)(c->cap / 2);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cond, NULL);
	pthread_cond_init(&c->wake, NULL);
	pthread_rwlock_init(&c->rmw, NULL);
	int e = 0;
	for (; c->nthreads < JC_DESTAGERS && e == 0; c->nthreads++)
		if ((e = pthread_create(&c->thread[c->nthreads], NULL, jc_thread, c)) != 0)
			break;
	if (e) {
		jc_stop(c);
		pthread_rwlock_destroy(&c->rmw);
		pthread_cond_destroy(&c->wake);
		pthread_cond_destroy(&c->cond);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return -e;
	}
	/* The RAID layer's write-behind stays on for stream writes (see the
	 * top); destages never take it (md_journal_destage). */
	md_journal_set_reclaim(j, jc_reclaim, c);
	*out = c;
	return 0;
}

void md_jcache_close(struct md_jcache *c)
{
	if (!c)
		return;
	md_jcache_drain(c);
	jc_stop(c);
	md_journal_set_reclaim(c->j, NULL, NULL);
	log_info("%s: journal write-back: %llu pages written, %llu stripe rows destaged (%llu "
	         "pages in whole rows, %llu pages read from the members)",
	         c->array->name, (unsigned long long)c->st.written, (unsigned long long)c->st.rows,
	         (unsigned long long)c->st.whole_pages, (unsigned long long)c->st.read_pages);
	/* Not destaged (an error): their appends stay pinned, so the tail
	 * stays before them and the next start replays them. */
	while (c->head)
		jc_remove(c, c->head);
	pthread_rwlock_destroy(&c->rmw);
	pthread_cond_destroy(&c->wake);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->mu);
	free(c);
}
