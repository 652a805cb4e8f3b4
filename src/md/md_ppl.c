/* md_ppl.c — md's partial parity log for RAID5 (see md_ppl.h): the header
 * codec, the entries an update makes, the replay of an unclean start and
 * the stripe log a writable array keeps (the RAID engine's raid_set_log
 * seam, disc/raid/raid.h).
 *
 * The log: one area per member, one lock per area.  log() writes, to the
 * area of each parity role its updates name, a header with their entries
 * and their PP in one FUA write, and holds that area's lock until done():
 * the next header replaces this one only once this one's stripes are on
 * the members (and flushed, where they keep a volatile cache), as the
 * kernel submits an io_unit only after the one before has completed.
 * Requests are capped (md_ppl_open sets the md vol's block_max) so that
 * each call's entries always fit a header. */
#include "md_ppl.h"
#include "md_internal.h"

#include "core/crc32c.h"
#include "core/log.h"

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- the format ---- */

struct ppl_entry_disk {
	uint64_t data_sector;
	uint32_t pp_size;
	uint32_t data_size;
	uint32_t parity_disk;
	uint32_t checksum;
} __attribute__((packed));

struct ppl_header_disk {
	uint8_t reserved[MD_PPL_HDR_RESERVED];
	uint32_t signature;
	uint32_t padding;
	uint64_t generation;
	uint32_t entries_count;
	uint32_t checksum;
	struct ppl_entry_disk entries[MD_PPL_MAX_ENTRIES];
} __attribute__((packed));

_Static_assert(sizeof(struct ppl_entry_disk) == 24, "ppl_header_entry is 24 bytes");
_Static_assert(sizeof(struct ppl_header_disk) <= MD_PPL_HEADER_SIZE, "ppl_header fits 4 KiB");
_Static_assert(sizeof(struct ppl_header_disk) + sizeof(struct ppl_entry_disk) > MD_PPL_HEADER_SIZE,
               "MD_PPL_MAX_ENTRIES is all that fit");

uint32_t md_ppl_signature(const uint8_t set_uuid[16])
{
	return ~crc32c(~0u, set_uuid, 16);
}

void md_ppl_header_encode(struct md_ppl_header *h, void *buf)
{
	struct ppl_header_disk *d = buf;

	memset(buf, 0, MD_PPL_HEADER_SIZE);
	memset(d->reserved, 0xff, sizeof(d->reserved));
	d->signature = htole32(h->signature);
	d->generation = htole64(h->generation);
	d->entries_count = htole32(h->nentries);
	for (unsigned i = 0; i < h->nentries && i < MD_PPL_MAX_ENTRIES; i++) {
		d->entries[i].data_sector = htole64(h->e[i].data_sector);
		d->entries[i].pp_size = htole32(h->e[i].pp_size);
		d->entries[i].data_size = htole32(h->e[i].data_size);
		d->entries[i].parity_disk = htole32(h->e[i].parity_disk);
		d->entries[i].checksum = htole32(h->e[i].checksum);
	}
	h->checksum = ~crc32c(~0u, buf, MD_PPL_HEADER_SIZE);
	d->checksum = htole32(h->checksum);
}

int md_ppl_header_decode(const void *buf, struct md_ppl_header *h)
{
	struct ppl_header_disk d;
	uint32_t zero = 0;

	memcpy(&d, buf, sizeof(d));
	memset(h, 0, sizeof(*h));
	h->checksum = le32toh(d.checksum);
	uint32_t crc = crc32c(~0u, buf, offsetof(struct ppl_header_disk, checksum));
	crc = crc32c(crc, &zero, 4);
	crc = crc32c(crc, (const char *)buf + offsetof(struct ppl_header_disk, entries),
	             MD_PPL_HEADER_SIZE - offsetof(struct ppl_header_disk, entries));
	if (~crc != h->checksum)
		return -EBADMSG;
	h->signature = le32toh(d.signature);
	h->generation = le64toh(d.generation);
	h->nentries = le32toh(d.entries_count);
	if (h->nentries > MD_PPL_MAX_ENTRIES)
		return -EUCLEAN;
	for (unsigned i = 0; i < h->nentries; i++) {
		h->e[i].data_sector = le64toh(d.entries[i].data_sector);
		h->e[i].pp_size = le32toh(d.entries[i].pp_size);
		h->e[i].data_size = le32toh(d.entries[i].data_size);
		h->e[i].parity_disk = le32toh(d.entries[i].parity_disk);
		h->e[i].checksum = le32toh(d.entries[i].checksum);
	}
	return 0;
}

int md_ppl_find(const void *area, uint64_t len, uint32_t signature, struct md_ppl_header *h,
                uint64_t *at)
{
	struct md_ppl_header *cur = malloc(sizeof(*cur));
	uint64_t off = 0;
	bool found = false;

	if (!cur)
		return -ENOMEM;
	/* The kernel reads while a header fits before the area's last 4 KiB
	 * boundary: off < size - 4 KiB. */
	while (len >= MD_PPL_HEADER_SIZE && off < len - MD_PPL_HEADER_SIZE) {
		if (md_ppl_header_decode((const char *)area + off, cur) < 0 ||
		    cur->signature != signature || (found && cur->generation < h->generation))
			break;
		*h = *cur;
		*at = off;
		found = true;
		uint64_t next = off + MD_PPL_HEADER_SIZE;
		for (unsigned i = 0; i < cur->nentries; i++)
			next += cur->e[i].pp_size / 512 * 512;
		if (next <= off) /* cannot happen with 148 x 32-bit sizes, but never loop */
			break;
		off = next;
	}
	free(cur);
	return found ? 0 : -ENOENT;
}

/* ---- entries of an update ---- */

static int seg_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

unsigned md_ppl_segments(const struct raid_log_stripe *s, uint64_t chunk, struct md_ppl_seg *out)
{
	uint64_t cut[2 * MD_PPL_MAX_DATA + 2];
	uint64_t lo = s->moff, hi = s->moff + s->len;
	unsigned nc = 0, nseg = 0;

	if (s->ndata > MD_PPL_MAX_DATA)
		return 0;
	cut[nc++] = lo;
	cut[nc++] = hi;
	/* Chunk d's bytes written: the request's array range over the chunk's
	 * array range [c, c+len), in member offsets. */
	for (unsigned d = 0; d < s->ndata; d++) {
		uint64_t c = s->aoff + d * chunk, a0 = s->woff, a1 = s->woff + s->wlen;
		if (!s->written[d] || a1 <= c || a0 >= c + s->len)
			continue;
		cut[nc++] = lo + (a0 > c ? a0 - c : 0);
		cut[nc++] = lo + (a1 < c + s->len ? a1 - c : s->len);
	}
	qsort(cut, nc, sizeof(cut[0]), seg_cmp);
	for (unsigned k = 0; k + 1 < nc; k++) {
		uint64_t a = cut[k], b = cut[k + 1];
		unsigned d0 = 0, nd = 0;
		if (a == b)
			continue;
		for (unsigned d = 0; d < s->ndata; d++) {
			uint64_t c = s->aoff + d * chunk + (a - lo);
			if (s->written[d] && s->woff <= c && s->woff + s->wlen >= c + (b - a)) {
				if (!nd)
					d0 = d;
				nd++;
			}
		}
		if (!nd)
			continue;
		out[nseg++] = (struct md_ppl_seg){a, b - a, d0, nd};
	}
	return nseg;
}

int md_ppl_add(struct md_ppl_header *h, char *pp, uint64_t *pp_used, uint64_t pp_cap,
               const struct raid_log_stripe *s, unsigned n, unsigned role, uint64_t chunk)
{
	struct md_ppl_seg seg[2 * MD_PPL_MAX_DATA + 1];

	for (unsigned i = 0; i < n; i++) {
		if (s[i].p != (int)role)
			continue;
		unsigned ns = md_ppl_segments(&s[i], chunk, seg);
		for (unsigned k = 0; k < ns; k++) {
			const struct md_ppl_seg *g = &seg[k];
			/* PP that does not fit (a chunk larger than the area) is
			 * logged as a whole-stripe entry: its replay still makes
			 * parity agree, but skips the stripe when a member is gone. */
			bool full = g->nd == s[i].ndata || pp_cap - *pp_used < g->len;
			unsigned d0 = full ? 0 : g->d0, nd = full ? s[i].ndata : g->nd;
			uint64_t ppl = full ? 0 : g->len;
			if (h->nentries == MD_PPL_MAX_ENTRIES || g->len * nd > UINT32_MAX)
				return -ENOSPC;
			struct md_ppl_entry *e = &h->e[h->nentries++];
			e->data_sector = (s[i].aoff + d0 * chunk + (g->moff - s[i].moff)) / 512;
			e->pp_size = (uint32_t)ppl;
			e->data_size = (uint32_t)(g->len * nd);
			e->parity_disk = role;
			e->checksum = 0;
			if (full)
				continue;
			char *out = pp + *pp_used;
			memset(out, 0, ppl);
			for (unsigned d = 0; d < s[i].ndata; d++)
				if (d < g->d0 || d >= g->d0 + g->nd)
					raid_xor(out, s[i].data[d] + (g->moff - s[i].moff), ppl);
			e->checksum = ~crc32c(~0u, out, ppl);
			*pp_used += ppl;
		}
	}
	return 0;
}

/* ---- recovery ---- */

int md_ppl_recover_entry(const struct md_ppl_array *a, const struct md_ppl_entry *e, const char *pp,
                         struct md_ppl_stats *st)
{
	uint64_t chunk_s = a->chunk / 512, first = e->data_sector, last;
	unsigned ndata = a->raid_disks - 1, data_disks;
	uint64_t strip;
	uint32_t block = 512;
	char *acc = NULL, *buf = NULL;
	int r = 0;

	/* What the kernel reads of an entry (ppl_recover_entry): a strip of
	 * PP shorter than a chunk covers data_disks chunks from data_sector's;
	 * a chunk of it (or more) the array range [first, first+data_size). */
	if (e->pp_size / 512 < chunk_s) {
		if (e->pp_size) {
			data_disks = e->data_size / e->pp_size;
			strip = e->pp_size / 512;
		} else {
			data_disks = ndata;
			strip = e->data_size / 512 / ndata;
		}
		last = first + (data_disks - (data_disks > 0)) * chunk_s + strip;
	} else {
		data_disks = ndata;
		strip = chunk_s;
		last = first + e->data_size / 512;
	}
	if (!data_disks || data_disks > ndata || !strip || e->parity_disk >= a->raid_disks ||
	    first > a->raid->size / 512 || last > a->raid->size / 512 + chunk_s * ndata) {
		st->mismatched++;
		return 0;
	}
	if (first % 8 == 0 && last % 8 == 0)
		block = 4096;
	if (!(acc = vol_buf_alloc(4096)) || !(buf = vol_buf_alloc(4096))) {
		r = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < strip; i += block / 512) {
		bool update = false, missing = false;
		memset(acc, 0, block);
		for (unsigned disk = 0; disk < data_disks; disk++) {
			uint64_t rs = first + i + disk * chunk_s, moff;
			unsigned role;
			int p, q;
			if (rs >= last)
				continue;
			update = true;
			if (rs * 512 >= a->raid->size ||
			    raid_log_locate(a->raid, rs * 512, &role, &moff, &p, &q) < 0) {
				st->mismatched++;
				goto out;
			}
			if (!a->data[role]) {
				missing = true;
				break;
			}
			r = vol_read(a->data[role], buf, block, moff);
			if (r < 0)
				goto out;
			raid_xor(acc, buf, block);
		}
		if (missing) {
			st->skipped++;
			goto out;
		}
		if (!update)
			continue;
		if (e->pp_size) {
			if ((i * 512 + block) > e->pp_size) {
				st->mismatched++;
				goto out;
			}
			raid_xor(acc, pp + i * 512, block);
		}
		uint64_t moff;
		unsigned role;
		int p, q;
		if ((first + i) * 512 >= a->raid->size ||
		    raid_log_locate(a->raid, (first + i) * 512, &role, &moff, &p, &q) < 0 ||
		    p != (int)e->parity_disk || !a->data[p]) {
			st->mismatched++;
			goto out;
		}
		r = vol_write(a->data[p], acc, block, moff, 0);
		if (r < 0)
			goto out;
	}
	st->recovered++;
out:
	free(acc);
	free(buf);
	return r;
}

int md_ppl_replay_area(const struct md_ppl_array *a, struct vol *m, uint64_t area_off,
                       uint64_t area_len, uint32_t signature, struct md_ppl_stats *st)
{
	struct md_ppl_header *h = malloc(sizeof(*h));
	char *area = vol_buf_alloc(area_len);
	uint64_t at = 0;
	int r;

	if (!h || !area) {
		r = -ENOMEM;
		goto out;
	}
	r = vol_read(m, area, area_len, area_off);
	if (r < 0)
		goto out;
	if (md_ppl_find(area, area_len, signature, h, &at) < 0) {
		st->mismatched++;
		goto out;
	}
	uint64_t pos = at + MD_PPL_HEADER_SIZE;
	for (unsigned i = 0; i < h->nentries; i++) {
		const struct md_ppl_entry *e = &h->e[i];
		uint64_t sz = e->pp_size / 512 * 512;
		if (pos > area_len || sz > area_len - pos ||
		    ~crc32c(~0u, area + pos, sz) != e->checksum) {
			st->mismatched++; /* the kernel skips it and goes on */
		} else {
			r = md_ppl_recover_entry(a, e, sz ? area + pos : NULL, st);
			if (r < 0)
				goto out;
		}
		pos += sz;
	}
out:
	free(area);
	free(h);
	return r;
}

/* ---- the running log ---- */

struct md_ppl_area {
	pthread_mutex_t lock; /* held from log() to done() of the updates logged here */
	struct vol *vol;      /* the member (NULL: missing) */
	uint64_t off, len;    /* bytes on it */
	uint64_t cap;         /* bytes of buf */
	uint64_t written;     /* roles (bit r) the header now on disk covers writes of */
	bool unflushed;       /* those writes completed after the last flush */
	char *buf;            /* header + PP staging, len bytes */
};

struct md_ppl {
	struct md_array *a;
	unsigned n;
	uint64_t chunk;
	uint32_t signature;
	_Atomic uint64_t generation;
	struct md_ppl_area *area; /* by role */
	struct md_ppl_header *h;  /* per role scratch, used under its lock */
};

/* Which parity roles the updates name, as a mask (n <= 64: md_ppl_open). */
static uint64_t ppl_roles(const struct raid_log_stripe *s, unsigned n)
{
	uint64_t m = 0;
	for (unsigned i = 0; i < n; i++)
		if (s[i].p >= 0)
			m |= 1ull << s[i].p;
	return m;
}

/* The member that takes role's log now, or NULL: in the array and in sync
 * (md writes no PPL to a parity disk that is faulty or being rebuilt).
 * With off, *off and *size get where its area lies (sectors from the
 * member's start). */
static struct vol *ppl_member_vol(struct md_ppl *l, unsigned role, int32_t *off, uint32_t *size)
{
	struct md_array *a = l->a;
	struct md_member *mm = &a->m[role];
	struct vol *v = NULL;

	pthread_mutex_lock(&a->lock);
	if (mm->vol && !mm->failed && !mm->recovering && mm->sb &&
	    (!off || md_super_ppl(mm->sb, off, size))) {
		v = mm->vol;
		if (off)
			*off += (int32_t)mm->sb->super_offset; /* sectors from the member's start */
	}
	pthread_mutex_unlock(&a->lock);
	return v;
}

/* A member new in role (a spare that took it): its area as md's
 * ppl_modify_log leaves one, all zero but an empty header, so that no
 * header of its past can be taken for ours. */
static int ppl_area_adopt(struct md_ppl *l, struct md_ppl_area *ar, struct vol *v, int32_t at,
                          uint32_t size)
{
	uint64_t off = (uint64_t)(int64_t)at * 512, len = (uint64_t)size / 8 * 4096;
	struct md_ppl_header *h = malloc(sizeof(*h));
	int r;

	if (!h)
		return -ENOMEM;
	if (at < 0 || len < 2 * MD_PPL_HEADER_SIZE || off + len > v->size) {
		free(h);
		return err_set(-EIO, "%s: %s: its PPL area does not fit", l->a->vol.name, v->name);
	}
	if (len > ar->cap) {
		free(ar->buf);
		ar->cap = 0;
		if (!(ar->buf = vol_buf_alloc(len))) {
			free(h);
			return -ENOMEM;
		}
		ar->cap = len;
	}
	memset(ar->buf, 0, len);
	memset(h, 0, sizeof(*h));
	h->signature = l->signature;
	md_ppl_header_encode(h, ar->buf);
	free(h);
	r = vol_write(v, ar->buf, len, off, VOL_FUA);
	if (r < 0)
		return r;
	ar->vol = v;
	ar->off = off;
	ar->len = len;
	ar->unflushed = false;
	return 0;
}

/* Make the writes the area's header on disk covers durable, before a new
 * header replaces it (the kernel flushes its disks after an io_unit when
 * they keep a write-back cache). */
static int ppl_flush_covered(struct md_ppl *l, struct md_ppl_area *ar)
{
	if (!ar->unflushed)
		return 0;
	for (unsigned r = 0; r < l->n; r++) {
		if (!(ar->written & (1ull << r)))
			continue;
		struct vol *v = ppl_member_vol(l, r, NULL, NULL);
		if (!v || !(v->caps & VOL_CAP_FLUSH))
			continue;
		int e = vol_flush(v);
		if (e < 0)
			return e;
	}
	ar->unflushed = false;
	return 0;
}

static int ppl_log_area(struct md_ppl *l, unsigned role, const struct raid_log_stripe *s,
                        unsigned n)
{
	struct md_ppl_area *ar = &l->area[role];
	struct md_ppl_header *h = &l->h[role];
	uint64_t used = 0;
	int r;

	r = ppl_flush_covered(l, ar);
	if (r < 0)
		return r;
	memset(h, 0, offsetof(struct md_ppl_header, e));
	h->signature = l->signature;
	h->generation = atomic_fetch_add(&l->generation, 1) + 1;
	r = md_ppl_add(h, ar->buf + MD_PPL_HEADER_SIZE, &used, ar->len - MD_PPL_HEADER_SIZE, s, n,
	               role, l->chunk);
	if (r < 0)
		return err_set(-EIO, "%s: PPL of %s: a request's entries do not fit a header",
		               l->a->vol.name, ar->vol->name);
	md_ppl_header_encode(h, ar->buf);
	ar->written = 1ull << role;
	for (unsigned i = 0; i < n; i++)
		if (s[i].p == (int)role)
			for (unsigned d = 0; d < s[i].ndata; d++)
				if (s[i].written[d])
					ar->written |= 1ull << s[i].role[d];
	return vol_write(ar->vol, ar->buf, MD_PPL_HEADER_SIZE + used, ar->off, VOL_FUA);
}

static void ppl_unlock(struct md_ppl *l, uint64_t held, bool completed)
{
	for (unsigned r = 0; r < l->n; r++)
		if (held & (1ull << r)) {
			if (completed)
				l->area[r].unflushed = true;
			pthread_mutex_unlock(&l->area[r].lock);
		}
}

static int ppl_log(void *ctx, const struct raid_log_stripe *s, unsigned n, unsigned flags)
{
	struct md_ppl *l = ctx;
	uint64_t want = ppl_roles(s, n), held = 0;
	int r = 0;

	(void)flags;
	/* In role order, so that two requests never wait on each other. */
	for (unsigned role = 0; role < l->n; role++) {
		if (!(want & (1ull << role)))
			continue;
		struct md_ppl_area *ar = &l->area[role];
		int32_t at;
		uint32_t size;
		pthread_mutex_lock(&ar->lock);
		held |= 1ull << role;
		struct vol *v = ppl_member_vol(l, role, &at, &size);
		if (!v)
			continue;
		if (v != ar->vol)
			r = ppl_area_adopt(l, ar, v, at, size);
		if (r == 0)
			r = ppl_log_area(l, role, s, n);
		if (r < 0)
			break;
	}
	if (r < 0) {
		/* The header may be torn: the entries it had are still on the
		 * members (their writes completed), so nothing is lost. */
		ppl_unlock(l, held, false);
		return r;
	}
	return 0;
}

static void ppl_done(void *ctx, const struct raid_log_stripe *s, unsigned n, int r)
{
	struct md_ppl *l = ctx;

	(void)r;
	ppl_unlock(l, ppl_roles(s, n), true);
}

static void ppl_free(struct md_ppl *l)
{
	if (!l)
		return;
	for (unsigned r = 0; l->area && r < l->n; r++) {
		pthread_mutex_destroy(&l->area[r].lock);
		free(l->area[r].buf);
	}
	free(l->area);
	free(l->h);
	free(l);
}

/* Where role's area lies on its member, from its own superblock. */
static int ppl_area_of(const struct md_member *mm, const char *name, uint64_t *off, uint64_t *len)
{
	int32_t o;
	uint32_t sz;

	if (!md_super_ppl(mm->sb, &o, &sz))
		return err_set(-EUCLEAN, "%s: %s: records no PPL where the array keeps one", name,
		               mm->vol->name);
	*off = (uint64_t)((int64_t)mm->sb->super_offset + o) * 512;
	*len = (uint64_t)sz / 8 * 4096; /* the kernel rounds its PP room down to 4 KiB */
	if (*len < 2 * MD_PPL_HEADER_SIZE || *off + *len > mm->vol->size)
		return err_set(-EUCLEAN, "%s: %s: PPL area too small or beyond the member", name,
		               mm->vol->name);
	return 0;
}

int md_ppl_open(struct md_array *a, const struct md_super *fresh)
{
	struct md_ppl *l = NULL;
	struct vol **data = NULL;
	struct md_ppl_stats st = {0};
	const char *name = a->vol.name;
	uint64_t min_len = UINT64_MAX;
	int r = 0;

	if (a->n > 64 || a->n - 1 > MD_PPL_MAX_DATA)
		return err_set(-ENOTSUP, "%s: PPL over more than 64 members", name);
	l = calloc(1, sizeof(*l));
	data = calloc(a->n, sizeof(*data));
	if (!l || !data || !(l->area = calloc(a->n, sizeof(*l->area))) ||
	    !(l->h = calloc(a->n, sizeof(*l->h)))) {
		free(data);
		ppl_free(l);
		return -ENOMEM;
	}
	l->a = a;
	l->n = a->n;
	l->chunk = (uint64_t)fresh->chunk * 512;
	l->signature = md_ppl_signature(fresh->set_uuid);
	for (unsigned role = 0; role < a->n; role++) {
		struct md_member *mm = &a->m[role];
		pthread_mutex_init(&l->area[role].lock, NULL);
		if (!mm->vol || mm->failed || mm->recovering)
			continue;
		data[role] = mm->data;
		r = ppl_area_of(mm, name, &l->area[role].off, &l->area[role].len);
		if (r < 0)
			goto out;
		l->area[role].vol = mm->vol;
		if (l->area[role].len < min_len)
			min_len = l->area[role].len;
	}
	if (a->readonly) {
		if (a->unclean)
			log_warn("%s: array was not shut down cleanly; its PPL is replayed by a "
			         "writable start (read-only: stripes a crash tore may read stale)",
			         name);
		ppl_free(l);
		free(data);
		return 0;
	}
	if (min_len != UINT64_MAX && min_len - MD_PPL_HEADER_SIZE < l->chunk)
		log_warn("%s: its PPL area (%llu bytes) holds less than a chunk (%llu bytes) of "
		         "partial parity: partial writes too large for it are logged as whole "
		         "stripes, which a crash with a member lost can still tear",
		         name, (unsigned long long)min_len, (unsigned long long)l->chunk);
	struct md_ppl_array pa = {a->raid, data, a->n, l->chunk};
	if (a->unclean) {
		for (unsigned role = 0; role < a->n && r == 0; role++)
			if (l->area[role].vol)
				r = md_ppl_replay_area(&pa, l->area[role].vol, l->area[role].off,
				                       l->area[role].len, l->signature, &st);
		for (unsigned role = 0; role < a->n && r == 0; role++)
			if (data[role])
				r = vol_flush(data[role]);
		if (r < 0) {
			r = err_set(r, "%s: PPL replay failed: %s", name, strerror(-r));
			goto out;
		}
		/* md marks the array clean when entries replayed and none
		 * mismatched; else its resync follows. */
		if (st.recovered > 0 && st.mismatched == 0) {
			a->unclean = false;
			log_info("%s: array was not shut down cleanly; replayed %u PPL entries%s",
			         name, st.recovered,
			         st.skipped ? " (some left: their data member is missing)" : "");
		} else {
			log_warn("%s: array was not shut down cleanly; PPL replayed %u entries, %u "
			         "headers or entries did not check: resyncing",
			         name, st.recovered, st.mismatched);
		}
	}
	/* Every area empty, as md starts one: no stale entry left to replay. */
	for (unsigned role = 0; role < a->n && r == 0; role++) {
		struct md_ppl_area *ar = &l->area[role];
		struct md_ppl_header *h = &l->h[role];
		if (!ar->vol)
			continue;
		if (!(ar->buf = vol_buf_alloc(ar->len))) {
			r = -ENOMEM;
			break;
		}
		ar->cap = ar->len;
		memset(ar->buf, 0, ar->len);
		memset(h, 0, offsetof(struct md_ppl_header, e));
		h->signature = l->signature;
		md_ppl_header_encode(h, ar->buf);
		r = vol_write(ar->vol, ar->buf, ar->len, ar->off, VOL_FUA);
		if (r < 0)
			r = err_set(r, "%s: %s: writing its PPL area: %s", name, ar->vol->name,
			            strerror(-r));
	}
	if (r < 0)
		goto out;
	struct raid_log_ops ops = {.log = ppl_log, .done = ppl_done, .ctx = l};
	r = raid_set_log(a->raid, &ops);
	if (r < 0) {
		r = err_set(r, "%s: cannot keep a PPL on this array", name);
		goto out;
	}
	/* The engine logs a partial row alone (its PP fits: checked above)
	 * and whole rows k at a time, an entry each: keep k within a header. */
	uint64_t cap = (uint64_t)(MD_PPL_MAX_ENTRIES - 20) * (a->n - 1) * l->chunk;
	if (cap < a->vol.block_max)
		a->vol.block_max = (uint32_t)cap;
	a->ppl = l;
	l = NULL;
out:
	ppl_free(l);
	free(data);
	return r;
}

void md_ppl_close(struct md_array *a)
{
	ppl_free(a->ppl);
	a->ppl = NULL;
}
