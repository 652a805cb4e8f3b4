/* raid_member.c — the state of an array's members: how fast each is, which
 * errors are the request's and which the member's, and the one transition
 * live -> failed (raid_member_fail), with the redundancy rule it applies.
 *
 * The bottom of the engine (raid_types.h has the types): the fan-out
 * (raid_map.c), the parity path (raid_parity.c) and the stages above them
 * fail members through here; a stage that must hear of a failure
 * (read-ahead) hangs a hook on the array instead of being called by name. */
#include "raid_types.h"

#include "core/log.h"

#include <errno.h>
#include <string.h>

void raid_note_speed(struct raid_member *m, uint64_t ns, uint64_t len)
{
	uint64_t per_mib = ns * (1u << 20) / len;
	uint64_t old = atomic_load(&m->ns_per_mib);
	atomic_store(&m->ns_per_mib, old ? (old * 3 + per_mib) / 4 : per_mib);
}

/* Not ENOSPC: a member whose store is full may have taken part of a write
 * (pwrite writes what fits), and the copies would then differ where the
 * client was told the write failed, a parity chunk would no longer match
 * its stripe.  So a full member fails like any other whose write failed
 * (md's rule), and the array goes on with the members that took it. */
bool raid_err_is_request(int err)
{
	return err == -ENOTSUP || err == -EOPNOTSUPP || err == -EINVAL || err == -EROFS ||
	       err == -ENOMEM;
}

/* Would every block still have a live copy if role failed too?  Copy sets
 * of md's layouts repeat every raid_disks chunks, so those are checked. */
bool raid_survives_without(struct raid_array *a, unsigned role)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned probes = a->g.chunk ? a->g.raid_disks : 1;

	if (a->lvl->md.parity) {
		unsigned gone = 1;
		for (unsigned i = 0; i < a->n; i++)
			gone += i != role && atomic_load(&a->m[i].failed);
		return gone <= a->lvl->md.parity;
	}

	for (unsigned k = 0; k < probes; k++) {
		uint64_t off = (uint64_t)k * a->g.chunk;
		unsigned nc, live = 0;
		if (off >= a->vol.size)
			break;
		a->lvl->map(a->priv, &a->g, off, 1, loc, &nc);
		for (unsigned c = 0; c < nc; c++)
			if (loc[c].role != role && !atomic_load(&a->m[loc[c].role].failed))
				live++;
		if (live == 0)
			return false;
	}
	return true;
}

int raid_member_fail(struct raid_array *a, unsigned role, int err, bool by_user)
{
	int r = 0;
	bool report = false;

	pthread_mutex_lock(&a->fail_lock);
	if (atomic_load(&a->m[role].failed)) {
		pthread_mutex_unlock(&a->fail_lock);
		return 0;
	}
	if (!a->lvl->md.redundant || !raid_survives_without(a, role)) {
		r = by_user ? -EBUSY : -EIO;
	} else {
		atomic_store(&a->m[role].failed, true);
		report = true;
	}
	pthread_mutex_unlock(&a->fail_lock);
	if (report) {
		log_warn("%s: member %u (%s) failed%s: %s", a->vol.name, role, a->m[role].vol->name,
		         by_user ? " by request" : "", strerror(-err));
		if (a->on_member_failed)
			a->on_member_failed(a, role);
		if (a->ev.member_failed)
			a->ev.member_failed(a->ev.ctx, role, err);
	}
	return r;
}

/* Are the live members slow enough for staging streams to pay?  At least one
 * must have been measured slow and none fast; members not read yet (the
 * other mirrors) do not count. */
bool raid_members_slow(struct raid_array *a)
{
	bool slow = false;

	for (unsigned i = 0; i < a->n; i++) {
		if (atomic_load(&a->m[i].failed))
			continue;
		uint64_t ns = atomic_load(&a->m[i].ns_per_mib);
		if (ns && ns < RAID_SLOW_NS_PER_MIB)
			return false;
		slow |= ns != 0;
	}
	return slow;
}

/* A write to a role being recovered failed: the recovery of that role
 * is over (the md layer aborts it); the request does not fail for it. */
void raid_rec_target_failed(struct raid_array *a, unsigned role, int err)
{
	int zero = 0;

	if (atomic_compare_exchange_strong(&a->m[role].rec_err, &zero, err < 0 ? err : -EIO))
		log_warn("%s: member %u (%s), being recovered, failed: %s", a->vol.name, role,
		         a->m[role].vol->name, strerror(err < 0 ? -err : EIO));
}
