/* random.h — random bytes for keys, salts and uuids, from the kernel's
 * CSPRNG (getrandom). */
#ifndef URAID_RANDOM_H
#define URAID_RANDOM_H

#include <stddef.h>

/* Fill buf with len random bytes.  0, or a negative errno with detail
 * (err_set). */
int random_fill(void *buf, size_t len);

#endif
