/* fwraid.c — firmware RAID containers made into volumes (fwraid.h).
 *
 * Each member's metadata (imsm.c, ddf.c) is read; members are grouped
 * by container id, and the copy with the highest sequence number speaks
 * for the container (members holding an older one are left out, as
 * stale).  Each member is then matched to its entry in the container's
 * disk table: DDF records which entry a disk is; IMSM names disks by
 * serial number only, so a member whose name (its file name without the
 * extension, or its device name) is that serial, or the serial's last
 * path component (mdadm's IMSM_DEVNAME_AS_SERIAL stores "/dev/sda"),
 * is that disk, and a single member left over takes the single entry
 * left over.  Each volume is then disc/raid over slices of its members,
 * read-only. */
#include "fwraid.h"

#include "core/log.h"
#include "disc/raid/raid.h"
#include "disc/slice.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fwraid_meta_free(struct fwraid_meta *m)
{
	if (!m)
		return;
	free(m->vol);
	free(m);
}

/* Either format's metadata on v: 1 with *out, 0, or -errno. */
static int fwraid_read(struct vol *v, struct fwraid_meta **out)
{
	int r = imsm_read(v, out);

	if (r != 0)
		return r;
	return ddf_read(v, out);
}

int fwraid_probe(struct vol *v)
{
	struct fwraid_meta *m = NULL;
	int r = fwraid_read(v, &m);

	fwraid_meta_free(m);
	return r;
}

/* The last path component of s, and its length without an extension. */
static const char *fwraid_stem(const char *s, size_t *len, bool cut_ext)
{
	const char *b = strrchr(s, '/'), *dot;

	b = b ? b + 1 : s;
	dot = cut_ext ? strrchr(b, '.') : NULL;
	*len = dot && dot != b ? (size_t)(dot - b) : strlen(b);
	return b;
}

/* Whether vol name names the disk whose IMSM serial is serial. */
static bool fwraid_name_is(const char *name, const char *serial)
{
	size_t nl, sl;
	const char *n = fwraid_stem(name, &nl, true), *s;

	if (!serial[0])
		return false;
	if (strcmp(name, serial) == 0)
		return true;
	s = fwraid_stem(serial, &sl, false);
	return nl == sl && memcmp(n, s, nl) == 0;
}

/* The container's volumes as all its current members record them: the
 * newest copy's, with the roles and volumes that only other members'
 * copies record (DDF keeps each disk's own share) added.  0 or -ENOMEM,
 * -EINVAL (err_set) when two copies disagree on a volume's shape. */
static int fwraid_merge(struct fwraid_meta *base, const struct fwraid_meta *o)
{
	for (unsigned v = 0; v < o->nvols; v++) {
		const struct fwraid_vmeta *ov = &o->vol[v];
		struct fwraid_vmeta *bv = NULL;

		for (unsigned k = 0; k < base->nvols && !bv; k++)
			if (strcmp(base->vol[k].id, ov->id) == 0)
				bv = &base->vol[k];
		if (!bv) {
			struct fwraid_vmeta *p = realloc(base->vol, (base->nvols + 1) * sizeof(*p));
			if (!p)
				return -ENOMEM;
			base->vol = p;
			base->vol[base->nvols++] = *ov;
			continue;
		}
		if (bv->nmembers != ov->nmembers || bv->level != ov->level)
			return err_set(-EINVAL,
			               "%s: volume %s: the members' copies disagree on its shape",
			               base->fmt, bv->name);
		for (unsigned k = 0; k < bv->nmembers; k++)
			if (bv->disk[k] == FWRAID_DISK_UNKNOWN &&
			    ov->disk[k] != FWRAID_DISK_UNKNOWN) {
				bv->disk[k] = ov->disk[k];
				bv->start[k] = ov->start[k];
				bv->missing[k] = ov->missing[k];
			}
		if (!bv->refused[0] && ov->refused[0])
			memcpy(bv->refused, ov->refused, sizeof(bv->refused));
	}
	return 0;
}

struct fwraid_cont {
	struct fwraid_meta *m; /* the newest copy */
	int *vol_of;           /* per disk-table entry: index into vols[], or -1 */
};

/* Match the members cand[0..nc) to m's disk table. */
static void fwraid_match(struct vol **vols, const unsigned *cand, unsigned nc,
                         struct fwraid_meta *const *meta, struct fwraid_cont *c)
{
	unsigned left = 0, left_disk = 0, nfree = 0, free_vol = 0;

	for (unsigned d = 0; d < c->m->ndisks; d++)
		c->vol_of[d] = -1;
	for (unsigned k = 0; k < nc; k++) {
		const struct fwraid_meta *mk = meta[cand[k]];
		int d = -1;
		if (mk->self >= 0 && (unsigned)mk->self < mk->ndisks) {
			/* DDF: find the entry by the disk's own id */
			for (unsigned e = 0; e < c->m->ndisks && d < 0; e++)
				if (strcmp(c->m->disk[e].id, mk->disk[mk->self].id) == 0)
					d = (int)e;
		} else {
			for (unsigned e = 0; e < c->m->ndisks && d < 0; e++)
				if (c->vol_of[e] < 0 &&
				    fwraid_name_is(vols[cand[k]]->name, c->m->disk[e].id))
					d = (int)e;
		}
		if (d >= 0 && c->vol_of[d] < 0)
			c->vol_of[d] = (int)cand[k];
		else {
			nfree++;
			free_vol = cand[k];
		}
	}
	for (unsigned d = 0; d < c->m->ndisks; d++)
		if (c->vol_of[d] < 0) {
			left++;
			left_disk = d;
		}
	if (left == 1 && nfree == 1 && meta[free_vol]->self < 0)
		c->vol_of[left_disk] = (int)free_vol;
}

static const char *fwraid_level_name(int level)
{
	switch (level) {
	case 0:
		return "RAID0";
	case 1:
		return "RAID1";
	case 5:
		return "RAID5";
	case 10:
		return "RAID10";
	}
	return "RAID";
}

/* Build volume vm of container c into f (refused set on a refusal). */
static int fwraid_build(struct vol **vols, const struct fwraid_cont *c,
                        const struct fwraid_vmeta *vm, struct fwraid_vol_found *f)
{
	const char *FMT = strcmp(c->m->fmt, "imsm") == 0 ? "IMSM" : "DDF";
	struct vol **sl = calloc(vm->nmembers, sizeof(*sl)), *arr = NULL;
	char why[200] = "";
	unsigned present = 0;
	int r = 0;

	f->members = calloc(vm->nmembers, sizeof(*f->members));
	if (!sl || !f->members) {
		r = -ENOMEM;
		goto out;
	}
	f->size = vm->size;
	if (vm->chunk)
		snprintf(f->what, sizeof(f->what), "%s %s, %u disks, %u KiB strip", FMT,
		         fwraid_level_name(vm->level), vm->nmembers, vm->chunk / 1024);
	else
		snprintf(f->what, sizeof(f->what), "%s %s, %u disks", FMT,
		         fwraid_level_name(vm->level), vm->nmembers);
	for (unsigned k = 0; k < vm->nmembers; k++) {
		int vi = vm->disk[k] >= c->m->ndisks ? -1 : c->vol_of[vm->disk[k]];
		struct vol *v;
		char name[300];

		if (vi < 0 || vm->missing[k] || c->m->disk[vm->disk[k]].failed)
			continue;
		v = vols[vi];
		f->members[f->nmembers++] = (unsigned)vi;
		if (vm->refused[0])
			continue;
		if (vm->start[k] + vm->per_member > v->size) {
			snprintf(why, sizeof(why),
			         "%s: %s: volume %s extends past the disk (%" PRIu64
			         " bytes from %" PRIu64 ", the disk has %" PRIu64 ")",
			         v->name, FMT, vm->name, vm->per_member, vm->start[k], v->size);
			goto refuse;
		}
		snprintf(name, sizeof(name), "%s:%s", v->name, vm->name);
		r = slice_open(v, vm->start[k], vm->per_member, false, name, &sl[k]);
		if (r == -ENOMEM)
			goto out;
		if (r < 0) {
			snprintf(why, sizeof(why), "%s: %s: %s", v->name, FMT, err_detail(r));
			goto refuse;
		}
		present++;
	}
	if (vm->refused[0]) {
		snprintf(why, sizeof(why), "%s", vm->refused);
		goto refuse;
	}
	if (present < vm->nmembers) {
		/* raid_open() decides for the mirrors which losses they survive */
		unsigned lose = vm->level == 0 ? 0 : vm->level == 5 ? 1 : vm->nmembers - 1;
		if (vm->nmembers - present > lose) {
			snprintf(why, sizeof(why), "%u of its %u member disks missing or failed",
			         vm->nmembers - present, vm->nmembers);
			goto refuse;
		}
	}
	struct raid_geom g = {.level = vm->level,
	                      .layout = vm->layout,
	                      .chunk = vm->chunk,
	                      .raid_disks = vm->nmembers,
	                      .dev_size = vm->per_member};
	char aname[64];
	snprintf(aname, sizeof(aname), "%s/%s", c->m->fmt, vm->name);
	err_clear();
	r = raid_open(&g, sl, NULL, aname, &arr);
	if (r == -ENOMEM)
		goto out;
	if (r < 0) {
		snprintf(why, sizeof(why), "%s: %s", FMT, err_detail(r));
		goto refuse;
	}
	memset(sl, 0, vm->nmembers * sizeof(*sl)); /* arr's now */
	if (arr->size < vm->size) {
		snprintf(why, sizeof(why),
		         "%s: volume %s assembles to %" PRIu64 " bytes, less than its %" PRIu64,
		         FMT, vm->name, arr->size, vm->size);
		goto refuse;
	}
	r = slice_open(arr, 0, vm->size, true, aname, &f->vol);
	if (r < 0)
		goto out;
	arr = NULL;
	f->vol->caps |= VOL_CAP_READONLY;
	goto out;
refuse:
	f->refused = strdup(why);
	if (!f->refused)
		r = -ENOMEM;
out:
	if (arr)
		vol_close(arr);
	for (unsigned k = 0; sl && k < vm->nmembers; k++)
		if (sl[k])
			vol_close(sl[k]);
	free(sl);
	return r;
}

static void fwraid_warn(struct fwraid_found *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void fwraid_warn(struct fwraid_found *f, const char *fmt, ...)
{
	size_t len = strlen(f->warning);
	va_list ap;

	if (len >= sizeof(f->warning) - 2)
		return;
	if (len)
		f->warning[len++] = ';', f->warning[len++] = ' ';
	va_start(ap, fmt);
	vsnprintf(f->warning + len, sizeof(f->warning) - len, fmt, ap);
	va_end(ap);
}

/* A name no volume found so far has. */
static char *fwraid_unique(const struct fwraid_found *f, const char *name)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%s", name);
	for (unsigned k = 2;; k++) {
		bool taken = false;
		for (unsigned i = 0; i < f->nvol; i++)
			taken |= f->v[i].name && strcmp(f->v[i].name, buf) == 0;
		if (!taken)
			return strdup(buf);
		snprintf(buf, sizeof(buf), "%s.%u", name, k);
	}
}

int fwraid_assemble(struct vol **vols, unsigned n, struct fwraid_found **out)
{
	struct fwraid_meta **meta = calloc(n ? n : 1, sizeof(*meta));
	unsigned *cand = calloc(n ? n : 1, sizeof(*cand));
	bool *done = calloc(n ? n : 1, sizeof(*done));
	struct fwraid_found *f = calloc(1, sizeof(*f));
	struct fwraid_cont c = {0};
	int r = 0;

	*out = NULL;
	c.vol_of = calloc(FWRAID_MAX_DISKS, sizeof(*c.vol_of));
	if (!meta || !cand || !done || !f || !c.vol_of) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < n; i++) {
		err_clear();
		r = fwraid_read(vols[i], &meta[i]);
		if (r < 0)
			goto out;
		done[i] = r == 0;
		r = 0;
	}
	for (unsigned a = 0; a < n; a++) {
		unsigned nc = 0, newest;

		if (done[a])
			continue;
		for (unsigned b = a; b < n; b++)
			if (!done[b] && strcmp(meta[a]->fmt, meta[b]->fmt) == 0 &&
			    strcmp(meta[a]->id, meta[b]->id) == 0) {
				cand[nc++] = b;
				done[b] = true;
			}
		newest = cand[0];
		for (unsigned k = 1; k < nc; k++)
			if (meta[cand[k]]->seq > meta[newest]->seq)
				newest = cand[k];
		/* members with older metadata are left out, as stale */
		unsigned kept = 0;
		for (unsigned k = 0; k < nc; k++) {
			if (meta[cand[k]]->seq == meta[newest]->seq)
				cand[kept++] = cand[k];
			else
				fwraid_warn(f, "%s: older %s metadata than the others (left out)",
				            vols[cand[k]]->name,
				            strcmp(meta[a]->fmt, "imsm") == 0 ? "IMSM" : "DDF");
		}
		c.m = meta[newest];
		for (unsigned k = 0; k < kept; k++)
			if (cand[k] != newest) {
				r = fwraid_merge(c.m, meta[cand[k]]);
				if (r < 0)
					goto out;
			}
		fwraid_match(vols, cand, kept, meta, &c);
		for (unsigned k = 0; k < kept; k++) {
			bool placed = false;
			for (unsigned d = 0; d < c.m->ndisks; d++)
				placed |= c.vol_of[d] == (int)cand[k];
			if (!placed)
				fwraid_warn(
				    f,
				    "%s: not in its container's disk table by name or serial "
				    "(name an IMSM member after its disk's serial number)",
				    vols[cand[k]]->name);
		}
		for (unsigned v = 0; v < c.m->nvols; v++) {
			struct fwraid_vol_found *p = realloc(f->v, (f->nvol + 1) * sizeof(*p)), *fv;
			if (!p) {
				r = -ENOMEM;
				goto out;
			}
			f->v = p;
			fv = &f->v[f->nvol];
			memset(fv, 0, sizeof(*fv));
			fv->fmt = c.m->fmt;
			fv->name = fwraid_unique(f, c.m->vol[v].name);
			f->nvol++;
			if (!fv->name) {
				r = -ENOMEM;
				goto out;
			}
			r = fwraid_build(vols, &c, &c.m->vol[v], fv);
			if (r < 0)
				goto out;
		}
	}
	*out = f;
	f = NULL;
out:
	for (unsigned i = 0; meta && i < n; i++)
		fwraid_meta_free(meta[i]);
	free(meta);
	free(cand);
	free(done);
	free(c.vol_of);
	fwraid_found_free(f);
	return r;
}

void fwraid_found_free(struct fwraid_found *f)
{
	if (!f)
		return;
	for (unsigned i = 0; i < f->nvol; i++) {
		if (f->v[i].vol)
			vol_close(f->v[i].vol);
		free(f->v[i].name);
		free(f->v[i].refused);
		free(f->v[i].members);
	}
	free(f->v);
	free(f);
}
