/* file.c — a member on a regular file or block device, with positioned
 * reads and writes.  Trim punches holes (files) or discards (devices);
 * write_zeroes uses the kernel's zeroing where it can.  A writable member
 * is locked with flock() so two uraid processes never drive one disk; a
 * writable block device is also opened O_EXCL, so that none is written
 * while mounted or held by md, dm or another program.
 *
 * A regular file not opened O_DIRECT is also mapped read-only (shared) for
 * its view (vol.h): a decrypting layer then reads the page cache itself
 * rather than a copy of it (and falls back to read() for a file that
 * turns out to be slow: crypt.c times its child).  A page that cannot be read through the map (a
 * disk error, or the file cut short by someone else) raises SIGBUS in the
 * reading thread; the handler jumps back into the view, which returns
 * -EIO, and the caller's read() then meets the error as read would.
 *
 * Opened O_DIRECT (--direct), the member asks the kernel what direct I/O
 * needs (statx's DIOALIGN): offsets and lengths become its block_min, so
 * requests smaller than the file system's block are refused at the edge
 * (NBD's block-size limits); a buffer at an unaligned address is copied
 * through an aligned bounce (vol.h: buffers need no alignment). */
#include "member.h"

#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/uio.h>
#include <unistd.h>

struct file_vol {
	struct vol vol;
	int fd;
	bool is_blockdev;
	uint32_t mem_align;       /* O_DIRECT: buffer alignment; 0 without */
	const unsigned char *map; /* all of it, read-only; NULL: no view */
};

/* Where a SIGBUS in this thread returns to: set only while a view runs. */
static __thread sigjmp_buf *file_view_jmp;

static void file_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (file_view_jmp)
		siglongjmp(*file_view_jmp, 1);
	/* Not a view's fault: end as without this handler. */
	signal(sig, SIG_DFL);
	raise(sig);
}

static void file_sigbus_install(void)
{
	/* SA_NODEFER: the jump leaves the handler without sigreturn, and
	 * SIGBUS must not stay blocked after it. */
	struct sigaction sa = { .sa_sigaction = file_sigbus, .sa_flags = SA_SIGINFO | SA_NODEFER };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

static int file_view(struct vol *v, uint64_t len, uint64_t off, vol_view_fn fn, void *arg)
{
	struct file_vol *f = container_of(v, struct file_vol, vol);
	sigjmp_buf *outer = file_view_jmp;
	sigjmp_buf jb;
	int r;

	if (!f->map)
		return -ENOTSUP;
	if (sigsetjmp(jb, 0)) {
		file_view_jmp = outer;
		return -EIO;
	}
	file_view_jmp = &jb;
	r = fn(arg, f->map + off, len, off);
	file_view_jmp = outer;
	return r;
}

/* The bounce for a buffer O_DIRECT cannot take: at most this much at once. */
#define FILE_BOUNCE_MAX (1u << 20)

static bool file_needs_bounce(const struct file_vol *f, const void *buf)
{
	return f->mem_align > 1 && (uintptr_t)buf % f->mem_align;
}

static int file_pread(struct file_vol *f, char *p, uint64_t len, uint64_t off)
{
	while (len > 0) {
		ssize_t n = pread(f->fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) /* the file shrank under us */
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

static int file_pwrite(struct file_vol *f, const char *p, uint64_t len, uint64_t off, int rwf)
{
	while (len > 0) {
		struct iovec iov = { (void *)p, len };
		ssize_t n = pwritev2(f->fd, &iov, 1, (off_t)off, rwf);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENOSPC;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* Through the bounce, piece by piece (with FUA each piece is written
 * RWF_DSYNC, so all of it is durable at the end). */
static int file_bounced(struct file_vol *f, char *rbuf, const char *wbuf, uint64_t len,
                        uint64_t off, int rwf)
{
	uint64_t cap = len < FILE_BOUNCE_MAX ? len : FILE_BOUNCE_MAX;
	char *b = vol_buf_alloc(cap);
	int r = 0;

	if (!b)
		return -ENOMEM;
	for (uint64_t done = 0; done < len && r == 0; done += cap) {
		uint64_t n = len - done < cap ? len - done : cap;
		if (rbuf) {
			r = file_pread(f, b, n, off + done);
			if (r == 0)
				memcpy(rbuf + done, b, n);
		} else {
			memcpy(b, wbuf + done, n);
			r = file_pwrite(f, b, n, off + done, rwf);
		}
	}
	free(b);
	return r;
}

static int file_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct file_vol *f = container_of(v, struct file_vol, vol);

	if (file_needs_bounce(f, buf))
		return file_bounced(f, buf, NULL, len, off, 0);
	return file_pread(f, buf, len, off);
}

static int file_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct file_vol *f = container_of(v, struct file_vol, vol);
	int rwf = (flags & VOL_FUA) ? RWF_DSYNC : 0;

	if (file_needs_bounce(f, buf))
		return file_bounced(f, NULL, buf, len, off, rwf);
	return file_pwrite(f, buf, len, off, rwf);
}

struct file_iov {
	struct file_vol *f;
	int rwf;
};

static int64_t file_pwritev_some(void *arg, const struct iovec *iov, unsigned n, uint64_t off)
{
	struct file_iov *x = arg;

	for (;;) {
		ssize_t w = pwritev2(x->f->fd, iov, (int)n, (off_t)off, x->rwf);
		if (w > 0)
			return w;
		if (w == 0)
			return -ENOSPC;
		if (errno != EINTR)
			return -errno;
	}
}

/* Scattered parts in one pwritev2 a batch (the journal's appends: meta
 * blocks and the pages they describe, where the pages lie).  O_DIRECT
 * wants every part aligned in address and length: otherwise one copy. */
static int file_writev(struct vol *v, const struct iovec *iov, unsigned n, uint64_t off,
                       unsigned flags)
{
	struct file_vol *f = container_of(v, struct file_vol, vol);
	struct file_iov x = {f, (flags & VOL_FUA) ? RWF_DSYNC : 0};

	for (unsigned i = 0; i < n && f->mem_align > 1; i++)
		if (file_needs_bounce(f, iov[i].iov_base) || iov[i].iov_len % v->block_min)
			return vol_writev_by_copy(v, iov, n, off, flags);
	return vol_iov_write_all(iov, n, off, file_pwritev_some, &x);
}

static int file_flush(struct vol *v)
{
	struct file_vol *f = container_of(v, struct file_vol, vol);
	return fdatasync(f->fd) < 0 ? -errno : 0;
}

static int file_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct file_vol *f = container_of(v, struct file_vol, vol);
	int r;

	if (f->is_blockdev) {
		uint64_t range[2] = { off, len };
		r = ioctl(f->fd, BLKDISCARD, range) < 0 ? -errno : 0;
	} else {
		r = fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)off, (off_t)len) < 0 ? -errno : 0;
	}
	/* Trim is advisory: a filesystem or device without it loses nothing. */
	if (r == -EOPNOTSUPP || r == -ENOTTY)
		r = 0;
	if (r == 0 && (flags & VOL_FUA))
		r = file_flush(v);
	return r;
}

static int file_write_zeroes(struct vol *v, uint64_t len, uint64_t off,
			     unsigned flags)
{
	struct file_vol *f = container_of(v, struct file_vol, vol);
	int r;

	if (f->is_blockdev) {
		uint64_t range[2] = { off, len };
		r = ioctl(f->fd, BLKZEROOUT, range) < 0 ? -errno : 0;
	} else {
		int mode = (flags & VOL_MAY_TRIM)
				   ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
				   : FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
		r = fallocate(f->fd, mode, (off_t)off, (off_t)len) < 0 ? -errno : 0;
		if (r == -EOPNOTSUPP && (flags & VOL_MAY_TRIM) == 0)
			r = fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      (off_t)off, (off_t)len) < 0 ? -errno : 0;
	}
	if (r == -EOPNOTSUPP || r == -ENOTTY) {
		if (flags & VOL_FAST_ZERO)
			return -ENOTSUP;
		return vol_write_zeroes_by_writing(v, len, off, flags);
	}
	if (r == 0 && (flags & VOL_FUA))
		r = file_flush(v);
	return r;
}

static void file_close(struct vol *v)
{
	struct file_vol *f = container_of(v, struct file_vol, vol);
	if (f->map)
		munmap((void *)f->map, v->size);
	close(f->fd);
	vol_fini(v);
	free(f);
}

/* A regular file's holes, found with SEEK_DATA and SEEK_HOLE: a hole reads
 * as zeros and takes no space.  Data is what the file system says is
 * allocated, zeros written or preallocated included (flags 0, the safe
 * answer).  A block device, or a file system without SEEK_DATA, is data. */
static int file_extents(struct vol *v, uint64_t len, uint64_t off, vol_extent_fn fn, void *arg)
{
	struct file_vol *f = container_of(v, struct file_vol, vol);
	uint64_t end = off + len;
	int r = 0;

	if (f->is_blockdev)
		return fn(arg, len, 0);
	while (off < end && r == 0) {
		off_t data = lseek(f->fd, (off_t)off, SEEK_DATA);
		uint64_t next;
		unsigned flags;

		if (data < 0 && errno == ENXIO) {
			next = end; /* no data from off to the end of the file */
			flags = VOL_EXTENT_HOLE | VOL_EXTENT_ZERO;
		} else if (data < 0) {
			return fn(arg, end - off, 0); /* cannot tell: data */
		} else if ((uint64_t)data > off) {
			next = (uint64_t)data < end ? (uint64_t)data : end;
			flags = VOL_EXTENT_HOLE | VOL_EXTENT_ZERO;
		} else {
			off_t hole = lseek(f->fd, (off_t)off, SEEK_HOLE);
			next = hole < 0 || (uint64_t)hole > end ? end : (uint64_t)hole;
			if (next <= off)
				next = end; /* the file changed under us: data */
			flags = 0;
		}
		r = fn(arg, next - off, flags);
		off = next;
	}
	return r;
}

static const struct vol_ops file_ops = {
	.kind = "file",
	.read = file_read,
	.write = file_write,
	.writev = file_writev,
	.flush = file_flush,
	.trim = file_trim,
	.write_zeroes = file_write_zeroes,
	.close = file_close,
	.view = file_view,
	.extents = file_extents,
};

/* What O_DIRECT on fd needs: offsets and lengths in multiples of
 * *block_min (raised to it, and to 512 at least), buffers at multiples of
 * *mem_align.  A kernel or file system that cannot tell (no DIOALIGN in
 * statx) gets 512 and VOL_BUF_ALIGN, what every disk takes. */
static int file_dio_limits(int fd, const char *path, uint32_t *block_min, uint32_t *mem_align)
{
	struct statx sx;

	*mem_align = VOL_BUF_ALIGN;
	if (*block_min < 512)
		*block_min = 512;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) < 0 ||
	    !(sx.stx_mask & STATX_DIOALIGN))
		return 0;
	if (sx.stx_dio_offset_align == 0)
		return err_set(-EINVAL, "%s: direct I/O (--direct) is not supported here", path);
	if (sx.stx_dio_offset_align > *block_min)
		*block_min = sx.stx_dio_offset_align;
	*mem_align = sx.stx_dio_mem_align ? sx.stx_dio_mem_align : 1;
	return 0;
}

/* A read-only open does not claim the device, so that a mounted one can
 * be read; whoever holds it may change it meanwhile, which the user is
 * told.  (The probe claims it for an instant.) */
static void file_warn_busy(const char *path)
{
	int fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	else if (errno == EBUSY)
		log_warn("%s: in use (mounted or held by another program); opening it read-only",
		         path);
}

int file_member_open(const char *path, unsigned flags, struct vol **out)
{
	bool ro = flags & MEMBER_READONLY;
	int oflags = (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	struct file_vol *f;
	struct stat st;
	uint64_t size;
	uint32_t block_min = 1, mem_align = 0;
	int fd, r;

	if (flags & MEMBER_DIRECT)
		oflags |= O_DIRECT;
	/* A block device is claimed with O_EXCL, as mdadm and cryptsetup do:
	 * the kernel refuses it while mounted or held (by md, dm, another
	 * uraid), and refuses them while we hold it. */
	bool blk = stat(path, &st) == 0 && S_ISBLK(st.st_mode);
	if (blk && !ro)
		oflags |= O_EXCL;
	fd = open(path, oflags);
	if (fd < 0 && errno == EBUSY && blk)
		return err_set(-EBUSY,
		               "%s: in use (mounted or held by another program); refusing to "
		               "open it writable (--readonly opens it read-only)",
		               path);
	if (fd < 0 && !ro && (errno == EACCES || errno == EPERM || errno == EROFS) &&
	    access(path, R_OK) == 0) {
		int e = errno; /* readable, not writable: say how to read it */
		return err_set(-e, "%s: %s (--readonly opens it read-only)", path, strerror(e));
	}
	if (fd < 0)
		return err_set(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		r = err_set(-errno, "%s: %s", path, strerror(errno));
		goto out_close;
	}
	if (S_ISBLK(st.st_mode) && !blk && !ro) {
		r = err_set(-EAGAIN, "%s: became a block device while being opened", path);
		goto out_close;
	}
	if (S_ISBLK(st.st_mode) && ro)
		file_warn_busy(path);
	if (S_ISBLK(st.st_mode)) {
		int ssz = 512;
		if (ioctl(fd, BLKGETSIZE64, &size) < 0) {
			r = err_set(-errno, "%s: cannot read the device size: %s", path, strerror(errno));
			goto out_close;
		}
		if (ioctl(fd, BLKSSZGET, &ssz) == 0 && ssz > 0)
			block_min = (uint32_t)ssz;
	} else if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else {
		r = err_set(-EINVAL, "%s: not a regular file or block device", path);
		goto out_close;
	}
	if (flags & MEMBER_DIRECT) {
		r = file_dio_limits(fd, path, &block_min, &mem_align);
		if (r < 0)
			goto out_close;
	}
	size -= size % block_min;
	if (!ro && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = err_set(-EBUSY, "%s: in use by another process (locked)", path);
		goto out_close;
	}

	f = calloc(1, sizeof(*f));
	if (!f) {
		r = -ENOMEM;
		goto out_close;
	}
	f->fd = fd;
	f->is_blockdev = S_ISBLK(st.st_mode);
	f->mem_align = mem_align;
	unsigned caps = VOL_CAP_TRIM | VOL_CAP_ZEROES | VOL_CAP_FUA |
			VOL_CAP_FLUSH | VOL_CAP_MULTI_CONN;
	if (!f->is_blockdev)
		caps |= VOL_CAP_FAST_ZERO;
	if (ro)
		caps |= VOL_CAP_READONLY;
	r = vol_init(&f->vol, &file_ops, path, size, block_min, caps);
	if (r < 0) {
		free(f);
		goto out_close;
	}
	/* Block devices are disks: read with pread, never through faults. */
	if (!(flags & MEMBER_DIRECT) && !f->is_blockdev && size > 0) {
		static pthread_once_t once = PTHREAD_ONCE_INIT;
		void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);

		/* Without a map the member has no view; reads work as ever. */
		if (map != MAP_FAILED) {
			pthread_once(&once, file_sigbus_install);
			f->map = map;
			f->vol.caps |= VOL_CAP_VIEW;
		}
		/* Buffered writes go to the page cache: segments cost what one
		 * write would (vol.h); on tmpfs that is the file's home. */
		f->vol.caps |= VOL_CAP_STREAM;
		struct statfs sfs;
		if (fstatfs(fd, &sfs) == 0 &&
		    (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC))
			f->vol.caps |= VOL_CAP_RAM;
	}
	*out = &f->vol;
	return 0;

out_close:
	close(fd);
	return r;
}
