/* test_nbd_exports.c — one server, several named exports
 * (nbd_server_new_multi), seen through libnbd and through raw bytes.
 *
 * Three mem: vols of different sizes are exported as "", "a/p1" and
 * "md/Disk Station:2" (read-only; a name with a space, ':' and '/').
 * libnbd lists them (names and descriptions), asks for each one's info
 * (size, read-only, canonical name, description), then holds a connection
 * to each at once and writes and reads distinct data: each connection must
 * reach its own vol, with its own size and flags.  An unknown name is
 * refused with NBD_REP_ERR_UNKNOWN and a message naming it; the old-style
 * NBD_OPT_EXPORT_NAME with an unknown name closes the session; a metadata
 * context set for one export does not carry over to a GO for another.
 * nbdinfo --list and qemu-img see the same, where installed.
 * Then the default-export rules, the argument checks, and a list of 200. */
#include "check.h"

#include "core/vol.h"
#include "member/member.h"
#include "nbd/proto.h"
#include "nbd/server.h"

#include <endian.h>
#include <errno.h>
#include <libnbd.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MIB (1u << 20)
#define RO_NAME "md/Disk Station:2"

static char sock[128];
static struct vol *vols[3];

struct running {
	struct nbd_server *s;
	pthread_t thread;
};

static void *run_main(void *arg)
{
	nbd_server_run(arg);
	return NULL;
}

static bool start(struct running *r, const struct nbd_export *e, unsigned n, int def)
{
	struct nbd_server_opts o = {.threads = 2};

	unlink(sock);
	CHECK_EQ(nbd_server_new_multi(e, n, def, &o, &r->s), 0);
	if (!r->s)
		return false;
	CHECK_EQ(nbd_server_listen_unix(r->s, sock), 0);
	CHECK_EQ(pthread_create(&r->thread, NULL, run_main, r->s), 0);
	return true;
}

static void stop(struct running *r)
{
	nbd_server_stop(r->s);
	pthread_join(r->thread, NULL);
	nbd_server_free(r->s);
}

/* A libnbd handle in option mode, negotiating. */
static struct nbd_handle *client(void)
{
	struct nbd_handle *h = nbd_create();

	CHECK(h != NULL);
	CHECK_EQ(nbd_set_opt_mode(h, true), 0);
	CHECK_EQ(nbd_set_full_info(h, true), 0);
	CHECK_EQ(nbd_connect_unix(h, sock), 0);
	return h;
}

static void client_end(struct nbd_handle *h)
{
	if (nbd_aio_is_negotiating(h))
		nbd_opt_abort(h);
	else
		nbd_shutdown(h, 0);
	nbd_close(h);
}

struct listed {
	unsigned n;
	char name[8][64], desc[8][64];
};

static int list_cb(void *ud, const char *name, const char *desc)
{
	struct listed *l = ud;

	if (l->n < 8) {
		snprintf(l->name[l->n], sizeof(l->name[0]), "%s", name);
		snprintf(l->desc[l->n], sizeof(l->desc[0]), "%s", desc);
	}
	l->n++;
	return 0;
}

/* NBD_OPT_INFO for name: 0 with the size, read-only flag, canonical name
 * and description checked; -1 (and libnbd's errno) when refused. */
static int info(struct nbd_handle *h, const char *name, int64_t size, bool ro,
                const char *canonical, const char *desc)
{
	CHECK_EQ(nbd_set_export_name(h, name), 0);
	if (nbd_opt_info(h) != 0)
		return -1;
	CHECK_EQ(nbd_get_size(h), size);
	CHECK_EQ(nbd_is_read_only(h), ro);
	CHECK_EQ(nbd_can_trim(h), !ro);
	char *c = nbd_get_canonical_export_name(h), *d = nbd_get_export_description(h);
	CHECK(c && strcmp(c, canonical) == 0);
	CHECK(desc ? d && strcmp(d, desc) == 0 : d == NULL);
	free(c);
	free(d);
	return 0;
}

/* Run a shell command and keep its output; false (and a note) when the
 * tool is not installed. */
static bool run_tool(const char *tool, const char *cmd, char *out, size_t cap)
{
	char probe[128];
	size_t n = 0;

	snprintf(probe, sizeof(probe), "command -v %s >/dev/null", tool);
	if (system(probe) != 0) {
		fprintf(stderr, "note: %s missing, that part not run\n", tool);
		return false;
	}
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	if (!p)
		return false;
	while (n + 1 < cap && !feof(p)) {
		size_t got = fread(out + n, 1, cap - 1 - n, p);
		if (got == 0)
			break;
		n += got;
	}
	out[n] = '\0';
	CHECK_EQ(pclose(p), 0);
	return true;
}

/* Independent clients: nbdinfo lists every export with its size and
 * description; qemu-img opens one by a name with ' ', ':' and '/'. */
static void check_tools(void)
{
	static char out[1 << 16];
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "nbdinfo --list --json 'nbd+unix:///?socket=%s'", sock);
	if (run_tool("nbdinfo", cmd, out, sizeof(out))) {
		CHECK(strstr(out, "\"export-name\": \"a/p1\"") != NULL);
		CHECK(strstr(out, "\"export-name\": \"" RO_NAME "\"") != NULL);
		CHECK(strstr(out, "\"description\": \"a.img partition 1\"") != NULL);
		CHECK(strstr(out, "\"export-size\": 3145728") != NULL);
		CHECK(strstr(out, "\"export-size\": 2097152") != NULL);
		CHECK(strstr(out, "\"export-size\": 1048576") != NULL);
	}
	snprintf(cmd, sizeof(cmd),
	         "qemu-img info --output=json 'json:{\"driver\": \"nbd\", \"export\": \"%s\", "
	         "\"server\": {\"type\": \"unix\", \"path\": \"%s\"}}'",
	         RO_NAME, sock);
	if (run_tool("qemu-img", cmd, out, sizeof(out)))
		CHECK(strstr(out, "\"virtual-size\": 3145728") != NULL);
}

static void check_list_info_go(void)
{
	const struct nbd_export ex[] = {
	    {.name = "", .description = "the whole disk", .vol = vols[0]},
	    {.name = "a/p1", .description = "a.img partition 1", .vol = vols[1]},
	    {.name = RO_NAME, .vol = vols[2], .readonly = true},
	};
	struct running r;
	struct listed l = {0};
	struct nbd_handle *h, *go[3];
	char buf[4096], want[4096];

	if (!start(&r, ex, 3, -1))
		return;
	h = client();
	CHECK_EQ(nbd_opt_list(h, (nbd_list_callback){.callback = list_cb, .user_data = &l}), 3);
	CHECK_EQ(l.n, 3);
	for (unsigned i = 0; i < 3 && i < l.n; i++) {
		CHECK(strcmp(l.name[i], ex[i].name) == 0);
		CHECK(strcmp(l.desc[i], ex[i].description ? ex[i].description : "") == 0);
	}
	CHECK_EQ(info(h, "", 1 * MIB, false, "", "the whole disk"), 0);
	CHECK_EQ(info(h, "a/p1", 2 * MIB, false, "a/p1", "a.img partition 1"), 0);
	CHECK_EQ(info(h, RO_NAME, 3 * MIB, true, RO_NAME, NULL), 0);
	/* Exact names only: no prefix, no trailing byte, no other case. */
	const char *unknown[] = {"nope", "a/p", "a/p1 ", "A/P1", "md/Disk Station:2/"};
	for (unsigned i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		CHECK_EQ(info(h, unknown[i], 0, false, "", NULL), -1);
		CHECK_EQ(nbd_get_errno(), ENOENT); /* libnbd's NBD_REP_ERR_UNKNOWN */
	}
	client_end(h);
	check_tools();

	/* The read-only vol holds data of its own, put there directly. */
	memset(want, 0xc3, sizeof(want));
	CHECK_EQ(vol_write(vols[2], want, sizeof(want), 8192, 0), 0);
	/* One connection per export, all open at once. */
	for (unsigned i = 0; i < 3; i++) {
		go[i] = client();
		CHECK_EQ(nbd_set_export_name(go[i], ex[i].name), 0);
		CHECK_EQ(nbd_add_meta_context(go[i], LIBNBD_CONTEXT_BASE_ALLOCATION), 0);
		CHECK_EQ(nbd_opt_go(go[i]), 0);
	}
	for (unsigned i = 0; i < 3; i++) {
		CHECK_EQ(nbd_get_size(go[i]), (int64_t)(i + 1) * MIB);
		CHECK_EQ(nbd_is_read_only(go[i]), i == 2);
		CHECK_EQ(nbd_can_meta_context(go[i], LIBNBD_CONTEXT_BASE_ALLOCATION), 1);
		memset(buf, 0x10 + (int)i, sizeof(buf));
		if (i < 2) {
			CHECK_EQ(nbd_pwrite(go[i], buf, sizeof(buf), 8192, 0), 0);
			/* The end of this export, which the smaller one lacks. */
			CHECK_EQ(nbd_pwrite(go[i], buf, sizeof(buf), (i + 1) * MIB - 4096, 0), 0);
		}
	}
	/* The read-only export refuses writes whatever its vol could do. */
	nbd_set_strict_mode(go[2], 0);
	CHECK_EQ(nbd_pwrite(go[2], buf, sizeof(buf), 8192, 0), -1);
	CHECK_EQ(nbd_get_errno(), EPERM);
	CHECK_EQ(nbd_trim(go[2], 4096, 0, 0), -1);
	/* Past the end of the 1 MiB export, inside the 2 MiB one. */
	nbd_set_strict_mode(go[0], 0);
	CHECK_EQ(nbd_pread(go[0], buf, sizeof(buf), 1 * MIB, 0), -1);
	CHECK_EQ(nbd_pread(go[1], buf, sizeof(buf), 1 * MIB, 0), 0);
	for (unsigned i = 0; i < 3; i++) {
		CHECK_EQ(nbd_pread(go[i], buf, sizeof(buf), 8192, 0), 0);
		memset(want, i == 2 ? 0xc3 : 0x10 + (int)i, sizeof(want));
		CHECK(memcmp(buf, want, sizeof(buf)) == 0);
		/* And it is in that vol, not another. */
		CHECK_EQ(vol_read(vols[i], buf, sizeof(buf), 8192), 0);
		CHECK(memcmp(buf, want, sizeof(buf)) == 0);
		client_end(go[i]);
	}
	stop(&r);
}

/* ---- raw sessions, for what libnbd does not show ---- */

struct bytes {
	unsigned char p[1 << 16];
	size_t len;
};

static void put(struct bytes *b, const void *d, size_t n)
{
	if (n)
		memcpy(b->p + b->len, d, n);
	b->len += n;
}
static void put16(struct bytes *b, uint16_t v)
{
	v = htobe16(v);
	put(b, &v, 2);
}
static void put32(struct bytes *b, uint32_t v)
{
	v = htobe32(v);
	put(b, &v, 4);
}
static void put64(struct bytes *b, uint64_t v)
{
	v = htobe64(v);
	put(b, &v, 8);
}
static uint32_t get32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return be32toh(v);
}
static uint16_t get16(const unsigned char *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return be16toh(v);
}

static void opt(struct bytes *b, uint32_t o, const void *d, uint32_t n)
{
	put64(b, NBD_IHAVEOPT);
	put32(b, o);
	put32(b, n);
	put(b, d, n);
}

/* GO/INFO data, or (meta) SET_META_CONTEXT data for base:allocation. */
static void opt_named(struct bytes *b, uint32_t o, const char *name)
{
	struct bytes d = {.len = 0};
	uint32_t n = (uint32_t)strlen(name);

	put32(&d, n);
	put(&d, name, n);
	if (o == NBD_OPT_SET_META_CONTEXT) {
		put32(&d, 1);
		put32(&d, (uint32_t)strlen(NBD_META_BASE_ALLOCATION));
		put(&d, NBD_META_BASE_ALLOCATION, strlen(NBD_META_BASE_ALLOCATION));
	} else {
		put16(&d, 0);
	}
	opt(b, o, d.p, (uint32_t)d.len);
}

/* Send the whole client side, then read the server's until it closes. */
static void session(const struct bytes *in, struct bytes *out)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ssize_t n;

	out->len = 0;
	strcpy(a.sun_path, sock);
	CHECK_EQ(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(write(fd, in->p, in->len), (ssize_t)in->len);
	shutdown(fd, SHUT_WR);
	while (out->len < sizeof(out->p) &&
	       (n = read(fd, out->p + out->len, sizeof(out->p) - out->len)) > 0)
		out->len += (size_t)n;
	close(fd);
}

/* The option reply at *pos: its type; *msg, *mlen its data. */
static uint32_t opt_reply(const struct bytes *r, size_t *pos, const unsigned char **msg,
                          uint32_t *mlen)
{
	if (*pos + 20 > r->len)
		return 0;
	uint32_t type = get32(r->p + *pos + 12), len = get32(r->p + *pos + 16);
	*msg = r->p + *pos + 20;
	*mlen = len;
	*pos += 20 + len;
	return type;
}

static void check_raw(void)
{
	const struct nbd_export ex[] = {
	    {.name = "a/p1", .vol = vols[0]},
	    {.name = RO_NAME, .vol = vols[1], .readonly = true},
	};
	struct running r;
	struct bytes in = {.len = 0}, out;
	const unsigned char *m;
	uint32_t ml;
	size_t pos = 18; /* after the greeting */

	if (!start(&r, ex, 2, -1))
		return;
	/* GO for an unknown name and for the missing default export: refused
	 * with a message that says what was asked for and how to list. */
	put32(&in, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
	opt_named(&in, NBD_OPT_GO, "no/such:export");
	opt_named(&in, NBD_OPT_GO, "");
	opt(&in, NBD_OPT_ABORT, NULL, 0);
	session(&in, &out);
	CHECK_EQ(opt_reply(&out, &pos, &m, &ml), NBD_REP_ERR_UNKNOWN);
	CHECK(memmem(m, ml, "\"no/such:export\"", 16) != NULL);
	CHECK(memmem(m, ml, "NBD_OPT_LIST", 12) != NULL);
	CHECK_EQ(opt_reply(&out, &pos, &m, &ml), NBD_REP_ERR_UNKNOWN);
	CHECK(memmem(m, ml, "no default export", 17) != NULL);
	CHECK_EQ(opt_reply(&out, &pos, &m, &ml), NBD_REP_ACK); /* of ABORT */
	CHECK_EQ(pos, out.len);

	/* NBD_OPT_EXPORT_NAME cannot be refused: an unknown name closes the
	 * session before any reply; a known one gets its export's size and
	 * flags. */
	in.len = 0;
	put32(&in, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
	opt(&in, NBD_OPT_EXPORT_NAME, "a/p2", 4);
	session(&in, &out);
	CHECK_EQ(out.len, 18);
	in.len = 4;
	opt(&in, NBD_OPT_EXPORT_NAME, RO_NAME, (uint32_t)strlen(RO_NAME));
	session(&in, &out);
	CHECK_EQ(out.len, 18 + 10);
	if (out.len == 28) {
		uint64_t size;
		memcpy(&size, out.p + 18, 8);
		CHECK_EQ(be64toh(size), 2 * MIB);
		CHECK(get16(out.p + 26) & NBD_FLAG_READ_ONLY);
	}

	/* base:allocation set for one export, then GO for the other: the
	 * selection does not carry over, so BLOCK_STATUS is refused there;
	 * set for the export GO picks, it is served. */
	for (int same = 0; same < 2; same++) {
		in.len = 0;
		pos = 18;
		put32(&in, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
		opt(&in, NBD_OPT_STRUCTURED_REPLY, NULL, 0);
		opt_named(&in, NBD_OPT_SET_META_CONTEXT, "a/p1");
		opt_named(&in, NBD_OPT_GO, same ? "a/p1" : RO_NAME);
		put32(&in, NBD_REQUEST_MAGIC);
		put16(&in, 0);
		put16(&in, NBD_CMD_BLOCK_STATUS);
		put64(&in, 7);
		put64(&in, 0);
		put32(&in, 65536);
		session(&in, &out);
		CHECK_EQ(opt_reply(&out, &pos, &m, &ml), NBD_REP_ACK);          /* STRUCTURED */
		CHECK_EQ(opt_reply(&out, &pos, &m, &ml), NBD_REP_META_CONTEXT); /* SET */
		CHECK_EQ(opt_reply(&out, &pos, &m, &ml), NBD_REP_ACK);
		while (pos < out.len && opt_reply(&out, &pos, &m, &ml) == NBD_REP_INFO)
			;
		if (!same) { /* refused as not negotiated (a simple reply) */
			CHECK(pos + 16 == out.len && get32(out.p + pos) == NBD_SIMPLE_REPLY_MAGIC &&
			      get32(out.p + pos + 4) == NBD_EINVAL);
			continue;
		}
		CHECK(pos + 20 <= out.len && get32(out.p + pos) == NBD_STRUCTURED_REPLY_MAGIC &&
		      get16(out.p + pos + 6) == NBD_REPLY_TYPE_BLOCK_STATUS);
	}
	stop(&r);
}

/* What "" selects: the export named "" over default_export; else
 * default_export; else nothing.  nbd_server_new() is one export that ""
 * also selects. */
static void check_defaults(void)
{
	struct nbd_export ex[] = {
	    {.name = "vg1/lv0", .description = "lv0", .vol = vols[0]},
	    {.name = "a/p1", .description = "p1", .vol = vols[1]},
	    {.name = "", .description = "whole", .vol = vols[2]},
	};
	struct running r;
	struct nbd_handle *h;
	struct nbd_server *s = NULL;

	if (start(&r, ex, 2, 1)) {
		h = client();
		CHECK_EQ(info(h, "", 2 * MIB, false, "a/p1", "p1"), 0);
		CHECK_EQ(info(h, "vg1/lv0", 1 * MIB, false, "vg1/lv0", "lv0"), 0);
		client_end(h);
		stop(&r);
	}
	if (start(&r, ex, 3, 1)) {
		h = client();
		CHECK_EQ(info(h, "", 3 * MIB, false, "", "whole"), 0);
		client_end(h);
		stop(&r);
	}
	if (start(&r, ex, 2, -1)) {
		h = client();
		CHECK_EQ(info(h, "", 0, false, "", NULL), -1);
		CHECK_EQ(nbd_get_errno(), ENOENT);
		CHECK_EQ(info(h, "a/p1", 2 * MIB, false, "a/p1", "p1"), 0);
		client_end(h);
		stop(&r);
	}

	/* The one-export server: its name and "" reach the vol, LIST shows
	 * the name alone. */
	struct nbd_server_opts o = {.export_name = "disk0", .description = "d0"};
	struct listed l = {0};
	CHECK_EQ(nbd_server_new(vols[1], &o, &r.s), 0);
	unlink(sock);
	CHECK_EQ(nbd_server_listen_unix(r.s, sock), 0);
	CHECK_EQ(pthread_create(&r.thread, NULL, run_main, r.s), 0);
	h = client();
	CHECK_EQ(nbd_opt_list(h, (nbd_list_callback){.callback = list_cb, .user_data = &l}), 1);
	CHECK(strcmp(l.name[0], "disk0") == 0 && strcmp(l.desc[0], "d0") == 0);
	CHECK_EQ(info(h, "", 2 * MIB, false, "disk0", "d0"), 0);
	CHECK_EQ(info(h, "disk0", 2 * MIB, false, "disk0", "d0"), 0);
	CHECK_EQ(info(h, "disk1", 0, false, "", NULL), -1);
	client_end(h);
	stop(&r);

	/* Argument checks. */
	struct nbd_export dup[] = {ex[1], ex[1]};
	CHECK_EQ(nbd_server_new_multi(dup, 2, -1, NULL, &s), -EINVAL);
	CHECK_EQ(nbd_server_new_multi(ex, 0, -1, NULL, &s), -EINVAL);
	CHECK_EQ(nbd_server_new_multi(ex, 2, 2, NULL, &s), -EINVAL);
	char *long_name = malloc(NBD_MAX_NAME + 2);
	memset(long_name, 'n', NBD_MAX_NAME + 1);
	long_name[NBD_MAX_NAME + 1] = '\0';
	struct nbd_export lg = {.name = long_name, .vol = vols[0]};
	CHECK_EQ(nbd_server_new_multi(&lg, 1, -1, NULL, &s), -EINVAL);
	long_name[NBD_MAX_NAME] = '\0'; /* 4096 bytes: a client can ask for it */
	CHECK_EQ(nbd_server_new_multi(&lg, 1, -1, NULL, &s), 0);
	nbd_server_free(s);
	free(long_name);
}

static int count_cb(void *ud, const char *name, const char *desc)
{
	unsigned *seen = ud, i;

	(void)desc;
	if (sscanf(name, "vg1/lv%u", &i) == 1 && i < 200)
		seen[i]++;
	return 0;
}

/* Every volume of a big probe is listed, once, and each is reachable. */
static void check_many(void)
{
	enum { N = 200 };
	static struct nbd_export ex[N];
	static char names[N][16];
	unsigned seen[N] = {0};
	struct running r;

	for (unsigned i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "vg1/lv%u", i);
		ex[i] = (struct nbd_export){.name = names[i], .vol = vols[i % 3]};
	}
	if (!start(&r, ex, N, -1))
		return;
	struct nbd_handle *h = client();
	CHECK_EQ(nbd_opt_list(h, (nbd_list_callback){.callback = count_cb, .user_data = seen}), N);
	for (unsigned i = 0; i < N; i++)
		CHECK_EQ(seen[i], 1);
	CHECK_EQ(info(h, "vg1/lv199", 2 * MIB, false, "vg1/lv199", NULL), 0);
	CHECK_EQ(info(h, "vg1/lv200", 0, false, "", NULL), -1);
	client_end(h);
	stop(&r);
}

int main(void)
{
	char dir[] = "/tmp/test_nbd_exports.XXXXXX";
	const char *sizes[] = {"1M", "2M", "3M"};

	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir))
		return 1;
	snprintf(sock, sizeof(sock), "%s/s.sock", dir);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(mem_member_open(sizes[i], 0, &vols[i]), 0);
	if (check_failures)
		return check_done();
	check_list_info_go();
	check_raw();
	check_defaults();
	check_many();
	for (int i = 0; i < 3; i++)
		vol_close(vols[i]);
	unlink(sock);
	rmdir(dir);
	return check_done();
}
