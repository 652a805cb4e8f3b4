/* test_reshape_oracle.c — the reshape oracle (issue 19): seeded random
 * cases over the reshapes uraid starts (md_reshape_restripe():
 * more devices, another chunk, another layout, or several at once, and
 * fewer devices to an --array-size, backwards; raid5
 * and raid6, every layout each takes, raid4 (devices and chunk), and
 * raid10 near-2, near-3, offset-2 and offset-3 (devices and chunk), 3..8
 * members, chunks 4 KiB..1 MiB; and raid0's grow through a raid4 with its
 * parity missing).
 * Each case makes an array on member files (md_create), fills it at
 * random through the array (kept in a flat reference), starts the
 * reshape, and then, in two phases, runs md_reshape_run() in a thread
 * while a client writes and reads at random (every read compared with
 * the reference): the first phase stopped at a random point (by
 * position, stop_at, or by the stop flag after a random number of writes,
 * or killed by a power cut of every member: crash members, fault:crash=,
 * the client flushing every few writes), the array closed, reassembled and
 * read whole against the reference (after a cut, the blocks written since
 * the last completed FLUSH are not judged: they may hold anything of their
 * writes; what they read becomes the reference), the second run to the
 * end.  Then the array, reassembled, holds the new geometry alone, reads
 * the reference (zeros past it, where it grew) and its parity agrees.
 * Half the raid4/5/6/10 cases keep a write-intent bitmap (64 KiB chunks) through it:
 * a power cut is then resynced from the bitmap alone (checked to be
 * trusted), so a client write not marked in the geometry it landed in
 * leaves parity (raid10: copies) that the final check finds wrong; a
 * raid10's, indexed by array bytes, resized at the start to the new
 * size, must cover it (checked at the end).
 * Kills of a serving process are tests/sh/md-reshape.sh's and the
 * kernel's side is tests/sh/md-kernel-reshape.sh's.
 *
 * RESHAPE_ORACLE_CASES=N (default 12: an offset layout cut with a bitmap among them) and
 * RESHAPE_ORACLE_SEED=S (default 1) choose the cases; each is printed, with the seed that repeats
 * it. */
#include "check.h"
#include "member_files.h"

#include "core/log.h"
#include "disc/raid/raid.h"
#include "md/md.h"
#include "md/md_bitmap.h"
#include "md/md_grow.h"
#include "md/md_reshape.h"
#include "member/member.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DISKS 8

struct ocase {
	int level;
	unsigned from_disks, to_disks;
	uint32_t from_chunk, to_chunk; /* KiB */
	uint32_t from_layout, to_layout;
	uint64_t array_size; /* sectors: a shrink's */
	uint64_t window;     /* array bytes moved at a time, at most */
	enum { STOP_POSITION, STOP_FLAG, STOP_POWER_CUT } stop;
	bool bitmap; /* a write-intent bitmap kept through the reshape */
};

static const char *const stop_names[] = {"position", "flag", "power cut"};

static const uint32_t raid5_layouts[] = {0, 1, 2, 3, 4, 5};
static const uint32_t raid6_layouts[] = {0, 1, 2, 3, 4, 5, 16, 17, 18, 19, 20};

/* raid10: near or offset copies (md reshapes those, keeping the layout),
 * two or three (n2, n3, o2, o3); the rest their named layouts. */
static const uint32_t raid10_layouts[] = {0x102, 0x102, 0x103, 0x10201, 0x10201, 0x10301};

static uint32_t pick_layout(int level, unsigned long long *rs)
{
	if (level == 10)
		return raid10_layouts[check_rand(rs) % 6];
	if (level == 4)
		return 0; /* mdadm --create's word; a raid4 has no other */
	return level == 5 ? raid5_layouts[check_rand(rs) % 6] : raid6_layouts[check_rand(rs) % 11];
}

/* The chunks a raid10 of layout moves its data offset by at least
 * (md_reshape_grow.c): its far copies for offset ones, else two. */
static unsigned raid10_least(uint32_t layout)
{
	return layout & 0x10000 ? (layout >> 8) & 0xff : 2;
}

/* Each member's data area (bytes) for chunks up to big KiB: 8 stripes
 * of the largest chunk, at least 2 MiB. */
static uint64_t data_bytes(uint32_t big)
{
	uint64_t b = (uint64_t)big * 1024 * 8;
	return b < (2u << 20) ? 2u << 20 : b;
}

/* The member file size at which md_create's data offset (mdadm's rule
 * for chunk KiB) leaves exactly data bytes after it: a whole number of
 * any chunk, so that every new chunk divides the member size. */
static uint64_t member_size(uint64_t data, uint32_t chunk)
{
	uint64_t size = data + (8u << 20);

	for (int i = 0; i < 4; i++)
		size = md_default_data_offset(size / 512, chunk) * 512 + data;
	return size;
}

/* A random case of seed: the old geometry, then what changes (at least
 * one thing); a new chunk no larger than half the room before the data
 * (the data offset moves by half of it, in whole chunks of the larger). */
static void pick(unsigned long long seed, struct ocase *c)
{
	unsigned long long rs = seed * 0x9e3779b97f4a7c15ull + 1;
	unsigned what;

	rs = (rs ^ (rs >> 30)) * 0xbf58476d1ce4e5b9ull; /* splitmix64: seeds apart */
	rs = (rs ^ (rs >> 27)) * 0x94d049bb133111ebull;
	rs ^= rs >> 31;

	memset(c, 0, sizeof(*c));
	/* raid6, raid5, raid4 (raid5's engine), raid10, raid0's path (through raid4) in five */
	unsigned lv = (unsigned)(check_rand(&rs) % 5);
	c->level = lv == 4 ? 0 : lv == 3 ? 10 : lv == 2 ? 4 : lv ? 5 : 6;
	if (c->level == 0) {
		/* raid0 -> more devices (md_grow: through a raid4 with its
		 * parity missing, as mdadm), stopped any of the three ways. */
		c->from_disks = 2 + (unsigned)(check_rand(&rs) % 5);
		c->to_disks = c->from_disks + 1 + (unsigned)(check_rand(&rs) % 2);
		c->from_chunk = c->to_chunk = 4u << (check_rand(&rs) % 9);
		c->window = (uint64_t)(1 + check_rand(&rs) % 8) * 64 * 1024;
		c->stop = seed % 3;
		return;
	}
	unsigned min = c->level == 6 ? 4 : 3;
	c->from_disks = min + (unsigned)(check_rand(&rs) % (MAX_DISKS - min));
	c->from_chunk = 4u << (check_rand(&rs) % 9);
	c->from_layout = pick_layout(c->level, &rs);
	/* raid10 near-3 (or a chunk change) moves the data by two chunks:
	 * md_create's data offset leaves room for that up to 128 KiB */
	if (c->level == 10 && c->from_chunk > 128)
		c->from_chunk = 128;
	c->to_disks = c->from_disks;
	c->to_chunk = c->from_chunk;
	c->to_layout = c->from_layout;
	what = 1 + (unsigned)(check_rand(&rs) % 7); /* bits: devices, chunk, layout */
	bool shrink = c->from_disks > min && check_rand(&rs) % 4 == 0;
	if (what & 1 && !shrink) {
		unsigned most = MAX_DISKS - c->from_disks;
		c->to_disks += 1 + (unsigned)(check_rand(&rs) % (most < 2 ? most : 2));
	}
	if (what & 2) {
		uint64_t room = md_default_data_offset(
		                    member_size(data_bytes(c->from_chunk), c->from_chunk) / 512,
		                    c->from_chunk) *
		                    512 -
		                (64u << 10);
		do
			c->to_chunk = 4u << (check_rand(&rs) % 9);
		while (c->to_chunk == c->from_chunk);
		/* half the room moves the data (raid10: by two chunks at least,
		 * offset copies by their far count) */
		while ((uint64_t)c->to_chunk * 1024 *
		           (c->level == 10 ? raid10_least(c->from_layout) : 1) >
		       room / 2)
			c->to_chunk /= 2;
	}
	if (what & 4 && c->level != 10 && c->level != 4) /* md keeps a raid10's copies */
		while (c->to_layout == c->from_layout)
			c->to_layout = pick_layout(c->level, &rs);
	if (c->to_disks == c->from_disks && c->to_chunk == c->from_chunk &&
	    c->to_layout == c->from_layout && !shrink)
		c->to_disks++; /* the chunk fell back to the old one */
	if (shrink) {
		/* Fewer devices, to an array size that leaves each member two
		 * or three chunks of the larger to move the data up into. */
		unsigned most = c->from_disks - min;
		c->to_disks -= 1 + (unsigned)(check_rand(&rs) % (most < 2 ? most : 2));
		uint32_t big = c->from_chunk > c->to_chunk ? c->from_chunk : c->to_chunk;
		/* raid10: moved by two chunks, or its far count */
		uint64_t chunks = data_bytes(big) / 1024 / big - 2 - check_rand(&rs) % 2 -
		                  (c->level == 10 ? 2 * raid10_least(c->from_layout) - 2 : 0);
		/* raid10: to_disks / near chunks a row, far rows deep */
		unsigned far = (c->from_layout >> 8) & 0xff;
		if (c->level == 10)
			c->array_size =
			    chunks / far * c->to_disks / (c->from_layout & 0xff) * big * 2;
		else
			c->array_size = chunks * big * 2 * (c->to_disks - (c->level == 6 ? 2 : 1));
	}
	c->window = (uint64_t)(1 + check_rand(&rs) % 8) * 64 * 1024;
	c->stop = seed % 3; /* each kind in any three cases running */
	c->bitmap = (seed / 3) % 2;
}

/* Open members [0, n) writable (or read-only) and assemble them, the
 * reshape not started in the background: 0 or -errno. */
static bool start_dirty_degraded; /* --force: crash_check of the raid0 path */

static int assemble(unsigned n, bool ro, struct vol **out)
{
	struct md_assemble_opts o = {
	    .readonly = ro, .no_reshape = true, .start_dirty_degraded = start_dirty_degraded};
	struct vol *m[MAX_DISKS];

	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(member_open(path((int)i), ro ? MEMBER_READONLY : 0, &m[i]), 0);
	err_clear();
	int r = md_assemble_one(m, n, &o, out);
	if (r < 0)
		fprintf(stderr, "oracle: assemble: %s\n", err_detail(r));
	return r;
}

/* Whether array v reads ref over [0, size). */
static bool reads_ref(struct vol *v, const uint8_t *ref, uint64_t size, const char *when)
{
	uint8_t *got = malloc(1 << 20);
	bool ok = v->size >= size;

	for (uint64_t a = 0; ok && a < size; a += 1 << 20) {
		uint64_t n = size - a < (1 << 20) ? size - a : (1 << 20);
		ok = vol_read(v, got, n, a) == 0 && memcmp(got, ref + a, n) == 0;
		if (!ok)
			fprintf(stderr, "oracle: %s: wrong bytes in [%llu, +%llu)\n", when,
			        (unsigned long long)a, (unsigned long long)n);
	}
	free(got);
	return ok;
}

struct runner {
	struct vol *v;
	struct md_reshape_run_opts o;
	atomic_bool stop, done;
	bool finished;
	int r;
};

static void *run_thread(void *p)
{
	struct runner *ru = p;

	ru->r = md_reshape_run(ru->v, &ru->o, &ru->finished);
	atomic_store(&ru->done, true);
	return NULL;
}

/* One phase: md_reshape_run() on v in a thread, a client writing (and
 * reading) at random beside it until it returns; with stop_after, the
 * stop flag set after that many writes.  Returns the run's result. */
static int phase(struct runner *ru, uint8_t *ref, uint64_t size, unsigned long long *rs,
                 unsigned stop_after, unsigned *writes)
{
	uint8_t *buf = malloc(128 << 10), *got = malloc(128 << 10);
	pthread_t t;
	unsigned w = 0;

	atomic_store(&ru->done, false);
	atomic_store(&ru->stop, false);
	ru->o.stop = &ru->stop;
	CHECK_EQ(pthread_create(&t, NULL, run_thread, ru), 0);
	while (!atomic_load(&ru->done)) {
		uint64_t len = (check_rand(rs) % 32 + 1) * 4096;
		uint64_t off = check_rand(rs) % ((size - len) / 4096 + 1) * 4096;
		if (check_rand(rs) % 3) {
			for (uint64_t k = 0; k < len; k += 8) {
				uint64_t x = check_rand(rs);
				memcpy(buf + k, &x, 8);
			}
			CHECK_EQ(vol_write(ru->v, buf, len, off, 0), 0);
			memcpy(ref + off, buf, len);
			if (++w == stop_after)
				atomic_store(&ru->stop, true);
		} else {
			CHECK_EQ(vol_read(ru->v, got, len, off), 0);
			if (memcmp(got, ref + off, len) != 0) {
				fprintf(stderr, "oracle: a read during the move differs at %llu\n",
				        (unsigned long long)off);
				CHECK(false);
			}
		}
	}
	pthread_join(t, NULL);
	*writes += w;
	free(buf);
	free(got);
	return ru->r;
}

/* Phase 1 of a crash case: members [0, nm) as crash members of one power
 * group, md_reshape_run() in a thread, the client writing with a FLUSH
 * every few writes, and after cut_after writes the power of every member
 * cut.  dirty[b]: 4 KiB block b was written since the last completed
 * FLUSH (a cut may lose or tear it). */
static void crash_phase(unsigned nm, unsigned long long seed, uint8_t *ref, bool *dirty,
                        uint64_t size, unsigned long long *rs, unsigned cut_after, uint64_t window,
                        unsigned *writes)
{
	struct md_assemble_opts ao = {.no_reshape = true};
	struct vol *m[MAX_DISKS];
	struct runner ru = {.o = {.window = window}};
	uint8_t *buf = malloc(128 << 10);
	char group[32], spec[192];
	unsigned w = 0, flush_at = 1 + (unsigned)(check_rand(rs) % 8);
	pthread_t t;

	snprintf(group, sizeof(group), "oracle%llu", seed);
	for (unsigned i = 0; i < nm; i++) {
		snprintf(spec, sizeof(spec), "fault:crash=%s,seed=%llu:%s", group, seed,
		         path((int)i));
		CHECK_EQ(member_open(spec, 0, &m[i]), 0);
	}
	err_clear();
	CHECK_EQ(md_assemble_one(m, nm, &ao, &ru.v), 0);
	ru.o.stop = &ru.stop;
	CHECK_EQ(pthread_create(&t, NULL, run_thread, &ru), 0);
	while (w < cut_after && !atomic_load(&ru.done)) {
		uint64_t len = (check_rand(rs) % 32 + 1) * 4096;
		uint64_t off = check_rand(rs) % ((size - len) / 4096 + 1) * 4096;
		for (uint64_t k = 0; k < len; k += 8) {
			uint64_t x = check_rand(rs);
			memcpy(buf + k, &x, 8);
		}
		CHECK_EQ(vol_write(ru.v, buf, len, off, 0), 0);
		memcpy(ref + off, buf, len);
		for (uint64_t b = off / 4096; b < (off + len) / 4096; b++)
			dirty[b] = true;
		if (++w == flush_at) {
			if (vol_flush(ru.v) == 0)
				memset(dirty, 0, size / 4096);
			flush_at = w + 1 + (unsigned)(check_rand(rs) % 8);
		}
	}
	log_verbosity = LOG_ERROR; /* the failures the cut makes are expected */
	CHECK_EQ(fault_power_cut(group), 0);
	pthread_join(t, NULL);
	vol_close(ru.v); /* cannot mark it clean: the power is gone */
	log_verbosity = LOG_WARN;
	*writes += w;
	free(buf);
}

/* After a cut: the array (the plain files, writable: resynced as it
 * starts) reads ref in every block not dirty; what it reads becomes ref. */
static void crash_check(unsigned nm, uint8_t *ref, const bool *dirty, uint64_t size, bool bitmap)
{
	uint8_t *got = malloc(4096);
	unsigned bad = 0, judged = 0;
	struct vol *v;

	if (bitmap) {
		/* The bitmap must be trusted (not behind the superblock), so
		 * that the resync below visits its dirty chunks alone. */
		struct md_super sb;
		struct md_bitmap_info h;
		uint64_t at, end;
		CHECK_EQ(member_open(path(0), MEMBER_READONLY, &v), 0);
		CHECK_EQ(md_super_read(v, &sb), 0);
		CHECK_EQ(md_super_bitmap_area(&sb, v->size, &at, &end), 0);
		CHECK_EQ(vol_read(v, got, 4096, at), 0);
		CHECK_EQ(md_bitmap_decode(got, &h, "oracle"), 0);
		CHECK(h.events >= sb.events && !(h.state & MD_BITMAP_STALE));
		vol_close(v);
	}
	log_verbosity = LOG_ERROR; /* "not shut down cleanly; resyncing" */
	CHECK_EQ(assemble(nm, false, &v), 0);
	log_verbosity = LOG_WARN;
	for (uint64_t b = 0; b < size / 4096; b++) {
		CHECK_EQ(vol_read(v, got, 4096, b * 4096), 0);
		if (!dirty[b]) {
			judged++;
			if (memcmp(got, ref + b * 4096, 4096) != 0 && bad++ < 4)
				fprintf(stderr, "oracle: after the power cut: block %llu differs\n",
				        (unsigned long long)b);
		}
		memcpy(ref + b * 4096, got, 4096);
	}
	CHECK_EQ(bad, 0);
	CHECK(judged > 0);
	vol_close(v);
	free(got);
}

/* Start the reshape of c on the array of members [0, from_disks) with
 * new members [from_disks, to_disks): one window moved (stop_at), so that
 * the phases find it under way.  0 or -errno. */
static int start(const struct ocase *c)
{
	struct vol *vols[MAX_DISKS];
	struct md_super *sbs[MAX_DISKS];
	char *specs[MAX_DISKS], *news[MAX_DISKS];
	struct md_reshape_to to = {.raid_disks = c->to_disks,
	                           .layout_set = true,
	                           .layout = c->to_layout,
	                           .chunk = c->to_chunk * 2,
	                           .array_size = c->array_size};
	/* Backwards (a shrink) the position comes down from the new end. */
	struct md_reshape_run_opts o = {.stop_at = c->array_size ? c->array_size * 512 - 1 : 1,
	                                .window = c->window};

	for (unsigned i = 0; i < c->from_disks; i++) {
		specs[i] = (char *)path((int)i);
		sbs[i] = malloc(sizeof(*sbs[i]));
		CHECK_EQ(member_open(specs[i], 0, &vols[i]), 0);
		CHECK_EQ(md_super_read(vols[i], sbs[i]), 0);
	}
	for (unsigned i = c->from_disks; i < c->to_disks; i++)
		news[i - c->from_disks] = (char *)path((int)i);
	err_clear();
	unsigned nnew = c->to_disks > c->from_disks ? c->to_disks - c->from_disks : 0;
	if (c->level == 0) {
		struct md_grow_opts go = {
		    .raid_disks = c->to_disks, .news = news, .nnew = nnew, .reshape = &o};
		int r = md_grow(specs, c->from_disks, vols, sbs, 0, &go);
		if (r < 0)
			fprintf(stderr, "oracle: start: %s\n", err_detail(r));
		return r;
	}
	int r = md_reshape_restripe(specs, c->from_disks, vols, sbs, 0, &to, news, nnew, false, &o,
	                            NULL);
	if (r < 0)
		fprintf(stderr, "oracle: start: %s\n", err_detail(r));
	return r;
}

static void run_case(unsigned long long seed)
{
	struct ocase c;
	char l0[32], l1[32];
	unsigned long long rs = seed ^ 0x5deece66dull;
	unsigned writes = 0;
	struct runner ru;
	struct vol *v;
	int r;

	pick(seed, &c);
	unsigned nm = c.to_disks > c.from_disks ? c.to_disks : c.from_disks;
	uint32_t big = c.from_chunk > c.to_chunk ? c.from_chunk : c.to_chunk;
	uint64_t msize = member_size(data_bytes(big), c.from_chunk);
	printf("oracle case %llu: raid%d %u -> %u devices%s, chunk %uK -> %uK, %s -> %s, window "
	       "%lluK, stop by %s%s\n",
	       seed, c.level, c.from_disks, c.to_disks, c.array_size ? " (a shrink)" : "",
	       c.from_chunk, c.to_chunk, md_layout_name(c.level, c.from_layout, l0, sizeof(l0)),
	       md_layout_name(c.level, c.to_layout, l1, sizeof(l1)),
	       (unsigned long long)c.window / 1024, stop_names[c.stop],
	       c.bitmap ? ", with a bitmap" : "");
	fflush(stdout);
	for (unsigned i = 0; i < MAX_DISKS; i++)
		member_file_make((int)i, i < nm ? msize : 4096);
	char lv[16], ck[32], ly[48];
	snprintf(lv, sizeof(lv), "--level=%d", c.level);
	snprintf(ck, sizeof(ck), "--chunk=%u", c.from_chunk);
	snprintf(ly, sizeof(ly), "--layout=%s", c.level ? l0 : "");
	const char *m[MAX_DISKS] = {NULL};
	for (unsigned i = 0; i < c.from_disks; i++)
		m[i] = path((int)i);
	const char *bm = c.bitmap ? "--bitmap=internal" : "--bitmap=none";
	const char *bmc = c.bitmap ? "--bitmap-chunk=64" : "--bitmap=none";
	if (c.level == 0) /* no layout to give */
		CHECK_EQ(create(lv, ck, m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], NULL), 0);
	else if (c.level == 4) /* nor for raid4 */
		CHECK_EQ(
		    create(lv, ck, bm, bmc, m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], NULL),
		    0);
	else
		CHECK_EQ(create(lv, ck, ly, bm, bmc, m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7],
		                NULL),
		         0);

	/* Random data through the array, kept in ref. */
	CHECK_EQ(assemble(c.from_disks, false, &v), 0);
	uint64_t old_size = v->size;
	uint8_t *ref = malloc(old_size);
	for (uint64_t k = 0; k < old_size; k += 8) {
		uint64_t x = check_rand(&rs);
		memcpy(ref + k, &x, 8);
	}
	CHECK_EQ(vol_write(v, ref, old_size, 0, 0), 0);
	vol_close(v);

	if (start(&c) < 0) {
		CHECK(false);
		free(ref);
		return;
	}
	/* Phase 1: stopped at a random point, by position or by the flag. */
	CHECK_EQ(assemble(nm, false, &ru.v), 0);
	uint64_t size = ru.v->size; /* the smaller geometry's, until the end */
	CHECK(size <= old_size);
	ru.o = (struct md_reshape_run_opts){.window = c.window};
	unsigned stop_after = 0;
	if (c.stop == STOP_POWER_CUT) {
		vol_close(ru.v);
		bool *dirty = calloc(size / 4096, sizeof(*dirty));
		crash_phase(nm, seed, ref, dirty, size, &rs, 1 + (unsigned)(check_rand(&rs) % 60),
		            c.window, &writes);
		/* The raid0 path's raid4 has its parity missing: cut after the
		 * reshape ended, it is a dirty degraded raid4, which md (and
		 * uraid) start only with --force, though only parity is
		 * missing; cut during it, uraid starts it as the kernel does. */
		start_dirty_degraded = c.level == 0;
		crash_check(nm, ref, dirty, size, c.bitmap);
		start_dirty_degraded = false;
		free(dirty);
	} else {
		if (c.stop == STOP_FLAG)
			stop_after = 1 + (unsigned)(check_rand(&rs) % 40);
		else
			ru.o.stop_at = check_rand(&rs) % size + 1;
		r = phase(&ru, ref, size, &rs, stop_after, &writes);
		if (r < 0 && r != -EINTR)
			fprintf(stderr, "oracle: run: %s\n", err_detail(r));
		CHECK(r == 0 || r == -EINTR);
		vol_close(ru.v);
	}
	CHECK_EQ(assemble(nm, true, &v), 0);
	CHECK(reads_ref(v, ref, size, "after the stop"));
	bool under_way = strcmp(md_array_raid(v)->ops->kind, "md-reshape") == 0;
	vol_close(v);

	/* Phase 2: to the end. */
	if (under_way) {
		CHECK_EQ(assemble(nm, false, &ru.v), 0);
		ru.o = (struct md_reshape_run_opts){.window = c.window};
		r = phase(&ru, ref, size, &rs, 0, &writes);
		if (r < 0)
			fprintf(stderr, "oracle: run: %s\n", err_detail(r));
		CHECK_EQ(r, 0);
		CHECK(ru.finished);
		vol_close(ru.v);
	}

	/* raid0's path: back from its raid4 (md_grow's last step).  The raid0
	 * then also maps what each member's data area gained past the used
	 * size (the offset moved down, the end kept, as md_finish_reshape
	 * leaves it), which no step wrote: zeros only up to the raid4's end. */
	uint64_t zero_end = UINT64_MAX;
	if (c.level == 0) {
		CHECK_EQ(assemble(nm, true, &v), 0);
		zero_end = v->size;
		vol_close(v);
		struct vol *vols[MAX_DISKS];
		struct md_super *sbs[MAX_DISKS];
		char *specs[MAX_DISKS];
		struct md_grow_opts go = {.change_level = true, .level = 0};
		unsigned fresh = 0;
		for (unsigned i = 0; i < nm; i++) {
			specs[i] = (char *)path((int)i);
			sbs[i] = malloc(sizeof(*sbs[i]));
			CHECK_EQ(member_open(specs[i], 0, &vols[i]), 0);
			CHECK_EQ(md_super_read(vols[i], sbs[i]), 0);
			fresh = sbs[i]->events > sbs[fresh]->events ? i : fresh;
		}
		err_clear();
		r = md_grow(specs, nm, vols, sbs, fresh, &go);
		if (r < 0)
			fprintf(stderr, "oracle: raid4 -> raid0: %s\n", err_detail(r));
		CHECK_EQ(r, 0);
	}

	/* The new geometry alone: the reference, zeros after it, parity agrees. */
	struct raid_check_report rep;
	CHECK_EQ(assemble(nm, true, &v), 0);
	CHECK(strcmp(md_array_raid(v)->ops->kind, "md-reshape") != 0);
	CHECK(reads_ref(v, ref, size, "after the end"));
	uint8_t *zero = calloc(1, 1 << 20), *got = malloc(1 << 20);
	zero_end = zero_end < v->size ? zero_end : v->size;
	for (uint64_t a = size; a < zero_end; a += 1 << 20) {
		uint64_t n = zero_end - a < (1 << 20) ? zero_end - a : (1 << 20);
		CHECK_EQ(vol_read(v, got, n, a), 0);
		CHECK(memcmp(got, zero, n) == 0);
	}
	if (c.level) { /* raid0 has nothing to agree */
		CHECK_EQ(raid_check(md_array_raid(v), false, &rep, NULL), 0);
		CHECK_EQ(rep.mismatched, 0);
	}
	struct md_super sb;
	struct vol *m0;
	CHECK_EQ(member_open(path(0), MEMBER_READONLY, &m0), 0);
	CHECK_EQ(md_super_read(m0, &sb), 0);
	CHECK(!(sb.feature_map & MD_FEATURE_RESHAPE_ACTIVE));
	CHECK_EQ(sb.raid_disks, c.to_disks);
	CHECK_EQ(sb.chunk, c.to_chunk * 2);
	CHECK_EQ(sb.layout, c.to_layout);
	CHECK_EQ(!!(sb.feature_map & MD_FEATURE_BITMAP_OFFSET), c.bitmap);
	if (c.bitmap && c.level == 10) {
		/* Its index is the array: the bits of what it ended as fit in
		 * the space the header reserves (the kernel's resize). */
		struct md_bitmap_info h;
		uint64_t at, bend;
		uint8_t *blk = malloc(4096);
		CHECK_EQ(md_super_bitmap_area(&sb, m0->size, &at, &bend), 0);
		CHECK_EQ(vol_read(m0, blk, 4096, at), 0);
		CHECK_EQ(md_bitmap_decode(blk, &h, "oracle"), 0);
		uint64_t bits = (v->size + h.chunksize - 1) / h.chunksize;
		CHECK(md_bitmap_bytes(bits) <= (uint64_t)h.sectors_reserved * 512);
		free(blk);
	}
	vol_close(m0);
	for (unsigned i = c.to_disks; i < c.from_disks; i++) {
		CHECK_EQ(member_open(path((int)i), MEMBER_READONLY, &m0), 0);
		CHECK_EQ(md_super_read(m0, &sb), 0);
		CHECK_EQ(md_super_role(&sb), MD_ROLE_SPARE); /* shrunk: left a spare */
		vol_close(m0);
	}
	printf("  %s: %u client writes beside the move, %llu -> %llu KiB\n",
	       check_failures ? "FAILED" : "ok", writes, (unsigned long long)size / 1024,
	       (unsigned long long)v->size / 1024);
	vol_close(v);
	free(zero);
	free(got);
	free(ref);
}

int main(void)
{
	const char *e = getenv("RESHAPE_ORACLE_CASES"), *s = getenv("RESHAPE_ORACLE_SEED");
	unsigned cases = e ? (unsigned)strtoul(e, NULL, 10) : check_seeds(12);
	unsigned long long seed = s ? strtoull(s, NULL, 10) : 1 + check_seed_base();

	if (check_tmpdir(dir, sizeof(dir), "reshape-oracle") < 0)
		return 1;
	log_verbosity = LOG_WARN;
	for (unsigned i = 0; i < cases && !check_failures; i++)
		run_case(seed + i);
	printf("oracle: %u cases from seed %llu\n", cases, seed);
	for (int i = 0; i < MAX_DISKS; i++)
		unlink(path(i));
	rmdir(dir);
	return check_done();
}
