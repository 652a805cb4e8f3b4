/* client.c — the client half of the control socket's protocol (see
 * control.h; control.c is the server): connect, send one JSON request and
 * a newline, read the reply to the end, parse it.  cli/cmd_control.c's
 * commands (detail, fail, remove, hot add and check) print what it gets;
 * ctl_monitor_open() starts the event stream `uraid monitor` copies out. */
#include "control.h"

#include "core/log.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Connect to the server at path: the fd, or -errno with err_set(). */
static int ctl_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return err_set(-ENAMETOOLONG, "%s: path too long for a Unix socket", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = err_set(-errno, "%s: %s (is `uraid serve --control %s` running?)", path,
		            strerror(errno), path);
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

int ctl_request(const char *path, json_object *req, json_object **reply)
{
	const char *text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int fd, r;

	*reply = NULL;
	fd = ctl_connect(path);
	if (fd < 0)
		return fd;
	size_t n = strlen(text), off = 0;
	while (off < n) {
		ssize_t w = send(fd, text + off, n - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r = err_set(w < 0 ? -errno : -EIO, "%s: sending: %s", path,
			            strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	ssize_t w = send(fd, "\n", 1, MSG_NOSIGNAL);
	if (w != 1) {
		r = err_set(w < 0 ? -errno : -EIO, "%s: sending: %s", path, strerror(errno));
		goto out;
	}
	for (;;) {
		if (len + 4096 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 65536);
			if (!nb) {
				r = err_set(-ENOMEM, "out of memory");
				goto out;
			}
			buf = nb;
		}
		ssize_t got = read(fd, buf + len, cap - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			r = err_set(-errno, "%s: reading the reply: %s", path, strerror(errno));
			goto out;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	if (!buf) {
		r = err_set(-EPROTO, "%s: the server closed without a reply", path);
		goto out;
	}
	buf[len] = '\0';
	*reply = json_tokener_parse(buf);
	if (!*reply || !json_object_is_type(*reply, json_type_object)) {
		json_object_put(*reply);
		*reply = NULL;
		r = err_set(-EPROTO, "%s: the reply is not JSON", path);
		goto out;
	}
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return r;
}

int ctl_monitor_open(const char *path, bool test, int *out)
{
	const char *req = test ? "{\"op\":\"monitor\",\"test\":true}\n" : "{\"op\":\"monitor\"}\n";
	char line[4096];
	size_t len = 0;
	json_object *reply = NULL, *ok;
	int fd, r;

	fd = ctl_connect(path);
	if (fd < 0)
		return fd;
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		r = err_set(-EIO, "%s: sending: %s", path, strerror(errno));
		goto fail;
	}
	/* The answer's one line, a byte at a time: the events follow it. */
	while (len < sizeof(line) - 1) {
		ssize_t got = read(fd, line + len, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0 || line[len] == '\n')
			break;
		len++;
	}
	line[len] = '\0';
	reply = json_tokener_parse(line);
	if (!reply || !json_object_is_type(reply, json_type_object)) {
		r = err_set(-EPROTO, "%s: the reply is not JSON", path);
		goto fail;
	}
	if (!json_object_object_get_ex(reply, "ok", &ok) || !json_object_get_boolean(ok)) {
		json_object *e = NULL;
		json_object_object_get_ex(reply, "error", &e);
		r = err_set(-EPROTO, "%s: %s", path, e ? json_object_get_string(e) : "refused");
		goto fail;
	}
	json_object_put(reply);
	*out = fd;
	return 0;
fail:
	json_object_put(reply);
	if (fd >= 0)
		close(fd);
	return r;
}
