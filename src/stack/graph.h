/* graph.h — the probe graph: every volume the given members hold.
 *
 * From the members, layers are recognised again and again until none is
 * left, each turning vols into vols, as the kernel's partition scanner,
 * md, LVM and dm-crypt would on a real machine: partition tables, md
 * arrays (an array may sit on partitions, or be a member of another), LVM2
 * volume groups and their logical volumes, LUKS.  Each volume is a node;
 * a node that no layer used is an export (what a user mounts), named as a
 * Linux user knows it:
 *
 *   MEMBER            a member as given ("a.img", "/dev/sdb")
 *   MEMBER/pN         partition N of it, numbered as Linux numbers sdaN
 *   md/NAME           an md array: its 1.x name ("md/DiskStation:2"), or
 *                     md/N from a 0.90 array's preferred minor
 *   VG/LV             an LVM2 logical volume
 *   imsm/NAME         a firmware RAID volume (read-only), as its IMSM or
 *   ddf/NAME          DDF metadata names it ("imsm/Volume0")
 *   the name of the volume a LUKS volume sits on, for its plaintext
 *   assumed           the array --assume describes (assume.h)
 *
 * What a layer recognised but did not open (a damaged table, an array
 * missing members, a thin LV) is kept on the node as `refused`, for
 * `uraid probe` to show and for the error when nothing can be exported.
 * The graph owns every vol in it: close it with stack_graph_close(). */
#ifndef URAID_STACK_GRAPH_H
#define URAID_STACK_GRAPH_H

#include "stack.h"

#include <stdbool.h>

struct stack_node {
	struct vol *vol;   /* NULL only for a node that stands for a refusal */
	char *name;        /* the export name */
	const char *kind;  /* "member", "partition", "md", "lvm2", "luks", "fwraid",
	                    * "raid" (an --assume array: assume.h) */
	char *what;        /* a line of detail: "GPT partition 2, Linux RAID",
	                    * "raid5, 3 members, clean" */
	char *refused;     /* why a layer that recognised the node did not open it */
	const char *holds; /* for an export: the signature found on it ("an
	                    * ext2/3/4 file system"), or NULL */
	int *from;         /* the nodes this one is made of */
	unsigned nfrom;
	int used_by;    /* the node made of this one, or -1 */
	bool owned;     /* the graph closes vol (else the node using it does) */
	unsigned tried; /* a bit per layer that has looked at it */
	int luks;       /* a LUKS plaintext: its version */
};

struct stack_graph {
	struct stack_node *node; /* in the order found: members first */
	unsigned n, cap;
	const struct stack_opts *o;
	char warning[512]; /* the layers' warnings, one per line */
};

/* Open the members specs[0..n) and find what they hold.  0 with *out set,
 * or -errno with err_set() detail (a member that does not open, a wrong
 * passphrase).  A layer's refusal is not an error here (see above). */
int stack_graph_open(char **specs, int n, const struct stack_opts *o, struct stack_graph **out);

/* Whether node i is an export: it has a vol and nothing uses it. */
bool stack_graph_is_export(const struct stack_graph *g, unsigned i);

/* The number of exports, and (when idx is not NULL) their node indexes. */
unsigned stack_graph_exports(const struct stack_graph *g, unsigned *idx);

/* The error for a graph without exports: -EINVAL with err_set() detail,
 * the first refusal (why the array did not start ...; the others are
 * logged as warnings, which a graph with exports gives for all of them
 * at its open), or that the members hold nothing to open. */
int stack_graph_no_export(const struct stack_graph *g);

/* The error for an export name g does not have: -ENOENT with err_set()
 * detail "no volume named NAME; the members hold A, B, C". */
int stack_graph_no_such_export(const struct stack_graph *g, const char *name);

/* The first node named name, or -1. */
int stack_graph_find(const struct stack_graph *g, const char *name);

/* What the control socket manages under export e (stack.h). */
void stack_info_of(const struct stack_graph *g, unsigned e, struct stack_info *info);

/* Hand export e over as one vol that closes the whole graph when closed
 * (g is gone after the call, also on error: -ENOMEM). */
int stack_take_export(struct stack_graph *g, unsigned e, struct vol **top);

/* Close every vol, the exports' users first, and free g. */
void stack_graph_close(struct stack_graph *g);

#endif
