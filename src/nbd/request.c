/* request.c — transmission flags, request validation and error mapping
 * (see request.h).  Every request passes nbd_request_check() before it
 * reaches the vol, so the vol contract's preconditions (in range, aligned to
 * block_min, not larger than block_max) hold for everything the server
 * dispatches. */
#include "request.h"

#include "proto.h"

#include <errno.h>

uint16_t nbd_export_tflags(const struct vol *v, bool readonly)
{
	uint16_t f = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_CACHE;

	if (v->caps & VOL_CAP_FLUSH)
		f |= NBD_FLAG_SEND_FLUSH;
	if (v->caps & VOL_CAP_MULTI_CONN)
		f |= NBD_FLAG_CAN_MULTI_CONN;
	if (readonly || (v->caps & VOL_CAP_READONLY))
		return f | NBD_FLAG_READ_ONLY;
	/* FUA only means something where there is a cache to bypass, but
	 * vol_write() honours VOL_FUA on every vol, so offering it is safe.
	 * WRITE_ZEROES always works: vol_write_zeroes() falls back to writing
	 * zero buffers, which still saves the client sending them. */
	if (v->caps & (VOL_CAP_FUA | VOL_CAP_FLUSH))
		f |= NBD_FLAG_SEND_FUA;
	if (v->caps & VOL_CAP_TRIM)
		f |= NBD_FLAG_SEND_TRIM;
	f |= NBD_FLAG_SEND_WRITE_ZEROES;
	if (v->caps & VOL_CAP_FAST_ZERO)
		f |= NBD_FLAG_SEND_FAST_ZERO;
	return f;
}

void nbd_export_limits_init(struct nbd_export_limits *lim, const struct vol *v, bool readonly,
                            bool structured, bool meta_alloc)
{
	lim->size = v->size;
	lim->block_min = v->block_min ? v->block_min : 1;
	lim->block_max = v->block_max;
	lim->tflags = nbd_export_tflags(v, readonly);
	lim->structured = structured;
	lim->meta_alloc = structured && meta_alloc;
}

static bool cmd_writes(uint16_t type)
{
	return type == NBD_CMD_WRITE || type == NBD_CMD_TRIM ||
	       type == NBD_CMD_WRITE_ZEROES;
}

/* Flags each command may carry.  FUA is accepted on every command, as the
 * protocol asks once it is offered (clients are known to set it on reads
 * and flushes); where nothing is written it changes nothing. */
static uint16_t cmd_allowed_flags(uint16_t type, uint16_t tflags)
{
	const uint16_t fua = NBD_CMD_FLAG_FUA;

	switch (type) {
	case NBD_CMD_WRITE_ZEROES:
		return fua | NBD_CMD_FLAG_NO_HOLE |
		       ((tflags & NBD_FLAG_SEND_FAST_ZERO) ? NBD_CMD_FLAG_FAST_ZERO : 0);
	case NBD_CMD_BLOCK_STATUS:
		return fua | NBD_CMD_FLAG_REQ_ONE;
	default:
		return fua;
	}
}

uint32_t nbd_request_check(const struct nbd_req *req,
			   const struct nbd_export_limits *lim)
{
	switch (req->type) {
	case NBD_CMD_READ:
	case NBD_CMD_WRITE:
	case NBD_CMD_TRIM:
	case NBD_CMD_WRITE_ZEROES:
	case NBD_CMD_CACHE:
		break;
	case NBD_CMD_BLOCK_STATUS:
		/* Only after base:allocation was selected; a zero length
		 * would have no descriptor to answer with. */
		if (!lim->meta_alloc || req->len == 0)
			return NBD_EINVAL;
		break;
	case NBD_CMD_FLUSH:
		if ((req->flags & ~cmd_allowed_flags(req->type, lim->tflags)) || req->offset ||
		    req->len)
			return NBD_EINVAL;
		return 0;
	case NBD_CMD_DISC:
		return 0;
	default:
		return NBD_EINVAL;
	}
	if (req->flags & ~cmd_allowed_flags(req->type, lim->tflags))
		return NBD_EINVAL;
	if (cmd_writes(req->type) && (lim->tflags & NBD_FLAG_READ_ONLY))
		return NBD_EPERM;
	if (req->offset > lim->size || req->len > lim->size - req->offset)
		return cmd_writes(req->type) ? NBD_ENOSPC : NBD_EINVAL;
	if (req->offset % lim->block_min || req->len % lim->block_min)
		return NBD_EINVAL;
	if ((req->type == NBD_CMD_READ || req->type == NBD_CMD_WRITE) &&
	    req->len > lim->block_max)
		return lim->structured ? NBD_EOVERFLOW : NBD_EINVAL;
	return 0;
}

uint32_t nbd_errno_to_wire(int err)
{
	switch (err < 0 ? -err : err) {
	case 0:
		return 0;
	case EPERM:
	case EROFS:
	case EACCES:
		return NBD_EPERM;
	case ENOMEM:
		return NBD_ENOMEM;
	case EINVAL:
		return NBD_EINVAL;
	case ENOSPC:
	case EFBIG:
	case EDQUOT:
		return NBD_ENOSPC;
	case EOVERFLOW:
		return NBD_EOVERFLOW;
	case ENOTSUP:
		return NBD_ENOTSUP;
	case ESHUTDOWN:
		return NBD_ESHUTDOWN;
	default:
		/* Anything else is a failure of the storage beneath. */
		return NBD_EIO;
	}
}

const char *nbd_cmd_name(uint16_t type)
{
	switch (type) {
	case NBD_CMD_READ:
		return "READ";
	case NBD_CMD_WRITE:
		return "WRITE";
	case NBD_CMD_DISC:
		return "DISC";
	case NBD_CMD_FLUSH:
		return "FLUSH";
	case NBD_CMD_TRIM:
		return "TRIM";
	case NBD_CMD_CACHE:
		return "CACHE";
	case NBD_CMD_WRITE_ZEROES:
		return "WRITE_ZEROES";
	case NBD_CMD_BLOCK_STATUS:
		return "BLOCK_STATUS";
	default:
		return "UNKNOWN";
	}
}
