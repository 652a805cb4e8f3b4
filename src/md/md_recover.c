/* md_recover.c — the recovery driver of md_recover.h over raid_rebuild():
 * the order every md recovery keeps (lowest offset first, checkpoints,
 * finish before a stop), whoever runs it. */
#include "md_recover.h"
#include "md_manage.h"

#include "disc/raid/raid_rebuild.h"

void md_recover_plan(struct md_recover *rc, struct md_super *const *sbs, unsigned n,
                     uint64_t size_sectors)
{
	uint64_t from = size_sectors * 512;

	rc->to = size_sectors * 512;
	for (unsigned role = 0; role < n; role++) {
		if (!sbs[role])
			continue;
		uint64_t f = md_manage_recovery_from(sbs[role], size_sectors);
		from = f < from ? f : from;
	}
	rc->from = from - from % raid_rebuild_piece(rc->raid);
	rc->saved = rc->from;
	rc->checkpoint_r = 0;
}

static int md_recover_step(void *ctx, uint64_t done)
{
	struct md_recover *rc = ctx;
	const struct md_recover_ops *ops = rc->ops;
	bool stop;

	if (ops->progress)
		ops->progress(rc->ctx, done);
	if (ops->failed && ops->failed(rc->ctx))
		return 1;
	if (done >= rc->to)
		return 0; /* all written: finish, whatever the stop */
	stop = ops->stopping(rc->ctx);
	if (done - rc->saved >= MD_RECOVER_CHECKPOINT || stop) {
		int r = ops->checkpoint(rc->ctx, done);
		if (r < 0) {
			rc->checkpoint_r = r;
			return 1;
		}
		rc->saved = done;
	}
	if (!stop && ops->throttle)
		ops->throttle(rc->ctx, done);
	return ops->stopping(rc->ctx);
}

int md_recover_run(struct md_recover *rc)
{
	rc->saved = rc->from;
	rc->checkpoint_r = 0;
	return raid_rebuild(rc->raid, rc->targets, rc->from, rc->to, md_recover_step, rc);
}
