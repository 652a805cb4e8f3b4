/* raid_barrier.c — online recovery's barrier between client writes and
 * the rebuild (md's resync barrier), also what a scrub of a mirror level
 * holds its window with.  Below it: the members' state (raid_member.c);
 * above: the front (raid.c) brackets every write with raid_rec_enter/leave,
 * the rebuild (raid_rebuild.c) and the scrub (raid_check.c) move the
 * window. */
#include "raid_types.h"

/* ---- online recovery: the barrier between writes and the rebuild ----
 *
 * While a role is recovered the array serves as usual; what changes for a
 * write (raid_rec_enter/leave, around every write, trim and zeroing):
 *   - RAID1/10: it goes to the recovering copies too, everywhere (as md
 *     does), so nothing the rebuild has passed goes stale.  Its range is
 *     the member offsets it covers on those roles.
 *   - RAID5/6: the parity path (raid_parity.c) leaves the recovering role
 *     out as if it were gone; once the write is on the members, the rows
 *     it touched below the recovery point are rebuilt onto the target
 *     (raid_rebuild_written, which the front calls before raid_rec_leave).  Its range is its stripe
 * rows, and it is alone in them (excl) from before its first member write to after that rebuild, so
 * that a rebuild of a row never reads another write's half-written stripe.
 *   - either way it never overlaps the rebuild's window (md's resync
 *     barrier): a write into the window waits until the rebuild has moved
 *     on, and the rebuild waits for writes in flight there before it reads
 *     the window, so it never writes data older than a write that
 *     completed over data the write put there.
 * With no recovery running a write only counts itself in wr_fast (one
 * atomic add and sub): raid_recover_begin sets rec_on and waits for those
 * counted before to finish, so every write either saw rec_on or is over.
 *
 * A scrub of a mirror level (raid_check on a live array) uses the same
 * barrier instead of a recovery: writes register the range of every copy
 * they change, and the scrub's window holds the extent it compares, so it
 * never sees one copy written and the other not yet (which a repair would
 * then undo).  Parity levels need no window for that: their writes and
 * the scrub's stripe reads take the stripe's lock. */

static bool raid_rec_overlap(uint64_t lo, uint64_t hi, uint64_t lo2, uint64_t hi2)
{
	return lo < hi && lo2 < hi2 && lo < hi2 && lo2 < hi;
}

/* The member range a write of [off, off+len) registers (see above). */
static void raid_rec_range(struct raid_array *a, uint64_t len, uint64_t off, struct raid_rec_io *io)
{
	struct raid_loc loc[RAID_MAX_COPIES];
	unsigned nc;

	io->lo = UINT64_MAX;
	io->hi = 0;
	while (len > 0) {
		uint64_t n = a->lvl->map(a->priv, &a->g, off, len, loc, &nc);
		for (unsigned c = 0; c < nc; c++) {
			uint64_t lo = loc[c].off, hi = loc[c].off + n;
			if (a->lvl->md.parity) {
				lo -= lo % a->g.chunk;
				hi = lo + a->g.chunk;
			} else if (!atomic_load(&a->m[loc[c].role].recovering) &&
			           !atomic_load(&a->rec.scrub)) {
				continue;
			}
			io->lo = lo < io->lo ? lo : io->lo;
			io->hi = hi > io->hi ? hi : io->hi;
		}
		off += n;
		len -= n;
	}
}

static bool raid_rec_blocked(struct raid_array *a, const struct raid_rec_io *io)
{
	struct raid_rec *rc = &a->rec;

	if (rc->lo < rc->hi && (rc->lo == 0 && rc->hi == UINT64_MAX))
		return true; /* the whole array: a recovery ends or begins */
	if (raid_rec_overlap(io->lo, io->hi, rc->lo, rc->hi))
		return true;
	if (!io->excl)
		return false;
	for (struct raid_rec_io *o = rc->io; o; o = o->next)
		if (o->excl && raid_rec_overlap(io->lo, io->hi, o->lo, o->hi))
			return true;
	return false;
}

bool raid_rec_enter(struct raid_array *a, struct raid_rec_io *io, uint64_t len, uint64_t off)
{
	struct raid_rec *rc = &a->rec;

	atomic_fetch_add(&a->wr_fast, 1);
	if (!atomic_load(&a->rec_on))
		return false;
	atomic_fetch_sub(&a->wr_fast, 1);
	raid_rec_range(a, len, off, io);
	io->excl = a->lvl->md.parity != 0;
	pthread_mutex_lock(&rc->lock);
	while (raid_rec_blocked(a, io))
		pthread_cond_wait(&rc->cond, &rc->lock);
	io->next = rc->io;
	rc->io = io;
	pthread_mutex_unlock(&rc->lock);
	return true;
}

uint64_t raid_rec_point(struct raid_array *a)
{
	pthread_mutex_lock(&a->rec.lock);
	uint64_t point = a->rec.point;
	pthread_mutex_unlock(&a->rec.lock);
	return point;
}

int raid_rec_leave(struct raid_array *a, struct raid_rec_io *io, bool reg, int r)
{
	struct raid_rec *rc = &a->rec;

	if (!reg) {
		atomic_fetch_sub(&a->wr_fast, 1);
		return r;
	}
	pthread_mutex_lock(&rc->lock);
	for (struct raid_rec_io **pp = &rc->io; *pp; pp = &(*pp)->next) {
		if (*pp == io) {
			*pp = io->next;
			break;
		}
	}
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
	return r;
}

void raid_rec_window(struct raid_array *a, uint64_t lo, uint64_t hi, uint64_t point)
{
	struct raid_rec *rc = &a->rec;
	bool busy = true;

	pthread_mutex_lock(&rc->lock);
	rc->lo = lo;
	rc->hi = hi;
	rc->point = point;
	pthread_cond_broadcast(&rc->cond);
	while (lo < hi && busy) {
		busy = false;
		for (struct raid_rec_io *o = rc->io; o && !busy; o = o->next)
			busy =
			    raid_rec_overlap(o->lo, o->hi, lo, hi) || (lo == 0 && hi == UINT64_MAX);
		if (busy)
			pthread_cond_wait(&rc->cond, &rc->lock);
	}
	pthread_mutex_unlock(&rc->lock);
}
