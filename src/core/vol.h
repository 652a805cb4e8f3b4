/* vol.h — the volume interface every layer of uraid speaks.
 *
 * A vol is a byte-addressed block device: a size, block-size limits,
 * capability flags and a small ops table.  Members (files, memory, disk
 * models), disciplines (RAID levels, LUKS) and the NBD server all meet here:
 * a discipline is a vol built on child vols, and the server only ever sees
 * the top vol of a stack.  A new member type or discipline is one new file
 * that fills in a struct vol_ops.
 *
 * Contract (read it before implementing an ops table):
 *  - Every op returns 0 or a negative errno.  Short transfers do not exist:
 *    read and write move exactly len bytes or fail.
 *  - Callers guarantee off + len <= vol->size and that off and len are
 *    multiples of vol->block_min; implementations may assert it.
 *  - Ops are called concurrently from many threads, on overlapping or
 *    disjoint ranges.  An implementation protects its own state; the order
 *    of two overlapping in-flight writes is undefined (as on a disk).
 *  - write() with VOL_FUA returns only once the data is durable: all of
 *    it.  A layer that splits one request into several writes to a child
 *    passes VOL_FUA on none of them and flushes the child once after the
 *    last (FUA on the last piece alone leaves the others volatile); one
 *    piece may carry the FUA itself.  The same holds for write_zeroes.
 *  - Buffers need no alignment.  A member that needs it (O_DIRECT) copies
 *    through an aligned bounce; layers allocate the buffers of their own
 *    I/O with vol_buf_alloc() so that they never take that detour.
 *  - flush() returns once every write that completed before flush() was
 *    called is durable on every member beneath.
 *  - trim() may discard data: later reads return either the old data or
 *    zeros.  write_zeroes() guarantees zeros; with VOL_MAY_TRIM it may
 *    deallocate, with VOL_FAST_ZERO it must fail with -ENOTSUP rather than
 *    fall back to something slow.
 *  - A NULL op means: trim is a no-op, write_zeroes falls back to writing
 *    zero buffers, flush is a no-op.  read and write are mandatory.
 *  - close() releases the vol and, for a discipline, the child vols it owns.
 *  - view() is optional (NULL: -ENOTSUP): see vol_view_fn below.  A vol
 *    whose ops have none never carries VOL_CAP_VIEW (vol_init clears it),
 *    so layers that pass their child's caps on need not think of it.
 *  - extents() is optional (NULL: all data): see vol_extent_fn below.
 *  - A write that fails may have changed any part of its range, as on a
 *    disk: what reads back there is old data, new data, or a mix, until
 *    the range is written again.
 *  - A vol with VOL_CAP_STREAM may get a large write as several writes to
 *    consecutive ranges, in order, one after the other, none with VOL_FUA
 *    (the NBD server writes a payload's segments while the rest arrives:
 *    src/nbd/transmit.c); when one fails the request fails and the ones
 *    before stay written (the rule above).  A vol sets it only where that
 *    costs no more than one whole write: a store in memory or the page
 *    cache, and layers over such stores that neither want whole requests
 *    (a parity stripe) nor pay per request (a disk, a model of one).
 *    Layers that pass their child's caps on pass it on; one that adds a
 *    cost per request clears it.
 *  - writev() (optional) writes the parts iov[0..n) one after the other
 *    to [off, off + their total), as write() would write them joined in
 *    one buffer: the same contract (the total a multiple of block_min, no
 *    short transfer, VOL_FUA for all of it, a failure may leave any part
 *    of the range changed).  Parts may have any length and address.
 *    Without the op, vol_writev copies them into one bounce and writes
 *    that (vol_writev_by_copy), which costs what the caller would have
 *    paid by copying; a member that writes scattered memory natively
 *    (pwritev) saves that copy.  Layers that merely move the range (a
 *    slice, a disk model) pass it on.
 *  - VOL_CAP_RAM: the vol's bytes are in memory (mem:, a file on tmpfs):
 *    a write is a copy, never a disk's wait, whatever a timing taken on a
 *    loaded machine says.  Set by members; a layer that adds latency
 *    (a disk model, fault injection) clears it, one that merely windows
 *    its child (a slice) may pass it on.
 */
#ifndef URAID_VOL_H
#define URAID_VOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Flags for write, trim and write_zeroes. */
#define VOL_FUA 0x1u       /* durable before return */
#define VOL_MAY_TRIM 0x2u  /* write_zeroes may deallocate */
#define VOL_FAST_ZERO 0x4u /* write_zeroes: fail with -ENOTSUP if slow */

/* Capability flags (vol->caps). */
#define VOL_CAP_TRIM 0x01u       /* trim() does something useful */
#define VOL_CAP_ZEROES 0x02u     /* write_zeroes() is cheaper than writing */
#define VOL_CAP_FUA 0x04u        /* VOL_FUA is honoured natively */
#define VOL_CAP_MULTI_CONN 0x08u /* flush on one path covers writes on all */
#define VOL_CAP_READONLY 0x10u   /* writes fail with -EROFS */
#define VOL_CAP_FLUSH 0x20u      /* the vol has a volatile cache to flush */
#define VOL_CAP_FAST_ZERO 0x40u  /* write_zeroes with VOL_FAST_ZERO may work */
#define VOL_CAP_VIEW 0x80u       /* view() works: a plain store (file, memory) */
#define VOL_CAP_STREAM 0x100u    /* a large write may come in segments (above) */
#define VOL_CAP_RAM 0x200u       /* the bytes live in memory (above) */
#define VOL_CAP_FILL 0x400u      /* fill() works: plain memory (vol_fill_fn) */

struct vol;

/* A view hands a reader the vol's own bytes instead of a copy: fn is
 * called over [off, off+len) in order, in pieces, each with src pointing
 * at piece_len bytes of the vol starting at piece_off (a file's page cache
 * through a mapping, a mem: vol's memory).  src is read-only and valid
 * only during the call.  Pieces begin and end at multiples of 4096 bytes
 * of the vol, or at off and off + len.  It exists for layers that
 * transform what they read (decryption), so that the transform reads
 * straight from the source rather than from a copy of it: one pass over
 * memory instead of two.  fn returns 0 or a negative errno, which ends
 * the view and is returned. */
typedef int (*vol_view_fn)(void *arg, const void *src, uint64_t piece_len,
			   uint64_t piece_off);

/* A fill is a view for writing: fn is called over [off, off+len) in
 * order, in pieces, each with dst pointing at piece_len bytes of the vol's
 * own memory from piece_off, and stores the new contents there itself, in
 * place of a write() of a copy (the NBD server receives a payload straight
 * into a mem: vol: transmit.c).  What fn stored is the vol's as a write
 * without VOL_FUA would leave it; when fn fails (its negative errno is
 * returned) the range is as after a failed write: old data, new data or a
 * mix.  Only a vol whose bytes are plain memory, read back as stored,
 * offers it (mem:); vol_init clears VOL_CAP_FILL where the op is NULL, so
 * no layer passes it on by accident. */
typedef int (*vol_fill_fn)(void *arg, void *dst, uint64_t piece_len, uint64_t piece_off);

/* Extents describe how a vol's bytes are stored, for NBD's
 * base:allocation context (clients such as nbdcopy and qemu-img skip
 * what reads as zeros).  A run flagged VOL_EXTENT_ZERO reads as zeros;
 * VOL_EXTENT_HOLE also takes no storage (a sparse file's hole: a write
 * there may need space).  Flags 0 means data, or not known: always a
 * safe answer.  extents() calls fn for consecutive runs from off on,
 * each at least one byte, none past off + len, until len is covered or
 * fn returns non-zero (that value is returned: "enough").  Runs need not
 * be merged: two in a row may carry the same flags.  A vol that cannot
 * tell says data (vol_extents does that for a NULL op). */
#define VOL_EXTENT_HOLE 0x1u
#define VOL_EXTENT_ZERO 0x2u
typedef int (*vol_extent_fn)(void *arg, uint64_t run_len, unsigned flags);

struct vol_ops {
	const char *kind; /* "file", "mem", "raid1", "luks2", ... */
	int (*read)(struct vol *v, void *buf, uint64_t len, uint64_t off);
	int (*write)(struct vol *v, const void *buf, uint64_t len, uint64_t off,
		     unsigned flags);
	int (*flush)(struct vol *v);
	int (*trim)(struct vol *v, uint64_t len, uint64_t off, unsigned flags);
	int (*write_zeroes)(struct vol *v, uint64_t len, uint64_t off,
			    unsigned flags);
	void (*close)(struct vol *v);
	/* Optional.  -ENOTSUP when the vol cannot show its bytes (then use
	 * read); -EIO when they could not be reached (a file's page failed
	 * to read or the file shrank: read() then reports the real error),
	 * possibly after fn ran over some pieces.  fn must be restartable:
	 * a caller that falls back to read() redoes the whole range. */
	int (*view)(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn,
		    void *arg);
	/* Optional (see vol_extent_fn): 0, fn's non-zero return, or a
	 * negative errno. */
	int (*extents)(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn,
		       void *arg);
	/* Optional (see vol_fill_fn): 0 or fn's negative errno. */
	int (*fill)(struct vol *v, uint64_t len, uint64_t off, vol_fill_fn fn, void *arg);
	/* Optional (the contract above): n >= 1 parts, their total > 0,
	 * checked in range by vol_writev. */
	int (*writev)(struct vol *v, const struct iovec *iov, unsigned n, uint64_t off,
	              unsigned flags);
};

struct vol {
	const struct vol_ops *ops;
	char *name;         /* for messages: a path, "mem:1G", "md/home" */
	uint64_t size;      /* bytes, a multiple of block_min */
	uint32_t block_min; /* smallest addressable unit: 1, 512 or 4096 */
	uint32_t block_pref;
	uint32_t block_max; /* largest single request the vol accepts */
	unsigned caps;
};

/* Fill the common fields; name is copied.  Returns 0 or -ENOMEM. */
int vol_init(struct vol *v, const struct vol_ops *ops, const char *name,
	     uint64_t size, uint32_t block_min, unsigned caps);
/* Free what vol_init allocated (for close() implementations). */
void vol_fini(struct vol *v);

static inline bool vol_range_ok(const struct vol *v, uint64_t len,
				uint64_t off)
{
	return off <= v->size && len <= v->size - off;
}

/* The entry points layers call: bounds-checked, with the NULL-op defaults
 * described above.  Out-of-range requests return -EINVAL. */
int vol_read(struct vol *v, void *buf, uint64_t len, uint64_t off);
int vol_write(struct vol *v, const void *buf, uint64_t len, uint64_t off,
	      unsigned flags);
int vol_flush(struct vol *v);
int vol_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags);
int vol_write_zeroes(struct vol *v, uint64_t len, uint64_t off,
		     unsigned flags);
void vol_close(struct vol *v);
/* Read any byte range [off, off+len) of v, into any buffer, whatever its
 * block_min: through a bounce of whole blocks from vol_buf_alloc() unless
 * range and buffer are aligned already (for format readers whose fields
 * lie where they lie and whose buffers are their own: LUKS key slots,
 * partition tables, LVM2 labels).  -EINVAL out of range, as vol_read. */
int vol_read_any(struct vol *v, void *buf, uint64_t len, uint64_t off);
/* The view op, or -ENOTSUP where the vol has none (no VOL_CAP_VIEW). */
int vol_view(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn, void *arg);
/* The fill op, or -ENOTSUP where the vol has none (no VOL_CAP_FILL);
 * -EINVAL out of range, -EROFS on a read-only vol. */
int vol_fill(struct vol *v, uint64_t len, uint64_t off, vol_fill_fn fn, void *arg);

/* The extents op, or one data run of len where the vol has none. */
int vol_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn, void *arg);
/* The first run of [off, off+len) alone: its length (at most len) in
 * *run_len and its flags in *flags.  0 or a negative errno. */
int vol_extent_first(struct vol *v, uint64_t len, uint64_t off, uint64_t *run_len,
		     unsigned *flags);

/* Write the parts iov[0..n) one after the other from off (the contract
 * above): through the writev op, else as one write of a copy.  -EINVAL
 * out of range or for a total that overflows, -EROFS on a read-only vol;
 * a zero total writes nothing (a flush with VOL_FUA). */
int vol_writev(struct vol *v, const struct iovec *iov, unsigned n, uint64_t off, unsigned flags);
/* The fallback for writev: the parts copied into bounces of at most
 * block_max bytes, each written with write() (VOL_FUA: one flush after
 * the last when there are several). */
int vol_writev_by_copy(struct vol *v, const struct iovec *iov, unsigned n, uint64_t off,
                       unsigned flags);
/* The loop of a writev op over a writer that may take less than it is
 * given (pwritev): fn is called with what is left, at most VOL_IOV_BATCH
 * parts at a time, its parts' bytes starting at off, and returns how many
 * bytes it wrote (from the first part on) or a negative errno, which ends
 * the loop and is returned; 0 bytes is -EIO (no progress).  0 once every
 * byte is written.  Zero-length parts are skipped. */
#define VOL_IOV_BATCH 256u
typedef int64_t (*vol_iov_fn)(void *arg, const struct iovec *iov, unsigned n, uint64_t off);
int vol_iov_write_all(const struct iovec *iov, unsigned n, uint64_t off, vol_iov_fn fn, void *arg);

/* Write zeros by writing a zero buffer: the fallback for write_zeroes. */
int vol_write_zeroes_by_writing(struct vol *v, uint64_t len, uint64_t off,
				unsigned flags);

/* A buffer of len bytes for I/O to a vol, starting at a multiple of
 * VOL_BUF_ALIGN (what an O_DIRECT member asks at most; its size is rounded
 * up to one too), as malloc (vol_buf_alloc) or calloc (vol_buf_zalloc)
 * would give; free it with free().  NULL when out of memory.  Every buffer
 * a layer reads or writes a child through comes from here. */
#define VOL_BUF_ALIGN 4096u
void *vol_buf_alloc(size_t len);
void *vol_buf_zalloc(size_t len);

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#endif
