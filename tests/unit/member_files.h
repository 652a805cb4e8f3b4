/* member_files.h — member image files for the unit tests that make md
 * arrays (test_md_assemble, test_md_bitmap, test_control): a scratch dir,
 * the path of member i in it, a blank member of a size, a hash of one
 * (file_hash: was it written?), and
 * create(args..., NULL), md_create() with `uraid create`'s options
 * (--level, --chunk and --bitmap-chunk in KiB, --layout, --name,
 * --assume-clean, --bitmap) and members. */
#ifndef URAID_TEST_MEMBER_FILES_H
#define URAID_TEST_MEMBER_FILES_H

#include "check.h"
#include "core/log.h"
#include "md/md.h"
#include "md/md_create.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static const char *path(int i)
{
	static char p[8][96];
	snprintf(p[i], sizeof(p[i]), "%s/m%d.img", dir, i);
	return p[i];
}

/* A blank member i of size bytes (created, or emptied). */
static void member_file_make(int i, uint64_t size)
{
	int fd = open(path(i), O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)size) == 0);
	close(fd);
}

/* FNV-1a over member i's whole file: "was anything written?" */
static inline uint64_t file_hash(int i)
{
	static char buf[1 << 16];
	uint64_t h = 1469598103934665603ull;
	int fd = open(path(i), O_RDONLY);
	ssize_t got;

	while (fd >= 0 && (got = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t k = 0; k < got; k++)
			h = (h ^ (uint8_t)buf[k]) * 1099511628211ull;
	if (fd >= 0)
		close(fd);
	return h;
}

/* `uraid create first ...` (the list ends with NULL) through md_create():
 * 0, or 1 after saying why. */
static inline int create(const char *first, ...)
{
	const char *a, *args[32], *layout = NULL, *name = NULL;
	char *specs[32];
	struct md_create_opts o;
	struct md_created made;
	uint64_t chunk = 0, bm_chunk = 0;
	int level = -100, bitmap = -1, nargs = 0, r;
	bool clean = false;
	unsigned n = 0;
	va_list ap;

	va_start(ap, first);
	for (a = first; a && nargs < 31; a = va_arg(ap, const char *))
		args[nargs++] = a;
	va_end(ap);
	for (int i = 0; i < nargs; i++) {
		a = args[i];
		if (!strncmp(a, "--level=", 8))
			CHECK_EQ(md_level_parse(a + 8, &level), 0);
		else if (!strncmp(a, "--chunk=", 8))
			chunk = strtoull(a + 8, NULL, 10);
		else if (!strncmp(a, "--bitmap-chunk=", 15))
			bm_chunk = strtoull(a + 15, NULL, 10) * 1024;
		else if (!strncmp(a, "--bitmap=", 9))
			bitmap = strcmp(a + 9, "internal") == 0;
		else if (!strncmp(a, "--layout=", 9))
			layout = a + 9;
		else if (!strncmp(a, "--name=", 7))
			name = a + 7;
		else if (!strcmp(a, "--assume-clean"))
			clean = true;
		else
			specs[n++] = (char *)a;
	}
	CHECK(level != -100);
	md_create_defaults(level, &o);
	if (chunk)
		o.chunk_kib = (uint32_t)chunk;
	if (layout)
		CHECK_EQ(md_layout_parse(level, layout, &o.layout), 0);
	o.name = name;
	o.assume_clean = clean;
	o.bitmap = bm_chunk && bitmap == -1 ? 1 : bitmap;
	o.bitmap_chunk = bm_chunk;
	err_clear();
	r = md_create(specs, n, &o, &made);
	if (r < 0) {
		fprintf(stderr, "create: %s\n", err_detail(r));
		return 1;
	}
	return 0;
}

#endif
