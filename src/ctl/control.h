/* control.h — the control socket of a running `uraid serve` (--control
 * PATH): mdadm --detail, --fail, --remove and --add on the arrays being
 * served.
 *
 * Protocol (docs/serve.md, "The control socket"): a Unix stream socket,
 * one request per connection.  The client sends one JSON object (at most
 * CTL_REQ_MAX bytes, ended by a newline or by shutting down its
 * write side); the server answers with one JSON object and a newline,
 * then closes.  Requests: {"op":"detail"}, {"op":"fail","member":SPEC},
 * {"op":"remove","member":SPEC}, {"op":"add","member":SPEC[,"force":true]
 * [,"array":"md/NAME"]}, {"op":"grow"[,"raid_devices":N,"add":[SPEC...]]
 * [,"chunk":KIB][,"layout":NAME][,"array_size":KIB][,"force":true]
 * [,"array":"md/NAME"]} (a RAID5/6 reshape while serving; array_size with
 * fewer raid_devices, a shrink),
 * {"op":"monitor"[,"test":true]}.  Replies carry "ok": true (and, for
 * detail, "export" and "arrays"), or "ok": false and "error": a message.
 *
 * monitor is answered {"ok":true,"monitor":true} and then streams md
 * events (ctl/events.h), one JSON object a line, until the client hangs
 * up or the server stops; with "test" every array sends a TestMessage.
 *
 * Requests are served one at a time by the control's own thread; each
 * management call takes the md array's locks (md.h), so NBD I/O goes on
 * beside it (remove holds new requests at the array's gate only while
 * the RAID vol lets go of the member).  control.c serves, client.c asks. */
#ifndef URAID_CTL_CONTROL_H
#define URAID_CTL_CONTROL_H

#include "core/vol.h"

#include <stdbool.h>
#include <stddef.h>

#define CTL_REQ_MAX (64u << 10)

/* What the control socket manages: the stack being served. */
struct ctl_target {
	struct vol *top;       /* the exported vol */
	struct vol *md;        /* the md array under it (stack_info), or NULL */
	int luks;              /* LUKS version on top of md, or 0 */
	unsigned member_flags; /* member_open() flags for added members */
	/* NBD connections open now, or NULL if unknown. */
	unsigned (*connections)(void *ctx);
	void *ctx;
};

struct ctl;

/* Listen on path (mode 0600; refused with -EADDRINUSE if a live server
 * answers there, a stale socket is replaced) and serve requests on a
 * thread of its own.  t must stay valid until ctl_stop().  0 or
 * -errno with err_set(). */
int ctl_start(const char *path, const struct ctl_target *t, struct ctl **out);

/* TestMessage for every md array of t (mdadm --monitor --test). */
void ctl_events_test(const struct ctl_target *t);

/* Stop (after the request being served, if any; monitors too), remove
 * the socket. */
void ctl_stop(struct ctl *c);

/* Answer one request (len bytes, not NUL-terminated): the reply as a
 * NUL-terminated JSON text to free(), or NULL when out of memory.
 * Never fails on bad input: that gets an error reply. */
char *ctl_handle(const struct ctl_target *t, const char *req, size_t len);

/* The client's side (client.c): send req to the server at path and wait
 * for its answer; *reply (json_object_put() it) is the parsed reply
 * object, "ok" true or false.  0, or -errno with err_set() detail when
 * no reply came (no server there, the connection broke, not JSON). */
struct json_object;
int ctl_request(const char *path, struct json_object *req, struct json_object **reply);

/* Ask the server at path to stream events ({"op":"monitor"}, with "test"
 * if test): *fd then reads them, one JSON object a line, until the
 * server stops.  0, or -errno with err_set() detail (the server's error
 * when it refused). */
int ctl_monitor_open(const char *path, bool test, int *fd);

#endif
