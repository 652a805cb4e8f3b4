/* fuzz_nbd.c — libFuzzer target for the NBD server's handshake and request
 * parser.
 *
 * Input: one selector byte, then the byte stream a client would send.  The
 * selector's low six bits pick one of three exports (mod 3: byte-addressed
 * and writable; a 512-byte minimum block size; read-only with a 4096-byte
 * minimum); bit 6 makes the client hang up after reading 40 x (low bits / 3)
 * bytes of replies, so later replies fail with EPIPE; bit 7 gives four
 * worker threads instead of one.  The stream is served by
 * nbd_serve_connection() exactly as a socket's would be: it is read from a
 * memfd (end of input is the client leaving) and the replies are drained
 * into /dev/null (or the hanging-up socket).
 *
 * Each server serves its vol under three names: "fuzz" (also the default,
 * ""), "a/p1 x:2" (a name with '/', ' ' and ':'), and "fuzz-ro", exported
 * read-only over a second vol on the same bytes that can write but aborts
 * when anything does: a write the read-only export let through is a crash.
 *
 * The vols are small in-memory ones whose ops check the vol contract
 * (in range, aligned to block_min, no larger than block_max) and abort when
 * it is broken, so a request the validator should have refused is a crash
 * here, not a silent overrun.  The same input's first 28 bytes are also
 * run through nbd_request_check() against each export's limits, with the
 * same invariant checked directly.
 *
 * The 512-byte export takes writes in segments (VOL_CAP_STREAM) and
 * requests up to its whole size, so a large write goes the streamed way
 * (transmit.c), its input mostly ending mid-payload.
 *
 * Build and run: tests/sh/nbd-fuzz.sh (clang -fsanitize=fuzzer,...). */
#include "core/log.h"
#include "core/vol.h"
#include "nbd/proto.h"
#include "nbd/request.h"
#include "nbd/server.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define FUZZ_VOL_SIZE (1u << 20)
#define FUZZ_BLOCK_MAX (64u << 10)
#define N_EXPORTS 3

struct fuzz_vol {
	struct vol vol;
	unsigned char *buf;
	bool ro_export; /* served read-only only: no write may reach it */
};

static void contract_broken(const struct vol *v, const char *op, uint64_t len,
			    uint64_t off)
{
	fprintf(stderr, "fuzz_nbd: %s reached %s with off=%llu len=%llu (size %llu, "
		"block_min %u, block_max %u)\n", op, v->name, (unsigned long long)off,
		(unsigned long long)len, (unsigned long long)v->size, v->block_min,
		v->block_max);
	abort();
}

static void contract_check(const struct vol *v, const char *op, uint64_t len,
			   uint64_t off, bool sized)
{
	if (!vol_range_ok(v, len, off) || off % v->block_min || len % v->block_min ||
	    (sized && len > v->block_max))
		contract_broken(v, op, len, off);
}

static void writable_check(const struct fuzz_vol *f, const char *op, uint64_t len, uint64_t off)
{
	if (f->ro_export)
		contract_broken(&f->vol, op, len, off);
}

static int fv_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	struct fuzz_vol *f = container_of(v, struct fuzz_vol, vol);
	contract_check(v, "read", len, off, true);
	memcpy(buf, f->buf + off, len);
	return 0;
}

static int fv_write(struct vol *v, const void *buf, uint64_t len, uint64_t off,
		    unsigned flags)
{
	struct fuzz_vol *f = container_of(v, struct fuzz_vol, vol);
	(void)flags;
	contract_check(v, "write", len, off, true);
	writable_check(f, "write through a read-only export", len, off);
	if (v->caps & VOL_CAP_READONLY)
		contract_broken(v, "write on a read-only vol", len, off);
	memcpy(f->buf + off, buf, len);
	return 0;
}

static int fv_flush(struct vol *v)
{
	(void)v;
	return 0;
}

static int fv_trim(struct vol *v, uint64_t len, uint64_t off, unsigned flags)
{
	struct fuzz_vol *f = container_of(v, struct fuzz_vol, vol);
	(void)flags;
	contract_check(v, "trim", len, off, true);
	writable_check(f, "trim through a read-only export", len, off);
	memset(f->buf + off, 0, len);
	return 0;
}

static int fv_write_zeroes(struct vol *v, uint64_t len, uint64_t off,
			   unsigned flags)
{
	struct fuzz_vol *f = container_of(v, struct fuzz_vol, vol);
	contract_check(v, "write_zeroes", len, off, true);
	writable_check(f, "write_zeroes through a read-only export", len, off);
	/* Exercise the error path of a fast zero that cannot be fast. */
	if ((flags & VOL_FAST_ZERO) && off % 8192)
		return -ENOTSUP;
	memset(f->buf + off, 0, len);
	return 0;
}

static const struct vol_ops fuzz_vol_ops = {
	.kind = "fuzz",
	.read = fv_read,
	.write = fv_write,
	.flush = fv_flush,
	.trim = fv_trim,
	.write_zeroes = fv_write_zeroes,
};

static struct fuzz_vol vols[N_EXPORTS];
static struct fuzz_vol ro_views[N_EXPORTS];      /* the same bytes, for "fuzz-ro" */
static struct nbd_server *servers[N_EXPORTS][2]; /* [export][1 or 4 threads] */
static int null_fd = -1;

static void make_export(int i, const char *name, uint32_t block_min, uint32_t block_max,
                        unsigned caps)
{
	struct fuzz_vol *f = &vols[i], *ro = &ro_views[i];

	if (vol_init(&f->vol, &fuzz_vol_ops, name, FUZZ_VOL_SIZE, block_min, caps) < 0 ||
	    vol_init(&ro->vol, &fuzz_vol_ops, "fuzz-ro", FUZZ_VOL_SIZE, block_min, caps) < 0)
		abort();
	f->vol.block_max = ro->vol.block_max = block_max;
	f->buf = calloc(1, FUZZ_VOL_SIZE);
	if (!f->buf)
		abort();
	ro->buf = f->buf;
	ro->ro_export = true;
	const struct nbd_export ex[] = {
	    {.name = "fuzz", .description = "a fuzzing target", .vol = &f->vol},
	    {.name = "a/p1 x:2", .vol = &f->vol},
	    {.name = "fuzz-ro", .description = "read-only", .vol = &ro->vol, .readonly = true},
	};
	for (int t = 0; t < 2; t++) {
		struct nbd_server_opts o = {
		    .threads = t ? 4 : 1,
		    .max_connections = 4,
		    .handshake_timeout_ms = 5000,
		};
		if (nbd_server_new_multi(ex, 3, 0, &o, &servers[i][t]) < 0)
			abort();
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	log_verbosity = -1; /* bad magics are expected here: no warnings */
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null_fd < 0)
		abort();
	make_export(0, "fuzz-bytes", 1, FUZZ_BLOCK_MAX,
	            VOL_CAP_FLUSH | VOL_CAP_TRIM | VOL_CAP_ZEROES | VOL_CAP_FUA |
	                VOL_CAP_FAST_ZERO | VOL_CAP_MULTI_CONN);
	make_export(1, "fuzz-512", 512, FUZZ_VOL_SIZE,
	            VOL_CAP_TRIM | VOL_CAP_ZEROES | VOL_CAP_STREAM);
	make_export(2, "fuzz-ro-4k", 4096, FUZZ_BLOCK_MAX, VOL_CAP_READONLY | VOL_CAP_FLUSH);
	return 0;
}

/* The validator's promise, checked on its own: whatever it lets through is
 * in range and aligned, and a READ or WRITE fits block_max. */
static void check_validator(const uint8_t *d, size_t n)
{
	struct nbd_request h;
	struct nbd_req r;

	if (n < sizeof(h))
		return;
	memcpy(&h, d, sizeof(h));
	r.flags = be16toh(h.flags);
	r.type = be16toh(h.type);
	r.cookie = be64toh(h.cookie);
	r.offset = be64toh(h.offset);
	r.len = be32toh(h.len);
	for (int i = 0; i < N_EXPORTS; i++) {
		for (int s = 0; s < 2; s++) {
			struct nbd_export_limits lim;
			nbd_export_limits_init(&lim, &vols[i].vol, false, s, s);
			if (nbd_request_check(&r, &lim) != 0)
				continue;
			bool ranged = r.type == NBD_CMD_READ || r.type == NBD_CMD_WRITE ||
				      r.type == NBD_CMD_TRIM || r.type == NBD_CMD_WRITE_ZEROES ||
				      r.type == NBD_CMD_CACHE || r.type == NBD_CMD_BLOCK_STATUS;
			if (ranged && (!vol_range_ok(&vols[i].vol, r.len, r.offset) ||
				       r.offset % lim.block_min || r.len % lim.block_min))
				contract_broken(&vols[i].vol, "validator passed", r.len, r.offset);
			if ((r.type == NBD_CMD_READ || r.type == NBD_CMD_WRITE) &&
			    r.len > lim.block_max)
				contract_broken(&vols[i].vol, "validator passed (max)", r.len,
						r.offset);
			if ((r.type == NBD_CMD_WRITE || r.type == NBD_CMD_TRIM ||
			     r.type == NBD_CMD_WRITE_ZEROES) &&
			    (lim.tflags & NBD_FLAG_READ_ONLY))
				contract_broken(&vols[i].vol, "validator passed a write on ro",
						r.len, r.offset);
		}
	}
}

/* The reading end of a client that reads `limit` bytes of replies and
 * then hangs up. */
struct drain {
	int fd;
	size_t limit;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	char buf[4096];
	size_t got = 0;

	while (got < d->limit) {
		size_t want = d->limit - got < sizeof(buf) ? d->limit - got : sizeof(buf);
		ssize_t n = read(d->fd, buf, want);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(d->fd);
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd;

	if (size < 1)
		return 0;
	check_validator(data + 1, size - 1);

	uint8_t sel = data[0];
	struct nbd_server *srv = servers[(sel & 0x3f) % N_EXPORTS][sel >> 7];
	struct drain dr = { .fd = -1 };
	pthread_t drainer;
	int wfd = null_fd, pair[2] = { -1, -1 };

	/* Selector bit 6: the client stops listening after some replies —
	 * later sends fail with EPIPE, driving the send-failure paths. */
	if (sel & 0x40) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
			abort();
		dr.fd = pair[1];
		dr.limit = (size_t)((sel & 0x3f) / N_EXPORTS) * 40;
		if (pthread_create(&drainer, NULL, drain_main, &dr) != 0)
			abort();
		wfd = pair[0];
	}

	fd = memfd_create("fuzz-input", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	for (size_t done = 1; done < size;) {
		ssize_t w = write(fd, data + done, size - done);
		if (w <= 0)
			abort();
		done += (size_t)w;
	}
	if (lseek(fd, 0, SEEK_SET) != 0)
		abort();
	nbd_serve_connection(srv, fd, wfd);
	close(fd);
	if (pair[0] >= 0) {
		close(pair[0]); /* the drainer sees EOF if still reading */
		pthread_join(drainer, NULL);
	}
	return 0;
}
