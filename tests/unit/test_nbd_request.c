/* test_nbd_request.c — the pure parts of the NBD server: advertised flags,
 * request validation and errno mapping, over a matrix of block sizes and
 * writable exports, read-only vols and writable vols exported read-only. */
#include "check.h"

#include "nbd/proto.h"
#include "nbd/request.h"

#include <errno.h>
#include <stdint.h>

static struct nbd_req req(uint16_t type, uint16_t flags, uint64_t off, uint32_t len)
{
	return (struct nbd_req){ .type = type, .flags = flags, .offset = off, .len = len };
}

/* ro: 0 writable, 1 a read-only vol, 2 a writable vol exported read-only. */
static void check_limits(uint32_t bmin, int ro_how, bool structured)
{
	bool ro = ro_how != 0;
	struct vol v = {.size = 1u << 20,
	                .block_min = bmin,
	                .block_max = 64u << 10,
	                .caps = VOL_CAP_TRIM | VOL_CAP_FAST_ZERO |
	                        (ro_how == 1 ? VOL_CAP_READONLY : 0)};
	struct nbd_export_limits l;
	struct nbd_req r;

	nbd_export_limits_init(&l, &v, ro_how == 2, structured, false);
	CHECK(l.tflags & NBD_FLAG_HAS_FLAGS);
	CHECK(!(l.tflags & NBD_FLAG_SEND_FLUSH)); /* no volatile cache */
	CHECK(!!(l.tflags & NBD_FLAG_READ_ONLY) == ro);
	CHECK(!!(l.tflags & NBD_FLAG_SEND_TRIM) == !ro);

	r = req(NBD_CMD_READ, 0, 0, bmin);
	CHECK_EQ(nbd_request_check(&r, &l), 0);
	r = req(NBD_CMD_READ, 0, v.size - bmin, bmin);
	CHECK_EQ(nbd_request_check(&r, &l), 0);
	r = req(NBD_CMD_READ, 0, v.size, bmin); /* past the end */
	CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
	r = req(NBD_CMD_READ, 0, UINT64_MAX - 10, 4096); /* offset + len wraps */
	CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
	r = req(NBD_CMD_READ, 0, 0, 128u << 10); /* over block_max */
	CHECK_EQ(nbd_request_check(&r, &l), structured ? NBD_EOVERFLOW : NBD_EINVAL);
	r = req(NBD_CMD_READ, NBD_CMD_FLAG_FUA, 0, bmin); /* FUA on a read: no-op */
	CHECK_EQ(nbd_request_check(&r, &l), 0);
	r = req(NBD_CMD_READ, NBD_CMD_FLAG_DF, 0, bmin); /* DF not offered */
	CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
	if (bmin > 1) {
		r = req(NBD_CMD_READ, 0, 1, bmin);
		CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
		r = req(NBD_CMD_READ, 0, 0, bmin + 1);
		CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
	}

	r = req(NBD_CMD_WRITE, NBD_CMD_FLAG_FUA, 0, bmin);
	CHECK_EQ(nbd_request_check(&r, &l), ro ? NBD_EPERM : 0);
	r = req(NBD_CMD_WRITE, 0, v.size, bmin);
	CHECK_EQ(nbd_request_check(&r, &l), ro ? NBD_EPERM : NBD_ENOSPC);
	r = req(NBD_CMD_WRITE, 0, 0, 128u << 10);
	CHECK_EQ(nbd_request_check(&r, &l),
		 ro ? NBD_EPERM : structured ? NBD_EOVERFLOW : NBD_EINVAL);
	r = req(NBD_CMD_TRIM, 0, 0, (uint32_t)v.size); /* no block_max limit */
	CHECK_EQ(nbd_request_check(&r, &l), ro ? NBD_EPERM : 0);
	r = req(NBD_CMD_WRITE_ZEROES, NBD_CMD_FLAG_NO_HOLE | NBD_CMD_FLAG_FAST_ZERO, 0, bmin);
	CHECK_EQ(nbd_request_check(&r, &l), ro ? NBD_EINVAL : 0); /* FAST_ZERO not offered when ro */
	r = req(NBD_CMD_WRITE, NBD_CMD_FLAG_NO_HOLE, 0, bmin);
	CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
	r = req(NBD_CMD_FLUSH, 0, 0, 0);
	CHECK_EQ(nbd_request_check(&r, &l), 0);
	r = req(NBD_CMD_FLUSH, 0, 4096, 0);
	CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
	r = req(NBD_CMD_CACHE, 0, 0, bmin);
	CHECK_EQ(nbd_request_check(&r, &l), 0);
	r = req(NBD_CMD_DISC, 0, 0, 0);
	CHECK_EQ(nbd_request_check(&r, &l), 0);
	r = req(NBD_CMD_BLOCK_STATUS, 0, 0, bmin); /* not negotiated */
	CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
	r = req(99, 0, 0, 0);
	CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
	r = req(NBD_CMD_WRITE, 0x8000, 0, bmin); /* unknown flag */
	CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
}

/* FUA, once offered, is taken on every command; BLOCK_STATUS only after
 * base:allocation was selected (which needs structured replies). */
static void check_fua_and_block_status(uint32_t bmin, bool structured)
{
	struct vol v = { .size = 1u << 20, .block_min = bmin, .block_max = 64u << 10,
			 .caps = VOL_CAP_FLUSH };
	struct nbd_export_limits l;
	struct nbd_req r;

	nbd_export_limits_init(&l, &v, false, structured, true);
	CHECK(l.tflags & NBD_FLAG_SEND_FUA);
	CHECK_EQ(l.meta_alloc, structured);
	r = req(NBD_CMD_READ, NBD_CMD_FLAG_FUA, 0, bmin);
	CHECK_EQ(nbd_request_check(&r, &l), 0);
	r = req(NBD_CMD_FLUSH, NBD_CMD_FLAG_FUA, 0, 0);
	CHECK_EQ(nbd_request_check(&r, &l), 0);
	r = req(NBD_CMD_READ, NBD_CMD_FLAG_REQ_ONE, 0, bmin); /* REQ_ONE: block status only */
	CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);

	uint32_t ok = structured ? 0 : NBD_EINVAL;
	r = req(NBD_CMD_BLOCK_STATUS, 0, 0, (uint32_t)v.size); /* no block_max limit */
	CHECK_EQ(nbd_request_check(&r, &l), ok);
	r = req(NBD_CMD_BLOCK_STATUS, NBD_CMD_FLAG_REQ_ONE | NBD_CMD_FLAG_FUA, bmin, bmin);
	CHECK_EQ(nbd_request_check(&r, &l), ok);
	r = req(NBD_CMD_BLOCK_STATUS, NBD_CMD_FLAG_NO_HOLE, 0, bmin);
	CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
	r = req(NBD_CMD_BLOCK_STATUS, 0, 0, 0); /* nothing to describe */
	CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
	r = req(NBD_CMD_BLOCK_STATUS, 0, v.size - bmin, 2 * bmin); /* past the end */
	CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
	if (bmin > 1) {
		r = req(NBD_CMD_BLOCK_STATUS, 0, 1, bmin);
		CHECK_EQ(nbd_request_check(&r, &l), NBD_EINVAL);
	}
}

static void check_errno_map(void)
{
	CHECK_EQ(nbd_errno_to_wire(0), 0);
	CHECK_EQ(nbd_errno_to_wire(-EIO), NBD_EIO);
	CHECK_EQ(nbd_errno_to_wire(-EROFS), NBD_EPERM);
	CHECK_EQ(nbd_errno_to_wire(-ENOSPC), NBD_ENOSPC);
	CHECK_EQ(nbd_errno_to_wire(-ENOTSUP), NBD_ENOTSUP);
	CHECK_EQ(nbd_errno_to_wire(-EOPNOTSUPP), NBD_ENOTSUP);
	CHECK_EQ(nbd_errno_to_wire(-EINVAL), NBD_EINVAL);
	CHECK_EQ(nbd_errno_to_wire(-ENOMEM), NBD_ENOMEM);
	CHECK_EQ(nbd_errno_to_wire(-EBADMSG), NBD_EIO);
	CHECK_EQ(nbd_errno_to_wire(EPERM), NBD_EPERM);
}

int main(void)
{
	const uint32_t bmins[] = { 1, 512, 4096 };
	for (unsigned i = 0; i < 3; i++)
		for (int ro = 0; ro < 3; ro++)
			for (int st = 0; st < 2; st++)
				check_limits(bmins[i], ro, st);
	for (unsigned i = 0; i < 3; i++)
		for (int st = 0; st < 2; st++)
			check_fua_and_block_status(bmins[i], st);
	check_errno_map();
	return check_done();
}
