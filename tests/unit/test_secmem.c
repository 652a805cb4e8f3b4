/* test_secmem.c — secret memory: zeroed on allocation, excluded from core
 * dumps, wiped before it is released (seen through secmem_free_hook, not
 * by reading freed memory), and still usable when mlock is refused. */
#include "check.h"

#include "core/secmem.h"

#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

static int hook_calls;
static int hook_saw_secret;

static void on_free(const unsigned char *p, size_t len)
{
	hook_calls++;
	for (size_t i = 0; i < len; i++)
		if (p[i])
			hook_saw_secret = 1;
}

/* Whether /proc/self/smaps marks the mapping holding p "dd" (don't dump). */
static int dontdump(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0, found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[5];
		if (sscanf(line, "%lx-%lx %4s ", &lo, &hi, perms) == 3) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (in && strncmp(line, "VmFlags:", 8) == 0) {
			found = strstr(line, " dd") != NULL;
			break;
		}
	}
	fclose(f);
	return found;
}

int main(void)
{
	unsigned char *k = secmem_alloc(64);
	static const unsigned char secret[32] = "correct horse battery staple!!!";

	CHECK(k != NULL);
	if (!k)
		return check_done();
	CHECK_EQ((uintptr_t)k % 64, 0);
	CHECK_EQ(secmem_size(k), 64);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(k[i], 0);
	memset(k, 0xaa, 64);
	CHECK_EQ(dontdump(k), 1);

	secmem_free_hook = on_free;
	secmem_free(k);
	CHECK_EQ(hook_calls, 1);
	CHECK_EQ(hook_saw_secret, 0);

	unsigned char *d = secmem_dup(secret, sizeof(secret));
	CHECK(d && memcmp(d, secret, sizeof(secret)) == 0);
	secmem_free(d);
	CHECK_EQ(hook_calls, 2);
	CHECK_EQ(hook_saw_secret, 0);
	secmem_free(NULL);
	CHECK_EQ(hook_calls, 2);
	CHECK(secmem_alloc(0) == NULL);

	/* With no mlock budget, memory still comes (unlocked, with a warning),
	 * unless this process may lock regardless (CAP_IPC_LOCK). */
	struct rlimit rl = { 0, 0 };
	if (setrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
		unsigned char *u = secmem_alloc(100000);
		CHECK(u != NULL);
		if (u) {
			memset(u, 0x55, 100000);
			secmem_free(u);
			CHECK_EQ(hook_saw_secret, 0);
		}
	}
	secmem_free_hook = NULL;
	return check_done();
}
