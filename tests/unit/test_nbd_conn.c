/* test_nbd_conn.c — nbd_serve_connection() driven in-process, the way a
 * fuzzer drives it: the client's bytes come from a pipe, the replies go to
 * a file.  A scripted session (GO, WRITE, FLUSH, READ, bad requests, DISC)
 * must leave the data in the vol and produce exactly the expected replies;
 * truncated and garbage inputs must end the connection without harm. */
#include "check.h"

#include "core/vol.h"
#include "member/member.h"
#include "nbd/proto.h"
#include "nbd/server.h"

#include <endian.h>
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
	return check_done();
}
