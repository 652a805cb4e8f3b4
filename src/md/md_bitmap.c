/* md_bitmap.c — md's internal write-intent bitmap (see md_bitmap.h).
 *
 * In memory each chunk has one 32-bit atomic word: MDB_SET (its bit is
 * durable on disk), MDB_TOUCHED (a write started since the last clearing
 * pass) and, above them, the count of writes in flight.  The write path
 * adds to the count and reads the flags in one atomic op; only when the
 * bit is not durable yet does it take the caller's lock and write.  A
 * clearing pass (under the lock) clears a chunk only by a compare-and-swap
 * from "SET, no write in flight, untouched" to 0, so a write counted in
 * first keeps its bit, and a write counted in after the swap finds the bit
 * not set and writes it again before it goes on. */
#include "md.h"
#include "md_bitmap.h"

#include "core/log.h"
#include "core/vol.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MDB_SET 0x1u
#define MDB_TOUCHED 0x2u
#define MDB_ONE 0x4u /* one write in flight */

struct md_bitmap {
	struct md_bitmap_info hdr;
	uint64_t index_bytes;
	uint64_t nchunks;
	unsigned shift; /* log2 of the chunk size */
	uint32_t unit;
	uint8_t *img;
	size_t img_len;
	_Atomic uint32_t *st;
	struct md_bitmap_io io;
	char name[64];
};

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int md_bitmap_decode(const void *buf, struct md_bitmap_info *b, const char *name)
{
	const struct md_bitmap_sb *sb = buf;

	memset(b, 0, sizeof(*b));
	if (le32toh(sb->magic) != MD_BITMAP_MAGIC)
		return err_set(-ENOENT, "%s: no write-intent bitmap (bad magic %08x)", name,
		               le32toh(sb->magic));
	b->version = le32toh(sb->version);
	memcpy(b->uuid, sb->uuid, 16);
	b->events = le64toh(sb->events);
	b->events_cleared = le64toh(sb->events_cleared);
	b->sync_size = le64toh(sb->sync_size);
	b->state = le32toh(sb->state);
	b->chunksize = le32toh(sb->chunksize);
	b->daemon_sleep = le32toh(sb->daemon_sleep);
	b->write_behind = le32toh(sb->write_behind);
	b->sectors_reserved = le32toh(sb->sectors_reserved);
	b->nodes = le32toh(sb->nodes);
	return 0;
}

int md_bitmap_check(const struct md_bitmap_info *b, const uint8_t uuid[16], const char *name)
{
	if (b->version != MD_BITMAP_V && b->version != MD_BITMAP_V_HOSTENDIAN)
		return err_set(-EINVAL,
		               "%s: write-intent bitmap version %u (only 3 and 4 are "
		               "supported; 5 is clustered)",
		               name, b->version);
	if (b->nodes > 1)
		return err_set(-EINVAL, "%s: write-intent bitmap of a cluster (%u nodes)", name,
		               b->nodes);
	if (b->chunksize < 512 || !is_pow2(b->chunksize))
		return err_set(-EUCLEAN,
		               "%s: write-intent bitmap chunk size %u is not a power "
		               "of two of at least 512",
		               name, b->chunksize);
	if (b->daemon_sleep < 1 || b->daemon_sleep > 3600 * 24 * 365)
		return err_set(-EUCLEAN, "%s: write-intent bitmap daemon sleep %u is out of range",
		               name, b->daemon_sleep);
	if (b->write_behind > MD_BITMAP_WRITE_BEHIND_MAX)
		return err_set(-EUCLEAN, "%s: write-intent bitmap write-behind %u is out of range",
		               name, b->write_behind);
	if (memcmp(b->uuid, uuid, 16) != 0)
		return err_set(-EUCLEAN,
		               "%s: write-intent bitmap belongs to another array (uuid "
		               "mismatch)",
		               name);
	if (b->events_cleared > b->events)
		return err_set(-EUCLEAN,
		               "%s: write-intent bitmap cleared at events %llu, after "
		               "its events %llu",
		               name, (unsigned long long)b->events_cleared,
		               (unsigned long long)b->events);
	return 0;
}

void md_bitmap_encode(const struct md_bitmap_info *b, void *buf)
{
	struct md_bitmap_sb *sb = buf;

	memset(sb, 0, sizeof(*sb));
	sb->magic = htole32(MD_BITMAP_MAGIC);
	sb->version = htole32(b->version);
	memcpy(sb->uuid, b->uuid, 16);
	sb->events = htole64(b->events);
	sb->events_cleared = htole64(b->events_cleared);
	sb->sync_size = htole64(b->sync_size);
	sb->state = htole32(b->state);
	sb->chunksize = htole32(b->chunksize);
	sb->daemon_sleep = htole32(b->daemon_sleep);
	sb->write_behind = htole32(b->write_behind);
	sb->sectors_reserved = htole32(b->sectors_reserved);
	sb->nodes = htole32(b->nodes);
}

/* ---- the index space ---- */

int md_bitmap_geom_init(struct md_bitmap_geom *g, int level, unsigned raid_disks,
                        uint32_t chunk_sectors, uint64_t dev_sectors, uint64_t array_bytes)
{
	unsigned parity = md_level_parity(level);

	memset(g, 0, sizeof(*g));
	g->level = level;
	g->dev_size = dev_sectors * 512;
	g->array_size = array_bytes;
	g->chunk = (uint64_t)chunk_sectors * 512;
	if (!md_level_redundant(level))
		return -EINVAL;
	if (parity) {
		if (raid_disks <= parity || !g->chunk)
			return -EINVAL;
		g->data_disks = raid_disks - parity;
	}
	return 0;
}

static bool md_bitmap_striped(const struct md_bitmap_geom *g)
{
	return md_level_parity(g->level) != 0;
}

uint64_t md_bitmap_index_size(const struct md_bitmap_geom *g)
{
	return g->level == 10 ? g->array_size : g->dev_size;
}

void md_bitmap_map(const struct md_bitmap_geom *g, uint64_t off, uint64_t len, uint64_t *first,
                   uint64_t *end)
{
	if (!md_bitmap_striped(g)) {
		*first = off;
		*end = off + len;
		return;
	}
	/* Array byte x lies at member byte (x / row) * chunk + x % chunk,
	 * row = chunk * data_disks: within one data chunk that is exact,
	 * beyond it the whole rows touched. */
	uint64_t row = g->chunk * g->data_disks, last = off + len - 1;
	if (off / g->chunk == last / g->chunk) {
		*first = off / row * g->chunk + off % g->chunk;
		*end = last / row * g->chunk + last % g->chunk + 1;
	} else {
		*first = off / row * g->chunk;
		*end = (last / row + 1) * g->chunk;
	}
}

void md_bitmap_unmap(const struct md_bitmap_geom *g, uint64_t first, uint64_t end, uint64_t *off,
                     uint64_t *len)
{
	uint64_t a = first, b = end;

	if (md_bitmap_striped(g)) {
		uint64_t row = g->chunk * g->data_disks;
		a = first / g->chunk * row;
		b = (end + g->chunk - 1) / g->chunk * row;
	}
	if (b > g->array_size)
		b = g->array_size;
	if (a > b)
		a = b;
	*off = a;
	*len = b - a;
}

int md_bitmap_geom_also(struct md_bitmap_geom *g, unsigned raid_disks, uint64_t chunk)
{
	unsigned parity = md_level_parity(g->level);

	if (!md_bitmap_striped(g) || raid_disks <= parity || !chunk)
		return -EINVAL;
	g->also_data_disks = raid_disks - parity;
	g->also_chunk = chunk;
	return 0;
}

void md_bitmap_geom_swap(struct md_bitmap_geom *g)
{
	unsigned dd = g->data_disks;
	uint64_t chunk = g->chunk;

	if (!g->also_data_disks)
		return;
	g->data_disks = g->also_data_disks;
	g->chunk = g->also_chunk;
	g->also_data_disks = dd;
	g->also_chunk = chunk;
}

/* g's other geometry as a geometry of its own. */
static struct md_bitmap_geom md_bitmap_other(const struct md_bitmap_geom *g)
{
	struct md_bitmap_geom o = *g;

	o.data_disks = g->also_data_disks;
	o.chunk = g->also_chunk;
	o.also_data_disks = 0;
	return o;
}

unsigned md_bitmap_map_all(const struct md_bitmap_geom *g, uint64_t off, uint64_t len,
                           uint64_t first[2], uint64_t end[2])
{
	md_bitmap_map(g, off, len, &first[0], &end[0]);
	if (!g->also_data_disks)
		return 1;
	struct md_bitmap_geom o = md_bitmap_other(g);
	md_bitmap_map(&o, off, len, &first[1], &end[1]);
	return 2;
}

unsigned md_bitmap_unmap_all(const struct md_bitmap_geom *g, uint64_t first, uint64_t end,
                             uint64_t off[2], uint64_t len[2])
{
	md_bitmap_unmap(g, first, end, &off[0], &len[0]);
	if (!g->also_data_disks)
		return 1;
	struct md_bitmap_geom o = md_bitmap_other(g);
	md_bitmap_unmap(&o, first, end, &off[1], &len[1]);
	return 2;
}

uint64_t md_bitmap_pick_chunk(uint64_t index_bytes, uint64_t room_bytes, uint64_t want)
{
	uint64_t room = room_bytes, max_bits, bits, min_chunk = 4096;

	if (!want && room > 128 * 1024)
		room = 128 * 1024; /* mdadm: at most 128 KiB of bitmap by default */
	if (room <= MD_BITMAP_HDR)
		return 0;
	max_bits = (room - MD_BITMAP_HDR) * 8;
	if (max_bits > MD_BITMAP_MAX_CHUNKS)
		max_bits = MD_BITMAP_MAX_CHUNKS;
	bits = index_bytes / min_chunk + 1;
	while (bits > max_bits) {
		min_chunk *= 2;
		bits = (bits + 1) / 2;
	}
	if (!want)
		return min_chunk < MD_BITMAP_DEFAULT_CHUNK ? MD_BITMAP_DEFAULT_CHUNK : min_chunk;
	return want >= min_chunk ? want : 0;
}

uint64_t md_bitmap_resize_chunk(uint64_t index_bytes, uint64_t space_bytes, uint64_t chunk)
{
	while (chunk < (1ull << 31) &&
	       md_bitmap_bytes(index_bytes / chunk + (index_bytes % chunk != 0)) > space_bytes)
		chunk *= 2;
	return chunk;
}

void md_bitmap_regrid(const uint8_t *img, uint64_t n, uint64_t chunk, uint8_t *out, uint64_t out_n,
                      uint64_t out_chunk)
{
	for (uint64_t c = 0; c < n; c++) {
		if (!(img[MD_BITMAP_HDR + c / 8] & (1u << (c % 8))))
			continue;
		uint64_t o = c * chunk / out_chunk, last = ((c + 1) * chunk - 1) / out_chunk;
		for (; o <= last && o < out_n; o++)
			out[MD_BITMAP_HDR + o / 8] |= (uint8_t)(1u << (o % 8));
	}
}

/* ---- upkeep ---- */

int md_bitmap_new(const struct md_bitmap_info *hdr, uint64_t index_bytes, uint32_t unit,
                  uint64_t room, const uint8_t *img, const struct md_bitmap_io *io,
                  const char *name, struct md_bitmap **out)
{
	struct md_bitmap *b;
	uint64_t need, nchunks, reserved = (uint64_t)hdr->sectors_reserved * 512;

	if (!is_pow2(hdr->chunksize) || hdr->chunksize < 512 || unit < 512 || !is_pow2(unit))
		return err_set(-EINVAL, "%s: bad write-intent bitmap geometry", name);
	/* The count a header makes of the array is bounded before it
	 * decides an allocation or a write: by uraid's limit, the room
	 * before the data and the space the header reserves. */
	nchunks = index_bytes / hdr->chunksize + (index_bytes % hdr->chunksize != 0);
	if (nchunks > MD_BITMAP_MAX_CHUNKS)
		return err_set(-EFBIG,
		               "%s: a write-intent bitmap of %llu chunks of %u bytes; uraid keeps "
		               "one of at most %llu chunks",
		               name, (unsigned long long)nchunks, hdr->chunksize,
		               (unsigned long long)MD_BITMAP_MAX_CHUNKS);
	need = (md_bitmap_bytes(nchunks) + unit - 1) / unit * unit;
	if (need > room)
		return err_set(-ENOSPC,
		               "%s: a write-intent bitmap of %llu chunks of %u bytes needs %llu "
		               "bytes, it has %llu",
		               name, (unsigned long long)nchunks, hdr->chunksize,
		               (unsigned long long)need, (unsigned long long)room);
	if (reserved && need > reserved)
		return err_set(-ENOSPC,
		               "%s: a write-intent bitmap of %llu chunks of %u bytes needs %llu "
		               "bytes, its header reserves %llu",
		               name, (unsigned long long)nchunks, hdr->chunksize,
		               (unsigned long long)need, (unsigned long long)reserved);
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->hdr = *hdr;
	b->hdr.sync_size = index_bytes / 512;
	b->index_bytes = index_bytes;
	b->shift = (unsigned)__builtin_ctz(hdr->chunksize);
	b->nchunks = nchunks;
	b->unit = unit;
	b->io = *io;
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->img_len = (size_t)need;
	if (!(b->img = vol_buf_alloc(b->img_len)) ||
	    !(b->st = calloc(b->nchunks ? b->nchunks : 1, sizeof(*b->st)))) {
		free(b->img);
		free(b);
		return -ENOMEM;
	}
	memset(b->img, 0, b->img_len);
	md_bitmap_encode(&b->hdr, b->img);
	if (img)
		md_bitmap_merge(b, img);
	*out = b;
	return 0;
}

void md_bitmap_free(struct md_bitmap *b)
{
	if (!b)
		return;
	free(b->img);
	free((void *)b->st);
	free(b);
}

static bool img_test(const uint8_t *img, uint64_t c)
{
	return img[MD_BITMAP_HDR + c / 8] & (1u << (c % 8));
}

void md_bitmap_merge(struct md_bitmap *b, const uint8_t *img)
{
	for (uint64_t c = 0; c < b->nchunks; c++)
		if (img_test(img, c)) {
			b->img[MD_BITMAP_HDR + c / 8] |= (uint8_t)(1u << (c % 8));
			atomic_fetch_or(&b->st[c], MDB_SET | MDB_TOUCHED);
		}
}

const uint8_t *md_bitmap_image(const struct md_bitmap *b, size_t *img_len)
{
	*img_len = b->img_len;
	return b->img;
}

const struct md_bitmap_info *md_bitmap_header(const struct md_bitmap *b)
{
	return &b->hdr;
}

uint64_t md_bitmap_chunks(const struct md_bitmap *b)
{
	return b->nchunks;
}

bool md_bitmap_test(const struct md_bitmap *b, uint64_t chunk)
{
	return chunk < b->nchunks && img_test(b->img, chunk);
}

uint64_t md_bitmap_dirty(const struct md_bitmap *b)
{
	uint64_t n = 0;
	for (uint64_t c = 0; c < b->nchunks; c++)
		n += img_test(b->img, c);
	return n;
}

/* The chunks [*c0, *c1] of index bytes [first, end), clipped. */
static bool md_bitmap_span(const struct md_bitmap *b, uint64_t first, uint64_t end, uint64_t *c0,
                           uint64_t *c1)
{
	if (end > b->index_bytes)
		end = b->index_bytes;
	if (first >= end)
		return false;
	*c0 = first >> b->shift;
	*c1 = (end - 1) >> b->shift;
	return true;
}

bool md_bitmap_start(struct md_bitmap *b, uint64_t first, uint64_t end)
{
	uint64_t c0, c1;
	bool durable = true;

	if (!md_bitmap_span(b, first, end, &c0, &c1))
		return true;
	for (uint64_t c = c0; c <= c1; c++) {
		uint32_t old = atomic_fetch_add(&b->st[c], MDB_ONE);
		if (!(old & MDB_SET))
			durable = false;
		else if (!(old & MDB_TOUCHED))
			atomic_fetch_or(&b->st[c], MDB_TOUCHED);
	}
	return durable;
}

void md_bitmap_end(struct md_bitmap *b, uint64_t first, uint64_t end)
{
	uint64_t c0, c1;

	if (!md_bitmap_span(b, first, end, &c0, &c1))
		return;
	for (uint64_t c = c0; c <= c1; c++)
		atomic_fetch_sub(&b->st[c], MDB_ONE);
}

/* Write the image's bytes [from, to) (rounded out to units). */
static int md_bitmap_write(struct md_bitmap *b, size_t from, size_t to)
{
	from = from / b->unit * b->unit;
	to = (to + b->unit - 1) / b->unit * b->unit;
	if (to > b->img_len)
		to = b->img_len;
	int r = b->io.write(b->io.ctx, b->img, from, to - from);
	if (r < 0)
		log_warn("%s: writing the write-intent bitmap: %s", b->name, err_detail(r));
	return r;
}

int md_bitmap_mark(struct md_bitmap *b, uint64_t first, uint64_t end)
{
	uint64_t c0, c1;
	size_t lo = SIZE_MAX, hi = 0;
	int r;

	if (!md_bitmap_span(b, first, end, &c0, &c1))
		return 0;
	for (uint64_t c = c0; c <= c1; c++) {
		if (atomic_load(&b->st[c]) & MDB_SET)
			continue; /* another writer made it durable meanwhile */
		size_t byte = MD_BITMAP_HDR + (size_t)(c / 8);
		b->img[byte] |= (uint8_t)(1u << (c % 8));
		lo = byte < lo ? byte : lo;
		hi = byte + 1 > hi ? byte + 1 : hi;
	}
	if (lo == SIZE_MAX)
		return 0;
	r = md_bitmap_write(b, lo, hi);
	if (r < 0)
		return r;
	for (uint64_t c = c0; c <= c1; c++)
		atomic_fetch_or(&b->st[c], MDB_SET | MDB_TOUCHED);
	return 0;
}

int md_bitmap_clear_idle(struct md_bitmap *b, uint64_t events)
{
	size_t lo = SIZE_MAX, hi = 0;

	for (uint64_t c = 0; c < b->nchunks; c++) {
		uint32_t s = atomic_load(&b->st[c]);
		if (s == (MDB_SET | MDB_TOUCHED)) {
			atomic_compare_exchange_strong(&b->st[c], &s, MDB_SET);
		} else if (s == MDB_SET && atomic_compare_exchange_strong(&b->st[c], &s, 0)) {
			size_t byte = MD_BITMAP_HDR + (size_t)(c / 8);
			b->img[byte] &= (uint8_t) ~(1u << (c % 8));
			lo = byte < lo ? byte : lo;
			hi = byte + 1 > hi ? byte + 1 : hi;
		}
	}
	if (lo == SIZE_MAX)
		return 0;
	b->hdr.events_cleared = events;
	md_bitmap_encode(&b->hdr, b->img);
	return md_bitmap_write(b, 0, hi);
}

int md_bitmap_clear_all(struct md_bitmap *b, uint64_t events)
{
	for (uint64_t c = 0; c < b->nchunks; c++) {
		uint32_t s = atomic_load(&b->st[c]);
		if (s >= MDB_ONE)
			return -EBUSY; /* the caller's promise broken: keep it all */
	}
	for (uint64_t c = 0; c < b->nchunks; c++)
		atomic_store(&b->st[c], 0);
	memset(b->img + MD_BITMAP_HDR, 0, b->img_len - MD_BITMAP_HDR);
	b->hdr.events_cleared = events;
	b->hdr.state &= ~(MD_BITMAP_STALE | MD_BITMAP_WRITE_ERROR);
	md_bitmap_encode(&b->hdr, b->img);
	return md_bitmap_write(b, 0, b->img_len);
}

int md_bitmap_set_events(struct md_bitmap *b, uint64_t events)
{
	b->hdr.events = events;
	if (b->hdr.events_cleared > events)
		b->hdr.events_cleared = events;
	md_bitmap_encode(&b->hdr, b->img);
	return md_bitmap_write(b, 0, MD_BITMAP_HDR);
}
