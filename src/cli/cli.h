/* cli.h — the uraid subcommands.  Each lives in its own cmd_*.c and is
 * listed once in main.c's table.  A command returns the process exit code
 * (0 success, 1 failure, 2 usage error) and prints its own messages. */
#ifndef URAID_CLI_H
#define URAID_CLI_H

#include <stdbool.h>
#include <stdint.h>

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv); /* argv[0] is the command name */
	const char *summary;
};

/* Print "uraid: <what>: <detail>" for a negative errno r, using the detail
 * recorded with err_set() when there is one.  Returns 1. */
int cli_fail(const char *what, int r);

/* Print o as the JSON the commands' --json gives (pretty, '/' not escaped,
 * a newline after) and drop the reference (cmd_probe.c). */
struct json_object;
void cli_print_json(struct json_object *o);

/* A usage mistake: one line, "uraid: CMD: WHAT (see 'uraid CMD --help')",
 * rather than the whole usage; what NULL where getopt's own line already
 * named the option (then only the pointer).  Returns 2, the usage exit. */
int cli_usage_error(const char *cmd, const char *what);

int cmd_serve(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_examine(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_detect(int argc, char **argv);
/* --assume SPEC for members specs[0..n) (cmd_detect.c): parsed and held
 * to the members given, refused unless readonly; 0 with *out set (free
 * with stack_assume_free), or -EINVAL, the message printed. */
struct stack_assume;
int cli_assume_open(const char *spec, char **specs, int n, bool readonly,
                    struct stack_assume **out);
int cmd_check(int argc, char **argv);
int cmd_add(int argc, char **argv);
int cmd_rebuild(int argc, char **argv);
/* How `uraid rebuild` shows an offline rebuild and stops it on SIGINT or
 * SIGTERM (cmd_rebuild.c), for `uraid grow` too; cli_rebuild_end() puts
 * the signals back once it returned. */
struct md_rebuild_opts;
void cli_rebuild_opts(struct md_rebuild_opts *ro, bool force);
void cli_rebuild_end(void);
int cmd_replace(int argc, char **argv);
/* cmd_replace.c: assemble the members specs[0..n) writable and wait while
 * a replacement is built (SIGINT/SIGTERM stop it, its offset saved); the
 * exit code.  Whether any of specs holds a replacement's superblock. */
int cli_replace_build(char **specs, unsigned n);
bool cli_has_replacement(char **specs, unsigned n);
int cmd_grow(int argc, char **argv);
int cmd_detail(int argc, char **argv);
int cmd_monitor(int argc, char **argv);
/* Progress of a long command (progress.c): on a terminal one line redrawn
 * with percent, bytes, rate and time left; otherwise a plain line each
 * tenth.  show(done, from, total, last): bytes done of total, from where
 * this run began (for the rate); last once at the end. */
struct cli_progress {
	char label[96];
	bool tty, shown, ended;
	unsigned tenth;
	uint64_t t0, last_ns;
};
void cli_progress_begin(struct cli_progress *p, const char *label);
void cli_progress_show(struct cli_progress *p, uint64_t done, uint64_t from, uint64_t total,
                       bool last);

/* uraid detail --watch (cmd_detail_watch.c): redraw the counters' rates
 * every interval seconds, count times (0: until interrupted). */
int detail_watch(const char *sock, double interval, unsigned count);
int cmd_fail(int argc, char **argv);
int cmd_remove(int argc, char **argv);
/* The control socket's clients (cmd_control.c): whether path is a Unix
 * socket (a `uraid serve --control` one), and the hot `uraid add`. */
bool cli_is_control_socket(const char *path);
int cmd_add_hot(const char *control, const char *spec, bool force, const char *array,
                uint8_t devflags);
/* `uraid replace CONTROL OLD --with NEW`: md_array_replace() on the serve. */
int cmd_replace_hot(const char *control, const char *old_spec, const char *new_spec, bool force,
                    const char *array);
/* `uraid add --re-add CONTROL MEMBER`: md_array_readd() on the serve. */
int cmd_readd_hot(const char *control, const char *spec);
/* `uraid check CONTROL`: action "check", "repair" or "stop". */
int cmd_check_hot(const char *control, const char *action, const char *array, bool wait);
int cmd_luks_format(int argc, char **argv);
int cmd_luks_dump(int argc, char **argv);
int cmd_luks_add_key(int argc, char **argv);
int cmd_luks_remove_key(int argc, char **argv);
int cmd_luks_change_key(int argc, char **argv);
int cmd_luks_kill_slot(int argc, char **argv);
int cmd_luks_uuid(int argc, char **argv);
int cmd_is_luks(int argc, char **argv);
int cmd_luks_header_backup(int argc, char **argv);
int cmd_luks_header_restore(int argc, char **argv);
int cmd_zero_superblock(int argc, char **argv);

#endif
