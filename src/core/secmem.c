/* secmem.c — locked, dump-excluded, wiped-on-free memory for secrets.
 *
 * Layout of one block: a mapping of whole pages whose first 64 bytes hold
 * the header below; the caller's bytes follow it.  Keeping the header in
 * the same mapping means secmem_free needs only the pointer. */
#include "secmem.h"

#include "log.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#define SECMEM_MAGIC 0x5345434d454d3031ull /* "SECMEM01" */
#define SECMEM_HDR 64

struct secmem_hdr {
	uint64_t magic;
	size_t len;     /* caller's size */
	size_t map_len; /* whole mapping */
	bool locked;
};
_Static_assert(sizeof(struct secmem_hdr) <= SECMEM_HDR, "header fits");

void (*secmem_free_hook)(const unsigned char *p, size_t len);

static struct secmem_hdr *secmem_hdr(const void *p)
{
	return (struct secmem_hdr *)((unsigned char *)p - SECMEM_HDR);
}

void *secmem_alloc(size_t len)
{
	static atomic_bool warned, undumpable;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t map_len;
	struct secmem_hdr *h;
	void *base;

	if (len == 0 || len > SIZE_MAX - SECMEM_HDR - page) {
		errno = EINVAL;
		return NULL;
	}
	/* The first secret makes the process undumpable: a core dump would
	 * hold what this memory cannot cover (OpenSSL's key schedules in its
	 * own heap, stack copies), and ptrace by the same user is refused. */
	if (!atomic_exchange(&undumpable, true))
		(void)prctl(PR_SET_DUMPABLE, 0);
	map_len = (len + SECMEM_HDR + page - 1) / page * page;
	base = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		errno = ENOMEM;
		return NULL;
	}
	/* Best effort: a kernel without MADV_DONTDUMP still gets a working block. */
	(void)madvise(base, map_len, MADV_DONTDUMP);
	h = base;
	h->magic = SECMEM_MAGIC;
	h->len = len;
	h->map_len = map_len;
	h->locked = mlock(base, map_len) == 0;
	if (!h->locked && !atomic_exchange(&warned, true))
		log_warn("cannot lock key memory (mlock: %s); keys may reach swap — "
			 "raise RLIMIT_MEMLOCK (ulimit -l) to avoid this",
			 strerror(errno));
	return (unsigned char *)base + SECMEM_HDR;
}

void *secmem_dup(const void *src, size_t len)
{
	void *p = secmem_alloc(len);

	if (p)
		memcpy(p, src, len);
	return p;
}

size_t secmem_size(const void *p)
{
	return secmem_hdr(p)->len;
}

bool secmem_locked(const void *p)
{
	return secmem_hdr(p)->locked;
}

void secmem_free(void *p)
{
	struct secmem_hdr *h;
	size_t map_len;
	bool locked;

	if (!p)
		return;
	h = secmem_hdr(p);
	if (h->magic != SECMEM_MAGIC)
		abort(); /* not ours: freeing it would corrupt something else */
	map_len = h->map_len;
	locked = h->locked;
	explicit_bzero(p, h->len);
	if (secmem_free_hook)
		secmem_free_hook(p, h->len);
	explicit_bzero(h, SECMEM_HDR);
	if (locked)
		munlock(h, map_len);
	munmap(h, map_len);
}
