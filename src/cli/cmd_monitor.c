/* cmd_monitor.c — `uraid monitor CONTROL`: the md events of a running
 * serve (ctl/events.h: mdadm --monitor's names), one JSON object a line on
 * stdout, until interrupted or the server stops. */
#include "cli.h"
#include "ctl/control.h"

#include "core/log.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void monitor_usage(FILE *f)
{
	fprintf(f, "usage: uraid monitor [--test] CONTROL\n"
	           "\n"
	           "Print the md events of the arrays a running `uraid serve --control\n"
	           "CONTROL` serves, one JSON object a line, as they happen (Fail,\n"
	           "FailSpare, DegradedArray, SpareActive, RebuildStarted, Rebuild20 ...\n"
	           "Rebuild80, RebuildFinished, NewArray, DeviceDisappeared, TestMessage;\n"
	           "Overflow when this client fell behind and events were dropped), until\n"
	           "interrupted or the server stops.\n"
	           "\n"
	           "  -t, --test   have every array send a TestMessage first\n"
	           "  -h, --help   this text\n");
}

int cmd_monitor(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"test", no_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool test = false;
	char buf[65536];
	int c, fd, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "th", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			test = true;
			break;
		case 'h':
			monitor_usage(stdout);
			return 0;
		default:
			return cli_usage_error("monitor", NULL);
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("monitor", "give one control socket");
	err_clear();
	r = ctl_monitor_open(argv[optind], test, &fd);
	if (r < 0)
		return cli_fail("monitor", r);
	/* The lines as they come, each out at once (a pipe too). */
	for (;;) {
		ssize_t got = read(fd, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		if (fwrite(buf, 1, (size_t)got, stdout) != (size_t)got || fflush(stdout) != 0)
			break;
	}
	close(fd);
	return 0;
}
