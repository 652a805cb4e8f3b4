/* server.c — listening sockets, the accept loop, the bounds on connections
 * (handshakes and established ones apart: a client still negotiating never
 * keeps an established one out, and the oldest unauthenticated one makes
 * room for a new client; phase.c keeps the counts), and an orderly stop:
 * stop accepting, shut the read side of every connection so its workers
 * finish the requests already read and send their replies, then wait for
 * every connection to end.  See server.h. */
#include "internal.h"
#include "proto.h"
#include "tls.h"

#include "core/clock.h"
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CONN_RBUF (256u << 10)
#define STOP_GRACE_MS 10000u

/* A description as the server keeps it: at most NBD_MAX_NAME bytes, cut
 * at a UTF-8 character boundary (a path can be longer than a client
 * takes). */
static char *description_copy(const char *d)
{
	size_t n = strlen(d);

	if (n > NBD_MAX_NAME) {
		n = NBD_MAX_NAME;
		while (n > 0 && ((unsigned char)d[n] & 0xc0) == 0x80)
			n--;
	}
	return strndup(d, n);
}

/* Every export has a vol and a name a client can send, no name twice. */
static int exports_check(const struct nbd_export *e, unsigned n, int default_export)
{
	if (n == 0)
		return err_set(-EINVAL, "nbd: no export to serve");
	if (default_export >= (int)n)
		return err_set(-EINVAL, "nbd: default export %d of %u", default_export, n);
	for (unsigned i = 0; i < n; i++) {
		if (!e[i].name || !e[i].vol)
			return err_set(-EINVAL, "nbd: export %u has no %s", i,
			               e[i].name ? "vol" : "name");
		if (strlen(e[i].name) > NBD_MAX_NAME)
			return err_set(-EINVAL, "nbd: export name longer than %u bytes: %.40s...",
			               NBD_MAX_NAME, e[i].name);
		for (unsigned j = 0; j < i; j++)
			if (strcmp(e[i].name, e[j].name) == 0)
				return err_set(-EINVAL, "nbd: export \"%s\" named twice",
				               e[i].name);
	}
	return 0;
}

int nbd_server_new_multi(const struct nbd_export *exports, unsigned n, int default_export,
                         const struct nbd_server_opts *o, struct nbd_server **out)
{
	struct nbd_server *s;
	int r = exports_check(exports, n, default_export);

	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->threads = o && o->threads ? o->threads : 16;
	s->max_conns = o && o->max_connections ? o->max_connections : 16;
	s->max_handshakes = o && o->max_handshakes ? o->max_handshakes : 64;
	s->hs_timeout_ms = o && o->handshake_timeout_ms ? o->handshake_timeout_ms : 10000;
	s->idle_timeout_ms = o ? o->idle_timeout_ms : 0;
	s->stop_pipe[0] = s->stop_pipe[1] = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->slot_done, NULL);
	nbd_bufpool_init(&s->pool,
			 o && o->max_buffer_memory ? o->max_buffer_memory : 256ull << 20,
			 s->max_conns);
	s->default_export = default_export < 0 ? -1 : default_export;
	s->exports = calloc(n, sizeof(*s->exports));
	r = s->exports ? 0 : -ENOMEM;
	for (unsigned i = 0; i < n && r == 0; i++) {
		struct nbd_srv_export *e = &s->exports[i];
		s->n_exports++;
		e->vol = exports[i].vol;
		e->readonly = exports[i].readonly;
		e->name = strdup(exports[i].name);
		e->description =
		    exports[i].description ? description_copy(exports[i].description) : NULL;
		if (!e->name || (exports[i].description && !e->description))
			r = -ENOMEM;
		/* An export named "" is the default, whatever the caller said. */
		if (!exports[i].name[0])
			s->default_export = (int)i;
	}
	if (r == 0 && pipe2(s->stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		r = -ENOMEM;
	if (r == 0 && o && o->tls != NBD_TLS_OFF) {
		r = o->tls_psk_file || o->tls_cert_dir
		        ? nbd_tls_new(o->tls_psk_file, o->tls_cert_dir, o->tls_verify_peer, &s->tls)
		        : err_set(-EINVAL, "TLS needs a PSK file or a certificate directory");
		s->tls_required = o->tls == NBD_TLS_REQUIRE;
	}
	if (r < 0) {
		nbd_server_free(s);
		return r;
	}
	*out = s;
	return 0;
}

int nbd_server_new(struct vol *vol, const struct nbd_server_opts *o, struct nbd_server **out)
{
	struct nbd_export e = {
	    .name = o && o->export_name ? o->export_name : "",
	    .description = o ? o->description : NULL,
	    .vol = vol,
	};

	return nbd_server_new_multi(&e, 1, 0, o, out);
}

static int add_listener(struct nbd_server *s, int fd, const char *path)
{
	if (s->n_listen == NBD_MAX_LISTEN) {
		close(fd);
		return err_set(-EMFILE, "too many listening sockets");
	}
	if (listen(fd, SOMAXCONN) != 0) {
		int r = -errno;
		close(fd);
		return err_set(r, "listen: %s", strerror(-r));
	}
	s->lfd[s->n_listen] = fd;
	s->unix_path[s->n_listen] = path ? strdup(path) : NULL;
	s->n_listen++;
	return 0;
}

/* A listening Unix socket bound at path, or -errno. */
static int unix_listen_at(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, r;

	strcpy(a.sun_path, path); /* the caller checked the length */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if (listen(fd, SOMAXCONN) != 0) {
		r = -errno;
		close(fd);
		unlink(path);
		return r;
	}
	return fd;
}

/* Why path cannot be bound, in the user's words: a server listens there,
 * a socket was left behind by one that stopped, or it is another kind of
 * file.  Nothing is removed: the user decides. */
static int unix_path_taken(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, r;

	if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode))
		return err_set(-EADDRINUSE,
		               "%s: exists and is not a socket (give --socket a new path)", path);
	strcpy(a.sun_path, path); /* the caller checked the length */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	r = fd < 0 ? -errno : connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : -errno;
	if (fd >= 0)
		close(fd);
	if (r == 0)
		return err_set(-EADDRINUSE, "%s: Address already in use: a server listens there",
		               path);
	return err_set(-EADDRINUSE,
	               "%s: Address already in use: a socket nobody listens on (left by a "
	               "server that stopped?): remove it or give --socket a new path",
	               path);
}

/* The socket file appears only once the socket listens: it is bound under
 * a temporary name and hard-linked to path, so a client that waits for the
 * file (as scripts and tests do) never meets a socket that refuses it, and
 * an existing path is still refused (link() says EEXIST where bind() says
 * EADDRINUSE).  Where the temporary name does not fit, or the file system
 * will not link a socket, it binds path directly. */
int nbd_server_listen_unix(struct nbd_server *s, const char *path)
{
	char tmp[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int fd, r;

	if (strlen(path) >= sizeof(tmp))
		return err_set(-ENAMETOOLONG, "%s: socket path too long", path);
	r = snprintf(tmp, sizeof(tmp), "%s.%ld~", path, (long)getpid());
	fd = r > 0 && (size_t)r < sizeof(tmp) ? unix_listen_at(tmp) : -ENAMETOOLONG;
	if (fd >= 0) {
		r = link(tmp, path) == 0 ? 0 : -errno;
		unlink(tmp);
		if (r == -EEXIST) {
			close(fd);
			return unix_path_taken(path);
		}
		if (r < 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		fd = unix_listen_at(path);
		if (fd == -EADDRINUSE)
			return unix_path_taken(path);
		if (fd < 0)
			return err_set(fd, "%s: %s", path, strerror(-fd));
	}
	/* add_listener() calls listen() again, which only restates the
	 * backlog. */
	r = add_listener(s, fd, path);
	if (r < 0)
		unlink(path);
	return r;
}

int nbd_server_listen_tcp(struct nbd_server *s, const char *addr, int port,
			  int *bound_port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai;
	char pstr[16];
	int fd, r, one = 1;

	snprintf(pstr, sizeof(pstr), "%d", port);
	r = getaddrinfo(addr, pstr, &hints, &ai);
	if (r != 0)
		return err_set(-EINVAL, "%s: %s", addr, gai_strerror(r));
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = err_set(-errno, "socket: %s", strerror(errno));
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		r = err_set(-errno, "%s:%d: %s", addr, port, strerror(errno));
		close(fd);
		goto out;
	}
	if (bound_port) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		getsockname(fd, (struct sockaddr *)&ss, &sl);
		*bound_port = ss.ss_family == AF_INET6
				      ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
				      : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	}
	r = add_listener(s, fd, NULL);
out:
	freeaddrinfo(ai);
	return r;
}

int nbd_server_listen_fd(struct nbd_server *s, int fd)
{
	return add_listener(s, fd, NULL);
}

static uint64_t deadline_after_ms(unsigned ms)
{
	return clock_now_ns() + (uint64_t)ms * 1000000ull;
}

static struct nbd_conn *conn_new(struct nbd_server *s, int rfd, int wfd)
{
	struct nbd_conn *c = calloc(1, sizeof(*c));
	int type;
	socklen_t tl = sizeof(type);

	if (!c)
		return NULL;
	c->srv = s;
	c->rfd = rfd;
	c->wfd = wfd;
	c->wfd_is_socket = getsockopt(wfd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0;
	c->rcap = CONN_RBUF;
	c->rbuf = malloc(c->rcap);
	if (!c->rbuf) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->rlock, NULL);
	pthread_mutex_init(&c->wlock, NULL);
	return c;
}

static void conn_free(struct nbd_conn *c)
{
	nbd_tls_end(c);
	pthread_mutex_destroy(&c->rlock);
	pthread_mutex_destroy(&c->wlock);
	free(c->rbuf);
	free(c);
}

/* Handshake (under its deadline), then transmission. */
static int conn_serve(struct nbd_conn *c)
{
	struct nbd_server *s = c->srv;
	int r;

	/* The handshake has a deadline both ways: reads poll against it, and
	 * a client that stops reading our replies makes a send time out. */
	struct timeval tv = { .tv_sec = s->hs_timeout_ms / 1000,
			      .tv_usec = (s->hs_timeout_ms % 1000) * 1000 };
	if (c->wfd_is_socket)
		setsockopt(c->wfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	c->deadline_ns = deadline_after_ms(s->hs_timeout_ms);
	r = nbd_handshake(c);
	c->deadline_ns = 0;
	if (c->wfd_is_socket) {
		tv = (struct timeval){ 0 };
		setsockopt(c->wfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	if (r == 0) {
		log_debug("nbd: client entered transmission (structured replies %s)",
			  c->structured ? "on" : "off");
		r = nbd_transmit(c);
	} else if (r == 1) {
		r = 0;
	} else {
		log_debug("nbd: handshake ended: %s", strerror(-r));
	}
	return r;
}

int nbd_serve_connection(struct nbd_server *s, int rfd, int wfd)
{
	struct nbd_conn *c = conn_new(s, rfd, wfd);
	int r;

	if (!c)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	r = nbd_conn_register(s, c);
	pthread_mutex_unlock(&s->lock);
	if (r == 0) {
		r = conn_serve(c);
		nbd_conn_unregister(s, c);
	}
	conn_free(c);
	return r;
}

unsigned nbd_server_connections(struct nbd_server *s)
{
	unsigned n = 0;

	pthread_mutex_lock(&s->lock);
	for (const struct nbd_conn *c = s->conns; c; c = c->next)
		n++;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static void *slot_main(void *arg)
{
	struct nbd_slot *slot = arg;
	struct nbd_server *s = slot->conn->srv;

	conn_serve(slot->conn);
	/* Once off the server's list, nothing else touches the descriptor. */
	nbd_conn_unregister(s, slot->conn);
	conn_free(slot->conn);
	close(slot->fd);
	pthread_mutex_lock(&s->lock);
	slot->done = true;
	pthread_cond_broadcast(&s->slot_done);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Join the threads of connections that have ended: a thread sets done
 * under s->lock as its last step, so a done thread is past it.  Under
 * s->lock. */
static void reap_slots(struct nbd_server *s)
{
	for (struct nbd_slot **pp = &s->slots; *pp;) {
		struct nbd_slot *sl = *pp;
		if (!sl->done) {
			pp = &sl->next;
			continue;
		}
		*pp = sl->next;
		pthread_join(sl->thread, NULL);
		free(sl);
	}
}

/* At the stop: join every thread, without s->lock (they take it to end). */
static void join_all_slots(struct nbd_server *s)
{
	pthread_mutex_lock(&s->lock);
	struct nbd_slot *sl = s->slots;
	s->slots = NULL;
	pthread_mutex_unlock(&s->lock);
	while (sl) {
		struct nbd_slot *next = sl->next;
		pthread_join(sl->thread, NULL);
		free(sl);
		sl = next;
	}
}

/* A Unix socket's send buffer bounds the reply bytes waiting for the
 * client (about 208 KiB by default).  A 1 MiB READ reply then goes out in
 * five rounds, the worker sleeping in sendmsg() until the client has
 * drained the last one: a futex-like wake-up per round on both sides.
 * With room for a whole reply the worker sends it and goes on (1 MiB
 * reads at qd 16, LUKS and plain files in RAM: +5-8% in A/B runs, see BENCHMARKS.md).
 * The kernel caps the size at net.core.wmem_max.  TCP is left alone:
 * setting SO_SNDBUF would turn off its own tuning. */
#define NBD_UNIX_SNDBUF (2 << 20)
static void unix_sndbuf(int fd)
{
	int domain = 0, sz = NBD_UNIX_SNDBUF;
	socklen_t len = sizeof(domain);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_UNIX)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
}

static void start_connection(struct nbd_server *s, int fd)
{
	struct nbd_slot *slot = calloc(1, sizeof(*slot));
	struct nbd_conn *c = conn_new(s, fd, fd);
	sigset_t all, old;
	int one = 1;

	if (!slot || !c) {
		log_warn("nbd: out of memory, refusing a client");
		goto out_refuse;
	}
	pthread_mutex_lock(&s->lock);
	reap_slots(s);
	if (s->n_established >= s->max_conns) {
		pthread_mutex_unlock(&s->lock);
		log_warn("nbd: connection limit (%u) reached, refusing a client",
			 s->max_conns);
		goto out_refuse;
	}
	/* Dropped clients whose threads have not ended yet hold memory and a
	 * thread: as many of them as handshakes at most. */
	while (s->n_evicted >= s->max_handshakes && !s->stopping)
		pthread_cond_wait(&s->slot_done, &s->lock);
	reap_slots(s);
	if (s->n_handshake >= s->max_handshakes)
		nbd_evict_oldest_handshake(s);
	if (nbd_conn_register(s, c) < 0) {
		pthread_mutex_unlock(&s->lock);
		goto out_refuse;
	}
	/* Only a TCP socket takes it; on a Unix socket this fails harmlessly. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	unix_sndbuf(fd);
	slot->fd = fd;
	slot->conn = c;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int r = pthread_create(&slot->thread, NULL, slot_main, slot);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0) {
		slot->next = s->slots;
		s->slots = slot;
		pthread_mutex_unlock(&s->lock);
		return;
	}
	pthread_mutex_unlock(&s->lock);
	log_warn("nbd: cannot start a connection thread");
	nbd_conn_unregister(s, c);
out_refuse:
	if (c)
		conn_free(c);
	free(slot);
	close(fd);
}

int nbd_server_run(struct nbd_server *s)
{
	struct pollfd p[NBD_MAX_LISTEN + 1];
	int n = s->n_listen;

	for (int i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = s->lfd[i], .events = POLLIN };
	p[n] = (struct pollfd){ .fd = s->stop_pipe[0], .events = POLLIN };
	while (!s->stopping) {
		/* Wake each second to give back buffers idle for as long. */
		int r = poll(p, (nfds_t)n + 1, 1000);
		nbd_bufpool_trim(&s->pool, 1000);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			if (!(p[i].revents & POLLIN))
				continue;
			int fd = accept4(s->lfd[i], NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				start_connection(s, fd);
			else if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
				log_warn("nbd: accept: %s", strerror(errno));
		}
	}

	/* Stop: no new connections; each one's reader sees end of input, its
	 * workers finish what was read and reply, and the connection ends. */
	pthread_mutex_lock(&s->lock);
	for (struct nbd_conn *c = s->conns; c; c = c->next) {
		c->quit = true;
		shutdown(c->rfd, SHUT_RD);
	}
	pthread_mutex_unlock(&s->lock);
	/* A client that stopped reading replies would hold its workers in
	 * send() forever: after a grace period, cut the write side too. */
	for (unsigned waited_ms = 0;; waited_ms += 10) {
		pthread_mutex_lock(&s->lock);
		bool empty = s->conns == NULL;
		if (waited_ms == STOP_GRACE_MS)
			for (struct nbd_conn *c = s->conns; c; c = c->next)
				shutdown(c->wfd, SHUT_RDWR);
		pthread_mutex_unlock(&s->lock);
		if (empty)
			break;
		usleep(10000);
	}
	join_all_slots(s);
	return 0;
}

void nbd_server_stop(struct nbd_server *s)
{
	int saved = errno;
	char b = 1;

	s->stopping = true;
	if (write(s->stop_pipe[1], &b, 1) < 0) {
		/* Full pipe: a stop is already pending. */
	}
	errno = saved;
}

void nbd_server_free(struct nbd_server *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n_listen; i++) {
		close(s->lfd[i]);
		if (s->unix_path[i])
			unlink(s->unix_path[i]);
		free(s->unix_path[i]);
	}
	if (s->stop_pipe[0] >= 0)
		close(s->stop_pipe[0]);
	if (s->stop_pipe[1] >= 0)
		close(s->stop_pipe[1]);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->slot_done);
	nbd_bufpool_destroy(&s->pool);
	for (unsigned i = 0; i < s->n_exports; i++) {
		free(s->exports[i].name);
		free(s->exports[i].description);
	}
	free(s->exports);
	nbd_tls_free(s->tls);
	free(s);
}
