/* detect.c — scoring RAID0/RAID5 geometries for members without metadata
 * (detect.h).  Three passes, reading only:
 *
 *  1. rows: 4 KiB at the same position of every member, sampled over the
 *     smallest member; the share of rows holding data whose XOR is zero
 *     says RAID5 (it holds whatever the order, layout and chunk).  The
 *     rows holding data also pick where pass 2 looks.
 *  2. for each data offset (0, md's defaults, where each member's data
 *     starts; only those with a signature at their start when any has
 *     one) and chunk (4K..1M): the byte make-up of the KiB before and
 *     after each sampled chunk boundary of each member, and their
 *     similarity for every pair of members; then every order (and RAID5
 *     layout) is scored from those tables alone: the mean similarity of
 *     the boundaries it puts next to each other in array order, plus a
 *     bonus for a signature at the array's start.
 *  3. the best candidates are opened as arrays (raid_open) and checked
 *     for ext2/3/4 backup superblocks and XFS allocation group headers
 *     where their geometry puts them.
 *
 * stack_detect_raid5_row() is md's raid5_compute_sector() for one row. */
#include "detect.h"

#include "core/log.h"
#include "disc/slice.h"
#include "md/md.h"
#include "md/probe.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define DET_ROW 4096        /* bytes per sampled row */
#define DET_ROWS 8192       /* rows sampled in pass 1, at most */
#define DET_W 1024          /* bytes each side of a chunk boundary */
#define DET_STRIPES 256     /* stripes sampled per offset and chunk */
#define DET_MAX_OFFSETS 32  /* data offsets tried */
#define DET_CHUNK_MIN 4096u /* chunks tried: powers of two between */
#define DET_CHUNK_MAX (1u << 20)
#define DET_VERIFY 48 /* candidates pass 3 opens */

unsigned stack_detect_raid5_row(uint32_t layout, unsigned n, uint64_t s, unsigned *data)
{
	unsigned pd, r = (unsigned)(s % n);

	/* md: 0 left-asymmetric, 1 right-asymmetric, 2 left-symmetric,
	 * 3 right-symmetric (parity on the left: the last disk first). */
	pd = (layout == 0 || layout == 2) ? n - 1 - r : r;
	for (unsigned k = 0; k < n - 1; k++)
		data[k] = layout >= 2 ? (pd + 1 + k) % n : (k >= pd ? k + 1 : k);
	return pd;
}

/* A window's byte histogram. */
struct det_win {
	uint16_t h[256];
	bool zero;
};

struct det {
	struct vol **m;
	unsigned n;
	uint64_t size;  /* the smallest member */
	uint64_t *rows; /* pass 1: row positions holding data, ascending */
	unsigned nrows;
	uint8_t *buf; /* 2 * DET_W */
	uint64_t scored;
	unsigned keep;
	struct stack_detect_cand *best; /* keep of them, best first */
	unsigned nbest;
};

static void det_win_of(const uint8_t *p, struct det_win *w)
{
	memset(w, 0, sizeof(*w));
	for (unsigned i = 0; i < DET_W; i++)
		w->h[p[i]]++;
	w->zero = w->h[0] == DET_W;
}

/* How alike two windows' byte make-up is, 0..1; -1 when both are zero
 * (nothing to tell). */
static float det_sim(const struct det_win *a, const struct det_win *b)
{
	unsigned d = 0;

	if (a->zero && b->zero)
		return -1;
	for (unsigned i = 0; i < 256; i++)
		d += a->h[i] > b->h[i] ? a->h[i] - b->h[i] : b->h[i] - a->h[i];
	return 1.0f - (float)d / (2.0f * DET_W);
}

static void det_keep(struct det *d, const struct stack_detect_cand *c)
{
	unsigned i;

	if (d->nbest == d->keep && c->score <= d->best[d->nbest - 1].score)
		return;
	i = d->nbest < d->keep ? d->nbest++ : d->nbest - 1;
	while (i > 0 && d->best[i - 1].score < c->score) {
		d->best[i] = d->best[i - 1];
		i--;
	}
	d->best[i] = *c;
}

/* Pass 1. */
static int det_rows(struct det *d, struct stack_detect_report *rep)
{
	uint64_t nblk = d->size / DET_ROW, want = nblk < DET_ROWS ? nblk : DET_ROWS;
	uint8_t *b = malloc(DET_ROW), *x = malloc(DET_ROW), *first = malloc(DET_ROW);
	unsigned zero = 0, same = 0;
	int r = 0;

	d->rows = calloc(want ? want : 1, sizeof(*d->rows));
	if (!b || !x || !first || !d->rows) {
		r = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < want; i++) {
		uint64_t at = (want > 1 ? i * (nblk - 1) / (want - 1) : 0) * DET_ROW;
		bool data = false, xz = true;

		bool eq = true;

		memset(x, 0, DET_ROW);
		for (unsigned k = 0; k < d->n; k++) {
			r = vol_read(d->m[k], b, DET_ROW, at);
			if (r == 0 && k > 0)
				eq &= memcmp(b, first, DET_ROW) == 0;
			else if (r == 0)
				memcpy(first, b, DET_ROW);
			if (r < 0) {
				r = err_set(r, "%s: read at %llu: %s", d->m[k]->name,
				            (unsigned long long)at, strerror(-r));
				goto out;
			}
			for (unsigned j = 0; j < DET_ROW; j++) {
				data |= b[j] != 0;
				x[j] ^= b[j];
			}
		}
		if (!data)
			continue;
		for (unsigned j = 0; j < DET_ROW && xz; j++)
			xz = x[j] == 0;
		zero += xz;
		same += eq;
		d->rows[d->nrows++] = at;
	}
	if (d->nrows == 0) {
		r = err_set(-ENODATA, "the members hold no data where they were sampled");
		goto out;
	}
	if (same >= d->nrows - d->nrows / 10) {
		r = err_set(-EINVAL,
		            "the members hold the same data (%u of %u rows sampled): a mirror "
		            "(RAID1), not a RAID0 or RAID5; each member alone is the array "
		            "(--assume level=1,order=...)",
		            same, d->nrows);
		goto out;
	}
	rep->parity_rows = d->nrows;
	rep->parity = (double)zero / d->nrows;
	rep->level = d->n >= 3 && rep->parity >= 0.9 ? 5 : 0;
out:
	free(b);
	free(x);
	free(first);
	return r;
}

/* Where member k's data starts, rounded down to 4 KiB, looked for in the
 * first 256 MiB; UINT64_MAX when none there. */
static int det_first_data(struct det *d, unsigned k, uint64_t *at)
{
	const uint64_t step = 1 << 20, lim = 256ull << 20;
	uint8_t *b = malloc(step);
	int r = 0;

	*at = UINT64_MAX;
	if (!b)
		return -ENOMEM;
	for (uint64_t off = 0; off + step <= d->size && off < lim && *at == UINT64_MAX;
	     off += step) {
		r = vol_read(d->m[k], b, step, off);
		if (r < 0) {
			r = err_set(r, "%s: read at %llu: %s", d->m[k]->name,
			            (unsigned long long)off, strerror(-r));
			break;
		}
		for (uint64_t j = 0; j < step; j++)
			if (b[j]) {
				*at = (off + j) / 4096 * 4096;
				break;
			}
	}
	free(b);
	return r;
}

static void det_add_offset(uint64_t *o, unsigned *no, uint64_t v, uint64_t size)
{
	if (v >= size / 2 || *no == DET_MAX_OFFSETS)
		return;
	for (unsigned i = 0; i < *no; i++)
		if (o[i] == v)
			return;
	o[(*no)++] = v;
}

/* What probe_member() finds on member k from offset on, or NULL. */
static const char *det_signature(struct det *d, unsigned k, uint64_t offset)
{
	const char *what = NULL;
	struct vol *s;

	if (slice_open(d->m[k], offset, (d->size - offset) / 4096 * 4096, false, d->m[k]->name,
	               &s) < 0)
		return NULL;
	err_clear();
	if (probe_member(s, d->m[k]->name, &what) <= 0)
		what = NULL;
	err_clear();
	vol_close(s);
	return what;
}

/* The data disks (roles) of row s in array order: n of them for RAID0,
 * n - 1 for RAID5 (layout). */
static unsigned det_row(int level, uint32_t layout, unsigned n, uint64_t s, unsigned *data)
{
	if (level == 0) {
		for (unsigned k = 0; k < n; k++)
			data[k] = k;
		return n;
	}
	stack_detect_raid5_row(layout, n, s, data);
	return n - 1;
}

/* Next permutation of p[0..n) in lexicographic order; false after the last. */
static bool det_next_perm(unsigned *p, unsigned n)
{
	int i = (int)n - 2, j = (int)n - 1;

	while (i >= 0 && p[i] >= p[i + 1])
		i--;
	if (i < 0)
		return false;
	while (p[j] <= p[i])
		j--;
	unsigned t = p[i];
	p[i] = p[j];
	p[j] = t;
	for (unsigned a = (unsigned)i + 1, b = n - 1; a < b; a++, b--) {
		t = p[a];
		p[a] = p[b];
		p[b] = t;
	}
	return true;
}

/* Pass 2 for one offset and chunk. */
static int det_score_chunk(struct det *d, int level, uint64_t offset, uint32_t chunk,
                           const char *const *sig, bool any_sig, bool starts)
{
	unsigned n = d->n, ns = 0, nl = level == 5 ? 4 : 1;
	uint64_t nstripes = (d->size - offset) / chunk, *st = NULL;
	/* per sampled stripe: same[i][j] tail of i -> head of j in the row,
	 * next[i][j] tail of i -> head of j in the row after */
	float *same = NULL, *next = NULL;
	struct det_win *head = NULL, *tail = NULL, *head1 = NULL;
	int r = 0;

	if (nstripes < 4)
		return 0;
	st = calloc(d->nrows, sizeof(*st));
	if (!st)
		return -ENOMEM;
	for (unsigned i = 0; i < d->nrows; i++) {
		uint64_t s;
		if (d->rows[i] < offset)
			continue;
		s = (d->rows[i] - offset) / chunk;
		if (s + 1 < nstripes && (ns == 0 || st[ns - 1] != s))
			st[ns++] = s;
	}
	if (ns > DET_STRIPES) { /* evenly thinned */
		for (unsigned i = 0; i < DET_STRIPES; i++)
			st[i] = st[(uint64_t)i * ns / DET_STRIPES];
		ns = DET_STRIPES;
	}
	same = calloc((size_t)ns * n * n, sizeof(*same));
	next = calloc((size_t)ns * n * n, sizeof(*next));
	head = calloc(n, sizeof(*head));
	tail = calloc(n, sizeof(*tail));
	head1 = calloc(n, sizeof(*head1));
	if (!same || !next || !head || !tail || !head1) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned si = 0; si < ns; si++) {
		uint64_t at = offset + st[si] * chunk;
		for (unsigned k = 0; k < n; k++) {
			r = vol_read(d->m[k], d->buf, DET_W, at);
			if (r == 0) {
				det_win_of(d->buf, &head[k]);
				r = vol_read(d->m[k], d->buf, 2 * DET_W, at + chunk - DET_W);
			}
			if (r < 0) {
				r = err_set(r, "%s: read near %llu: %s", d->m[k]->name,
				            (unsigned long long)at, strerror(-r));
				goto out;
			}
			det_win_of(d->buf, &tail[k]);
			det_win_of(d->buf + DET_W, &head1[k]);
		}
		for (unsigned i = 0; i < n; i++)
			for (unsigned j = 0; j < n; j++) {
				same[((size_t)si * n + i) * n + j] = det_sim(&tail[i], &head[j]);
				next[((size_t)si * n + i) * n + j] = det_sim(&tail[i], &head1[j]);
			}
	}
	/* The rows' data disks repeat every n rows for each layout. */
	unsigned rowdata[4][STACK_DETECT_MAX][STACK_DETECT_MAX], nd = level == 5 ? n - 1 : n;
	for (unsigned l = 0; l < nl; l++)
		for (unsigned s = 0; s < n; s++)
			det_row(level, level == 5 ? l : 0, n, s, rowdata[l][s]);
	unsigned p[STACK_DETECT_MAX];
	for (unsigned k = 0; k < n; k++)
		p[k] = k;
	do {
		for (unsigned l = 0; l < nl; l++) {
			struct stack_detect_cand c = {0};
			unsigned first = p[rowdata[l][0][0]], cnt = 0;
			double sum = 0;

			/* With a signature at this offset, the array starts on
			 * a member that has it. */
			if (any_sig && !sig[first])
				continue;
			for (unsigned si = 0; si < ns; si++) {
				const unsigned *a = rowdata[l][st[si] % n],
				               *b = rowdata[l][(st[si] + 1) % n];
				const float *sm = same + (size_t)si * n * n,
				            *nx = next + (size_t)si * n * n;
				float v;
				for (unsigned k = 0; k + 1 < nd; k++) {
					v = sm[p[a[k]] * n + p[a[k + 1]]];
					if (v >= 0) {
						sum += v;
						cnt++;
					}
				}
				v = nx[p[a[nd - 1]] * n + p[b[0]]];
				if (v >= 0) {
					sum += v;
					cnt++;
				}
			}
			d->scored++;
			c.geom = (struct raid_geom){.level = level,
			                            .layout = level == 5 ? l : 0,
			                            .chunk = chunk,
			                            .raid_disks = n};
			memcpy(c.order, p, sizeof(p));
			c.offset = offset;
			c.continuity = cnt ? sum / cnt : 0;
			c.boundaries = cnt;
			c.signature = sig[first];
			c.starts = starts;
			c.score = c.continuity + (c.signature ? 1.0 : 0.0) + (starts ? 0.05 : 0.0);
			det_keep(d, &c);
		}
	} while (det_next_perm(p, n));
out:
	free(st);
	free(same);
	free(next);
	free(head);
	free(tail);
	free(head1);
	return r;
}

static uint32_t det_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint32_t det_be32(const uint8_t *p)
{
	return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

/* Whether ext2/3/4 keeps a backup superblock in group g (sparse_super:
 * groups 0, 1 and powers of 3, 5 and 7). */
static bool det_ext_backup(uint32_t g, bool sparse)
{
	if (!sparse || g <= 1)
		return true;
	for (uint32_t b = 3; b <= 7; b += 2) {
		uint64_t p = b;
		while (p < g)
			p *= b;
		if (p == g)
			return true;
	}
	return false;
}

/* Pass 3: the file system's own copies of its header where c puts them. */
static void det_fs_check(struct vol *arr, struct stack_detect_cand *c)
{
	uint8_t sb[1024], b[1024];

	if (vol_read(arr, sb, 1024, 1024) == 0 && sb[0x38] == 0x53 && sb[0x39] == 0xef) {
		uint32_t log = det_le32(sb + 0x18), bpg = det_le32(sb + 0x20);
		uint64_t first = det_le32(sb + 0x14), blocks = det_le32(sb + 0x04), bs;
		bool sparse = det_le32(sb + 0x64) & 1, sparse2 = det_le32(sb + 0x5c) & 0x200;
		if (log > 6 || bpg == 0)
			return;
		bs = 1024ull << log;
		if (det_le32(sb + 0x60) & 0x80) /* 64bit */
			blocks |= (uint64_t)det_le32(sb + 0x150) << 32;
		/* Groups up to 2^16 at most (sparse_super's 16th backup is in
		 * group 2401): whatever the header says, a bounded walk. */
		for (uint32_t g = 1;
		     c->fs_checked < 16 && g < (1u << 16) && (uint64_t)g * bpg + first < blocks;
		     g++) {
			if (sparse2 ? (g != det_le32(sb + 0x24c) && g != det_le32(sb + 0x250))
			            : !det_ext_backup(g, sparse))
				continue;
			uint64_t at = (first + (uint64_t)g * bpg) * bs;
			if (at + 1024 > arr->size)
				break;
			c->fs_checked++;
			if (vol_read(arr, b, 1024, at) == 0 && b[0x38] == 0x53 && b[0x39] == 0xef &&
			    (b[0x5a] | b[0x5b] << 8) == (int)(g & 0xffff))
				c->fs_found++;
		}
		return;
	}
	if (vol_read(arr, sb, 1024, 0) == 0 && memcmp(sb, "XFSB", 4) == 0) {
		uint64_t bsz = det_be32(sb + 4), agb = det_be32(sb + 0x54),
		         agc = det_be32(sb + 0x58);
		for (uint64_t g = 1; g < agc && c->fs_checked < 16; g++) {
			uint64_t at = g * agb * bsz;
			if (!bsz || !agb || at + 1024 > arr->size)
				break;
			c->fs_checked++;
			if (vol_read(arr, b, 1024, at) == 0 && memcmp(b, "XFSB", 4) == 0)
				c->fs_found++;
		}
	}
}

/* Open candidate c as an array over slices of the members. */
static int det_open(struct det *d, const struct stack_detect_cand *c, struct vol **out)
{
	struct vol *ms[STACK_DETECT_MAX] = {0};
	struct raid_geom g = c->geom;
	uint64_t size = (d->size - c->offset) / c->geom.chunk * c->geom.chunk;
	int r = 0;

	g.dev_size = size;
	for (unsigned k = 0; k < d->n && r == 0; k++)
		r = slice_open(d->m[c->order[k]], c->offset, size, false, d->m[c->order[k]]->name,
		               &ms[k]);
	if (r == 0)
		r = raid_open(&g, ms, NULL, "candidate", out);
	if (r < 0)
		for (unsigned k = 0; k < d->n; k++)
			if (ms[k])
				vol_close(ms[k]);
	return r;
}

static int det_cmp(const void *a, const void *b)
{
	const struct stack_detect_cand *x = a, *y = b;
	return x->score < y->score ? 1 : x->score > y->score ? -1 : 0;
}

int stack_detect(struct vol **m, unsigned n, unsigned keep, struct stack_detect_report *rep)
{
	struct det d = {.m = m, .n = n, .keep = keep > DET_VERIFY ? keep : DET_VERIFY};
	uint64_t off[DET_MAX_OFFSETS], sigoff[DET_MAX_OFFSETS];
	const char *sig[DET_MAX_OFFSETS][STACK_DETECT_MAX] = {{0}};
	bool has[DET_MAX_OFFSETS] = {0};
	uint64_t start = UINT64_MAX; /* where the first member's data starts */
	unsigned no = 0, nsig = 0;
	int r;

	memset(rep, 0, sizeof(*rep));
	if (n < 2 || n > STACK_DETECT_MAX)
		return err_set(-EINVAL, "detect takes 2 to %d members, not %u", STACK_DETECT_MAX,
		               n);
	d.size = UINT64_MAX;
	for (unsigned k = 0; k < n; k++)
		if (m[k]->size < d.size)
			d.size = m[k]->size;
	if (d.size < 16 * DET_CHUNK_MIN)
		return err_set(-EINVAL, "the members are too small to tell (%llu bytes)",
		               (unsigned long long)d.size);
	d.buf = malloc(2 * DET_W);
	d.best = calloc(d.keep, sizeof(*d.best));
	if (!d.buf || !d.best) {
		r = -ENOMEM;
		goto out;
	}
	r = det_rows(&d, rep);
	if (r < 0)
		goto out;
	/* Data offsets: none, where each member's data starts, md's defaults
	 * (v1.2 for each chunk) and round ones controllers use. */
	det_add_offset(off, &no, 0, d.size);
	for (unsigned k = 0; k < n; k++) {
		uint64_t at;
		r = det_first_data(&d, k, &at);
		if (r < 0)
			goto out;
		if (at != UINT64_MAX)
			det_add_offset(off, &no, at, d.size);
		if (at < start)
			start = at;
	}
	for (uint32_t c = DET_CHUNK_MIN; c <= DET_CHUNK_MAX; c <<= 1)
		det_add_offset(off, &no, md_default_data_offset(d.size / 512, c / 1024) * 512,
		               d.size);
	for (uint64_t o = 1 << 20; o <= 256ull << 20; o <<= 1)
		det_add_offset(off, &no, o, d.size);
	/* Where some member holds a signature at an offset, only those. */
	for (unsigned i = 0; i < no; i++)
		for (unsigned k = 0; k < n; k++) {
			sig[i][k] = det_signature(&d, k, off[i]);
			has[i] |= sig[i][k] != NULL;
		}
	for (unsigned i = 0; i < no; i++)
		if (has[i])
			sigoff[nsig++] = off[i];
	for (unsigned i = 0; i < no; i++) {
		if (nsig && !has[i])
			continue;
		for (uint32_t c = DET_CHUNK_MIN; c <= DET_CHUNK_MAX; c <<= 1) {
			r = det_score_chunk(&d, rep->level, off[i], c, sig[i], has[i],
			                    off[i] == start);
			if (r < 0)
				goto out;
		}
	}
	(void)sigoff;
	/* Pass 3 on the best. */
	for (unsigned i = 0; i < d.nbest; i++) {
		struct stack_detect_cand *c = &d.best[i];
		struct vol *arr;
		const char *what = NULL;
		err_clear();
		if (det_open(&d, c, &arr) < 0) {
			c->score = -1;
			continue;
		}
		if (probe_member(arr, "candidate", &what) > 0 && what)
			c->signature = what;
		det_fs_check(arr, c);
		if (c->fs_checked)
			c->score += 2.0 * c->fs_found / c->fs_checked;
		vol_close(arr);
	}
	err_clear();
	qsort(d.best, d.nbest, sizeof(*d.best), det_cmp);
	rep->scored = d.scored;
	rep->cand = d.best;
	rep->ncand = d.nbest < keep ? d.nbest : keep;
	d.best = NULL;
	if (!rep->ncand)
		r = err_set(-ENODATA, "no geometry fits the members");
out:
	free(d.buf);
	free(d.rows);
	free(d.best);
	return r;
}

void stack_detect_report_free(struct stack_detect_report *rep)
{
	free(rep->cand);
	memset(rep, 0, sizeof(*rep));
}
