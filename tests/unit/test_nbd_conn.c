/* test_nbd_conn.c — nbd_serve_connection() driven in-process, the way a
 * fuzzer drives it: the client's bytes come from a pipe, the replies go to
 * a file.  A scripted session (GO, WRITE, FLUSH, READ, bad requests, DISC)
 * must leave the data in the vol and produce exactly the expected replies;
 * truncated and garbage inputs must end the connection without harm; a
 * long pipelined session (batched and handed-over requests mixed) must get
 * every reply, in order with one worker.  A large write to a vol that takes
 * segments (VOL_CAP_STREAM) arrives as consecutive writes without FUA; a
 * vol failing the second fails the request and the session goes on; a
 * client gone mid-payload leaves nothing written beyond what it sent. */
#include "check.h"

#include "core/vol.h"
#include "member/member.h"
#include "nbd/proto.h"
#include "nbd/server.h"

#include <endian.h>
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct bytes {
	unsigned char *p;
	size_t len, cap;
};

static void put(struct bytes *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void put32(struct bytes *b, uint32_t v) { v = htobe32(v); put(b, &v, 4); }
static void put16(struct bytes *b, uint16_t v) { v = htobe16(v); put(b, &v, 2); }
static void put64(struct bytes *b, uint64_t v) { v = htobe64(v); put(b, &v, 8); }

static void request(struct bytes *b, uint16_t type, uint16_t flags, uint64_t cookie,
		    uint64_t off, uint32_t len)
{
	put32(b, NBD_REQUEST_MAGIC);
	put16(b, flags);
	put16(b, type);
	put64(b, cookie);
	put64(b, off);
	put32(b, len);
}

/* Serve `in` through a pipe; return what the server wrote. */
static struct bytes serve(struct nbd_server *s, const struct bytes *in, int *rc)
{
	int p[2];
	char path[] = "/tmp/test_nbd_conn.XXXXXX";
	int out = mkstemp(path);
	struct bytes res = { 0 };

	unlink(path);
	CHECK(pipe(p) == 0);
	/* Inputs here are small enough for the pipe buffer (64 KiB). */
	CHECK(write(p[1], in->p, in->len) == (ssize_t)in->len);
	close(p[1]);
	*rc = nbd_serve_connection(s, p[0], out);
	close(p[0]);
	off_t n = lseek(out, 0, SEEK_END);
	res.p = malloc((size_t)n + 1);
	res.len = (size_t)n;
	CHECK(pread(out, res.p, (size_t)n, 0) == n);
	close(out);
	return res;
}

static size_t skip_option_replies(const struct bytes *r, size_t pos)
{
	/* Option replies until the ACK of GO. */
	for (;;) {
		uint32_t type, len;
		memcpy(&type, r->p + pos + 12, 4);
		memcpy(&len, r->p + pos + 16, 4);
		pos += 20 + be32toh(len);
		if (be32toh(type) == NBD_REP_ACK)
			return pos;
	}
}

static void check_simple(const struct bytes *r, size_t *pos, uint32_t err, uint64_t cookie)
{
	struct nbd_simple_reply h;
	CHECK(*pos + sizeof(h) <= r->len);
	if (*pos + sizeof(h) > r->len)
		return;
	memcpy(&h, r->p + *pos, sizeof(h));
	CHECK_EQ(be32toh(h.magic), NBD_SIMPLE_REPLY_MAGIC);
	CHECK_EQ(be32toh(h.error), err);
	CHECK_EQ(be64toh(h.cookie), cookie);
	*pos += sizeof(h);
}

/* A long pipelined session, read from a file: more small requests than
 * one reply batch holds, small reads that overflow the batch's data arena,
 * and requests that are handed over (FLUSH, a 128 KiB read) between them.
 * With one worker every reply must come back in order, with its data. */
static void check_pipelined(void)
{
	enum { N = 150, SMALL = 4096, BIG = 65536, HUGE = 131072 };
	struct vol *v;
	struct nbd_server *s;
	struct nbd_server_opts o = { .threads = 1 };
	struct bytes in = { 0 }, r = { 0 };
	unsigned char *data = malloc(HUGE);
	char path[] = "/tmp/test_nbd_conn.XXXXXX";
	int fd = mkstemp(path), out, rc;

	CHECK(mem_member_open("4M", 0, &v) == 0);
	CHECK(nbd_server_new(v, &o, &s) == 0);
	put32(&in, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
	put64(&in, NBD_IHAVEOPT);
	put32(&in, NBD_OPT_GO);
	put32(&in, 4 + 2);
	put32(&in, 0);
	put16(&in, 0);
	for (unsigned i = 0; i < N; i++) {
		memset(data, (int)i, SMALL);
		request(&in, NBD_CMD_WRITE, 0, i, (uint64_t)i * SMALL, SMALL);
		put(&in, data, SMALL);
	}
	request(&in, NBD_CMD_FLUSH, 0, 1000, 0, 0);
	for (unsigned i = 0; i < N; i++)
		request(&in, NBD_CMD_READ, 0, 2000 + i, (uint64_t)i * SMALL, SMALL);
	for (unsigned i = 0; i < 8; i++)
		request(&in, NBD_CMD_READ, 0, 3000 + i, (uint64_t)i * BIG, BIG);
	request(&in, NBD_CMD_READ, 0, 4000, 0, HUGE);
	request(&in, NBD_CMD_DISC, 0, 5000, 0, 0);

	unlink(path);
	CHECK(write(fd, in.p, in.len) == (ssize_t)in.len);
	CHECK(lseek(fd, 0, SEEK_SET) == 0);
	strcpy(path, "/tmp/test_nbd_conn.XXXXXX");
	out = mkstemp(path);
	unlink(path);
	rc = nbd_serve_connection(s, fd, out);
	CHECK_EQ(rc, 0);
	r.len = (size_t)lseek(out, 0, SEEK_END);
	r.p = malloc(r.len + 1);
	CHECK(pread(out, r.p, r.len, 0) == (ssize_t)r.len);

	/* The expected bytes at offset off of the export. */
	#define PATTERN(off) ((unsigned char)((off) / SMALL < N ? (off) / SMALL : 0))
	size_t pos = skip_option_replies(&r, 18);
	for (unsigned i = 0; i < N; i++)
		check_simple(&r, &pos, 0, i);
	check_simple(&r, &pos, 0, 1000);
	for (unsigned i = 0; i < N && pos <= r.len; i++) {
		check_simple(&r, &pos, 0, 2000 + i);
		CHECK(pos + SMALL <= r.len && r.p[pos] == PATTERN((uint64_t)i * SMALL) &&
		      r.p[pos + SMALL - 1] == r.p[pos]);
		pos += SMALL;
	}
	for (unsigned i = 0; i < 8 && pos <= r.len; i++) {
		check_simple(&r, &pos, 0, 3000 + i);
		for (unsigned k = 0; k < BIG / SMALL && pos + BIG <= r.len; k++)
			CHECK_EQ(r.p[pos + k * SMALL], PATTERN((uint64_t)i * BIG + k * SMALL));
		pos += BIG;
	}
	check_simple(&r, &pos, 0, 4000);
	for (unsigned k = 0; k < HUGE / SMALL && pos + HUGE <= r.len; k++)
		CHECK_EQ(r.p[pos + k * SMALL], PATTERN((uint64_t)k * SMALL));
	pos += HUGE;
	CHECK_EQ(pos, r.len);
	#undef PATTERN

	close(fd);
	close(out);
	free(r.p);
	free(in.p);
	free(data);
	nbd_server_free(s);
	vol_close(v);
}

/* ---- Streamed writes (transmit.c) ---- */

/* A vol over mem: that records the writes it is given and fails the
 * fail_at-th (1-based; 0: none) with -EIO without writing it. */
#define REC_MAX 32
struct rec_vol {
	struct vol vol;
	struct vol *inner;
	unsigned fail_at;
	atomic_uint n;
	uint64_t off[REC_MAX], len[REC_MAX];
	unsigned flags[REC_MAX];
	atomic_uint fills; /* fill() calls (VOL_CAP_FILL), not counted in n */
};

static int rec_read(struct vol *v, void *buf, uint64_t len, uint64_t off)
{
	return vol_read(container_of(v, struct rec_vol, vol)->inner, buf, len, off);
}

static int rec_write(struct vol *v, const void *buf, uint64_t len, uint64_t off, unsigned flags)
{
	struct rec_vol *r = container_of(v, struct rec_vol, vol);
	unsigned i = atomic_fetch_add(&r->n, 1);

	if (i < REC_MAX) {
		r->off[i] = off;
		r->len[i] = len;
		r->flags[i] = flags;
	}
	if (i + 1 == r->fail_at)
		return -EIO;
	return vol_write(r->inner, buf, len, off, flags);
}

static int rec_fill(struct vol *v, uint64_t len, uint64_t off, vol_fill_fn fn, void *arg)
{
	struct rec_vol *r = container_of(v, struct rec_vol, vol);

	atomic_fetch_add(&r->fills, 1);
	return vol_fill(r->inner, len, off, fn, arg);
}

static void rec_close(struct vol *v)
{
	struct rec_vol *r = container_of(v, struct rec_vol, vol);
	vol_close(r->inner);
	vol_fini(v);
	free(r);
}

static const struct vol_ops rec_ops = {
    .kind = "rec",
    .read = rec_read,
    .write = rec_write,
    .close = rec_close,
    .fill = rec_fill,
};

enum { REC_SIZE = 4 << 20, SEG = 256 << 10, BIGW = 1 << 20 };

/* 4 MiB filled with 0x55, taking segments or not. */
static struct rec_vol *rec_open(unsigned caps)
{
	struct rec_vol *r = calloc(1, sizeof(*r));
	unsigned char *fill = malloc(REC_SIZE);

	CHECK(mem_member_open("4M", 0, &r->inner) == 0);
	memset(fill, 0x55, REC_SIZE);
	CHECK(vol_write(r->inner, fill, REC_SIZE, 0, 0) == 0);
	free(fill);
	CHECK(vol_init(&r->vol, &rec_ops, "rec", REC_SIZE, 512, caps) == 0);
	return r;
}

static void handshake(struct bytes *in)
{
	put32(in, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
	put64(in, NBD_IHAVEOPT);
	put32(in, NBD_OPT_GO);
	put32(in, 4 + 2);
	put32(in, 0);
	put16(in, 0);
}

/* A write of len bytes of byte c at off, its payload cut after `sent`. */
static void write_req(struct bytes *in, uint16_t flags, uint64_t cookie, uint64_t off, uint32_t len,
                      uint32_t sent, unsigned char c)
{
	unsigned char *d = malloc(len);

	memset(d, c, len);
	request(in, NBD_CMD_WRITE, flags, cookie, off, len);
	put(in, d, sent);
	free(d);
}

/* Serve in (any size: through a file) on a fresh one-worker server. */
static struct bytes serve_big(struct vol *v, const struct bytes *in, int *rc)
{
	struct nbd_server_opts o = {.threads = 1};
	struct nbd_server *s;
	char path[] = "/tmp/test_nbd_conn.XXXXXX";
	int fd = mkstemp(path), out;
	struct bytes r = {0};

	unlink(path);
	CHECK(nbd_server_new(v, &o, &s) == 0);
	CHECK(write(fd, in->p, in->len) == (ssize_t)in->len);
	CHECK(lseek(fd, 0, SEEK_SET) == 0);
	strcpy(path, "/tmp/test_nbd_conn.XXXXXX");
	out = mkstemp(path);
	unlink(path);
	*rc = nbd_serve_connection(s, fd, out);
	r.len = (size_t)lseek(out, 0, SEEK_END);
	r.p = malloc(r.len + 1);
	CHECK(pread(out, r.p, r.len, 0) == (ssize_t)r.len);
	close(fd);
	close(out);
	nbd_server_free(s);
	return r;
}

/* Whether [off, off+len) of v reads as byte c throughout. */
static bool reads_as(struct vol *v, uint64_t off, uint64_t len, unsigned char c)
{
	unsigned char *b = malloc(len);
	bool same = vol_read(v, b, len, off) == 0;

	for (uint64_t i = 0; same && i < len; i++)
		same = b[i] == c;
	free(b);
	return same;
}

/* A 1 MiB write reaches a STREAM vol as four consecutive 256 KiB writes
 * without FUA; with FUA it stays one write carrying it. */
static void check_stream_segments(void)
{
	struct rec_vol *r = rec_open(VOL_CAP_STREAM);
	struct bytes in = {0}, out;
	int rc;

	handshake(&in);
	write_req(&in, 0, 1, SEG, BIGW, BIGW, 0xa1);
	write_req(&in, NBD_CMD_FLAG_FUA, 2, 2 * BIGW, BIGW, BIGW, 0xa2);
	request(&in, NBD_CMD_DISC, 0, 3, 0, 0);
	out = serve_big(&r->vol, &in, &rc);
	CHECK_EQ(rc, 0);
	size_t pos = skip_option_replies(&out, 18);
	check_simple(&out, &pos, 0, 1);
	check_simple(&out, &pos, 0, 2);
	CHECK_EQ(atomic_load(&r->n), BIGW / SEG + 1);
	for (unsigned i = 0; i < BIGW / SEG && i < REC_MAX; i++) {
		CHECK_EQ(r->off[i], SEG + (uint64_t)i * SEG);
		CHECK_EQ(r->len[i], SEG);
		CHECK_EQ(r->flags[i], 0);
	}
	CHECK_EQ(r->len[BIGW / SEG], BIGW);
	CHECK_EQ(r->flags[BIGW / SEG], VOL_FUA);
	CHECK(reads_as(&r->vol, SEG, BIGW, 0xa1));
	CHECK(reads_as(&r->vol, 2 * BIGW, BIGW, 0xa2));
	free(in.p);
	free(out.p);
	vol_close(&r->vol);
}

/* A vol that does not take segments gets the write whole. */
static void check_stream_not_wanted(void)
{
	struct rec_vol *r = rec_open(0);
	struct bytes in = {0}, out;
	int rc;

	handshake(&in);
	write_req(&in, 0, 1, 0, BIGW, BIGW, 0xb1);
	request(&in, NBD_CMD_DISC, 0, 2, 0, 0);
	out = serve_big(&r->vol, &in, &rc);
	CHECK_EQ(rc, 0);
	size_t pos = skip_option_replies(&out, 18);
	check_simple(&out, &pos, 0, 1);
	CHECK_EQ(atomic_load(&r->n), 1);
	CHECK_EQ(r->len[0], BIGW);
	free(in.p);
	free(out.p);
	vol_close(&r->vol);
}

/* The vol fails segment 2: the reply is an error, nothing after it is
 * written (segment 1 is what it is: written here, vol.h's rule for a
 * failed write), and the request after it is read from the right place. */
static void check_stream_fails_segment2(void)
{
	struct rec_vol *r = rec_open(VOL_CAP_STREAM);
	struct bytes in = {0}, out;
	int rc;

	r->fail_at = 2;
	handshake(&in);
	write_req(&in, 0, 1, 0, BIGW, BIGW, 0xc1);
	request(&in, NBD_CMD_READ, 0, 2, 0, 4096);
	request(&in, NBD_CMD_DISC, 0, 3, 0, 0);
	out = serve_big(&r->vol, &in, &rc);
	CHECK_EQ(rc, 0);
	size_t pos = skip_option_replies(&out, 18);
	check_simple(&out, &pos, NBD_EIO, 1);
	check_simple(&out, &pos, 0, 2);
	CHECK(pos + 4096 == out.len && out.p[pos] == 0xc1);
	CHECK_EQ(atomic_load(&r->n), 2);
	CHECK(reads_as(&r->vol, SEG, BIGW - SEG, 0x55));
	free(in.p);
	free(out.p);
	vol_close(&r->vol);
}

/* The client leaves 300 KiB into a 1 MiB payload: no reply, nothing past
 * what it sent is written, and the server serves the next client. */
static void check_stream_client_leaves(void)
{
	struct rec_vol *r = rec_open(VOL_CAP_STREAM);
	struct bytes in = {0}, again = {0}, out;
	int rc;

	handshake(&in);
	write_req(&in, 0, 1, 0, BIGW, 300 << 10, 0xd1);
	out = serve_big(&r->vol, &in, &rc);
	CHECK(rc != 0);
	CHECK_EQ(skip_option_replies(&out, 18), out.len);
	CHECK(atomic_load(&r->n) <= 1);
	CHECK(reads_as(&r->vol, 300 << 10, BIGW - (300 << 10), 0x55));
	free(out.p);

	handshake(&again);
	write_req(&again, 0, 2, BIGW, BIGW, BIGW, 0xd2);
	request(&again, NBD_CMD_DISC, 0, 3, 0, 0);
	out = serve_big(&r->vol, &again, &rc);
	CHECK_EQ(rc, 0);
	size_t pos = skip_option_replies(&out, 18);
	check_simple(&out, &pos, 0, 2);
	CHECK(reads_as(&r->vol, BIGW, BIGW, 0xd2));
	free(in.p);
	free(again.p);
	free(out.p);
	vol_close(&r->vol);
}

/* A vol of plain memory (VOL_CAP_FILL) gets a large write received into
 * it: no write() call; a FUA write still comes as one write(); a client
 * that leaves 300000 bytes into a payload changes nothing past the last
 * whole 4 KiB block it sent. */
static void check_fill(void)
{
	struct rec_vol *r = rec_open(VOL_CAP_FILL | VOL_CAP_STREAM);
	struct bytes in = {0}, cut = {0}, out;
	int rc;

	handshake(&in);
	write_req(&in, 0, 1, SEG, BIGW, BIGW, 0xe1);
	write_req(&in, NBD_CMD_FLAG_FUA, 2, 2 * BIGW, BIGW, BIGW, 0xe2);
	request(&in, NBD_CMD_READ, 0, 3, SEG, 4096);
	request(&in, NBD_CMD_DISC, 0, 4, 0, 0);
	out = serve_big(&r->vol, &in, &rc);
	CHECK_EQ(rc, 0);
	size_t pos = skip_option_replies(&out, 18);
	check_simple(&out, &pos, 0, 1);
	check_simple(&out, &pos, 0, 2);
	check_simple(&out, &pos, 0, 3);
	CHECK(pos + 4096 == out.len && out.p[pos] == 0xe1);
	CHECK_EQ(atomic_load(&r->fills), 1);
	CHECK_EQ(atomic_load(&r->n), 1);
	CHECK_EQ(r->flags[0], VOL_FUA);
	CHECK(reads_as(&r->vol, SEG, BIGW, 0xe1));
	CHECK(reads_as(&r->vol, 2 * BIGW, BIGW, 0xe2));
	CHECK(reads_as(&r->vol, 0, SEG, 0x55));
	free(out.p);

	handshake(&cut);
	write_req(&cut, 0, 5, 0, BIGW, 300000, 0xe3);
	out = serve_big(&r->vol, &cut, &rc);
	CHECK(rc != 0);
	CHECK_EQ(skip_option_replies(&out, 18), out.len);
	CHECK(reads_as(&r->vol, 300000 / 4096 * 4096, BIGW + SEG - 300000 / 4096 * 4096, 0xe1));
	CHECK(reads_as(&r->vol, BIGW + SEG, BIGW - SEG, 0x55));
	free(out.p);
	free(in.p);
	free(cut.p);
	vol_close(&r->vol);
}

int main(void)
{
	struct vol *v;
	struct nbd_server *s;
	struct nbd_server_opts o = { .threads = 1 }; /* replies in order */
	struct bytes in = { 0 };
	unsigned char data[4096], back[4096];
	int rc;

	CHECK(mem_member_open("1M", 0, &v) == 0);
	CHECK(nbd_server_new(v, &o, &s) == 0);

	/* Handshake: flags, GO "" asking for block sizes. */
	put32(&in, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
	put64(&in, NBD_IHAVEOPT);
	put32(&in, NBD_OPT_GO);
	put32(&in, 4 + 2 + 2);
	put32(&in, 0);
	put16(&in, 1);
	put16(&in, NBD_INFO_BLOCK_SIZE);
	memset(data, 0xaa, sizeof(data));
	request(&in, NBD_CMD_WRITE, NBD_CMD_FLAG_FUA, 1, 8192, sizeof(data));
	put(&in, data, sizeof(data));
	request(&in, NBD_CMD_FLUSH, 0, 2, 0, 0);
	request(&in, NBD_CMD_READ, 0, 3, 8192, 16);
	request(&in, 77, 0, 4, 0, 0);                             /* unknown */
	request(&in, NBD_CMD_WRITE, 0, 5, (1u << 20) - 8, 16);    /* past end */
	put(&in, data, 16);
	request(&in, NBD_CMD_DISC, 0, 6, 0, 0);

	struct bytes r = serve(s, &in, &rc);
	CHECK_EQ(rc, 0);
	CHECK(r.len > 18 + 20);
	size_t pos = skip_option_replies(&r, 18);
	check_simple(&r, &pos, 0, 1);
	check_simple(&r, &pos, 0, 2);
	check_simple(&r, &pos, 0, 3);
	CHECK(pos + 16 <= r.len && memcmp(r.p + pos, data, 16) == 0);
	pos += 16;
	check_simple(&r, &pos, NBD_EINVAL, 4);
	check_simple(&r, &pos, NBD_ENOSPC, 5);
	CHECK_EQ(pos, r.len); /* nothing after DISC */
	CHECK(vol_read(v, back, sizeof(back), 8192) == 0);
	CHECK(memcmp(back, data, sizeof(back)) == 0);
	free(r.p);

	/* Every prefix of the session ends the connection quietly. */
	for (size_t cut = 0; cut < in.len; cut += 7) {
		struct bytes part = { .p = in.p, .len = cut };
		r = serve(s, &part, &rc);
		CHECK(rc != 0 || cut == in.len);
		free(r.p);
	}
	/* Garbage after the greeting. */
	unsigned long long seed = 42;
	for (int i = 0; i < 50; i++) {
		struct bytes g = { 0 };
		put32(&g, NBD_FLAG_C_FIXED_NEWSTYLE);
		for (int j = 0; j < 200; j++) {
			unsigned char c = (unsigned char)check_rand(&seed);
			put(&g, &c, 1);
		}
		r = serve(s, &g, &rc);
		CHECK(rc != 0);
		free(r.p);
		free(g.p);
	}

	free(in.p);
	nbd_server_free(s);
	vol_close(v);
	check_pipelined();
	check_stream_segments();
	check_stream_not_wanted();
	check_stream_fails_segment2();
	check_stream_client_leaves();
	check_fill();
	return check_done();
}
