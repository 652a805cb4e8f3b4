/* request.h — the pure parts of the NBD transmission phase: which flags an
 * export advertises, whether a request may be dispatched, and how an errno
 * becomes an NBD error.  No I/O here, so a unit test or a fuzzer can drive
 * every branch directly. */
#ifndef URAID_NBD_REQUEST_H
#define URAID_NBD_REQUEST_H

#include "core/vol.h"

#include <stdbool.h>
#include <stdint.h>

/* What the validator needs to know about the export and the connection. */
struct nbd_export_limits {
	uint64_t size;
	uint32_t block_min; /* offsets and lengths must be multiples of it */
	uint32_t block_max; /* largest READ/WRITE payload accepted */
	uint16_t tflags;    /* transmission flags advertised */
	bool structured;    /* structured replies negotiated */
	bool meta_alloc;    /* base:allocation selected: BLOCK_STATUS allowed */
};

/* A request header in host byte order. */
struct nbd_req {
	uint16_t flags;
	uint16_t type;
	uint64_t cookie;
	uint64_t offset;
	uint32_t len;
};

/* The transmission flags to advertise for a vol (NBD_FLAG_*), exported
 * read-only when it cannot write or when readonly says so. */
uint16_t nbd_export_tflags(const struct vol *v, bool readonly);

/* Fill limits from a vol and its advertised flags. */
void nbd_export_limits_init(struct nbd_export_limits *lim, const struct vol *v, bool readonly,
                            bool structured, bool meta_alloc);

/* Decide whether req may be dispatched.  Returns 0, or the NBD error
 * (NBD_EINVAL, NBD_EPERM, NBD_EOVERFLOW ...) to send back instead.  The
 * caller still consumes a WRITE's payload of req->len bytes whatever this
 * returns, so the stream stays in step. */
uint32_t nbd_request_check(const struct nbd_req *req,
			   const struct nbd_export_limits *lim);

/* The one mapping from a (positive or negative) errno to an NBD error. */
uint32_t nbd_errno_to_wire(int err);

/* Human-readable command name for logs ("READ", "WRITE" ...). */
const char *nbd_cmd_name(uint16_t type);

#endif
