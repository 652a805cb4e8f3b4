/* passphrase.h — getting a LUKS passphrase from the user.
 *
 * With a key file, the passphrase is the file's whole content, newlines
 * included (as cryptsetup's --key-file), up to 8 MiB; "-" reads standard
 * input to its end.  Without one, it is asked for on the terminal with
 * echo off; when standard input is not a terminal, one line is read from
 * it (the newline dropped), so scripts can pipe a passphrase in. */
#ifndef URAID_PASSPHRASE_H
#define URAID_PASSPHRASE_H

#include "luks/luks.h"

#include <stdbool.h>

/* confirm: on a terminal, ask twice and require the same answer.
 * Returns 0 with *out set (the caller frees it with luks_secret_free), or
 * -errno with err_set() detail. */
int passphrase_read(const char *key_file, const char *prompt, bool confirm,
                    struct luks_secret **out);

/* A key file (--key-file) or TLS PSK file (--tls-psk) that its group or
 * others may read or change is used, with a warning naming it and its
 * mode (as systemd-cryptsetup warns; ssh refuses, but a key in a private
 * directory is safe whatever its own mode).  fd: the file opened, or -1
 * to look path up.  Pipes and other non-files are not checked. */
void passphrase_file_warn(const char *path, int fd);

/* Ask "Type 'YES' ..." on the terminal, or read the answer as one line
 * from standard input when that is not a terminal; 0 if the answer was
 * YES, -ECANCELED otherwise. */
int passphrase_confirm(const char *question);

#endif
