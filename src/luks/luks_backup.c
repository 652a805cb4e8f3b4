/* luks_backup.c — cryptsetup's luksHeaderBackup and luksHeaderRestore
 * (luks_backup.h).  The header is read and checked by the version files
 * (luks_load, which fills hdr_area and hdr_gap); this file only copies the
 * header area between a device and a file, and decides whether a restore
 * may overwrite what the device holds. */
#include "luks/luks_backup.h"

#include "core/log.h"
#include "luks/luks.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* The header area must be at least a header and lie on the vol. */
static int luks_area_ok(const struct luks_hdr *h, const struct vol *v, const char *what)
{
	if (h->hdr_area < LUKS_BACKUP_ALIGN || h->hdr_gap[1] > h->hdr_area)
		return err_set(-EINVAL, "%s: LUKS%d header area of %" PRIu64 " bytes is malformed",
		               v->name, h->version, h->hdr_area);
	if (h->hdr_area > v->size)
		return err_set(-EINVAL,
		               "%s: the LUKS%d header area (%" PRIu64 " bytes) is larger than %s "
		               "(%" PRIu64 " bytes)",
		               v->name, h->version, h->hdr_area, what, v->size);
	return 0;
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int luks_header_backup(const struct luks_hdr *h, struct vol *dev, const char *path)
{
	uint64_t len = round_up(h->hdr_area, LUKS_BACKUP_ALIGN);
	unsigned char *buf = NULL;
	int fd = -1, r;

	r = luks_area_ok(h, dev, "the device");
	if (r < 0)
		return r;
	buf = vol_buf_zalloc(len);
	if (!buf)
		return -ENOMEM;
	r = vol_read_any(dev, buf, h->hdr_area, 0);
	if (r < 0) {
		r = err_set(r, "%s: reading the LUKS header area: %s", dev->name, strerror(-r));
		goto out;
	}
	memset(buf + h->hdr_gap[0], 0, h->hdr_gap[1] - h->hdr_gap[0]);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
	if (fd < 0) {
		r = -errno;
		r = err_set(r,
		            r == -EEXIST ? "%s: the header backup file exists already"
		                         : "%s: cannot create the header backup file: %s",
		            path, strerror(-r));
		goto out;
	}
	r = write_all(fd, buf, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0) {
		unlink(path);
		r = err_set(r, "%s: writing the header backup: %s", path, strerror(-r));
	}
out:
	free(buf);
	return r;
}

/* Append "; " and one difference to why. */
static void diff_add(char *why, size_t why_len, int *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void diff_add(char *why, size_t why_len, int *n, const char *fmt, ...)
{
	size_t used = strlen(why);
	va_list ap;

	if (*n && used + 2 < why_len) {
		memcpy(why + used, "; ", 3);
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(why + used, why_len - used, fmt, ap);
	va_end(ap);
	(*n)++;
}

int luks_backup_diff(const struct luks_hdr *b, const struct luks_hdr *d, char *why, size_t why_len)
{
	int n = 0;

	why[0] = 0;
	if (b->version != d->version) {
		diff_add(why, why_len, &n, "LUKS%d in the backup, LUKS%d on the device", b->version,
		         d->version);
		return n;
	}
	if (strcmp(b->uuid, d->uuid) != 0)
		diff_add(why, why_len, &n, "UUID %s in the backup, %s on the device", b->uuid,
		         d->uuid);
	if (b->data_offset != d->data_offset)
		diff_add(why, why_len, &n,
		         "data offset %" PRIu64 " in the backup, %" PRIu64 " on the device",
		         b->data_offset, d->data_offset);
	if (b->version == 2 && b->hdr_size != d->hdr_size)
		diff_add(why, why_len, &n,
		         "metadata area %" PRIu64 " bytes in the backup, %" PRIu64 " on the device",
		         b->hdr_size, d->hdr_size);
	if (b->version == 2 && b->keyslots_size != d->keyslots_size)
		diff_add(why, why_len, &n,
		         "keyslots area %" PRIu64 " bytes in the backup, %" PRIu64 " on the device",
		         b->keyslots_size, d->keyslots_size);
	if (b->version == 1 && b->seg.key_size != d->seg.key_size)
		diff_add(why, why_len, &n, "key size %u bits in the backup, %u on the device",
		         b->seg.key_size * 8, d->seg.key_size * 8);
	if (n == 0 && b->hdr_area != d->hdr_area)
		diff_add(why, why_len, &n,
		         "header area %" PRIu64 " bytes in the backup, %" PRIu64 " on the device",
		         b->hdr_area, d->hdr_area);
	return n;
}

/* May the backup b go onto dev?  0 yes, -errno (detail set) no. */
static int luks_restore_allowed(const struct luks_hdr *b, struct vol *dev, bool force)
{
	struct luks_hdr *d = NULL;
	char why[512];
	int r;

	err_clear();
	r = luks_load(dev, &d);
	if (r < 0) {
		snprintf(why, sizeof(why), "%s", err_detail(r));
		if (!force)
			return err_set(-EINVAL,
			               "%s holds no LUKS header to check the backup against (%s); "
			               "nothing written (--force restores anyway)",
			               dev->name, why);
		log_warn("%s: no LUKS header to check the backup against (%s); restoring "
		         "anyway (--force)",
		         dev->name, why);
		return 0;
	}
	r = luks_backup_diff(b, d, why, sizeof(why));
	luks_hdr_free(d);
	if (r > 0 && !force)
		return err_set(-EINVAL,
		               "%s: the backup does not match this device's LUKS header: %s; "
		               "nothing written (--force restores anyway)",
		               dev->name, why);
	if (r > 0)
		log_warn("%s: the backup does not match this device's LUKS header: %s; "
		         "restoring anyway (--force)",
		         dev->name, why);
	return 0;
}

int luks_header_restore(struct vol *dev, struct vol *backup, bool force)
{
	struct luks_hdr *b = NULL, *n = NULL;
	unsigned char *buf = NULL;
	uint64_t len = 0;
	int r;

	err_clear();
	r = luks_load(backup, &b);
	if (r < 0) {
		r = err_set(-EINVAL, "%s is not a LUKS header backup (%s); nothing written",
		            backup->name, err_detail(r));
		goto out;
	}
	/* luks_load() refused a file shorter than the header area. */
	r = luks_area_ok(b, dev, "the device");
	if (r < 0)
		goto out;
	r = luks_restore_allowed(b, dev, force);
	if (r < 0)
		goto out;
	/* Whole blocks of dev: the last one keeps what dev holds past the
	 * header area. */
	len = round_up(b->hdr_area, dev->block_min ? dev->block_min : 1);
	buf = vol_buf_alloc(len);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	if (len > b->hdr_area) {
		r = vol_read(dev, buf + len - dev->block_min, dev->block_min, len - dev->block_min);
		if (r < 0) {
			r = err_set(r, "%s: reading its last header block: %s", dev->name,
			            strerror(-r));
			goto out;
		}
	}
	r = vol_read_any(backup, buf, b->hdr_area, 0);
	if (r < 0) {
		r = err_set(r, "%s: reading the header backup: %s; nothing written", backup->name,
		            strerror(-r));
		goto out;
	}
	r = vol_write(dev, buf, len, 0, 0);
	if (r == 0)
		r = vol_flush(dev);
	if (r < 0) {
		r = err_set(r, "%s: writing the LUKS header area: %s", dev->name, strerror(-r));
		goto out;
	}
	err_clear();
	r = luks_load(dev, &n);
	if (r < 0)
		r = err_set(r, "%s: the restored LUKS header does not load: %s", dev->name,
		            err_detail(r));
out:
	luks_hdr_free(n);
	luks_hdr_free(b);
	free(buf);
	return r;
}
