/* cmd_serve.c — `uraid serve`: assemble the stack from its members (by
 * probing, stack/stack.h) and export the top vol over NBD until told to stop.
 * Stopping is orderly whatever the cause (SIGINT/SIGTERM, --run's command
 * exiting, the --stdio client leaving): the server finishes the requests it
 * has read, then the stack is flushed and closed, which is what leaves md
 * arrays in a clean state. */
#include "cli.h"
#include "ctl/control.h"
#include "ctl/events.h"
#include "stack/passphrase.h"
#include "stack/assume.h"
#include "stack/graph.h"

#include "core/log.h"
#include "core/units.h"
#include "member/member.h"
#include "nbd/server.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#define SERVE_MAX_EXPORTS 256

struct serve_args {
	const char *socket_path;
	int port; /* -1: none */
	const char *bind_addr;
	const char *run_cmd;
	const char *pid_file;
	const char *control_path;
	struct ctl_notify_opts notify; /* --program, --syslog */
	bool test;                     /* --test */
	bool use_stdio;
	bool foreground;
	struct stack_opts stack;
	struct nbd_server_opts nbd;
	const char *only[SERVE_MAX_EXPORTS]; /* --export NAME: serve only these */
	unsigned nonly;
	struct stack_assume *assume; /* --assume */
};

static struct nbd_server *serve_server; /* for the signal handler */

static void serve_on_signal(int sig)
{
	(void)sig;
	if (serve_server)
		nbd_server_stop(serve_server);
}

static void serve_usage(FILE *f)
{
	fprintf(f,
		"usage: uraid serve [OPTIONS] MEMBER...\n"
		"\n"
		"Assemble the members (md arrays and LUKS are found by probing) and\n"
		"export the resulting volume over NBD.\n"
		"\n"
		"Where to listen (one is required, unless a socket is passed by systemd\n"
		"socket activation, as nbdinfo -- [ uraid serve ... ] does):\n"
		"  --socket PATH          listen on a Unix socket\n"
		"  --port N               listen on TCP port N (0: any free port)\n"
		"  --bind ADDR            TCP address to bind (default 127.0.0.1)\n"
		"  --stdio                serve one client on stdin/stdout\n"
		"  --run CMD              serve, run CMD via /bin/sh -c with $uri set,\n"
		"                         stop when it exits and exit with its status\n"
		"Process:\n"
		"  -f, --foreground       do not daemonize (--run and --stdio imply it)\n"
		"  --pid-file FILE        write the server's pid to FILE\n"
		"  --control PATH         accept management requests on a Unix socket at PATH\n"
		"                         (uraid detail / fail / remove / add / check / monitor)\n"
		"Events (mdadm --monitor's: Fail, DegradedArray, RebuildStarted, ...):\n"
		"  --program CMD          run CMD EVENT DEVICE [COMPONENT] for each md event,\n"
		"                         one at a time (no shell)\n"
		"  --syslog               log md events to syslog (facility daemon)\n"
		"  --test                 send a TestMessage for every md array at start\n"
		"Stack:\n"
		"  -r, --readonly         open everything read-only; refuse writes\n"
		"  --direct               open file members with O_DIRECT\n"
		"  --key-file FILE        LUKS passphrase file\n"
		"  --degraded             start arrays that are missing members\n"
		"  --force                start a RAID5/6 that is degraded and was not shut\n"
		"                         down cleanly (md's write hole: stripes written at\n"
		"                         the crash may be wrong on the missing member); take\n"
		"                         stale members back into an array that cannot start\n"
		"                         without them, as mdadm --assemble --force: writing\n"
		"                         their event counts up (with --readonly, in memory)\n"
		"  --assume GEOMETRY      build an array without metadata from the members:\n"
		"                         level=5,chunk=64K,layout=left-symmetric,\n"
		"                         order=c.img,a.img,b.img[,offset=SIZE][,size=SIZE]\n"
		"                         (order: the members given, in role order; `missing`\n"
		"                         for an absent one; needs --readonly; uraid detect)\n"
		"  --no-rebuild           do not recover md members online (members being\n"
		"                         rebuilt and spares are left out; `uraid rebuild`)\n"
		"  --sync-speed-max RATE  md's speed_limit_max: online recoveries and checks\n"
		"                         go at most RATE bytes/s of each member (e.g. 200M;\n"
		"                         default: no limit)\n"
		"  --sync-speed-min RATE  md's speed_limit_min: while clients use the array,\n"
		"                         at most RATE (default: no limit)\n"
		"  --journal-mode MODE    md write journals: write-through (md's default) or\n"
		"                         write-back (acknowledged once on the journal,\n"
		"                         destaged to the members later)\n"
		"  --journal-cache SIZE   write-back: data held in memory (default 64M; at\n"
		"                         most a quarter of the journal)\n"
		"NBD:\n"
		"  --export NAME          serve only the volume NAME (`uraid probe` lists the\n"
		"                         names); may be given several times. Default: every\n"
		"                         volume found, each an export under its name\n"
		"  --export-name NAME     with one export: a name accepted besides \"\"\n"
		"  --threads N            worker threads per connection (default 16)\n"
		"  --max-connections N    established clients (default 16)\n"
		"  --max-handshakes N     clients negotiating at once (default 64); when\n"
		"                         full, the oldest unauthenticated one is dropped\n"
		"  --handshake-timeout S  drop clients that take longer to negotiate (10)\n"
		"  --idle-timeout S       close a client that sends no request for S seconds\n"
		"                         (default: never)\n"
		"  --max-buffer-memory SIZE  request buffers of all clients (default 256M)\n"
		"  --tls off|on|require   offer TLS (NBD_OPT_STARTTLS), or refuse clients\n"
		"                         that do not use it (default off; on with a key)\n"
		"  --tls-psk FILE         TLS pre-shared keys, username:hexkey lines (psktool)\n"
		"  --tls-certificates DIR TLS X.509: DIR/server-cert.pem, DIR/server-key.pem\n"
		"  --tls-verify-peer      X.509: only clients with a certificate issued by\n"
		"                         DIR/ca-cert.pem, not revoked in DIR/ca-crl.pem\n"
		"                         (if present), get a TLS session (no effect with a PSK)\n"
		"  -v, --verbose          more messages (twice: per-request debug)\n"
		"  -h, --help             this text\n");
}

/* What serve exports: one vol (which holds the rest of the stack), or,
 * for several, the graph that holds them all. */
struct serve_vols {
	struct vol *top;       /* one export */
	struct stack_graph *g; /* several */
	struct nbd_export *ex;
	unsigned n;
	struct stack_info info;
};

/* Mark in need[] the members (graph roots) node i is made of. */
static void serve_roots(const struct stack_graph *g, unsigned i, bool *need, unsigned depth)
{
	const struct stack_node *nd = &g->node[i];

	if (nd->nfrom == 0)
		need[i] = true;
	for (unsigned k = 0; k < nd->nfrom && depth < 64; k++)
		serve_roots(g, (unsigned)nd->from[k], need, depth + 1);
}

/* --export NAME...: which members the named volumes need, found by a
 * read-only probe first, so that arrays the user did not name are not
 * even opened (a writable open might resync or rebuild them).  Fills
 * specs[0..*n) in place with those members, in the order given. */
static int serve_pick_members(const struct serve_args *a, char **specs, int *n)
{
	struct stack_opts ro = a->stack;
	struct stack_graph *g;
	bool *need;
	int r, w = 0;

	ro.readonly = true;
	ro.no_recovery = true;
	ro.no_luks = true; /* a LUKS plaintext has the name of its device */
	/* Its messages come again from the open that counts. */
	int verbosity = log_verbosity;
	log_verbosity = LOG_ERROR;
	r = stack_graph_open(specs, *n, &ro, &g);
	log_verbosity = verbosity;
	if (r < 0)
		return r;
	need = calloc(g->n, sizeof(*need));
	if (!need) {
		stack_graph_close(g);
		return -ENOMEM;
	}
	for (unsigned k = 0; k < a->nonly && r == 0; k++) {
		int i = stack_graph_find(g, a->only[k]);
		if (i < 0 || !stack_graph_is_export(g, (unsigned)i))
			r = stack_graph_no_such_export(g, a->only[k]);
		else
			serve_roots(g, (unsigned)i, need, 0);
	}
	for (int i = 0; i < *n && r == 0; i++)
		if (need[i])
			specs[w++] = specs[i];
	if (r == 0)
		*n = w;
	free(need);
	stack_graph_close(g);
	return r;
}

static int serve_open(struct serve_args *a, char **specs, int n, struct serve_vols *sv)
{
	unsigned *idx = NULL, k;
	int r;

	memset(sv, 0, sizeof(*sv));
	if (a->stack.raw) {
		r = stack_open_info(specs, n, &a->stack, &sv->top, &sv->info);
		sv->n = r < 0 ? 0 : 1;
		return r;
	}
	if (a->nonly) {
		r = serve_pick_members(a, specs, &n);
		if (r < 0)
			return r;
	}
	r = stack_graph_open(specs, n, &a->stack, &sv->g);
	if (r < 0)
		return r;
	idx = calloc(sv->g->n, sizeof(*idx));
	sv->ex = calloc(sv->g->n, sizeof(*sv->ex));
	if (!idx || !sv->ex) {
		r = -ENOMEM;
		goto out;
	}
	k = 0;
	if (a->nonly) {
		for (unsigned j = 0; j < a->nonly; j++) {
			int i = stack_graph_find(sv->g, a->only[j]);
			if (i < 0 || !stack_graph_is_export(sv->g, (unsigned)i)) {
				r = stack_graph_no_such_export(sv->g, a->only[j]);
				goto out;
			}
			idx[k++] = (unsigned)i;
		}
	} else
		k = stack_graph_exports(sv->g, idx);
	if (k == 0) {
		r = stack_graph_no_export(sv->g);
		goto out;
	}
	if (k == 1) {
		stack_info_of(sv->g, idx[0], &sv->info);
		r = stack_take_export(sv->g, idx[0], &sv->top);
		sv->g = NULL;
		sv->n = r < 0 ? 0 : 1;
		goto out;
	}
	for (unsigned j = 0; j < k; j++) {
		const struct stack_node *nd = &sv->g->node[idx[j]];
		sv->ex[j] = (struct nbd_export){.name = nd->name,
		                                .description = nd->what,
		                                .vol = nd->vol,
		                                .readonly = a->stack.readonly};
		/* The control socket manages the first array served. */
		if (!sv->info.md)
			stack_info_of(sv->g, idx[j], &sv->info);
	}
	sv->n = k;
	r = 0;
out:
	free(idx);
	if (r < 0) {
		stack_graph_close(sv->g);
		sv->g = NULL;
		free(sv->ex);
		sv->ex = NULL;
	}
	return r;
}

/* Flush what serve exported and close it; 0 or -errno of a flush. */
static int serve_close(struct serve_vols *sv)
{
	int ret = 0;

	for (unsigned j = 0; j < sv->n; j++) {
		struct vol *v = sv->top ? sv->top : sv->ex[j].vol;
		int r = vol_flush(v);
		if (r < 0) {
			log_error("%s: flush at exit: %s", v->name, err_detail(r));
			ret = r;
		}
	}
	if (sv->top)
		vol_close(sv->top);
	stack_graph_close(sv->g);
	free(sv->ex);
	memset(sv, 0, sizeof(*sv));
	return ret;
}

static int parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

/* Systemd socket activation (what `nbdinfo -- [ uraid serve ... ]` and
 * nbdcopy's [ CMD ] do): LISTEN_PID is us and LISTEN_FDS=1 hands us a
 * listening socket as fd 3.  Returns the fd or -1. */
static int serve_activation_fd(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");

	if (!pid || !fds || atol(pid) != (long)getpid() || strcmp(fds, "1") != 0)
		return -1;
	return 3;
}

/* Returns 0, or the exit code for a usage error / --help (as -code - 1). */
static int serve_parse(int argc, char **argv, struct serve_args *a, int *first)
{
	enum { OPT_SOCKET = 256, OPT_PORT, OPT_BIND, OPT_RUN, OPT_STDIO, OPT_PIDFILE,
	       OPT_DIRECT, OPT_KEYFILE, OPT_DEGRADED, OPT_THREADS, OPT_EXPORT, OPT_MAXCONN,
	       OPT_HSTIMEOUT, OPT_TLS, OPT_TLS_PSK, OPT_TLS_CERTS, OPT_TLS_VERIFY, OPT_NOREBUILD, OPT_SYNCMIN, OPT_SYNCMAX,
	       OPT_CONTROL, OPT_MAXHS, OPT_IDLE, OPT_BUFMEM, OPT_FORCE, OPT_ONLY, OPT_PROGRAM,
	       OPT_SYSLOG, OPT_TEST, OPT_ASSUME, OPT_JMODE, OPT_JCACHE };
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "export", required_argument, NULL, OPT_ONLY },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "bind", required_argument, NULL, OPT_BIND },
		{ "run", required_argument, NULL, OPT_RUN },
		{ "stdio", no_argument, NULL, OPT_STDIO },
		{ "foreground", no_argument, NULL, 'f' },
		{ "pid-file", required_argument, NULL, OPT_PIDFILE },
		{ "control", required_argument, NULL, OPT_CONTROL },
		{ "program", required_argument, NULL, OPT_PROGRAM },
		{ "syslog", no_argument, NULL, OPT_SYSLOG },
		{ "test", no_argument, NULL, OPT_TEST },
		{ "readonly", no_argument, NULL, 'r' },
		{ "direct", no_argument, NULL, OPT_DIRECT },
		{ "key-file", required_argument, NULL, OPT_KEYFILE },
		{ "degraded", no_argument, NULL, OPT_DEGRADED },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "assume", required_argument, NULL, OPT_ASSUME },
		{ "no-rebuild", no_argument, NULL, OPT_NOREBUILD },
		{ "sync-speed-min", required_argument, NULL, OPT_SYNCMIN },
		{ "sync-speed-max", required_argument, NULL, OPT_SYNCMAX },
		{ "journal-mode", required_argument, NULL, OPT_JMODE },
		{ "journal-cache", required_argument, NULL, OPT_JCACHE },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "export-name", required_argument, NULL, OPT_EXPORT },
		{ "max-connections", required_argument, NULL, OPT_MAXCONN },
		{ "handshake-timeout", required_argument, NULL, OPT_HSTIMEOUT },
		{ "max-handshakes", required_argument, NULL, OPT_MAXHS },
		{ "idle-timeout", required_argument, NULL, OPT_IDLE },
		{ "max-buffer-memory", required_argument, NULL, OPT_BUFMEM },
		{ "tls", required_argument, NULL, OPT_TLS },
		{ "tls-psk", required_argument, NULL, OPT_TLS_PSK },
		{ "tls-certificates", required_argument, NULL, OPT_TLS_CERTS },
		{ "tls-verify-peer", no_argument, NULL, OPT_TLS_VERIFY },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *assume = NULL;
	unsigned u;
	int c;
	bool tls_set = false;

	a->port = -1;
	a->bind_addr = "127.0.0.1";
	optind = 1;
	while ((c = getopt_long(argc, argv, "frvh", lo, NULL)) != -1) {
		switch (c) {
		case OPT_SOCKET:
			a->socket_path = optarg;
			break;
		case OPT_PORT:
			if (parse_uint(optarg, 0, 65535, &u) < 0) {
				fprintf(stderr, "uraid serve: bad --port '%s'\n", optarg);
				return 2;
			}
			a->port = (int)u;
			break;
		case OPT_BIND:
			a->bind_addr = optarg;
			break;
		case OPT_RUN:
			a->run_cmd = optarg;
			break;
		case OPT_STDIO:
			a->use_stdio = true;
			break;
		case 'f':
			a->foreground = true;
			break;
		case OPT_PIDFILE:
			a->pid_file = optarg;
			break;
		case OPT_CONTROL:
			a->control_path = optarg;
			break;
		case OPT_PROGRAM:
			if (!*optarg) {
				fprintf(stderr, "uraid serve: --program needs a command\n");
				return 2;
			}
			a->notify.program = optarg;
			break;
		case OPT_SYSLOG:
			a->notify.syslog = true;
			break;
		case OPT_TEST:
			a->test = true;
			break;
		case 'r':
			a->stack.readonly = true;
			break;
		case OPT_DIRECT:
			a->stack.direct = true;
			break;
		case OPT_KEYFILE:
			a->stack.key_file = optarg;
			break;
		case OPT_DEGRADED:
			a->stack.run_degraded = true;
			break;
		case OPT_FORCE:
			a->stack.start_dirty_degraded = true;
			a->stack.force_stale = true;
			break;
		case OPT_ASSUME:
			assume = optarg;
			break;
		case OPT_NOREBUILD:
			a->stack.no_recovery = true;
			break;
		case OPT_SYNCMIN:
		case OPT_SYNCMAX:
			if (parse_size(optarg, c == OPT_SYNCMIN ? &a->stack.sync_min
			                                        : &a->stack.sync_max) < 0) {
				fprintf(stderr, "uraid serve: bad --%s '%s' (bytes per second: 50M)\n",
				        c == OPT_SYNCMIN ? "sync-speed-min" : "sync-speed-max", optarg);
				return 2;
			}
			break;
		case OPT_JMODE:
			if (strcmp(optarg, "write-back") && strcmp(optarg, "write-through")) {
				fprintf(stderr, "uraid serve: bad --journal-mode '%s' (write-back or "
				        "write-through)\n", optarg);
				return 2;
			}
			a->stack.journal_writeback = strcmp(optarg, "write-back") == 0;
			break;
		case OPT_JCACHE:
			if (parse_size(optarg, &a->stack.journal_cache) < 0 ||
			    a->stack.journal_cache < 65536) {
				fprintf(stderr, "uraid serve: bad --journal-cache '%s' (bytes, at least "
				        "64K: 64M)\n", optarg);
				return 2;
			}
			break;
		case OPT_THREADS:
			if (parse_uint(optarg, 1, 1024, &a->nbd.threads) < 0) {
				fprintf(stderr, "uraid serve: --threads takes 1..1024\n");
				return 2;
			}
			break;
		case OPT_ONLY:
			if (a->nonly == SERVE_MAX_EXPORTS) {
				fprintf(stderr, "uraid serve: --export at most %d times\n",
				        SERVE_MAX_EXPORTS);
				return 2;
			}
			a->only[a->nonly++] = optarg;
			break;
		case OPT_EXPORT:
			if (strlen(optarg) > 4096) {
				fprintf(stderr, "uraid serve: --export-name too long\n");
				return 2;
			}
			a->nbd.export_name = optarg;
			break;
		case OPT_MAXCONN:
			if (parse_uint(optarg, 1, 4096, &a->nbd.max_connections) < 0) {
				fprintf(stderr, "uraid serve: --max-connections takes 1..4096\n");
				return 2;
			}
			break;
		case OPT_HSTIMEOUT:
			if (parse_uint(optarg, 1, 3600, &u) < 0) {
				fprintf(stderr, "uraid serve: --handshake-timeout takes 1..3600 seconds\n");
				return 2;
			}
			a->nbd.handshake_timeout_ms = u * 1000;
			break;
		case OPT_MAXHS:
			if (parse_uint(optarg, 1, 4096, &a->nbd.max_handshakes) < 0) {
				fprintf(stderr, "uraid serve: --max-handshakes takes 1..4096\n");
				return 2;
			}
			break;
		case OPT_IDLE:
			/* In ms, it goes to poll() as an int. */
			if (parse_uint(optarg, 1, 2000000, &u) < 0) {
				fprintf(stderr, "uraid serve: --idle-timeout takes 1..2000000 seconds\n");
				return 2;
			}
			a->nbd.idle_timeout_ms = u * 1000;
			break;
		case OPT_BUFMEM:
			if (parse_size(optarg, &a->nbd.max_buffer_memory) < 0 ||
			    a->nbd.max_buffer_memory < (1u << 20)) {
				fprintf(stderr, "uraid serve: bad --max-buffer-memory '%s' (at least 1M)\n",
				        optarg);
				return 2;
			}
			break;
		case OPT_TLS:
			if (strcmp(optarg, "off") == 0) {
				a->nbd.tls = NBD_TLS_OFF;
			} else if (strcmp(optarg, "on") == 0) {
				a->nbd.tls = NBD_TLS_ON;
			} else if (strcmp(optarg, "require") == 0) {
				a->nbd.tls = NBD_TLS_REQUIRE;
			} else {
				fprintf(stderr, "uraid serve: --tls takes off, on or require\n");
				return 2;
			}
			tls_set = true;
			break;
		case OPT_TLS_PSK:
			a->nbd.tls_psk_file = optarg;
			break;
		case OPT_TLS_CERTS:
			a->nbd.tls_cert_dir = optarg;
			break;
		case OPT_TLS_VERIFY:
			a->nbd.tls_verify_peer = true;
			break;
		case 'v':
			log_verbosity = log_verbosity < LOG_INFO ? LOG_INFO : LOG_DEBUG;
			break;
		case 'h':
			serve_usage(stdout);
			return -1;
		default:
			return cli_usage_error("serve", NULL);
		}
	}
	*first = optind;
	/* A key or certificate alone turns TLS on (offered); --tls says more. */
	if (a->nbd.tls_psk_file && a->nbd.tls_cert_dir) {
		fprintf(stderr, "uraid serve: --tls-psk and --tls-certificates exclude each other\n");
		return 2;
	}
	if (!tls_set && (a->nbd.tls_psk_file || a->nbd.tls_cert_dir))
		a->nbd.tls = NBD_TLS_ON;
	if (a->nbd.tls_psk_file)
		passphrase_file_warn(a->nbd.tls_psk_file, -1);
	if (a->nbd.tls != NBD_TLS_OFF && !a->nbd.tls_psk_file && !a->nbd.tls_cert_dir) {
		fprintf(stderr, "uraid serve: --tls %s needs --tls-psk or --tls-certificates\n",
			a->nbd.tls == NBD_TLS_ON ? "on" : "require");
		return 2;
	}
	/* Accepted with a PSK, as nbdkit does (the key is the client's proof),
	 * but not where it would check nothing at all. */
	if (a->nbd.tls_verify_peer && a->nbd.tls == NBD_TLS_OFF) {
		fprintf(stderr, "uraid serve: --tls-verify-peer %s\n",
			tls_set ? "contradicts --tls off" : "needs --tls-certificates DIR");
		return 2;
	}
	if (a->stack.sync_min && a->stack.sync_max && a->stack.sync_min > a->stack.sync_max) {
		fprintf(stderr, "uraid serve: --sync-speed-min is above --sync-speed-max\n");
		return 2;
	}
	if (optind >= argc) {
		fprintf(stderr, "uraid serve: no members given\n");
		return 2;
	}
	if (a->socket_path && a->port >= 0) {
		fprintf(stderr, "uraid serve: --socket and --port exclude each other\n");
		return 2;
	}
	if (a->use_stdio && (a->socket_path || a->port >= 0 || a->run_cmd)) {
		fprintf(stderr, "uraid serve: --stdio excludes --socket, --port and --run\n");
		return 2;
	}
	if (!a->use_stdio && !a->run_cmd && !a->socket_path && a->port < 0 &&
	    serve_activation_fd() < 0) {
		fprintf(stderr, "uraid serve: say where to listen: --socket, --port, --run or --stdio\n");
		return 2;
	}
	if (assume && cli_assume_open(assume, argv + optind, argc - optind, a->stack.readonly,
	                              &a->assume) < 0)
		return 2;
	a->stack.assume = a->assume;
	return 0;
}

/* For uraid detail: the NBD connections open now. */
static unsigned serve_connections(void *ctx)
{
	return nbd_server_connections(ctx);
}

/* Percent-encode an export name for the path part of an NBD URI. */
static void uri_append_name(char *out, size_t cap, const char *name)
{
	size_t n = strlen(out);
	for (const unsigned char *p = (const unsigned char *)name; *p && n + 4 < cap; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p))
			out[n++] = (char)*p;
		else
			n += (size_t)snprintf(out + n, cap - n, "%%%02X", *p);
	}
	out[n] = '\0';
}

/* The user a PSK file names first ("alice" of "alice:hexkey"), for a
 * client URI; "" if it cannot be read (the server checked it already). */
static void psk_first_user(const char *path, char *user, size_t cap)
{
	FILE *f = fopen(path, "r");
	char line[1024];

	user[0] = '\0';
	if (!f)
		return;
	while (!user[0] && fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, ":\r\n");
		if (line[n] == ':' && n > 0 && n < cap) {
			memcpy(user, line, n);
			user[n] = '\0';
		}
	}
	fclose(f);
}

/* The export's URI, as --run hands it over and clients use it.  With TLS
 * required, an nbds URI that says how (libnbd's query parameters): the
 * PSK file and its first user, or the certificate directory, which must
 * then hold the CA's ca-cert.pem too, as nbdkit's layout has it. */
static void make_uri(const struct serve_args *a, const char *sock, int port,
		     char *uri, size_t cap)
{
	const char *name = a->nbd.export_name ? a->nbd.export_name : "";
	bool tls = a->nbd.tls == NBD_TLS_REQUIRE;
	const char *cred = a->nbd.tls_psk_file ? a->nbd.tls_psk_file : a->nbd.tls_cert_dir;
	char user[256] = "", at[260] = "", full[PATH_MAX];

	if (tls && a->nbd.tls_psk_file) {
		psk_first_user(a->nbd.tls_psk_file, user, sizeof(user));
		if (user[0])
			snprintf(at, sizeof(at), "%s@", user);
	}
	if (sock) {
		snprintf(uri, cap, "%s+unix://%s/", tls ? "nbds" : "nbd", at);
		uri_append_name(uri, cap, name);
		size_t n = strlen(uri);
		snprintf(uri + n, cap - n, "?socket=%s", sock);
	} else {
		bool v6 = strchr(a->bind_addr, ':') != NULL;
		snprintf(uri, cap, "%s://%s%s%s%s:%d/", tls ? "nbds" : "nbd", at, v6 ? "[" : "",
			 a->bind_addr, v6 ? "]" : "", port);
		uri_append_name(uri, cap, name);
	}
	if (tls && cred) {
		size_t n = strlen(uri);
		snprintf(uri + n, cap - n, "%s%s=%s", sock ? "&" : "?",
			 a->nbd.tls_psk_file ? "tls-psk-file" : "tls-certificates",
			 realpath(cred, full) ? full : cred);
	}
}

/* Fork; the parent waits until the child says it is listening (one byte
 * on the pipe) and exits 0, or exits with the child's failure.  Returns
 * the pipe's write end in the child. */
static int serve_daemonize(void)
{
	int p[2];
	pid_t pid;
	char b;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		ssize_t got;
		do
			got = read(p[0], &b, 1);
		while (got < 0 && errno == EINTR);
		if (got == 1)
			_exit(0);
		int st;
		if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st))
			_exit(WEXITSTATUS(st));
		_exit(1);
	}
	close(p[0]);
	return p[1];
}

static void serve_detach(int ready_fd)
{
	int null = open("/dev/null", O_RDWR);

	setsid();
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (null > 2)
			close(null);
	}
	if (chdir("/") != 0) {
		/* Stay where we are: nothing relies on the directory. */
	}
	if (write(ready_fd, "1", 1) != 1) {
		/* The parent is gone; serve anyway. */
	}
	close(ready_fd);
}

static int write_pid_file(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return err_set(-errno, "%s: %s", path, strerror(errno));
	fprintf(f, "%d\n", (int)getpid());
	if (fclose(f) != 0)
		return err_set(-EIO, "%s: write failed", path);
	return 0;
}

struct run_child {
	pid_t pid;
	int status;
	struct nbd_server *srv;
};

static void *run_waiter(void *arg)
{
	struct run_child *rc = arg;
	while (waitpid(rc->pid, &rc->status, 0) < 0 && errno == EINTR)
		;
	nbd_server_stop(rc->srv);
	return NULL;
}

/* The child of this multi-threaded process may call only async-signal-
 * safe functions until it execs (another thread may hold the allocator's
 * lock at the fork: setenv() there once hung the child for good), so its
 * environment, with uri set, is made before the fork. */
static pid_t spawn_run(const char *cmd, const char *uri)
{
	extern char **environ;
	size_t n = 0, k = 0;
	char **envp, *var = NULL;
	pid_t pid;

	while (environ[n])
		n++;
	envp = calloc(n + 2, sizeof(*envp));
	if (!envp || asprintf(&var, "uri=%s", uri) < 0) {
		free(envp);
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "uri=", 4) != 0)
			envp[k++] = environ[i];
	envp[k++] = var;
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "sh", "-c", (char *)cmd, NULL };
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execve("/bin/sh", argv, envp);
		_exit(127);
	}
	free(var);
	free(envp);
	return pid;
}

static void *stdio_stopper(void *arg)
{
	nbd_server_run(arg);
	return NULL;
}

int cmd_serve(int argc, char **argv)
{
	struct serve_args a = { 0 };
	struct vol *top = NULL;
	struct nbd_server *srv = NULL;
	struct serve_vols sv = {0};
	struct ctl_target ct = {0};
	struct ctl *ctl = NULL;
	struct ctl_notify *notify = NULL;
	char tmpdir[] = "/tmp/uraid-serve-XXXXXX";
	bool made_tmpdir = false;
	char sockbuf[PATH_MAX], uri[PATH_MAX + 4200];
	const char *sock;
	int first, r, rc = 1, port = 0, ready_fd = -1;
	bool pid_written = false;

	r = serve_parse(argc, argv, &a, &first);
	if (r)
		return r < 0 ? 0 : r;
	int act_fd = a.socket_path || a.port >= 0 || a.use_stdio || a.run_cmd
			     ? -1 : serve_activation_fd();
	if (act_fd >= 0) {
		unsetenv("LISTEN_PID");
		unsetenv("LISTEN_FDS");
		unsetenv("LISTEN_FDNAMES");
	}
	if (!a.use_stdio && !a.run_cmd && !a.foreground && act_fd < 0) {
		ready_fd = serve_daemonize();
		if (ready_fd < 0) {
			stack_assume_free(a.assume);
			return cli_fail("daemonize", ready_fd);
		}
	}
	signal(SIGPIPE, SIG_IGN);

	/* Before the arrays start: NewArray and DegradedArray at assembly. */
	if (a.notify.program || a.notify.syslog) {
		r = ctl_notify_start(&a.notify, &notify);
		if (r < 0)
			return cli_fail("serve", r);
	}
	err_clear();
	r = serve_open(&a, argv + first, argc - first, &sv);
	if (r < 0) {
		cli_fail("serve", r);
		goto out;
	}
	top = sv.top ? sv.top : sv.ex[0].vol;
	if (sv.top) {
		a.nbd.description = top->name; /* what nbdinfo shows */
		/* The one volume named by --export answers to that name too. */
		if (a.nonly && !a.nbd.export_name)
			a.nbd.export_name = a.only[0];
		r = nbd_server_new(top, &a.nbd, &srv);
	} else if (a.nbd.export_name) {
		r = err_set(-EINVAL, "--export-name names the one export; %u are served "
		            "(--export picks one)", sv.n);
	} else
		r = nbd_server_new_multi(sv.ex, sv.n, -1, &a.nbd, &srv);
	if (r < 0) {
		cli_fail("serve", r);
		goto out;
	}

	/* The control socket is up before the NBD one: a client that
	 * waits for the NBD socket finds it there. */
	if (a.control_path) {
		ct = (struct ctl_target){.top = top,
		                         .md = sv.info.md,
		                         .luks = sv.info.luks,
		                         .member_flags = a.stack.direct ? MEMBER_DIRECT : 0,
		                         .connections = serve_connections,
		                         .ctx = srv};
		r = ctl_start(a.control_path, &ct, &ctl);
		if (r < 0) {
			cli_fail("control", r);
			goto out;
		}
	}
	sock = a.socket_path;
	if (a.run_cmd && !sock && a.port < 0) {
		if (!mkdtemp(tmpdir)) {
			cli_fail(tmpdir, -errno);
			goto out;
		}
		made_tmpdir = true;
		snprintf(sockbuf, sizeof(sockbuf), "%s/nbd.sock", tmpdir);
		sock = sockbuf;
	}
	if (act_fd >= 0)
		r = nbd_server_listen_fd(srv, act_fd);
	else if (sock)
		r = nbd_server_listen_unix(srv, sock);
	else if (a.port >= 0)
		r = nbd_server_listen_tcp(srv, a.bind_addr, a.port, &port);
	if (r < 0) {
		cli_fail("listen", r);
		goto out;
	}
	if (a.test) {
		struct ctl_target tt = {.top = top, .md = sv.info.md};
		ctl_events_test(&tt);
	}
	if (a.pid_file) {
		r = write_pid_file(a.pid_file);
		if (r < 0) {
			cli_fail("pid file", r);
			goto out;
		}
		pid_written = true;
	}
	make_uri(&a, sock, port, uri, sizeof(uri));
	log_debug("serving %s (%llu bytes) at %s", top->name,
		 (unsigned long long)top->size, a.use_stdio ? "stdio" : uri);

	serve_server = srv;
	struct sigaction sa = { .sa_handler = serve_on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (ready_fd >= 0) {
		serve_detach(ready_fd);
		ready_fd = -1;
	}

	if (a.use_stdio) {
		pthread_t t;
		r = pthread_create(&t, NULL, stdio_stopper, srv);
		if (r != 0) {
			cli_fail("serve", -r);
			goto out;
		}
		r = nbd_serve_connection(srv, 0, 1);
		nbd_server_stop(srv);
		pthread_join(t, NULL);
		rc = 0;
	} else if (a.run_cmd) {
		struct run_child child = { .srv = srv };
		pthread_t t;
		child.pid = spawn_run(a.run_cmd, uri);
		if (child.pid < 0) {
			cli_fail("--run", -errno);
			goto out;
		}
		r = pthread_create(&t, NULL, run_waiter, &child);
		if (r != 0) {
			kill(child.pid, SIGTERM);
			waitpid(child.pid, NULL, 0);
			cli_fail("serve", -r);
			goto out;
		}
		nbd_server_run(srv);
		/* Stopped by a signal rather than by the command: end it too. */
		kill(child.pid, SIGTERM);
		pthread_join(t, NULL);
		if (WIFEXITED(child.status))
			rc = WEXITSTATUS(child.status);
		else if (WIFSIGNALED(child.status))
			rc = 128 + WTERMSIG(child.status);
	} else {
		r = nbd_server_run(srv);
		rc = r < 0 ? cli_fail("serve", r) : 0;
	}

out:
	serve_server = NULL;
	/* Before the stack closes: no management call runs on it then. */
	ctl_stop(ctl);
	nbd_server_free(srv);
	if (serve_close(&sv) < 0)
		rc = rc ? rc : 1;
	ctl_notify_stop(notify); /* after the arrays closed: DeviceDisappeared */
	if (made_tmpdir)
		rmdir(tmpdir);
	if (pid_written)
		unlink(a.pid_file);
	stack_assume_free(a.assume);
	return rc;
}
