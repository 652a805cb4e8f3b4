/* cmd_probe.c — `uraid probe MEMBER...`: what the members hold, as a tree
 * (lsblk for images): member -> partition -> md array -> VG/LV -> LUKS ->
 * what is on the volume, with sizes, state, and what a layer refused and
 * why; --json for tools.  The probe graph (stack/graph.h) finds it; the
 * names are the exports `uraid serve` gives the same members.
 *
 * Always read-only: it changes no byte, never runs a resync, and starts
 * arrays that are missing members (as read-only, that loses nothing), so
 * that a dead machine's disks can be looked at first.  LUKS volumes are
 * unlocked only with --key-file. */
#include "cli.h"

#include "core/log.h"
#include "core/units.h"
#include "stack/assume.h"
#include "stack/graph.h"

#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void probe_usage(FILE *f)
{
	fprintf(f, "usage: uraid probe [--json] [--key-file FILE] [--force] [--assume GEOMETRY]\n"
	           "                   MEMBER...\n"
	           "Show what the members hold, as a tree: partitions, md arrays, LVM2 logical\n"
	           "volumes, LUKS, and the signature found on each volume; the names are the\n"
	           "export names of `uraid serve`. Reads only: no byte is changed.\n"
	           "  --json           one JSON object instead of the tree\n"
	           "  --key-file FILE  unlock LUKS volumes with this passphrase file\n"
	           "  --force          take stale members into an array that cannot start\n"
	           "                   without them, the freshest first (mdadm --assemble\n"
	           "                   --force), in memory: nothing is written\n"
	           "  --assume GEOMETRY  build an array without metadata from the members\n"
	           "                   (level=5,chunk=64K,layout=left-symmetric,order=c.img,\n"
	           "                   a.img,b.img[,offset=SIZE][,size=SIZE]; uraid detect)\n"
	           "  -v               more messages\n");
}

/* Whether node j is made of node i. */
static bool probe_from(const struct stack_node *nd, unsigned i)
{
	for (unsigned k = 0; k < nd->nfrom; k++)
		if (nd->from[k] == (int)i)
			return true;
	return false;
}

/* Spaces that pad s to width columns: one per character, not per byte
 * (the tree's lines are UTF-8). */
static int probe_pad(const char *s, int width)
{
	int chars = 0;

	for (; *s; s++)
		chars += ((unsigned char)*s & 0xc0) != 0x80;
	return chars < width ? width - chars : 0;
}

static void probe_print(const struct stack_graph *g, unsigned i, const char *prefix, bool last,
                        bool root, unsigned depth)
{
	const struct stack_node *nd = &g->node[i];
	char size[32] = "-", line[512], pre[256];
	const char *state;
	unsigned nkids = 0, seen = 0;

	if (nd->vol)
		format_size(nd->vol->size, size, sizeof(size));
	state = nd->refused ? "refused" : stack_graph_is_export(g, i) ? "export" : "";
	snprintf(line, sizeof(line), "%s%s%s", prefix, root ? "" : last ? "└─" : "├─", nd->name);
	printf("%s%*s %10s  %-9s %-7s %s%s%s\n", line, probe_pad(line, 40), "", size, nd->kind,
	       state, nd->what ? nd->what : "",
	       nd->holds ? (nd->what && *nd->what ? "; holds " : "holds ") : "",
	       nd->holds ? nd->holds : "");
	if (nd->refused)
		printf("%s%s   refused: %s\n", prefix, root ? "" : last ? "  " : "│ ", nd->refused);
	if (depth > 32)
		return;
	/* At most 33 levels of 4 bytes: it fits; the check is for the compiler. */
	const char *stem = root ? "" : last ? "  " : "│ ";
	if (snprintf(pre, sizeof(pre), "%s%s", prefix, stem) >= (int)sizeof(pre))
		return;
	for (unsigned j = i + 1; j < g->n; j++)
		nkids += probe_from(&g->node[j], i);
	for (unsigned j = i + 1; j < g->n; j++)
		if (probe_from(&g->node[j], i))
			probe_print(g, j, pre, ++seen == nkids, false, depth + 1);
}

void cli_print_json(struct json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
	                                                     JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static int probe_json(const struct stack_graph *g)
{
	json_object *top = json_object_new_object(), *vols = json_object_new_array();

	for (unsigned i = 0; i < g->n; i++) {
		const struct stack_node *nd = &g->node[i];
		json_object *o = json_object_new_object(), *from = json_object_new_array();

		json_object_object_add(o, "name", json_object_new_string(nd->name));
		json_object_object_add(o, "type", json_object_new_string(nd->kind));
		json_object_object_add(
		    o, "size", nd->vol ? json_object_new_int64((int64_t)nd->vol->size) : NULL);
		json_object_object_add(o, "detail",
		                       json_object_new_string(nd->what ? nd->what : ""));
		json_object_object_add(o, "export",
		                       json_object_new_boolean(stack_graph_is_export(g, i)));
		json_object_object_add(o, "holds",
		                       nd->holds ? json_object_new_string(nd->holds) : NULL);
		json_object_object_add(o, "refused",
		                       nd->refused ? json_object_new_string(nd->refused) : NULL);
		for (unsigned k = 0; k < nd->nfrom; k++)
			json_object_array_add(from,
			                      json_object_new_string(g->node[nd->from[k]].name));
		json_object_object_add(o, "from", from);
		json_object_array_add(vols, o);
	}
	json_object_object_add(top, "volumes", vols);
	json_object_object_add(top, "warnings", json_object_new_string(g->warning));
	cli_print_json(top);
	return 0;
}

int cmd_probe(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"key-file", required_argument, NULL, 'k'},
	    {"force", no_argument, NULL, 'f'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"assume", required_argument, NULL, 'a'},
	    {0},
	};
	struct stack_opts so = {.readonly = true, .run_degraded = true, .no_luks = true};
	struct stack_graph *g;
	struct stack_assume *as = NULL;
	const char *assume = NULL;
	bool json = false;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'k':
			so.key_file = optarg;
			so.no_luks = false;
			break;
		case 'f':
			so.force_stale = true;
			break;
		case 'a':
			assume = optarg;
			break;
		case 'v':
			log_verbosity = log_verbosity < LOG_INFO ? LOG_INFO : LOG_DEBUG;
			break;
		case 'h':
			probe_usage(stdout);
			return 0;
		default:
			return cli_usage_error("probe", NULL);
		}
	}
	if (optind >= argc)
		return cli_usage_error("probe", "no members given");
	if (assume && cli_assume_open(assume, argv + optind, argc - optind, true, &as) < 0)
		return 2;
	so.assume = as;
	r = stack_graph_open(argv + optind, argc - optind, &so, &g);
	if (r < 0) {
		stack_assume_free(as);
		return cli_fail("probe", r);
	}
	if (json)
		probe_json(g);
	else {
		printf("%-40s %10s  %-9s %-7s %s\n", "NAME", "SIZE", "TYPE", "STATE", "DETAIL");
		for (unsigned i = 0; i < g->n; i++)
			if (g->node[i].nfrom == 0)
				probe_print(g, i, "", true, true, 0);
		if (g->warning[0])
			printf("warnings:\n%s\n", g->warning);
	}
	stack_graph_close(g);
	stack_assume_free(as);
	return 0;
}
