/* test_control.c — the control socket's requests (ctl_handle), on a
 * RAID1 x3 of files opened as `uraid serve` opens it, while a writer
 * thread keeps writing and reading back through the top vol:
 *  - malformed, unknown and incomplete requests get an error reply;
 *  - detail describes the array and its members;
 *  - fail takes members until one copy is left, then refuses; remove
 *    refuses an active member and frees a faulty one (its file lock is
 *    released); a hot add of a blank file is rebuilt in the background;
 *  - the writer never sees an error or a wrong byte meanwhile. */
#include "check.h"
#include "member_files.h"

#include "cli/cli.h"
#include "ctl/control.h"
#include "stack/stack.h"
#include "core/log.h"
#include "md/md.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define MEMBER_SIZE (8u << 20)
#define BLOCK 4096u


/* The reply to text, parsed; *ok says whether the server said ok. */
static json_object *ask(const struct ctl_target *t, const char *text, bool *ok)
{
	char *reply = ctl_handle(t, text, strlen(text));
	json_object *j = reply ? json_tokener_parse(reply) : NULL, *v;

	CHECK(j != NULL);
	*ok = j && json_object_object_get_ex(j, "ok", &v) && json_object_get_boolean(v);
	if (j && !*ok)
		CHECK(json_object_object_get_ex(j, "error", &v) &&
		      strlen(json_object_get_string(v)) > 10);
	free(reply);
	return j;
}

static bool ask_ok(const struct ctl_target *t, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	bool ok;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	json_object_put(ask(t, text, &ok));
	return ok;
}

/* The state detail gives the member whose device is name ("" if none). */
static const char *member_state(const struct ctl_target *t, const char *name, char *out)
{
	bool ok;
	json_object *j = ask(t, "{\"op\":\"detail\"}", &ok), *arrs, *a, *ms;

	strcpy(out, "");
	if (ok && json_object_object_get_ex(j, "arrays", &arrs) &&
	    (a = json_object_array_get_idx(arrs, 0)) &&
	    json_object_object_get_ex(a, "members", &ms))
		for (size_t i = 0; i < json_object_array_length(ms); i++) {
			json_object *m = json_object_array_get_idx(ms, i), *d, *s;
			json_object_object_get_ex(m, "device", &d);
			json_object_object_get_ex(m, "state", &s);
			if (strcmp(json_object_get_string(d), name) == 0)
				strcpy(out, json_object_get_string(s));
		}
	json_object_put(j);
	return out;
}

/* The writer: block k always holds its generation's pattern. */
struct writer {
	struct vol *v;
	atomic_bool stop;
	int errors;
	unsigned long rounds;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	unsigned long long seed = 42;
	uint64_t blocks = w->v->size / BLOCK;
	uint32_t *gen = calloc(blocks, sizeof(*gen));
	char *buf = aligned_alloc(BLOCK, BLOCK), *want = aligned_alloc(BLOCK, BLOCK);

	while (!atomic_load(&w->stop) && gen && buf && want) {
		uint64_t k = check_rand(&seed) % blocks;
		gen[k]++;
		memset(want, (int)(k * 7 + gen[k]), BLOCK);
		if (vol_write(w->v, want, BLOCK, k * BLOCK, 0) != 0 ||
		    vol_read(w->v, buf, BLOCK, k * BLOCK) != 0 || memcmp(buf, want, BLOCK) != 0)
			w->errors++;
		w->rounds++;
	}
	free(gen);
	free(buf);
	free(want);
	return NULL;
}

static void test_malformed(const struct ctl_target *t)
{
	static const char *const bad[] = {
	    "",
	    "garbage",
	    "{\"op\":",
	    "[1,2]",
	    "{\"op\":7}",
	    "{\"op\":\"frobnicate\"}",
	    "{\"op\":\"fail\"}",
	    "{\"op\":\"remove\",\"member\":3}",
	    "{\"op\":\"add\",\"member\":\"\"}",
	    "{\"op\":\"detail\"} {\"op\":\"detail\"}",
	    "{\"op\":\"fail\",\"member\":\"no-such-member\"}",
	};
	bool ok;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object_put(ask(t, bad[i], &ok));
		CHECK(!ok);
	}
	/* Bytes that are not text at all, and a request too long. */
	char bin[64];
	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (char)(i * 37);
	char *reply = ctl_handle(t, bin, sizeof(bin));
	CHECK(reply && strstr(reply, "\"ok\":false"));
	free(reply);
	size_t big = CTL_REQ_MAX + 10;
	char *huge = malloc(big);
	memset(huge, ' ', big);
	memcpy(huge, "{\"op\":\"detail\"}", 15);
	reply = ctl_handle(t, huge, big);
	CHECK(reply && strstr(reply, "too long"));
	free(reply);
	free(huge);
	/* Whitespace and a newline around a good request are fine. */
	json_object_put(ask(t, " {\"op\" : \"detail\"}\n", &ok));
	CHECK(ok);
}

int main(void)
{
	struct stack_opts so = {0};
	struct stack_info info;
	struct vol *top = NULL;
	char st[64];
	char *specs[3];

	log_verbosity = LOG_WARN;
	snprintf(dir, sizeof(dir), "/tmp/uraid-ctl.XXXXXX");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "skip: cannot make a scratch directory in /tmp\n");
		return 77;
	}
	for (int i = 0; i < 4; i++)
		member_file_make(i, MEMBER_SIZE);
	CHECK_EQ(create("--level=1", "--assume-clean", path(0), path(1), path(2), NULL), 0);
	for (int i = 0; i < 3; i++)
		specs[i] = (char *)path(i);
	CHECK_EQ(stack_open_info(specs, 3, &so, &top, &info), 0);
	if (!top)
		return check_done();
	CHECK(info.md == top);
	CHECK_EQ(info.luks, 0);
	struct ctl_target t = {.top = top, .md = info.md};

	test_malformed(&t);

	struct writer w = {.v = top};
	pthread_t wt;
	CHECK_EQ(pthread_create(&wt, NULL, writer_main, &w), 0);

	/* detail: three members in sync */
	for (int i = 0; i < 3; i++)
		CHECK(strcmp(member_state(&t, path(i), st), "active sync") == 0);

	/* fail two, refuse the third; remove refuses an active member */
	CHECK(ask_ok(&t, "{\"op\":\"fail\",\"member\":\"%s\"}", path(0)));
	CHECK(strcmp(member_state(&t, path(0), st), "faulty") == 0);
	CHECK(ask_ok(&t, "{\"op\":\"fail\",\"member\":\"%s\"}", path(1)));
	CHECK(!ask_ok(&t, "{\"op\":\"fail\",\"member\":\"%s\"}", path(2)));
	CHECK(strcmp(member_state(&t, path(2), st), "active sync") == 0);
	CHECK(!ask_ok(&t, "{\"op\":\"remove\",\"member\":\"%s\"}", path(2)));

	/* remove a faulty one: its file lock is free again */
	CHECK(ask_ok(&t, "{\"op\":\"remove\",\"member\":\"%s\"}", path(0)));
	CHECK(strcmp(member_state(&t, path(0), st), "") == 0);
	int fd = open(path(0), O_RDONLY);
	CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
	close(fd);
	CHECK(ask_ok(&t, "{\"op\":\"remove\",\"member\":\"%s\"}", path(1)));

	/* hot add: rebuilt while the writer goes on */
	CHECK(!ask_ok(&t, "{\"op\":\"add\",\"member\":\"%s\"}", path(2))); /* a member */
	CHECK(ask_ok(&t, "{\"op\":\"add\",\"member\":\"%s\"}", path(3)));
	for (int i = 0; i < 2000 && strcmp(member_state(&t, path(3), st), "active sync"); i++)
		usleep(5000);
	CHECK(strcmp(member_state(&t, path(3), st), "active sync") == 0);
	/* the freed file, added back with --force (it holds our superblock) */
	CHECK(!ask_ok(&t, "{\"op\":\"add\",\"member\":\"%s\"}", path(0)));
	CHECK(ask_ok(&t, "{\"op\":\"add\",\"member\":\"%s\",\"force\":true}", path(0)));
	for (int i = 0; i < 2000 && strcmp(member_state(&t, path(0), st), "active sync"); i++)
		usleep(5000);
	CHECK(strcmp(member_state(&t, path(0), st), "active sync") == 0);

	atomic_store(&w.stop, true);
	pthread_join(wt, NULL);
	CHECK_EQ(w.errors, 0);
	CHECK(w.rounds > 0);
	CHECK_EQ(vol_flush(top), 0);
	vol_close(top);

	/* The three members now in the array agree (check through serve's
	 * own stack: assembling them writable resyncs nothing, clean). */
	specs[0] = (char *)path(0);
	specs[1] = (char *)path(2);
	specs[2] = (char *)path(3);
	so.readonly = true;
	CHECK_EQ(stack_open_info(specs, 3, &so, &top, &info), 0);
	if (top) {
		struct md_array_info in;
		CHECK_EQ(md_array_info(info.md, &in), 0);
		CHECK_EQ(in.active_devs, 3);
		CHECK(!in.degraded);
		md_array_info_free(&in);
		vol_close(top);
	}
	for (int i = 0; i < 4; i++)
		unlink(path(i));
	rmdir(dir);
	return check_done();
}
