/* progress.c — how a long command shows how far it got (cli.h): on a
 * terminal one line redrawn in place at most twice a second, percent,
 * bytes, rate and time left; otherwise a plain line at every tenth, so
 * that a log keeps a few lines and not thousands.  `uraid add`, `rebuild`
 * and offline `grow` (cmd_rebuild.c) and `uraid check --wait`
 * (cmd_control.c) share it. */
#include "cli.h"

#include "core/clock.h"
#include "core/units.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void cli_progress_begin(struct cli_progress *p, const char *label)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->label, sizeof(p->label), "%s", label);
	p->tty = isatty(STDOUT_FILENO);
	p->t0 = clock_now_ns();
}

static void eta_format(double secs, char *out, size_t len)
{
	unsigned long s = secs > 0 && secs < 360000 ? (unsigned long)(secs + 0.5) : 0;

	if (secs <= 0 || secs >= 360000)
		snprintf(out, len, "?");
	else if (s >= 3600)
		snprintf(out, len, "%lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(out, len, "%lu:%02lu", s / 60, s % 60);
}

void cli_progress_show(struct cli_progress *p, uint64_t done, uint64_t from, uint64_t total,
                       bool last)
{
	uint64_t now = clock_now_ns();
	double pct = total ? 100.0 * (double)done / (double)total : 100.0;
	unsigned tenth = (unsigned)(pct / 10);

	if (p->tty ? !last && p->shown && now - p->last_ns < 500000000u
	           : !last && (tenth <= p->tenth || tenth >= 10))
		return;
	if (!p->tty && last && p->ended)
		return;
	p->shown = true;
	p->last_ns = now;
	p->tenth = tenth;
	double secs = (double)(now - p->t0) / 1e9;
	double rate = secs > 0 && done > from ? (double)(done - from) / secs : 0;
	char a[32], b[32], eta[32];
	format_size(done, a, sizeof(a));
	format_size(total, b, sizeof(b));
	if (last)
		eta_format(secs, eta, sizeof(eta));
	else
		eta_format(rate > 0 ? (double)(total - done) / rate : 0, eta, sizeof(eta));
	printf("%s  %s: %5.1f%% (%s of %s), %.1f MiB/s, %s %s%s", p->tty ? "\r" : "", p->label, pct,
	       a, b, rate / 1048576.0, last ? "took" : "ETA", eta, p->tty && !last ? "   " : "\n");
	if (last)
		p->ended = true;
	fflush(stdout);
}
