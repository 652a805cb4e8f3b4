/* passphrase.c — reading passphrases without echo (see passphrase.h): for
 * stack.c's LUKS unlock and cli/cmd_luks.c's key commands. */
#include "passphrase.h"

#include "core/log.h"
#include "core/secmem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#define PASSPHRASE_FILE_MAX (8u << 20) /* cryptsetup's key-file limit */
#define PASSPHRASE_LINE_MAX 512u       /* cryptsetup's interactive limit */

/* Read all of fd into a secret, at most max bytes. */
static int pass_read_all(int fd, const char *what, struct luks_secret **out)
{
	size_t cap = 4096, len = 0;
	unsigned char *buf = secmem_alloc(cap), *nbuf;
	struct luks_secret *s;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap >= PASSPHRASE_FILE_MAX) {
				secmem_free(buf);
				return err_set(-EFBIG, "key file %s is larger than %u bytes", what,
				               PASSPHRASE_FILE_MAX);
			}
			nbuf = secmem_alloc(cap * 2);
			if (!nbuf) {
				secmem_free(buf);
				return -ENOMEM;
			}
			memcpy(nbuf, buf, len);
			secmem_free(buf);
			buf = nbuf;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			secmem_free(buf);
			return err_set(-e, "reading key file %s: %s", what, strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len == 0) {
		secmem_free(buf);
		return err_set(-EINVAL, "key file %s is empty", what);
	}
	s = luks_secret_alloc(len);
	if (!s) {
		secmem_free(buf);
		return -ENOMEM;
	}
	memcpy(s->data, buf, len);
	secmem_free(buf);
	*out = s;
	return 0;
}

/* One line from fd (the newline dropped); echo off when it is a tty. */
static int pass_read_line(int in, int outfd, const char *prompt, struct luks_secret **out)
{
	struct termios old, quiet;
	bool tty = isatty(in);
	unsigned char *buf = secmem_alloc(PASSPHRASE_LINE_MAX + 1);
	size_t len = 0;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	if (tty) {
		if (tcgetattr(in, &old) < 0) {
			secmem_free(buf);
			return err_set(-errno, "terminal: %s", strerror(errno));
		}
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		quiet.c_lflag |= ECHONL;
		if (prompt && write(outfd, prompt, strlen(prompt)) < 0)
			r = -errno;
		tcsetattr(in, TCSAFLUSH, &quiet);
	}
	for (;;) {
		unsigned char c;
		ssize_t n = read(in, &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = err_set(-errno, "reading the passphrase: %s", strerror(errno));
			break;
		}
		if (n == 0 || c == '\n')
			break;
		if (len == PASSPHRASE_LINE_MAX) {
			r = err_set(-EINVAL, "passphrase is longer than %u characters",
			            PASSPHRASE_LINE_MAX);
			break;
		}
		buf[len++] = c;
	}
	if (tty)
		tcsetattr(in, TCSAFLUSH, &old);
	if (r == 0 && len == 0)
		r = err_set(-EINVAL, "empty passphrase");
	if (r == 0) {
		*out = luks_secret_alloc(len);
		if (!*out)
			r = -ENOMEM;
		else
			memcpy((*out)->data, buf, len);
	}
	secmem_free(buf);
	return r;
}

void passphrase_file_warn(const char *path, int fd)
{
	struct stat st;

	if ((fd >= 0 ? fstat(fd, &st) : stat(path, &st)) < 0 || !S_ISREG(st.st_mode))
		return;
	if (st.st_mode & (S_IRWXG | S_IRWXO))
		log_warn("%s: mode %04o lets its group or others read or change this secret "
		         "(chmod 600 it)",
		         path, (unsigned)(st.st_mode & 07777));
}

int passphrase_read(const char *key_file, const char *prompt, bool confirm,
                    struct luks_secret **out)
{
	struct luks_secret *a = NULL, *b = NULL;
	int fd, r;

	if (key_file) {
		if (strcmp(key_file, "-") == 0)
			return pass_read_all(STDIN_FILENO, "(stdin)", out);
		fd = open(key_file, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return err_set(-errno, "key file %s: %s", key_file, strerror(errno));
		passphrase_file_warn(key_file, fd);
		r = pass_read_all(fd, key_file, out);
		close(fd);
		return r;
	}
	if (!isatty(STDIN_FILENO))
		return pass_read_line(STDIN_FILENO, STDERR_FILENO, NULL, out);
	fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return err_set(-ENOTTY, "no terminal to ask for the passphrase; "
		                        "give --key-file");
	r = pass_read_line(fd, fd, prompt, &a);
	if (r == 0 && confirm) {
		r = pass_read_line(fd, fd, "Verify passphrase: ", &b);
		if (r == 0 && (a->len != b->len || memcmp(a->data, b->data, a->len)))
			r = err_set(-EINVAL, "passphrases do not match");
	}
	close(fd);
	luks_secret_free(b);
	if (r < 0)
		luks_secret_free(a);
	else
		*out = a;
	return r;
}

int passphrase_confirm(const char *question)
{
	char ans[16] = {0};
	size_t len = 0;
	int in = STDIN_FILENO, out = STDERR_FILENO;

	/* Like the passphrase: a script pipes the answer into standard input;
	 * a person at a terminal answers on the terminal. */
	if (isatty(STDIN_FILENO)) {
		in = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
		if (in < 0)
			in = STDIN_FILENO;
		else
			out = in;
	}
	if (write(out, question, strlen(question)) < 0) {
		/* nowhere to ask: treated as "no" below */
	}
	while (len < sizeof(ans) - 1) {
		char c;
		ssize_t n = read(in, &c, 1);
		if (n <= 0 || c == '\n')
			break;
		ans[len++] = c;
	}
	if (in != STDIN_FILENO)
		close(in);
	return strcmp(ans, "YES") == 0 ? 0 : -ECANCELED;
}
