/* member.h — turning a member spec from the command line into a vol.
 *
 *   PATH                   a regular file or block device
 *   mem:SIZE               RAM, zero-filled
 *   null:SIZE              reads zeros, drops writes (a ceiling probe)
 *   sim:RATE[,opt..]:SPEC  a disk model wrapped around another member
 *   fault:OPTS:SPEC        error injection around another member
 *   nbd://HOST[:PORT]/NAME, nbd+unix:///NAME?socket=PATH, nbds://...
 *                          a remote NBD export (libnbd URI syntax, TLS with
 *                          nbds: and tls-psk-file= or tls-certificates=),
 *                          with two query parameters of ours, taken out
 *                          before libnbd sees the URI:
 *                            timeout=SECONDS   a request with no reply by
 *                              then ends the connection (default 30, the
 *                              kernel client's; 0: wait for ever)
 *                            reconnect=SECONDS the longest wait between
 *                              reconnect tries, from 0.1 s doubling
 *                              (default 5; 0: never reconnect)
 *                          (nbd://h/e?timeout=5&reconnect=2)
 *   rbd:POOL[/NAMESPACE]/IMAGE[@SNAP][,OPT=VAL...]
 *                          a Ceph RBD image (librbd; a snapshot only with
 *                          MEMBER_READONLY).  conf=PATH is the ceph.conf
 *                          (default: $CEPH_CONF, then Ceph's search path),
 *                          id=NAME the client (client.NAME, default admin);
 *                          any other OPT is a Ceph option given to
 *                          rados_conf_set (keyring=PATH,
 *                          rados_osd_op_timeout=10, mon_host=...).  Values
 *                          hold no ','.  The vol's name leaves the options
 *                          out (a key= stays out of messages).
 *
 * Each type lives in its own file and is listed once in member.c's table.
 * Wrapper types open their inner spec with member_open() again. */
#ifndef URAID_MEMBER_H
#define URAID_MEMBER_H

#include "core/vol.h"

#define MEMBER_READONLY 0x1u /* open read-only; writes fail with -EROFS */
#define MEMBER_DIRECT 0x2u   /* bypass the page cache (O_DIRECT) */

/* Open the member named by spec.  Returns 0 or -errno with err_set()
 * detail naming the spec. */
int member_open(const char *spec, unsigned flags, struct vol **out);

/* How a spec names its member type. */
enum member_syntax {
	MEMBER_PREFIX, /* "NAME:rest": open gets rest */
	MEMBER_URI,    /* a URI whose scheme begins with NAME ("nbd+unix://"):
	                * open gets the whole spec */
	MEMBER_PATH,   /* any other spec (the last entry): open gets it whole */
};

/* One entry per member type, in the order a spec is matched. */
struct member_type {
	const char *name; /* "file", "mem", "nbd", ... */
	enum member_syntax syntax;
	int (*open)(const char *spec, unsigned flags, struct vol **out);
};

/* The type spec names (never NULL: a spec no other type claims is a
 * path, the file type). */
const struct member_type *member_type_of(const char *spec);

int file_member_open(const char *path, unsigned flags, struct vol **out);
int mem_member_open(const char *rest, unsigned flags, struct vol **out);
int null_member_open(const char *rest, unsigned flags, struct vol **out);
int sim_member_open(const char *rest, unsigned flags, struct vol **out);
int fault_member_open(const char *rest, unsigned flags, struct vol **out);

/* sim: the disk model's figures (see sim.c for the model). */
struct sim_params {
	uint64_t rate;        /* bytes per second */
	uint64_t rotation_ns; /* one revolution */
	uint64_t seek_ns;     /* average seek */
	uint64_t flush_ns;    /* cost of a flush (default 0) */
	bool sleep;           /* false: keep the clock but do not wait (tests) */
	uint64_t request_ns;  /* fixed cost of every request (an SSD's latency) */
};
/* What a request of len bytes at off costs after one that ended at head. */
uint64_t sim_cost_ns(const struct sim_params *p, uint64_t head, uint64_t off,
		     uint64_t len);
/* Wrap inner (owned on success) in a disk model. */
int sim_member_wrap(struct vol *inner, const struct sim_params *p,
		    struct vol **out);
/* Total modelled service time of a sim vol so far (0 for other vols). */
uint64_t sim_member_busy_ns(struct vol *v);

/* fault: wrap inner (owned on success) with the options of a fault: spec. */
int fault_member_wrap(struct vol *inner, const char *opts, struct vol **out);
/* Make every op of a fault vol fail with EIO (dead) or work again.
 * Returns -EINVAL if v is not a fault vol. */
int fault_member_kill(struct vol *v, bool dead);
struct fault_counts {
	uint64_t reads, writes, flushes, trims, zeroes;
};
/* The ops that reached a fault vol so far, failed or not. */
int fault_member_counts(struct vol *v, struct fault_counts *c);
/* Cut the power of the crash members of group (fault:crash=GROUP:...,
 * see fault.c): each one's writes since its last completed flush are kept,
 * dropped or torn at random (seeded), and every later op fails with EIO
 * until it is closed.  A group exists while one of its members is open.
 * 0, or -ENOENT when no open member belongs to group. */
int fault_power_cut(const char *group);
int nbd_member_open(const char *spec, unsigned flags, struct vol **out);

/* nbd: how a remote member stands.  While it is away (a request timed out
 * or the connection broke) every op fails at once with -EIO, and a
 * background thread reconnects; the same export (same size) serves again. */
struct nbd_member_status {
	bool connected;       /* false: away */
	unsigned connections; /* live connections (several with multi-conn) */
	uint64_t losses;      /* times it went away */
	uint64_t reconnects;  /* times it came back */
	uint64_t attempts;    /* reconnect tries that failed */
	int last_error;       /* why the last failed try failed (-ESTALE: another size) */
};
/* Fill *st; -EINVAL if v is not an nbd member. */
int nbd_member_status(struct vol *v, struct nbd_member_status *st);

/* rbd: the parts of a spec (what follows "rbd:"), pointing into buf;
 * NULL where the spec has none.  Built with or without librbd. */
#define RBD_SPEC_NAME_MAX 256 /* pool, namespace, image, snapshot, id */
#define RBD_SPEC_MAX_OPTS 32
struct rbd_spec_opt {
	const char *key, *val;
};
struct rbd_spec {
	char *buf;
	const char *pool, *ns, *image, *snap, *conf, *id;
	struct rbd_spec_opt *opt; /* the Ceph options, in the spec's order */
	size_t nopt;
};
/* 0 or -EINVAL (err_set() names what is wrong) or -ENOMEM; on success
 * free with rbd_spec_free(). */
int rbd_spec_parse(const char *rest, struct rbd_spec *s);
void rbd_spec_free(struct rbd_spec *s);
/* -ENOTSUP ("built without librbd") where uraid was built without it. */
int rbd_member_open(const char *rest, unsigned flags, struct vol **out);

#endif
