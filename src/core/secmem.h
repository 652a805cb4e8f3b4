/* secmem.h — memory for secrets: keys, passphrases, key material.
 *
 * Blocks come from their own anonymous mappings, locked into RAM (mlock:
 * never written to swap) and excluded from core dumps (MADV_DONTDUMP).
 * secmem_free() wipes the block with explicit_bzero before it gives the
 * pages back.  If the RLIMIT_MEMLOCK budget is spent, secmem still hands
 * out memory, unlocked, and warns once: refusing to open a volume because
 * a key could not be pinned would help nobody.  Secrets never leave this
 * memory for a log line or a message. */
#ifndef URAID_SECMEM_H
#define URAID_SECMEM_H

#include <stdbool.h>
#include <stddef.h>

/* A zeroed block of len bytes (len > 0), 64-byte aligned, or NULL
 * (errno ENOMEM / EINVAL).  Each block costs at least one page.  The
 * first call makes the process undumpable (PR_SET_DUMPABLE 0: no core
 * dump, no ptrace by the same user), as keys are about to be handled. */
void *secmem_alloc(size_t len);

/* A locked copy of src[0, len), or NULL. */
void *secmem_dup(const void *src, size_t len);

/* Wipe and release a block from secmem_alloc/secmem_dup; NULL is a no-op. */
void secmem_free(void *p);

/* The usable size of a block (what was asked for). */
size_t secmem_size(const void *p);

/* Whether the block is locked in RAM (false after the mlock fallback). */
bool secmem_locked(const void *p);

/* Test hook: when set, secmem_free calls it with the block's bytes after
 * wiping them and before unmapping, so a test can see the wipe happen
 * without reading freed memory. */
extern void (*secmem_free_hook)(const unsigned char *p, size_t len);

#endif
