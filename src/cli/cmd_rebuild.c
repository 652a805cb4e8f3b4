/* cmd_rebuild.c — `uraid add` and `uraid rebuild`: restoring an md array's
 * redundancy offline, as `mdadm --add` and the kernel's recovery do.
 *
 *   uraid add [--spare] [--no-rebuild] [--force] NEW MEMBER...
 *   uraid rebuild [--force] MEMBER...
 *
 * (`uraid add CONTROL NEW`, CONTROL a running serve's control socket, is
 * the hot form: cmd_control.c sends it there, and md_array_add() does it
 * with the same checks, md_manage.h's.)
 *
 * add writes a v1.2 superblock on NEW for the array the MEMBERs hold and
 * records it in theirs (events + 1, the same role table everywhere).  If a
 * role is missing NEW takes it, marked as being recovered (feature
 * RECOVERY_OFFSET, recovery_offset 0: what the kernel writes for a member
 * under recovery), and add goes on into the rebuild; otherwise (or with
 * --spare) NEW is a spare (role 0xffff).  rebuild finds the members being
 * recovered (or gives spares the missing roles), reconstructs their data
 * from the others (raid_rebuild.c) in member order, and saves
 * recovery_offset on them every 64 MiB and when interrupted (SIGINT,
 * SIGTERM), so that it, or the Linux kernel, continues from there.  At the
 * end the feature bit is cleared and every superblock gets events + 1.
 *
 * Every check is made before the first byte is written: a refusal leaves
 * every member as it was.  The members are taken for the command (no
 * `uraid serve` can hold them meanwhile). */
#include "cli.h"
#include "stack.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/random.h"
#include "core/units.h"
#include "disc/raid.h"
#include "disc/raid_rebuild.h"
#include "disc/slice.h"
#include "md/md.h"
#include "md/md_manage.h"
#include "member/member.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RB_CHECKPOINT (64ull << 20) /* recovery_offset saved this often */

struct rb_member {
	const char *spec;
	struct vol *vol; /* the whole member */
	struct md_super *sb;
	unsigned role;      /* from the freshest role table */
	bool target;        /* being recovered (RECOVERY_OFFSET) */
	atomic_bool failed; /* failed while rebuilding: not written again */
};

/* The given members of one array and the state every superblock gets. */
struct rb_set {
	struct rb_member *m;
	unsigned n;
	unsigned fresh; /* index of the freshest member */
	char name[48];  /* md/NAME */
	int level;
	unsigned raid_disks;
	uint64_t size;   /* sectors used per member */
	uint64_t events; /* written at the next update */
	uint32_t max_dev;
	uint16_t roles[MD_SB_MAX_DEV];
	int *insync; /* by role: index of the in-sync member, or -1 */
	int *rec;    /* by role: index of the member being recovered, or -1 */
};

static volatile sig_atomic_t rb_stop;

static void rb_on_signal(int sig)
{
	rb_stop = sig;
}

/* ---- finding the array ---- */

static void rb_set_free(struct rb_set *s)
{
	for (unsigned i = 0; s->m && i < s->n; i++) {
		vol_close(s->m[i].vol);
		free(s->m[i].sb);
	}
	free(s->m);
	free(s->insync);
	free(s->rec);
	memset(s, 0, sizeof(*s));
}

/* Open the members (writable), read their superblocks and work out who
 * holds which role, refusing anything we would not update correctly. */
static int rb_load(char **specs, unsigned n, struct rb_set *s)
{
	struct md_super *f;
	int r;

	memset(s, 0, sizeof(*s));
	s->m = calloc(n, sizeof(*s->m));
	struct vol **vols = calloc(n, sizeof(*vols));
	struct md_super **sbs = calloc(n, sizeof(*sbs));
	if (!s->m || !vols || !sbs) {
		free(vols);
		free(sbs);
		return -ENOMEM;
	}
	s->n = n;
	r = stack_open_md_members(specs, n, vols, sbs, &s->fresh,
				  "a new member is added with `uraid add NEW MEMBER...`");
	for (unsigned i = 0; i < n; i++)
		s->m[i] = (struct rb_member){ .spec = specs[i], .vol = vols[i], .sb = sbs[i] };
	free(vols);
	free(sbs);
	if (r < 0)
		return r;
	f = s->m[s->fresh].sb;
	md_super_array_name(f, s->name, sizeof(s->name));
	s->level = f->level;
	s->raid_disks = f->raid_disks;
	s->size = f->size;
	s->events = f->events;
	s->max_dev = f->max_dev;
	memcpy(s->roles, f->roles, sizeof(s->roles));
	if (!md_level_redundant(f->level))
		return err_set(-EINVAL, "%s is %s: %s", s->name, md_level_name(f->level),
		               f->level == 0 || f->level == MD_LEVEL_LINEAR
		                   ? "it has no redundancy, so a lost member cannot be rebuilt"
		                   : "uraid does not rebuild that level");
	if (f->raid_disks > 1024 || f->size == 0)
		return err_set(-EINVAL,
		               "%s: %u devices of %llu sectors is not an array uraid "
		               "rebuilds",
		               s->name, f->raid_disks, (unsigned long long)f->size);
	s->insync = malloc(f->raid_disks * sizeof(*s->insync));
	s->rec = malloc(f->raid_disks * sizeof(*s->rec));
	if (!s->insync || !s->rec)
		return -ENOMEM;
	for (unsigned r2 = 0; r2 < f->raid_disks; r2++)
		s->insync[r2] = s->rec[r2] = -1;
	for (unsigned i = 0; i < n; i++) {
		struct rb_member *mm = &s->m[i];
		struct md_super *sb = mm->sb;
		unsigned slot = sb->dev_number;

		mm->role =
		    slot < s->max_dev && slot < MD_SB_MAX_DEV ? s->roles[slot] : MD_ROLE_SPARE;
		r = md_super_same_geometry(sb, mm->spec, f, s->m[s->fresh].spec, s->name);
		if (r < 0)
			return r;
		if (mm->role == MD_ROLE_SPARE)
			continue; /* a spare's events do not matter (md's rule) */
		if (mm->role == MD_ROLE_FAULTY)
			return err_set(-EINVAL,
			               "%s: %s is marked faulty in the array; to use it "
			               "again, add it as a new member (`uraid add --force`)",
			               s->name, mm->spec);
		if (mm->role >= s->raid_disks)
			return err_set(-EINVAL, "%s: %s has role 0x%x, which uraid does not handle",
			               s->name, mm->spec, mm->role);
		if (sb->events + 1 < s->events)
			return err_set(-EINVAL,
			               "%s: %s is stale (events %llu, newest %llu): it "
			               "missed writes; add it as a new member (`uraid add "
			               "--force`) or leave it out",
			               s->name, mm->spec, (unsigned long long)sb->events,
			               (unsigned long long)s->events);
		int *holder = (sb->feature_map & MD_FEATURE_RECOVERY_OFFSET) ? s->rec : s->insync;
		if (s->insync[mm->role] >= 0 || s->rec[mm->role] >= 0)
			return err_set(
			    -EINVAL, "%s: %s and %s both claim role %u", s->name, mm->spec,
			    s->m[s->insync[mm->role] >= 0 ? s->insync[mm->role] : s->rec[mm->role]]
			        .spec,
			    mm->role);
		holder[mm->role] = (int)i;
		mm->target = holder == s->rec;
	}
	return 0;
}

/* Roles that no given member holds, in sync or being recovered. */
static unsigned rb_missing(const struct rb_set *s, unsigned *first)
{
	unsigned k = 0;

	for (unsigned r = s->raid_disks; r-- > 0;)
		if (s->insync[r] < 0 && s->rec[r] < 0) {
			k++;
			*first = r;
		}
	return k;
}

/* A slot recording an active role that no given member holds: the device
 * is gone (replaced, or not given); record it as faulty, as md would on
 * its first update, so that it is seen as stale if it comes back. */
static void rb_mark_gone_slots(struct rb_set *s, bool warn)
{
	for (unsigned slot = 0; slot < s->max_dev && slot < MD_SB_MAX_DEV; slot++) {
		unsigned role = s->roles[slot];
		bool given = false;

		if (role >= s->raid_disks)
			continue;
		for (unsigned i = 0; i < s->n; i++)
			given |= s->m[i].sb->dev_number == slot && s->m[i].role == role;
		if (given)
			continue;
		if (warn)
			log_warn("%s: role %u (slot %u) is not among the members given: it is "
			         "recorded as faulty",
			         s->name, role, slot);
		s->roles[slot] = MD_ROLE_FAULTY;
	}
}

static void rb_failed(void *ctx, unsigned role, int err)
{
	struct rb_set *s = ctx;

	(void)err;
	if (role < s->raid_disks && s->insync[role] >= 0)
		atomic_store(&s->m[s->insync[role]].failed, true);
}

/* The array as its in-sync members make it (the rest missing): what the
 * data is read, or rebuilt, from.  Refuses when too much is gone. */
static int rb_open_array(struct rb_set *s, struct vol **out)
{
	struct md_super *f = s->m[s->fresh].sb;
	struct raid_geom g = {.level = f->level,
	                      .layout = f->layout,
	                      .chunk = f->chunk * 512,
	                      .raid_disks = f->raid_disks,
	                      .dev_size = f->size * 512};
	struct raid_events ev = {rb_failed, s};
	struct vol **slices = calloc(s->raid_disks, sizeof(*slices));
	unsigned have = 0;
	int r = 0;

	if (!slices)
		return -ENOMEM;
	for (unsigned role = 0; role < s->raid_disks && r == 0; role++) {
		struct rb_member *mm;
		if (s->insync[role] < 0)
			continue;
		mm = &s->m[s->insync[role]];
		have++;
		r = slice_open(mm->vol, mm->sb->data_offset * 512, mm->sb->data_size * 512, false,
		               mm->spec, &slices[role]);
	}
	if (r == 0) {
		unsigned parity = md_level_parity(f->level);
		if (parity && s->raid_disks - have > parity)
			r = err_set(-ENODEV,
			            "%s: %s can rebuild at most %u member%s, but %u of %u "
			            "roles are missing or being rebuilt",
			            s->name, md_level_name(f->level), parity, parity > 1 ? "s" : "",
			            s->raid_disks - have, s->raid_disks);
		else if (!have)
			r = err_set(-ENODEV, "%s: no member is in sync: nothing to rebuild from",
			            s->name);
	}
	if (r == 0) {
		r = raid_open(&g, slices, &ev, s->name, out);
		if (r == 0) {
			free(slices); /* the array owns them now */
			return 0;
		}
		r = err_set(r, "%s: the members in sync cannot give back the data (%s)", s->name,
		            err_detail(r));
	}
	for (unsigned role = 0; role < s->raid_disks; role++)
		vol_close(slices[role]);
	free(slices);
	return r;
}

/* Write the set's events and role table into every given member (but
 * those that failed), targets first: md's order for a new member. */
static int rb_sync_all(struct rb_set *s)
{
	int r = 0;

	for (int pass = 0; pass < 2 && r == 0; pass++) {
		for (unsigned i = 0; i < s->n && r == 0; i++) {
			struct rb_member *mm = &s->m[i];
			if (mm->target != (pass == 0) || atomic_load(&mm->failed))
				continue;
			md_manage_set_state(mm->sb, s->events, s->max_dev, s->roles);
			err_clear();
			r = md_super_write(mm->vol, mm->sb);
		}
	}
	return r;
}

/* ---- uraid add ---- */

static void add_usage(FILE *f)
{
	fprintf(f, "usage: uraid add [--spare] [--no-rebuild] [--force] NEW MEMBER...\n"
	           "       uraid add [--force] [--array md/NAME] CONTROL NEW\n"
	           "Add NEW to the md array the MEMBERs hold (mdadm --add).  If a role is\n"
	           "missing, NEW takes it and is rebuilt from the others at once (see\n"
	           "`uraid rebuild`); if the array is whole, NEW becomes a spare.\n"
	           "  --spare       add NEW as a spare even if a role is missing\n"
	           "  --no-rebuild  only write the superblocks; `uraid rebuild` does the rest\n"
	           "  --force       overwrite a NEW that holds an md superblock or a LUKS header\n"
	           "  -v            more messages\n"
	           "The second form (CONTROL: a `uraid serve --control` socket) adds NEW to the\n"
	           "array being served: a spare, that takes a missing role and is rebuilt while\n"
	           "the array serves (--array: which array, when the stack has several).\n");
}

static int rebuild_run(char **specs, unsigned n, bool force);

int cmd_add(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"spare", no_argument, NULL, 's'},
	    {"no-rebuild", no_argument, NULL, 'N'},
	    {"force", no_argument, NULL, 'f'},
	    {"readonly", no_argument, NULL, 'R'},
	    {"array", required_argument, NULL, 'A'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	const char *array = NULL;
	struct rb_set s = {0};
	struct vol *nv = NULL, *arr = NULL;
	struct md_super *nsb = NULL;
	uint32_t *used = NULL;
	bool spare = false, no_rebuild = false, force = false;
	uint64_t end_sb;
	unsigned role = MD_ROLE_SPARE, first = 0, slot;
	int c, r, rc = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "fvh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			spare = true;
			break;
		case 'N':
			no_rebuild = true;
			break;
		case 'A':
			array = optarg;
			break;
		case 'f':
			force = true;
			break;
		case 'R':
			fprintf(stderr,
			        "uraid: add: --readonly: adding a member writes superblocks "
			        "(and data); nothing was changed\n");
			return 2;
		case 'v':
			log_verbosity = log_verbosity < LOG_INFO ? LOG_INFO : LOG_DEBUG;
			break;
		case 'h':
			add_usage(stdout);
			return 0;
		default:
			add_usage(stderr);
			return 2;
		}
	}
	if (argc - optind < 2) {
		add_usage(stderr);
		return 2;
	}
	if (cli_is_control_socket(argv[optind])) {
		/* Hot add: the running serve does it. */
		if (argc - optind != 2 || spare || no_rebuild) {
			fprintf(stderr,
			        "uraid: add: a running array takes one NEW member at a time "
			        "(`uraid add [--force] [--array md/NAME] CONTROL NEW`); "
			        "--spare and --no-rebuild are for the offline form\n");
			return 2;
		}
		return cmd_add_hot(argv[optind], argv[optind + 1], force, array);
	}
	if (array) {
		fprintf(stderr, "uraid: add: --array goes with a control socket (`uraid add "
		                "--array md/NAME CONTROL NEW`)\n");
		return 2;
	}
	const char *new_spec = argv[optind];
	for (int i = optind + 1; i < argc; i++)
		if (stack_same_member(new_spec, argv[i])) {
			fprintf(stderr,
			        "uraid: add: %s is the new member and also one of the "
			        "members given; nothing was changed\n",
			        argv[i]);
			return 2;
		}
	r = rb_load(argv + optind + 1, (unsigned)(argc - optind - 1), &s);
	if (r < 0)
		goto fail;
	struct md_super *f = s.m[s.fresh].sb;

	err_clear();
	r = member_open(new_spec, 0, &nv);
	if (r < 0)
		goto fail;
	r = md_manage_probe_new(nv, new_spec, f->set_uuid, s.name, force, &end_sb);
	if (r == 0)
		r = md_manage_check_size(nv, new_spec, f, s.name);
	if (r < 0)
		goto fail;
	/* The array must give its data back without the roles nobody holds in
	 * sync; else a rebuild could not happen. */
	r = rb_open_array(&s, &arr);
	if (r < 0)
		goto fail;
	vol_close(arr);
	if (rb_missing(&s, &first) && !spare)
		role = first;
	/* A slot of our own, that no member given uses. */
	used = malloc(s.n * sizeof(*used));
	if (!used) {
		r = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < s.n; i++)
		used[i] = s.m[i].sb->dev_number;
	r = md_manage_pick_slot(s.roles, s.max_dev, s.raid_disks, used, s.n, f->data_offset,
	                        s.name);
	if (r < 0)
		goto fail;
	slot = (unsigned)r;

	/* Checked: from here on we write.  NEW's superblock is the freshest's
	 * with NEW's own device fields. */
	rb_mark_gone_slots(&s, true);
	if (slot >= s.max_dev) {
		for (uint32_t i = s.max_dev; i < slot; i++)
			s.roles[i] = MD_ROLE_SPARE;
		s.max_dev = slot + 1;
	}
	s.roles[slot] = (uint16_t)role;
	s.events++;
	nsb = malloc(sizeof(*nsb));
	if (!nsb) {
		r = -ENOMEM;
		goto fail;
	}
	r = md_manage_new_super(nv, new_spec, f, s.m[s.fresh].vol, slot, end_sb, nsb);
	if (r < 0)
		goto fail;
	if (role != MD_ROLE_SPARE)
		md_manage_mark_recovering(nsb, s.roles, role);
	md_manage_set_state(nsb, s.events, s.max_dev, s.roles);
	r = md_super_write(nv, nsb);
	if (r == 0)
		r = rb_sync_all(&s);
	if (r < 0)
		goto fail;
	if (role == MD_ROLE_SPARE)
		printf("uraid: %s is a spare of %s (slot %u)%s\n", new_spec, s.name, slot,
		       rb_missing(&s, &first) ? "" : ": the array is whole");
	else
		printf("uraid: %s takes role %u of %s (slot %u), to be rebuilt\n", new_spec, role,
		       s.name, slot);
	rc = 0;
	goto out;
fail:
	rc = cli_fail("add", r);
out:
	free(nsb);
	free(used);
	vol_close(nv);
	rb_set_free(&s);
	if (rc == 0 && role != MD_ROLE_SPARE && !no_rebuild) {
		return rebuild_run(argv + optind, (unsigned)(argc - optind), false);
	}
	return rc;
}

/* ---- uraid rebuild ---- */

struct rb_progress {
	struct rb_set *s;
	uint64_t from, to, saved;
	uint64_t t0, last_show;
	bool tty;
	int err; /* a checkpoint that failed */
};

/* Make [0, done) durable on every target and say so in its superblock. */
static int rb_checkpoint(struct rb_progress *p, uint64_t done)
{
	struct rb_set *s = p->s;
	int r = 0;

	for (unsigned i = 0; i < s->n && r == 0; i++) {
		struct rb_member *mm = &s->m[i];
		if (mm->target)
			r = md_manage_checkpoint(mm->vol, mm->sb, done);
	}
	if (r == 0)
		p->saved = done;
	return r;
}

static void rb_show(struct rb_progress *p, uint64_t done, bool last)
{
	uint64_t now = clock_now_ns();
	char a[32], b[32];

	if (!p->tty || (!last && now - p->last_show < 500000000u))
		return;
	p->last_show = now;
	double secs = (double)(now - p->t0) / 1e9;
	format_size(done, a, sizeof(a));
	format_size(p->to, b, sizeof(b));
	printf("\r  %s: rebuilding: %5.1f%% (%s of %s), %.1f MiB/s   ", p->s->name,
	       100.0 * (double)done / (double)p->to, a, b,
	       secs > 0 ? (double)(done - p->from) / 1048576.0 / secs : 0.0);
	if (last)
		printf("\n");
	fflush(stdout);
}

static int rb_on_progress(void *ctx, uint64_t done)
{
	struct rb_progress *p = ctx;

	rb_show(p, done, false);
	if (done >= p->to)
		return 0; /* all written: finish, whatever the signal */
	if (done - p->saved >= RB_CHECKPOINT || rb_stop) {
		p->err = rb_checkpoint(p, done);
		if (p->err < 0)
			return 1;
	}
	return rb_stop != 0;
}

static void rebuild_usage(FILE *f)
{
	fprintf(f, "usage: uraid rebuild [--force] MEMBER...\n"
	           "Rebuild the members of the md array being recovered (added with `uraid add`,\n"
	           "or stopped part-way by uraid or the kernel), or give spares the missing roles\n"
	           "and rebuild them: their data is reconstructed from the other members (md's\n"
	           "recovery).  Progress is saved every 64 MiB and on SIGINT/SIGTERM; running\n"
	           "it again continues from there.\n"
	           "  --force   rebuild a RAID5/6 that was not shut down cleanly (its parity may\n"
	           "            be stale, and what it rebuilds wrong)\n"
	           "  -v        more messages\n");
}

static int rebuild_run(char **specs, unsigned n, bool force)
{
	struct rb_set s = {0};
	struct rb_progress p = {0};
	struct vol *arr = NULL;
	struct vol **tslice = NULL;
	struct sigaction sa = {0}, old_int, old_term;
	unsigned first = 0, ntargets = 0, nspare = 0;
	bool promoted = false, handlers = false;
	char list[256] = "";
	size_t llen = 0;
	int r, rc = 1;

	r = rb_load(specs, n, &s);
	if (r < 0)
		goto fail;
	struct md_super *f = s.m[s.fresh].sb;
	/* Spares take the missing roles. */
	for (unsigned i = 0; i < s.n; i++) {
		struct rb_member *mm = &s.m[i];
		if (mm->role != MD_ROLE_SPARE)
			continue;
		nspare++;
		if (!rb_missing(&s, &first))
			continue;
		r = md_manage_promote_spare(mm->sb, s.roles, first, s.size, s.name, mm->spec);
		if (r < 0)
			goto fail;
		mm->role = first;
		mm->target = true;
		s.rec[first] = (int)i;
		promoted = true;
		nspare--;
	}
	/* A role the superblocks still give to a member not given, and no
	 * spare took it: the user left one out, not a loss to repair here. */
	for (unsigned slot = 0; slot < s.max_dev && slot < MD_SB_MAX_DEV; slot++) {
		unsigned role = s.roles[slot];
		if (role < s.raid_disks && s.insync[role] < 0 && s.rec[role] < 0) {
			r = err_set(-ENODEV,
			            "%s: role %u (slot %u) is recorded as held by a "
			            "member that is not given; give every member (or `uraid "
			            "add` a new one in its place)",
			            s.name, role, slot);
			goto fail;
		}
	}
	for (unsigned i = 0; i < s.n; i++) {
		struct rb_member *mm = &s.m[i];
		if (!mm->target)
			continue;
		ntargets++;
		if (llen < sizeof(list) - 8)
			llen += (size_t)snprintf(list + llen, sizeof(list) - llen, "%s%s (role %u)",
			                         llen ? ", " : "", mm->spec, mm->role);
	}
	if (!ntargets) {
		if (rb_missing(&s, &first)) {
			r = err_set(-ENODEV,
			            "%s: role %u is missing and no spare or new member is "
			            "given; add one with `uraid add NEW MEMBER...`",
			            s.name, first);
			goto fail;
		}
		printf("uraid: %s: nothing to rebuild: all %u roles are in sync%s\n", s.name,
		       s.raid_disks, nspare ? ", spares stand by" : "");
		rc = 0;
		goto out;
	}
	if (md_dirty_degraded(f, ntargets) && !force) {
		r = err_set(-EUCLEAN,
		            "%s was not shut down cleanly: its parity may be stale, and a "
		            "member rebuilt from it wrong (md refuses such a dirty degraded "
		            "array too); --force rebuilds anyway",
		            s.name);
		goto fail;
	}
	r = rb_open_array(&s, &arr);
	if (r < 0)
		goto fail;
	tslice = calloc(s.raid_disks, sizeof(*tslice));
	if (!tslice) {
		r = -ENOMEM;
		goto fail;
	}
	p.s = &s;
	p.to = s.size * 512;
	p.from = p.to;
	for (unsigned role = 0; role < s.raid_disks; role++) {
		struct rb_member *mm;
		if (s.rec[role] < 0)
			continue;
		mm = &s.m[s.rec[role]];
		if (mm->sb->recovery_offset > s.size)
			mm->sb->recovery_offset = s.size;
		if (md_manage_recovery_from(mm->sb, s.size) < p.from)
			p.from = md_manage_recovery_from(mm->sb, s.size);
		r = slice_open(mm->vol, mm->sb->data_offset * 512, mm->sb->data_size * 512, false,
		               mm->spec, &tslice[role]);
		if (r < 0)
			goto fail;
	}
	p.from -= p.from % raid_rebuild_piece(arr);
	p.saved = p.from;

	/* Checked: from here on we write. */
	if (promoted) {
		rb_mark_gone_slots(&s, true);
		s.events++;
		r = rb_sync_all(&s);
		if (r < 0)
			goto fail;
	}
	{
		char a[32], b[32];
		format_size(p.from, a, sizeof(a));
		format_size(p.to, b, sizeof(b));
		printf("uraid: %s: rebuilding %s from %s of %s per member\n", s.name, list, a, b);
		fflush(stdout);
	}
	rb_stop = 0;
	sa.sa_handler = rb_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	handlers = true;
	p.tty = isatty(STDOUT_FILENO);
	p.t0 = clock_now_ns();
	r = raid_rebuild(arr, tslice, p.from, p.to, rb_on_progress, &p);
	rb_show(&p, r == 0 ? p.to : p.saved, true);
	if (r == -EINTR && p.err < 0) {
		r = p.err;
		goto fail;
	}
	if (r == -EINTR) {
		printf("uraid: %s: interrupted (signal %d) with %.1f%% rebuilt; recovery offset "
		       "saved: `uraid rebuild` (or the kernel) continues from there\n",
		       s.name, (int)rb_stop, 100.0 * (double)p.saved / (double)p.to);
		goto out;
	}
	if (r < 0) {
		char detail[512];
		snprintf(detail, sizeof(detail), "%s", err_detail(r));
		if (p.saved > p.from)
			log_warn("%s: %.1f%% was rebuilt and saved", s.name,
			         100.0 * (double)p.saved / (double)p.to);
		r = err_set(r, "%s", detail);
		goto fail;
	}
	/* Done: the data is durable, then the targets are in sync. */
	for (unsigned i = 0; i < s.n && r == 0; i++) {
		struct rb_member *mm = &s.m[i];
		if (!mm->target)
			continue;
		r = vol_flush(mm->vol);
		md_manage_recovery_done(mm->sb);
	}
	for (unsigned i = 0; i < s.n; i++) {
		struct rb_member *mm = &s.m[i];
		if (atomic_load(&mm->failed)) {
			log_warn("%s: %s failed during the rebuild: recorded as faulty", s.name,
			         mm->spec);
			s.roles[mm->sb->dev_number] = MD_ROLE_FAULTY;
		}
	}
	rb_mark_gone_slots(&s, false);
	s.events++;
	if (r == 0)
		r = rb_sync_all(&s);
	if (r < 0)
		goto fail;
	{
		double secs = (double)(clock_now_ns() - p.t0) / 1e9;
		char a[32];
		format_size((p.to - p.from) * ntargets, a, sizeof(a));
		unsigned gone = rb_missing(&s, &first);
		printf("uraid: %s: rebuilt %s: %s in %.1f s (%.1f MiB/s); ", s.name, list, a, secs,
		       secs > 0 ? (double)(p.to - p.from) * ntargets / 1048576.0 / secs : 0.0);
		if (gone)
			printf("%u role%s still missing (role %u first)\n", gone,
			       gone > 1 ? "s" : "", first);
		else
			printf("the array is whole%s\n",
			       md_super_clean(f) ? " and clean" : " (still marked for resync)");
	}
	rc = 0;
	goto out;
fail:
	rc = cli_fail("rebuild", r);
out:
	if (handlers) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
	}
	vol_close(arr);
	for (unsigned role = 0; tslice && role < s.raid_disks; role++)
		vol_close(tslice[role]);
	free(tslice);
	rb_set_free(&s);
	return rc;
}

int cmd_rebuild(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"force", no_argument, NULL, 'f'},
	    {"readonly", no_argument, NULL, 'R'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	bool force = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "fvh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case 'R':
			fprintf(stderr, "uraid: rebuild: --readonly: a rebuild writes the new "
			                "members; nothing was changed\n");
			return 2;
		case 'v':
			log_verbosity = log_verbosity < LOG_INFO ? LOG_INFO : LOG_DEBUG;
			break;
		case 'h':
			rebuild_usage(stdout);
			return 0;
		default:
			rebuild_usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		rebuild_usage(stderr);
		return 2;
	}
	return rebuild_run(argv + optind, (unsigned)(argc - optind), force);
}
