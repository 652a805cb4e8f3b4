/* placeholder until the NBD server lands */
#include "cli.h"
#include <stdio.h>
int cmd_serve(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "uraid: serve: not built yet\n"); return 1; }
