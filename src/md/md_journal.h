/* md_journal.h — md's raid5-cache journal (a write journal member of a
 * RAID4/5/6, mdadm --write-journal): its on-disk format, write-through
 * logging of every stripe update before the member writes, write-back's
 * data appends (md_jcache.h holds their pages), and replay at a start
 * that was not clean.  Follows Linux drivers/md/raid5-cache.c and
 * include/uapi/linux/raid/md_p.h so that the kernel replays what we log
 * and we replay what it logs.
 *
 * The journal member's data area is a circular log of 4 KiB blocks,
 * positions in 512-byte sectors from the start of that area.  A meta
 * block (struct r5l_meta_block, then payload descriptors up to meta_size)
 * is followed by the pages its DATA and PARITY payloads describe, in
 * order: DATA one page at an array sector, PARITY the stripe's P (then Q)
 * at its member sector; FLUSH payloads name stripes already on the
 * members.  Every meta block and page carries crc32c seeded with
 * crc32c(~0, array uuid) (the kernel's convention); seq goes up by one per
 * meta block.  The tail (journal_tail, the journal member's superblock
 * recovery_offset field) is where replay starts; it moves only past
 * stripes known durable on the members. */
#ifndef URAID_MD_JOURNAL_H
#define URAID_MD_JOURNAL_H

#include "core/vol.h"
#include "disc/raid/raid.h"

#include <stdbool.h>
#include <stdint.h>

#define R5L_MAGIC 0x6433c509u
#define R5L_VERSION 1u
#define R5L_PAGE 4096u
#define R5L_PAGE_SECTORS 8u

enum { R5L_PAYLOAD_DATA = 0, R5L_PAYLOAD_PARITY = 1, R5L_PAYLOAD_FLUSH = 2 };

struct r5l_meta_block {
	uint32_t magic;
	uint32_t checksum; /* crc32c of the whole 4 KiB block, this field 0 */
	uint8_t version;
	uint8_t pad1;
	uint16_t pad2;
	uint32_t meta_size; /* bytes of the block in use */
	uint64_t seq;
	uint64_t position; /* sectors from the start of the journal's data area */
} __attribute__((packed));
_Static_assert(sizeof(struct r5l_meta_block) == 32, "r5l_meta_block is 32 bytes");

struct r5l_payload_header {
	uint16_t type;
	uint16_t flags;
} __attribute__((packed));

/* DATA or PARITY: size sectors of pages, one le32 checksum per page. */
struct r5l_payload_data_parity {
	struct r5l_payload_header header;
	uint32_t size;     /* sectors */
	uint64_t location; /* DATA: array sector; PARITY: member (stripe) sector */
} __attribute__((packed));
_Static_assert(sizeof(struct r5l_payload_data_parity) == 16, "data_parity is 16 bytes");

/* FLUSH: size bytes of le64 stripe (member) sectors. */
struct r5l_payload_flush {
	struct r5l_payload_header header;
	uint32_t size; /* bytes */
} __attribute__((packed));
_Static_assert(sizeof(struct r5l_payload_flush) == 8, "payload_flush is 8 bytes");

/* Payloads one meta block can hold, at most (FLUSH of one stripe: 16 bytes). */
#define R5L_MAX_PAYLOADS ((R5L_PAGE - 32) / 16)

/* One payload of a meta block, decoded. */
struct md_journal_payload {
	uint16_t type;
	uint16_t flags;
	unsigned pages;    /* DATA 1, PARITY 1 (P) or 2 (P, Q), FLUSH 0 */
	uint64_t location; /* DATA/PARITY: as stored */
	uint32_t csum[2];
	uint64_t page_pos; /* DATA/PARITY: its first page's position (sectors) */
	unsigned flush_at; /* FLUSH: byte offset of its le64 sectors in the block */
	unsigned nflush;   /* FLUSH: how many */
};

/* The seed of every journal checksum: crc32c(~0, uuid, 16). */
uint32_t md_journal_uuid_csum(const uint8_t uuid[16]);

/* Judge the 4 KiB block at log position pos as the kernel's recovery does
 * before trusting it: magic, version, seq (when check_seq), position,
 * checksum, meta_size.  0, or -EINVAL. */
int md_journal_meta_check(const void *block, uint32_t seed, uint64_t pos, uint64_t seq,
                          bool check_seq);

/* Decode the payloads of a checked meta block at pos in a log of
 * log_sectors, for an array with parity parity disks: every descriptor
 * inside meta_size, a known type, DATA one page, PARITY `parity` pages,
 * FLUSH a whole number of sectors.  Fills out[] (R5L_MAX_PAYLOADS room),
 * *n, and *pages (the pages after the block).  0, or -EINVAL for a block
 * that breaks one of those rules (the kernel drops such a block). */
int md_journal_meta_decode(const void *block, uint64_t pos, uint64_t log_sectors, unsigned parity,
                           struct md_journal_payload *out, unsigned *n, unsigned *pages);

/* The management paths that do not keep a journal true yet (add,
 * rebuild, grow): -ENOTSUP with err_set() detail for an array with one
 * (what: "adding a member"), else 0. */
struct md_super;
int md_journal_refuse(const struct md_super *s, const char *name, const char *what);

/* ---- a running journal ---- */
struct md_journal;

/* What the journal asks of the md array it serves. */
struct md_journal_ops {
	/* Record tail (sectors) as journal_tail in the journal member's
	 * superblock, durably.  Called after the members were flushed. */
	int (*set_tail)(void *ctx, uint64_t tail);
	void *ctx;
};

/* What a replay did (md_journal_recover). */
struct md_journal_stats {
	uint64_t meta_blocks; /* valid meta blocks read */
	uint64_t data_parity; /* stripes rewritten from the log */
	uint64_t data_only;   /* stripes with data only (write-back), written */
	uint64_t log_bytes;   /* log replayed from the tail */
	bool created;         /* no valid log at the tail: a new one */
};

/* Open the journal: log is the journal member's data area (owned by the
 * journal from now on), array the RAID vol (a parity level) it logs for,
 * members[raid_disks] its members' data areas by role (NULL: missing; not
 * owned), tail the superblock's journal_tail.  Reads the block at the
 * tail and writes nothing.  0 or -errno with err_set() detail. */
int md_journal_open(struct vol *log, struct vol *array, struct vol *const *members,
                    unsigned raid_disks, unsigned parity, uint64_t chunk, const uint8_t uuid[16],
                    uint64_t tail, const struct md_journal_ops *ops, struct md_journal **out);

/* A writable start: replay the log from the tail onto the members (the
 * kernel's rules: complete meta blocks in seq order, data and parity
 * rewritten, data-only stripes written through the array), flush them,
 * start a new log after it and record the new tail.  Or, without a valid
 * block at the tail, start a new log there.  0 or -errno. */
int md_journal_recover(struct md_journal *j, struct md_journal_stats *st);

/* The stripe log for raid_set_log (write-through: a request's pages are
 * on the journal, flushed, before its member writes start). */
void md_journal_log_ops(struct md_journal *j, struct raid_log_ops *ops);

/* Flush the members and move the tail past every stripe that reached
 * them (what the array's write-behind holds is not waited for: it
 * reaches the log later).  0 or -errno. */
int md_journal_checkpoint(struct md_journal *j);

/* Where the tail is now (sectors). */
uint64_t md_journal_tail(struct md_journal *j);

/* Where the next append goes (sectors): past every append numbered so
 * far, durable or still being written. */
uint64_t md_journal_head(struct md_journal *j);

/* ---- write-back (md_jcache.h's cache keeps the pages) ----
 * A write-back write is acknowledged once its data pages are on the log
 * (DATA payloads only, flushed: the kernel's caching phase); the cache
 * destages the stripes later through the array, which logs their parity
 * before the member writes (the write-out phase).  The tail never passes
 * a page the cache still holds. */
struct md_journal_unit;

/* Append n data pages (page[i], 4 KiB, at array byte aoff[i], a multiple
 * of 4 KiB), durable on the log on return: one unit, pinned n times
 * (*unit) until md_journal_unpin has been called once per page (the page
 * destaged to the members, or a later write of it logged).  At most half
 * the log holds such appends.  0, -EAGAIN (see md_journal_wait_room), or
 * -errno (err_set). */
int md_journal_log_data(struct md_journal *j, const uint64_t *aoff, const char *const *page,
                        unsigned n, struct md_journal_unit **unit);
void md_journal_unpin(struct md_journal *j, struct md_journal_unit *unit);

/* md_journal_log_data returns -EAGAIN (no err_set) rather than wait for
 * room while the caller may hold stripes the destage needs: the caller
 * lets go of them, waits here until n pages fit (destaging, moving the
 * tail), and tries again.  0, or -errno of a checkpoint or a broken log. */
int md_journal_wait_room(struct md_journal *j, unsigned n);

/* The most pages one md_journal_log_data call takes (a bigger write is
 * logged in pieces). */
unsigned md_journal_max_data(struct md_journal *j);

/* Write [off, off+len) of the array (one stripe row; every page of it the
 * cache holds, and only those, come from its log) as a destage: its
 * parity is logged, its data not again.  0 or -errno. */
int md_journal_destage(struct md_journal *j, const void *buf, uint64_t len, uint64_t off);
/* Write [off, off+len) through the array as write-through does (data and
 * parity logged, then the members), direct: on the members when it
 * returns, never written behind (the cache's writes that release pages
 * it held: their appends may be unpinned then).  0 or -errno. */
int md_journal_write_direct(struct md_journal *j, const void *buf, uint64_t len, uint64_t off,
                            unsigned flags);

/* What a writer waiting for log room calls (without the journal's locks
 * held) to have the cache destage: 0, or the error that stops the cache
 * destaging (the wait fails with it); NULL: none (write-through). */
void md_journal_set_reclaim(struct md_journal *j, int (*reclaim)(void *ctx), void *ctx);

/* How full the log is, in quarters (0..3) from the recorded tail, and
 * whether a checkpoint would move the tail now (*movable). */
int md_journal_pressure(struct md_journal *j, bool *movable);

/* Close (after the last write): stops the reclaim thread (the log's
 * checkpoints past half full), frees it and closes log; the array stays
 * open until then. */
void md_journal_close(struct md_journal *j);

#endif
