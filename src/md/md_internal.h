/* md_internal.h — a running md array, as the files of src/md/ that keep
 * it share it (not for callers outside src/md/; they see md.h):
 *   md_assemble.c    grouping members by array and opening an array
 *   md_state.c       the array's state in the superblocks (events, roles)
 *   md_vol.c         the md vol's data path: the gate, marking active,
 *                    the write-intent bitmap hooks, close
 *   md_bitmap_load.c finding and loading the on-disk bitmap at a start
 *   md_sync.c        resync at start, the background recovery and check
 *                    thread (speed limits: md_throttle.h)
 *   md_admin.c       info, fail, remove, add, check of a running array
 *   md_readd.c       re-adding a member from the bitmap (its rule, the
 *                    retries of the recovery thread, md_array_readd)
 *   md_events.c      the events of md_events.h, emitted where the others
 *                    change the state (md_ev_*)
 *   md_replace.c     replacements (mdadm --replace) being built: taken at
 *                    assembly, copied on the recovery thread, ended
 * struct md_array holds one sub-struct per job; each is changed by its
 * file, under the array's lock unless a field says otherwise.  The files
 * call downwards only: assemble and admin -> vol -> sync -> state. */
#ifndef URAID_MD_INTERNAL_H
#define URAID_MD_INTERNAL_H

#include "md.h"
#include "md_bitmap.h"
#include "md_jcache.h"
#include "md_journal.h"
#include "md_reshape.h"
#include "md_throttle.h"

#include "disc/raid/raid.h"

#include <pthread.h>
#include <stdatomic.h>

#define MD_GATE_SLOTS 16 /* counters of requests inside the gate */

struct md_member {
	struct vol *vol; /* the whole member; NULL when missing */
	struct md_super *sb;
	bool failed;
	bool recovering;   /* being rebuilt online (its sb says so) */
	bool forced;       /* stale, taken back by --force (md_force_stale) */
	struct vol *slice; /* its data area (being recovered) */
	bool slice_given;  /* the RAID vol owns slice */
	struct vol *data;  /* its data area as the RAID vol holds it, or NULL */
	struct vol *rs_to; /* during a reshape: its new data area (the new RAID vol's) */
	bool bm_ok;        /* its write-intent bitmap on disk is ours */
	/* Re-add (md_readd.c): failed by request (not retried), refused by
	 * the rule (not retried until asked), when to try next and the
	 * backoff it is at. */
	bool user_failed, readd_refused;
	bool readd_probing; /* its superblock is being read (unlocked): not removed */
	uint64_t readd_at_ns;
	unsigned readd_wait_ms;
	/* A replacement being built for this role (md_replace.h): its own
	 * member entry (vol, sb; failed once given up; stalled when its copy
	 * cannot go on before the next start), NULL for none; rv the replace
	 * vol the RAID vol holds as the role's member (owned by it), kept
	 * after the replacement ended. */
	struct md_member *repl;
	struct vol *rv;
	bool stalled;
};

/* Re-adds from the bitmap (md_readd.c), for md_array_info. */
struct md_readd {
	bool running;
	uint64_t total;                   /* bytes the one running resyncs */
	unsigned count;                   /* done since the array started */
	unsigned refusals;                /* members the rule turned away */
	uint64_t chunks, bytes;           /* bitmap chunks and member bytes resynced, all */
	uint64_t last_chunks, last_bytes; /* those of the last one */
};

/* Online recovery (writable arrays of a redundant level): md_sync.c. */
struct md_rec {
	bool enabled;
	pthread_t thread;
	bool started;
	pthread_cond_t cond; /* with lock: work for the thread */
	atomic_bool stop;    /* the array closes */
	bool dead;           /* recovery cannot go on: no more tries */
	uint64_t to;         /* bytes of each member to rebuild */
	/* What a rebuild running has done (for md_array_info). */
	bool running; /* with lock */
	uint64_t from, t0_ns;
	atomic_uint_fast64_t pos;
	unsigned ev_next; /* the next RebuildNN to emit (the thread's) */
};

/* A check (md_array_check), run by the recovery thread when there is no
 * recovery to run; with lock, but for the atomics: md_sync.c. */
struct md_scrub {
	enum md_check_action req; /* asked for: STOP for none */
	bool running, repair;
	atomic_bool stop;
	atomic_uint_fast64_t pos; /* array bytes compared */
	uint64_t t0_ns;
	unsigned shown;   /* mismatches logged (by the thread) */
	unsigned ev_next; /* the next RebuildNN to emit (the thread's) */
	bool ended, ended_repair;
	int status;
	struct raid_check_report rep;
};

/* The gate (md_io_*, md_vol.c): requests count themselves in in[] (a slot
 * per thread, so that threads do not share one counter's cache line);
 * while hold is set new ones wait at the door (md_array_remove takes a
 * member's vol away, which requests planned earlier could name).  The
 * slots also count the array's own reads and writes (md_array_info's io). */
struct md_gate {
	struct {
		atomic_int n;
		atomic_uint ops; /* requests that entered: clients are busy */
		atomic_uint_fast64_t done[2], bytes[2], errors; /* [0] reads, [1] writes */
	} __attribute__((aligned(64))) in[MD_GATE_SLOTS];
	atomic_bool hold;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

/* The internal write-intent bitmap we keep up (writable arrays with a
 * usable one: md_bitmap_load.c finds it, md_vol.c keeps it), its
 * changes under lock. */
struct md_bm {
	struct md_bitmap *map;
	struct md_bitmap_geom geom;
	int64_t off;      /* where it is: sectors from each member's superblock
	                   * (negative for 1.0), as bitmap_offset says */
	uint64_t room;    /* bytes each member's copy may take, at most */
	bool trusted;     /* found up to date: a resync may follow it */
	uint64_t pass_ns; /* last lazy clearing pass (with lock) */
};

struct md_array {
	struct vol vol;
	struct vol *raid;
	struct md_member *m; /* by role */
	unsigned n;
	int level;
	bool readonly;
	bool unclean; /* found not clean: stays marked for resync */
	atomic_bool active;
	/* A member failure that no superblock took (-errno; 0 when none):
	 * until a superblock update records it, no write is acknowledged
	 * (md_failure_recorded), as md holds writes until it is. */
	atomic_int unrecorded;
	pthread_mutex_t lock;
	uint64_t events;
	uint32_t max_dev;
	uint16_t roles[MD_SB_MAX_DEV];
	uint64_t size;           /* sectors of each member's data area used */
	struct md_member *spare; /* standing by, in the order given */
	unsigned nspare;
	unsigned spare_cap;        /* entries allocated in spare */
	struct md_member *retired; /* replaced by a spare: closed at close */
	unsigned nretired;
	/* Found stale at a writable start with a bitmap (md_assemble.c): kept
	 * for a re-add into their role once it is vacant (md_readd.c). */
	struct md_member *stale;
	unsigned nstale;
	struct md_rec rec;
	struct md_scrub scrub;
	/* Speed limits of recoveries and checks, and the recovery thread's
	 * state for them (md_sync_throttle, md_throttle.h). */
	struct md_throttle sync;
	struct md_gate gate;
	struct md_bm bm;
	struct md_ppl *ppl; /* the partial parity log a writable PPL array keeps (md_ppl.h) */
	/* The raid5-cache journal (md_journal.h): its member (role 0xfffd;
	 * vol NULL when the array has none or it is missing), the log while
	 * one runs (a writable start), and the members' data areas it
	 * replays onto, by role. */
	struct md_member journal;
	struct md_journal *jn;
	struct vol **jn_members;
	struct md_jcache *jc; /* its write-back cache (md_jcache.h), NULL: write-through */
	struct md_readd readd;
	/* A reshape under way (md_reshape.c): a->raid is then the reshape
	 * vol over the two geometries. */
	bool reshaping;
	struct md_reshape reshape;
	/* The thread that continues it while the array serves: when it
	 * began (at rs_pos0 array bytes), the next RebuildNN event, whether
	 * it moves data now, and what rec.enabled is once the reshape ends. */
	pthread_t rs_thread;
	bool rs_started;
	atomic_bool rs_stop;
	atomic_bool rs_moving;
	uint64_t rs_t0_ns, rs_pos0;
	unsigned rs_ev_next;
	bool rs_rec_enabled;
	/* A level change that waits for the reshape under way to end (the
	 * raid0 grow's way back to raid0, 6 -> 5 from a layout rotating Q:
	 * md_takeover_live.c), to rs_then_level: called by the reshape
	 * thread once the new geometry serves alone, no lock held; NULL for
	 * none.  A hook, so that the reshape does not need the takeovers
	 * linked (the fuzz build has md_reshape.c without them). */
	void (*rs_then)(struct md_array *a);
	int rs_then_level;
	bool no_recovery; /* served without online recovery (at any level) */
};

/* md_state.c: write the array state into every live member's (and
 * spare's) superblock, events + 1; with a->lock held; 0 if at least one
 * member took it. */
int md_array_sync(struct md_array *a, bool active);
/* md_state.c: the journal member's superblock alone, events as they are
 * (the journal tail's checkpoint: the data members' superblocks do not
 * change, and each write was a seek on every disk); a->lock held. */
int md_array_sync_journal(struct md_array *a);
/* Marks the array active (in every superblock) before its first write. */
int md_mark_active(struct md_array *a);
/* Whether a role has no in-sync member. */
bool md_degraded(struct md_array *a);
/* raid_events.member_failed: records role's member as faulty. */
void md_member_failed(void *ctx, unsigned role, int err);

/* md_sync.c */
/* Make the copies of an array found unclean agree (before it is served). */
int md_resync(struct md_array *a);
/* A member being recovered failed: out for good.  With a->lock held. */
void md_rec_target_failed(struct md_array *a, unsigned role, int err);
/* At a writable start: members found under recovery join as recovering,
 * and the thread starts if there is work or a spare to stand by. */
int md_rec_start(struct md_array *a);
/* Wake the recovery thread, starting it if it is not running: 0, or
 * pthread_create's errno.  With a->lock held. */
int md_rec_wake(struct md_array *a);
/* At close: the thread saves where it got to and ends; members being
 * recovered that a write failed on are marked faulty. */
void md_rec_stop(struct md_array *a);
/* A sync (recovery, re-add, check) has done bytes of each member since it
 * began (begin: at its start): hold it as its speed limits say
 * (md_throttle.h).  The recovery thread's, without a->lock. */
void md_sync_throttle(struct md_array *a, uint64_t done, bool begin, atomic_bool *stop);

/* md_readd.c: from the recovery thread, with a->lock held (dropped while
 * working): try every member that failed by I/O and whose retry time has
 * come; re-add those that answer and qualify.  *next_ns: when the next
 * try is due (UINT64_MAX: none waits).  True when a member's state
 * changed. */
bool md_readd_poll(struct md_array *a, uint64_t *next_ns);
/* md's re-add rule for a member whose superblock reads now as `now`, for
 * role (device_uuid: the one the array knows for it, or NULL), against the
 * array's set_uuid and events and its bitmap's header (NULL: none).  0,
 * or -EINVAL / -ESTALE / -ENOTSUP with err_set() naming array and spec. */
int md_readd_check(const struct md_super *now, const uint8_t device_uuid[16],
                   const uint8_t set_uuid[16], unsigned role, uint64_t array_events,
                   const struct md_bitmap_info *bm, const char *array, const char *spec);

/* md_events.c: the events of md_events.h, each emitted once where its
 * transition is.  md_ev: event for a (and mm's name, when mm).  A rebuild
 * or check emits md_ev_progress_begin at its start (RebuildStarted; next
 * is the first step above done/total), md_ev_progress as it goes
 * (Rebuild20 ... Rebuild80, every step crossed once, in order) and
 * md_ev_finished at its end (mismatch_cnt: a check's, in sectors). */
void md_ev(struct md_array *a, const char *event, const struct md_member *mm);
void md_ev_progress_begin(struct md_array *a, unsigned *next, uint64_t done, uint64_t total);
void md_ev_progress(struct md_array *a, unsigned *next, uint64_t done, uint64_t total);
void md_ev_finished(struct md_array *a, uint64_t mismatch_cnt);

/* md_bitmap_load.c: a writable start of an array whose superblock fresh
 * records an internal bitmap: a->bm is kept from now on. */
void md_bm_load(struct md_array *a, const struct md_super *fresh);
/* md_bitmap_load.c: a's reshape began (a->reshape set) or ended (the new
 * geometry serving alone): the bitmap's geometries follow.  With no
 * request inside (md_io_hold). */
void md_bm_reshape(struct md_array *a, bool ended);
/* md_bitmap_load.c: a bitmap of header hdr (fresh: a member's superblock; at off sectors from each
 * superblock, room bytes) added to the running array a, with no request
 * inside: written whole to every live member (its bits all set with
 * all_set, else clear), then kept as md_bm_load keeps one.  With a->lock
 * held; 0 or -errno with err_set() detail. */
int md_bm_attach(struct md_array *a, const struct md_super *fresh, const struct md_bitmap_info *hdr,
                 int64_t off, uint64_t room, bool all_set);

/* md_reshape.c: open the vols of an array with a reshape under way
 * (md_reshape.h) over a's members in their roles: a->raid is the reshape
 * vol, the md vol over it.  0 or -errno with err_set(); the
 * members stay the caller's. */
int md_reshape_open(struct md_array *a, const struct md_reshape *rs, const char *name);
/* Whether every role of either geometry of rs that a's members do not
 * hold in sync (missing, or rebuilt by the reshape: not in the old one)
 * holds only parity there (parity-last's last role): a crash then tore
 * no stripe (the kernel's raid5 run() does not count such a device among
 * the degraded when it judges a dirty start). */
bool md_reshape_parity_only(const struct md_array *a, const struct md_reshape *rs);
/* Start a's reshape rs on the running array (md_array_grow: its
 * superblocks written, a->lock held and its requests held at the gate):
 * the new geometry's RAID vol over the members' new data areas, and the
 * reshape vol over it and the RAID vol serving now, in that one's place.
 * 0, or -errno with err_set() and a as it was. */
int md_reshape_begin(struct md_array *a, const struct md_reshape *rs);
/* Continue a's reshape in a thread of its own (md_reshape_run at the
 * sync speed limits) until it ends or md_reshape_stop(): 0 or -errno. */
int md_reshape_start(struct md_array *a);
/* At close: the thread stops after the window it moves and ends. */
void md_reshape_stop(struct md_array *a);

/* md_replace.c (md_replace.h) */
/* At assembly, the replacements found (cand[0..n), consumed): each joins
 * the member of its role (a->roles), or takes a role whose member is gone
 * as a recovering member, as the kernel does; else it is left out. */
void md_repl_take(struct md_array *a, struct md_member *cand, unsigned n, const char *name);
/* The replace vol over role's member and its replacement's data areas
 * (*out, and a->m[role].rv): the RAID vol's member for role.  0 or -errno
 * with err_set(). */
int md_repl_open_role(struct md_array *a, unsigned role, const char *name, struct vol **out);
/* Whether a replacement waits to be built (the recovery thread's work). */
bool md_repl_pending(struct md_array *a);
/* Build the next replacement from its recovery offset, beside client I/O,
 * and end it.  With a->lock held; drops it while copying. */
void md_repl_run(struct md_array *a);
/* role's replacement failed (err) or is given up: faulty in the role
 * table, written no more; sync: write the superblocks now.  With a->lock
 * held. */
void md_repl_fail(struct md_array *a, unsigned role, int err, bool sync);
/* The replacement named member (its vol name), if one is being built, is
 * given up as md_repl_fail does (mdadm --fail NEW): true; else false.
 * With a->lock held. */
bool md_repl_fail_named(struct md_array *a, const char *member);
/* -EBUSY with err_set() ("... WHAT once the replacement ended") while a
 * replacement is being built; else 0.  Takes a->lock. */
int md_repl_busy(struct md_array *a, const char *what);

/* md_admin.c: whether the running array a (md_of(v)) may take the new
 * member nv now (md_array_add, md_array_replace): writable, not
 * reshaping, with online recovery, not 0.90 nor with a journal, nv's
 * blocks no larger than the array's.  0, or -errno with err_set() (what:
 * "added", "replaced"). */
int md_array_can_take(struct md_array *a, struct vol *v, struct vol *nv, const char *what);

/* md_vol.c */
/* The md vol over a->raid: 0 or -errno. */
int md_vol_init(struct md_array *a, const char *name, bool readonly);
/* The md array behind v, or NULL when v is not one. */
struct md_array *md_of(struct vol *v);
/* Hold new requests at the gate and wait for those inside: 0 or -EBUSY. */
int md_io_hold(struct md_array *a);
void md_io_release(struct md_array *a);
/* The array's own reads and writes so far (md_array_info). */
void md_io_totals(struct md_array *a, struct md_io_totals *t);

#endif
