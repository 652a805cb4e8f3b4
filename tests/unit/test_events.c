/* test_events.c — the md event source and a listener's queue: every sink
 * subscribed gets each event once, in order, and none after it left; a
 * full queue drops without blocking and says how many with one Overflow
 * before the events that follow; the JSON line; mdadm's component text
 * for a check's mismatches. */
#include "check.h"

#include "ctl/events.h"

#include <errno.h>
#include <json-c/json.h>
#include <string.h>

static unsigned calls;

static void count_sink(void *ctx, const struct md_event *ev)
{
	(void)ev;
	(*(unsigned *)ctx)++;
	calls++;
}

int main(void)
{
	struct ctl_evq q;
	struct md_event ev;
	uint64_t dropped;
	unsigned a = 0, b = 0;
	char line[1024];

	/* fan-out */
	md_event_emit("Fail", "md/x", "b.img"); /* no sink: nothing */
	CHECK_EQ(md_events_subscribe(count_sink, &a), 0);
	CHECK_EQ(md_events_subscribe(count_sink, &b), 0);
	md_event_emit("Fail", "md/x", "b.img");
	CHECK_EQ(a, 1);
	CHECK_EQ(b, 1);
	md_events_unsubscribe(count_sink, &a);
	md_event_emit("DegradedArray", "md/x", NULL);
	CHECK_EQ(a, 1);
	CHECK_EQ(b, 2);
	md_events_unsubscribe(count_sink, &b);
	md_event_emit("DegradedArray", "md/x", NULL);
	CHECK_EQ(calls, 3);

	/* a queue of 4: six events, two dropped, counted, said once */
	CHECK_EQ(ctl_evq_init(&q, 4), 0);
	CHECK_EQ(md_events_subscribe(ctl_evq_push, &q), 0);
	for (int i = 0; i < 6; i++)
		md_event_emit(i == 0 ? "RebuildStarted" : "Rebuild20", "md/x", NULL);
	CHECK_EQ(ctl_evq_pop(&q, 0, &ev, &dropped), 1);
	CHECK_EQ(dropped, 2);
	CHECK(strcmp(ev.event, "Overflow") == 0);
	CHECK_EQ(ctl_evq_pop(&q, 0, &ev, &dropped), 1);
	CHECK_EQ(dropped, 0);
	CHECK(strcmp(ev.event, "RebuildStarted") == 0);
	uint64_t seq = ev.seq;
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(ctl_evq_pop(&q, 0, &ev, &dropped), 1);
		CHECK_EQ(ev.seq, seq + 1 + (uint64_t)i);
	}
	CHECK_EQ(ctl_evq_pop(&q, 10, &ev, &dropped), -ETIMEDOUT);
	md_events_unsubscribe(ctl_evq_push, &q);
	md_event_emit("Fail", "md/x", "b.img");
	CHECK_EQ(ctl_evq_pop(&q, 0, &ev, &dropped), -ETIMEDOUT);
	ctl_evq_close(&q);
	CHECK_EQ(ctl_evq_pop(&q, -1, &ev, &dropped), 0);
	ctl_evq_fini(&q);

	/* JSON, and what --program gets as the component */
	memset(&ev, 0, sizeof(ev));
	snprintf(ev.event, sizeof(ev.event), "Fail");
	snprintf(ev.device, sizeof(ev.device), "md/x");
	snprintf(ev.member, sizeof(ev.member), "a \"b\".img");
	ev.mismatch_cnt = -1;
	ev.time_ns = 1700000000ull * 1000000000u;
	CHECK(ctl_event_json(&ev, 0, line, sizeof(line)) > 0);
	CHECK(line[strlen(line) - 1] == '\n');
	json_object *o = json_tokener_parse(line), *v;
	CHECK(o != NULL);
	CHECK(json_object_object_get_ex(o, "member", &v));
	CHECK(strcmp(json_object_get_string(v), "a \"b\".img") == 0);
	CHECK(json_object_object_get_ex(o, "device", &v));
	CHECK(strcmp(json_object_get_string(v), "md/x") == 0);
	json_object_put(o);
	CHECK_EQ(ctl_event_json(&ev, 0, line, 20), -ENOSPC);
	CHECK(strcmp(md_event_component(&ev, line, sizeof(line)), "a \"b\".img") == 0);
	ev.member[0] = '\0';
	ev.mismatch_cnt = 8;
	ev.level = 1;
	CHECK(strcmp(md_event_component(&ev, line, sizeof(line)),
	             " mismatches found: 8 (on raid level 1)") == 0);
	return 0;
}
