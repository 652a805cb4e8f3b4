/* report.c — what `uraid bench` prints and writes: a terminal table shaped
 * like seed 000's summary ("write read layout", MB/s) followed by the
 * verdict of every row; JSON with fio's field names (bw_bytes, iops,
 * lat_ns percentiles, usr_cpu, sys_cpu) plus the ceilings, efficiency and
 * bound (bench/schema.json describes it); CSV; and an SVG bar chart of
 * measured against ideal, one section per workload. */
#include "bench.h"

#include "core/log.h"
#include "core/units.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

struct bench_row *bench_report_add(struct bench_report *r)
{
	if (r->n == r->cap) {
		unsigned cap = r->cap ? r->cap * 2 : 32;
		struct bench_row *rows = realloc(r->rows, cap * sizeof(*rows));
		if (!rows)
			return NULL;
		r->rows = rows;
		r->cap = cap;
	}
	struct bench_row *row = &r->rows[r->n++];
	memset(row, 0, sizeof(*row));
	return row;
}

void bench_report_free(struct bench_report *r)
{
	free(r->rows);
	r->rows = NULL;
	r->n = r->cap = 0;
}

static const char *op_name(const struct bench_row *row)
{
	switch (row->op) {
	case BENCH_READ:
		return row->random ? "randread" : "read";
	case BENCH_WRITE:
		return row->random ? "randwrite" : "write";
	case BENCH_REWRITE:
		return "rewrite";
	case BENCH_SEEKS:
		return "seeks";
	case BENCH_META:
		return "meta";
	}
	return "?";
}

static double mbs(double bytes_per_s)
{
	return bytes_per_s / 1e6;
}

static const struct bench_row *find_row(const struct bench_report *r, const char *layout,
                                        const char *workload)
{
	for (unsigned i = 0; i < r->n; i++)
		if (strcmp(r->rows[i].layout, layout) == 0 &&
		    strcmp(r->rows[i].workload, workload) == 0)
			return &r->rows[i];
	return NULL;
}

static void print_mbs_cell(FILE *f, const struct bench_row *row)
{
	if (!row)
		fprintf(f, " %6s", "-");
	else if (row->skipped[0])
		fprintf(f, " %6s", "n/a");
	else
		fprintf(f, " %6.0f", mbs(row->bw.med));
}

void bench_print_table(FILE *f, const struct bench_report *r)
{
	char sz[32];
	bool have_dd = false;

	if (r->n == 0) {
		fprintf(f, "no results\n");
		return;
	}
	fprintf(f, "uraid bench: members %s, %s each; target %s; median of %u; %u cores; %.1f s\n",
	        r->rows[0].model, format_size(r->size, sz, sizeof(sz)), r->rows[0].target,
	        r->rows[0].reps ? r->rows[0].reps : 1, r->cores, r->seconds);
	fprintf(f, "reproduce: %s\n\n", r->cmdline);

	for (unsigned i = 0; i < r->n; i++)
		have_dd |= strcmp(r->rows[i].workload, "write") == 0 ||
		           strcmp(r->rows[i].workload, "read") == 0;
	if (have_dd) {
		fprintf(f, "summary (MB/sec):\n  write   read  layout\n");
		for (unsigned i = 0; i < r->n; i++) {
			const struct bench_row *row = &r->rows[i];
			bool first = true;
			for (unsigned k = 0; k < i; k++)
				first &= strcmp(r->rows[k].layout, row->layout) != 0;
			if (!first)
				continue;
			print_mbs_cell(f, find_row(r, row->layout, "write"));
			print_mbs_cell(f, find_row(r, row->layout, "read"));
			fprintf(f, "  %s (%s)%s\n", row->title, row->target,
			        row->skipped[0] ? "  [skipped]" : "");
		}
		fprintf(f, "\n");
	}

	fprintf(f, "%-13s %-16s %9s %8s %8s %8s %5s %5s %9s %5s  %s\n", "layout", "workload",
	        "MB/s", "IOPS", "p50 us", "p99 us", "usr%", "sys%", "ideal", "eff", "bound");
	for (unsigned i = 0; i < r->n; i++) {
		const struct bench_row *row = &r->rows[i];
		if (row->skipped[0]) {
			fprintf(f, "%-13s %-16s skipped: %s\n", row->layout, row->workload,
			        row->skipped);
			continue;
		}
		fprintf(f, "%-13s %-16s %9.1f %8.0f", row->layout, row->workload, mbs(row->bw.med),
		        row->iops.med);
		if (row->lat_p99_ns) /* file-system rows time no single request */
			fprintf(f, " %8.0f %8.0f", (double)row->lat_p50_ns / 1e3,
			        (double)row->lat_p99_ns / 1e3);
		else
			fprintf(f, " %8s %8s", "-", "-");
		fprintf(f, " %5.0f %5.0f", row->usr_cpu, row->sys_cpu);
		if (row->v.bound)
			fprintf(f, " %9.1f %4.0f%%  %s", mbs(row->v.ideal), 100 * row->v.efficiency,
			        row->v.bound);
		fprintf(f, "\n");
		if (row->bw_fsync.med > 0)
			fprintf(f, "%-13s %-16s %9.1f  (with the fsync)\n", "", "",
			        mbs(row->bw_fsync.med));
	}
	fprintf(f, "\nceilings per row: disks (members alone/all at once, scaled for the layout), "
	           "cipher (on null members), transport (uraid serve over null), journal (the "
	           "journal device alone, " BENCH_JOURNAL_MODEL ")\n");
	for (unsigned i = 0; i < r->n; i++)
		if (r->rows[i].ceil.ram) {
			fprintf(f, "RAM members: copy (the members alone: the copy into them), "
			           "series (the ceilings one after another)\n");
			break;
		}
}

/* ---- JSON ---- */

static json_object *jd(double v)
{
	return json_object_new_double(v);
}

static json_object *stat_obj(const struct bench_stat *s)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "median", jd(s->med));
	json_object_object_add(o, "min", jd(s->min));
	json_object_object_add(o, "max", jd(s->max));
	return o;
}

int bench_write_json(const char *path, const struct bench_report *r)
{
	json_object *root = json_object_new_object();
	json_object *results = json_object_new_array();
	int ret = 0;

	json_object_object_add(root, "uraid_version", json_object_new_string(URAID_VERSION));
	json_object_object_add(root, "cmdline", json_object_new_string(r->cmdline));
	json_object_object_add(root, "study",
	                       r->study[0] ? json_object_new_string(r->study) : NULL);
	json_object_object_add(root, "cores", json_object_new_int((int)r->cores));
	json_object_object_add(root, "member_size", json_object_new_int64((int64_t)r->size));
	json_object_object_add(root, "seconds", jd(r->seconds));
	for (unsigned i = 0; i < r->n; i++) {
		const struct bench_row *row = &r->rows[i];
		json_object *o = json_object_new_object();
		json_object_object_add(o, "layout", json_object_new_string(row->layout));
		json_object_object_add(o, "title", json_object_new_string(row->title));
		json_object_object_add(o, "members", json_object_new_string(row->model));
		json_object_object_add(o, "workload", json_object_new_string(row->workload));
		json_object_object_add(o, "target", json_object_new_string(row->target));
		json_object_object_add(o, "rw", json_object_new_string(op_name(row)));
		json_object_object_add(o, "bs", json_object_new_int64(row->bs));
		json_object_object_add(o, "iodepth", json_object_new_int((int)row->qd));
		json_object_object_add(
		    o, "skipped", row->skipped[0] ? json_object_new_string(row->skipped) : NULL);
		if (!row->skipped[0]) {
			json_object_object_add(o, "reps", json_object_new_int((int)row->reps));
			json_object_object_add(o, "bw_bytes", jd(row->bw.med));
			json_object_object_add(o, "bw_bytes_stat", stat_obj(&row->bw));
			json_object_object_add(o, "iops", jd(row->iops.med));
			json_object_object_add(o, "iops_stat", stat_obj(&row->iops));
			if (row->bw_fsync.med > 0)
				json_object_object_add(o, "bw_bytes_fsync", jd(row->bw_fsync.med));
			json_object *lat = json_object_new_object();
			json_object *pct = json_object_new_object();
			json_object_object_add(pct, "50.000000",
			                       json_object_new_int64((int64_t)row->lat_p50_ns));
			json_object_object_add(pct, "99.000000",
			                       json_object_new_int64((int64_t)row->lat_p99_ns));
			json_object_object_add(lat, "percentile", pct);
			json_object_object_add(o, "lat_ns", lat);
			json_object_object_add(o, "usr_cpu", jd(row->usr_cpu));
			json_object_object_add(o, "sys_cpu", jd(row->sys_cpu));
			json_object *c = json_object_new_object();
			json_object_object_add(c, "disk_one", jd(row->disk_one));
			json_object_object_add(c, "disk_all", jd(row->disk_all));
			json_object_object_add(c, "disks", jd(row->ceil.disks));
			json_object_object_add(c, "cipher", jd(row->ceil.cipher));
			json_object_object_add(c, "transport", jd(row->ceil.transport));
			json_object_object_add(c, "journal", jd(row->ceil.journal));
			if (row->ceil.ram)
				json_object_object_add(c, "series", jd(row->v.series));
			json_object_object_add(o, "ceilings", c);
			json_object_object_add(o, "ideal", jd(row->v.ideal));
			json_object_object_add(o, "efficiency", jd(row->v.efficiency));
			json_object_object_add(
			    o, "bound",
			    json_object_new_string(row->v.bound ? row->v.bound : "unknown"));
		}
		json_object_array_add(results, o);
	}
	json_object_object_add(root, "results", results);
	if (json_object_to_file_ext(path, root, JSON_C_TO_STRING_PRETTY) < 0)
		ret = err_set(-EIO, "cannot write JSON: %s", json_util_get_last_err());
	json_object_put(root);
	return ret;
}

/* ---- CSV ---- */

int bench_write_csv(const char *path, const struct bench_report *r)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return err_set(-errno, "%s", strerror(errno));
	fprintf(f, "layout,members,workload,target,rw,bs,iodepth,reps,bw_bytes,bw_bytes_min,"
	           "bw_bytes_max,iops,bw_bytes_fsync,lat_p50_ns,lat_p99_ns,usr_cpu,sys_cpu,"
	           "disk_one,disk_all,disks,cipher,transport,journal,ideal,efficiency,bound,"
	           "skipped\n");
	for (unsigned i = 0; i < r->n; i++) {
		const struct bench_row *w = &r->rows[i];
		fprintf(f,
		        "%s,%s,%s,%s,%s,%u,%u,%u,%.0f,%.0f,%.0f,%.1f,%.0f,%llu,%llu,%.1f,%.1f,"
		        "%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.3f,%s,\"%s\"\n",
		        w->layout, w->model, w->workload, w->target, op_name(w), w->bs, w->qd,
		        w->reps, w->bw.med, w->bw.min, w->bw.max, w->iops.med, w->bw_fsync.med,
		        (unsigned long long)w->lat_p50_ns, (unsigned long long)w->lat_p99_ns,
		        w->usr_cpu, w->sys_cpu, w->disk_one, w->disk_all, w->ceil.disks,
		        w->ceil.cipher, w->ceil.transport, w->ceil.journal, w->v.ideal,
		        w->v.efficiency, w->v.bound ? w->v.bound : "", w->skipped);
	}
	int ret = ferror(f) ? -EIO : 0;
	if (fclose(f) != 0 && !ret)
		ret = -errno;
	return ret < 0 ? err_set(ret, "cannot write CSV") : 0;
}

/* ---- SVG ---- */

static const char *bound_colour(const char *bound)
{
	if (!bound)
		return "#8c8c8c";
	if (strcmp(bound, "disks") == 0 || strcmp(bound, "copy") == 0)
		return "#3a8f4f";
	if (strcmp(bound, "cipher") == 0)
		return "#d98a1c";
	if (strcmp(bound, "transport") == 0)
		return "#7a55b8";
	if (strcmp(bound, "journal") == 0)
		return "#1c8fa6";
	if (strcmp(bound, "cpu") == 0)
		return "#c0392b";
	if (strcmp(bound, "uraid itself") == 0)
		return "#8e1b1b";
	return "#4a78c2";
}

static void svg_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* Sections by workload, in order of first appearance; a bar per layout:
 * the ideal as a pale bar behind, the measured figure in front, coloured
 * by the bound. */
int bench_write_svg(const char *path, const struct bench_report *r)
{
	const int width = 960, label_w = 250, bar_w = 430, row_h = 22, head_h = 34;
	unsigned n_sections = 0, n_bars = 0;
	FILE *f;

	for (unsigned i = 0; i < r->n; i++) {
		bool first = true;
		for (unsigned k = 0; k < i; k++)
			first &= strcmp(r->rows[k].workload, r->rows[i].workload) != 0;
		n_sections += first;
		n_bars++;
	}
	int height = 70 + (int)n_sections * head_h + (int)n_bars * row_h + 40;
	f = fopen(path, "w");
	if (!f)
		return err_set(-errno, "%s", strerror(errno));
	fprintf(f,
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	        "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
	        "font-size=\"12\">\n",
	        width, height, width, height);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\">uraid bench: "
	           "measured (solid) against ideal (pale), colour = what binds</text>\n");
	fprintf(f, "<text x=\"12\" y=\"42\" fill=\"#555\" font-size=\"10\">");
	svg_text(f, r->cmdline);
	fprintf(f, "</text>\n");
	/* Legend. */
	static const char *const bounds[] = {"disks",   "cipher", "transport",
	                                     "journal", "cpu",    "uraid itself"};
	for (unsigned b = 0; b < 6; b++) {
		int x = 12 + (int)b * 110;
		fprintf(f,
		        "<rect x=\"%d\" y=\"52\" width=\"12\" height=\"12\" fill=\"%s\"/>"
		        "<text x=\"%d\" y=\"63\">%s</text>\n",
		        x, bound_colour(bounds[b]), x + 16, bounds[b]);
	}
	int y = 80;
	for (unsigned i = 0; i < r->n; i++) {
		const char *wl = r->rows[i].workload;
		bool first = true;
		for (unsigned k = 0; k < i; k++)
			first &= strcmp(r->rows[k].workload, wl) != 0;
		if (!first)
			continue;
		/* Scale: the largest measured or ideal figure of the section. */
		double top = 0;
		for (unsigned k = i; k < r->n; k++) {
			const struct bench_row *row = &r->rows[k];
			if (strcmp(row->workload, wl) || row->skipped[0])
				continue;
			if (row->bw.med > top)
				top = row->bw.med;
			if (row->v.ideal > top)
				top = row->v.ideal;
		}
		if (top <= 0)
			top = 1;
		bool iops = r->rows[i].random || r->rows[i].op == BENCH_SEEKS ||
		            r->rows[i].op == BENCH_META;
		fprintf(f, "<text x=\"12\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">",
		        y + 20);
		svg_text(f, wl);
		uint32_t bs = r->rows[i].bs;
		fprintf(f, " (%s, %u %s requests, QD%u)</text>\n", iops ? "IOPS" : "MB/s",
		        bs >= (1u << 20) ? bs >> 20
		        : bs >= 1024     ? bs >> 10
		                         : bs,
		        bs >= (1u << 20) ? "MiB"
		        : bs >= 1024     ? "KiB"
		                         : "B",
		        r->rows[i].qd);
		y += head_h;
		for (unsigned k = i; k < r->n; k++) {
			const struct bench_row *row = &r->rows[k];
			if (strcmp(row->workload, wl))
				continue;
			fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", label_w - 8,
			        y + 15);
			svg_text(f, row->title);
			fprintf(f, "</text>\n");
			if (row->skipped[0]) {
				fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#888\">skipped: ",
				        label_w + 6, y + 15);
				svg_text(f, row->skipped);
				fprintf(f, "</text>\n");
				y += row_h;
				continue;
			}
			double scale = bar_w / top;
			if (row->v.ideal > 0)
				fprintf(f,
				        "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"16\" "
				        "fill=\"%s\" fill-opacity=\"0.25\"/>\n",
				        label_w, y + 3, row->v.ideal * scale,
				        bound_colour(row->v.bound));
			fprintf(
			    f,
			    "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"16\" fill=\"%s\"/>\n",
			    label_w, y + 3, row->bw.med * scale, bound_colour(row->v.bound));
			double shown = iops ? row->iops.med : mbs(row->bw.med);
			double ideal = iops ? row->v.ideal / row->bs : mbs(row->v.ideal);
			int tx = label_w + bar_w + 10;
			if (row->v.ideal > 0)
				fprintf(
				    f,
				    "<text x=\"%d\" y=\"%d\">%.0f of %.0f  (%.0f%%, %s)</text>\n",
				    tx, y + 15, shown, ideal, 100 * row->v.efficiency,
				    row->v.bound);
			else
				fprintf(f, "<text x=\"%d\" y=\"%d\">%.0f</text>\n", tx, y + 15,
				        shown);
			y += row_h;
		}
		y += 6;
	}
	fprintf(f, "</svg>\n");
	int ret = ferror(f) ? -EIO : 0;
	if (fclose(f) != 0 && !ret)
		ret = -errno;
	return ret < 0 ? err_set(ret, "cannot write SVG") : 0;
}
