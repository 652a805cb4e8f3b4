/* md_jcache.h — md's raid5-cache in write-back mode (md's sysfs
 * journal_mode = write-back): a bounded cache of 4 KiB data pages in
 * front of a RAID4/5/6 whose journal (md_journal.h) holds them durably.
 *
 * A write is acknowledged once its pages are on the journal (DATA
 * payloads, flushed); they stay here, and reads see them.  Its whole
 * stripe rows (and the row it completes from pages held here) go through
 * instead, as write-through writes them: DATA and PARITY logged, then the
 * members, acknowledged after (through_rows); while the cache is empty a
 * write of 64 KiB or more goes to the array whole, whose write-behind may
 * take a stream of them as it takes write-through's (stream_bytes;
 * md_jcache_flush).  Destage
 * threads (several rows at once) write them to the array later, a stripe
 * row each, in member order (oldest first, what pins the journal's tail,
 * once the log is half full), through md_journal_destage: the
 * array logs the row's parity, then writes its members; a row whose
 * pages all gathered here is written whole, its parity computed from
 * them without member reads.  A full cache or journal makes writers
 * wait, never drops a page.  FLUSH and FUA are durable on the journal;
 * close destages everything.  Sits between the md vol (md_vol.c) and the
 * RAID vol; the journal and the array stay the caller's. */
#ifndef URAID_MD_JCACHE_H
#define URAID_MD_JCACHE_H

#include "md_journal.h"

#include <stdint.h>

/* The default cache size (bytes of data pages), `serve --journal-cache`. */
#define MD_JCACHE_DEFAULT (64ull << 20)

struct md_jcache;

struct md_jcache_stats {
	uint64_t written;      /* pages written by clients (logged) */
	uint64_t rows;         /* stripe rows destaged */
	uint64_t whole_pages;  /* of their pages, in rows destaged with no member read */
	uint64_t read_pages;   /* pages destage read from the array (not cached) */
	uint64_t cached_pages; /* pages held now */
	uint64_t through_rows; /* whole stripe rows written through, not cached */
	uint64_t stream_bytes; /* written to the array while the cache was empty */
};

/* Open the cache for array (a RAID4/5/6 vol: ndata data chunks of chunk
 * bytes a row) whose journal is j, holding at most bytes (0: the default;
 * also at most a quarter of the log) in at most 128 4 KiB stripes (half the
 * kernel's default stripe cache, so that its replay holds every data-only
 * stripe a crash leaves in the log: md_jcache.c).  Starts the destage thread and
 * becomes j's reclaim.  0 or -errno. */
int md_jcache_open(struct md_journal *j, struct vol *array, uint64_t chunk, unsigned ndata,
                   uint64_t bytes, struct md_jcache **out);

/* The md vol's read and write through the cache (vol.h's contract). */
int md_jcache_read(struct md_jcache *c, void *buf, uint64_t len, uint64_t off);
int md_jcache_write(struct md_jcache *c, const void *buf, uint64_t len, uint64_t off,
                    unsigned flags);

/* The md vol's flush: what stream writes (md_jcache.c) left with the
 * array's write-behind, on the members and flushed; the rest is on the
 * flushed journal already.  0 or -errno. */
int md_jcache_flush(struct md_jcache *c);

/* Before a trim or write-zeroes of [off, off+len) goes to the array: the
 * cached rows it touches destaged, and writes held off until
 * md_jcache_barrier_end.  0 or -errno (then no barrier is held). */
int md_jcache_barrier(struct md_jcache *c, uint64_t off, uint64_t len);
void md_jcache_barrier_end(struct md_jcache *c);

/* Destage everything (then md_journal_checkpoint moves the tail past it).
 * 0, or the error that stopped the destage (the pages stay in the log). */
int md_jcache_drain(struct md_jcache *c);

/* Hold the destage thread (after its current row) while a management
 * call holds the md vol's gate, and let it go again. */
void md_jcache_pause(struct md_jcache *c, bool pause);

void md_jcache_stats(struct md_jcache *c, struct md_jcache_stats *st);

/* Destage everything it can, stop the thread, free. */
void md_jcache_close(struct md_jcache *c);

#endif
