/* phase.c — where each connection is (enum nbd_phase: negotiating,
 * established, dropped to make room) and the counts the server's two
 * bounds read (max_handshakes, max_conns; see internal.h).  server.c
 * registers a connection at accept and unregisters it at its end;
 * handshake.c establishes it before the reply that enters transmission;
 * every phase change happens here, under srv->lock. */
#include "internal.h"

#include "core/log.h"

#include <errno.h>
#include <sys/socket.h>

/* Under s->lock: put c on the list, in the handshake phase. */
int nbd_conn_register(struct nbd_server *s, struct nbd_conn *c)
{
	if (s->stopping)
		return -ESHUTDOWN;
	c->phase = NBD_PHASE_HANDSHAKE;
	s->n_handshake++;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	return 0;
}

void nbd_conn_unregister(struct nbd_server *s, struct nbd_conn *c)
{
	pthread_mutex_lock(&s->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->phase == NBD_PHASE_HANDSHAKE)
		s->n_handshake--;
	else if (c->phase == NBD_PHASE_ESTABLISHED)
		s->n_established--;
	else
		s->n_evicted--;
	/* The last one out gives the idle buffers back at once. */
	bool last = s->conns == NULL;
	pthread_mutex_unlock(&s->lock);
	if (last)
		nbd_bufpool_trim(&s->pool, 0);
}

int nbd_conn_establish(struct nbd_conn *c)
{
	struct nbd_server *s = c->srv;
	int r = 0;

	pthread_mutex_lock(&s->lock);
	if (c->phase != NBD_PHASE_HANDSHAKE) {
		r = -ECONNRESET;
	} else if (s->n_established >= s->max_conns) {
		r = -EBUSY;
	} else {
		c->phase = NBD_PHASE_ESTABLISHED;
		s->n_handshake--;
		s->n_established++;
	}
	pthread_mutex_unlock(&s->lock);
	if (r == -EBUSY)
		log_warn("nbd: connection limit (%u) reached, refusing a client's export",
		         s->max_conns);
	return r;
}

/* The oldest connection still negotiating makes room for a new one:
 * one that has not authenticated (no TLS session yet) if there is one.
 * Its socket is shut, so its thread ends at its next read or write.
 * Under s->lock. */
void nbd_evict_oldest_handshake(struct nbd_server *s)
{
	struct nbd_conn *tail = NULL, *victim = NULL;

	for (struct nbd_conn *c = s->conns; c; c = c->next)
		tail = c;
	for (struct nbd_conn *c = tail; c && !victim; c = c->prev)
		if (c->phase == NBD_PHASE_HANDSHAKE && !c->tls_on)
			victim = c;
	for (struct nbd_conn *c = tail; c && !victim; c = c->prev)
		if (c->phase == NBD_PHASE_HANDSHAKE)
			victim = c;
	if (!victim)
		return;
	victim->phase = NBD_PHASE_EVICTED;
	s->n_handshake--;
	s->n_evicted++;
	shutdown(victim->rfd, SHUT_RDWR);
	log_debug("nbd: %u clients negotiating: dropping the oldest", s->max_handshakes);
}
