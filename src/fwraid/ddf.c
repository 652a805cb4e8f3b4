/* ddf.c — SNIA DDF metadata (Dell PERC, LSI MegaRAID, mdadm -e ddf), read
 * only.  (Not yet read: a DDF anchor is recognised and its volumes are
 * not opened.) */
#include "fwraid.h"

#include "core/log.h"

#include <errno.h>
#include <stdlib.h>

#define DDF_MAGIC 0xde11de11u

int ddf_read(struct vol *v, struct fwraid_meta **out)
{
	uint8_t *buf;
	int r;

	*out = NULL;
	if (v->size < 1024 || v->size % 512)
		return 0;
	buf = malloc(512);
	if (!buf)
		return -ENOMEM;
	r = vol_read_any(v, buf, 512, v->size - 512);
	if (r == 0)
		r = ((uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 | (uint32_t)buf[2] << 8 |
		     buf[3]) == DDF_MAGIC
		        ? err_set(-ENOTSUP, "%s: DDF: not read yet", v->name)
		        : 0;
	free(buf);
	return r;
}
