/* member_files.h — member image files for the unit tests that go through
 * the CLI's create (test_md_assemble, test_md_bitmap, test_control): a
 * scratch dir, the path of member i in it, a blank member of a size,
 * create(args..., NULL) as `uraid create args...`, and the cli_fail that
 * cmd_create reports through (it lives in main.c, which tests do not
 * link). */
#ifndef URAID_TEST_MEMBER_FILES_H
#define URAID_TEST_MEMBER_FILES_H

#include "check.h"
#include "cli/cli.h"
#include "core/log.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

int cli_fail(const char *what, int r)
{
	fprintf(stderr, "uraid: %s: %s\n", what, err_detail(r));
	return 1;
}

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

/* `uraid create first ...` (the list ends with NULL). */
static inline int create(const char *first, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = (char *)"create";
	va_start(ap, first);
	for (const char *a = first; a && argc < 31; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	return cmd_create(argc, argv);
}

#endif
