/* exec.h — the one fan-out executor every layer uses for parallel work.
 *
 * A layer that needs parallelism (a stripe touching several members, a
 * mirror read split across disks, the crypto units of a large request)
 * describes the pieces as an indexed batch and calls exec_parallel(), which
 * returns when every piece has run.  The calling thread runs pieces itself
 * while it waits, so nested batches (LUKS over RAID1 over disk models)
 * always make progress, however busy the pool is, and a batch of one costs
 * no queue hop at all. */
#ifndef URAID_EXEC_H
#define URAID_EXEC_H

/* Run fn(arg, i) for every i in [0, n), in parallel on the pool and the
 * calling thread.  Returns 0, or the error of the lowest-indexed piece that
 * failed; every piece runs whatever the others return. */
int exec_parallel(unsigned n, int (*fn)(void *arg, unsigned i), void *arg);

/* The pool size: URAID_THREADS from the environment, else enough threads
 * for blocking member I/O (pieces sleep in disk models and syscalls). */
unsigned exec_pool_size(void);

/* Processors available to this process: what CPU-bound splitting (crypto)
 * should aim at. */
unsigned exec_cpu_count(void);

#endif
