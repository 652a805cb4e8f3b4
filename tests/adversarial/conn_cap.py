#!/usr/bin/env python3
"""conn_cap.py SOCKET PID CAP - more connections than the server allows.

CAP clients hold established connections; every client beyond them is
refused cleanly (closed before the greeting, never left hanging), the held
ones keep working, a slot freed by a client that leaves is given to the
next one, and a client stalled in the handshake holds no slot.
"""
import sys
import time

from nbdwire import *

path, pid, cap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ck = Checker("conn_cap")


def refused():
    """True if a new client is closed before the greeting."""
    c = Client(path)
    try:
        c.greeting()
        return False
    except Closed:
        return True
    finally:
        c.close()


def accepted_eventually(what):
    """Poll until a new client gets a full session (a freed slot is only
    reused once the server has noticed the old client left)."""
    t_end = time.monotonic() + 30
    while time.monotonic() < t_end:
        try:
            c = open_export(path)
            err, _ = c.read(0, 512)
            c.disc()
            return err == 0
        except Closed:
            time.sleep(0.05)
    ck.check(False, "%s: no slot ever freed" % what)
    return False


held = [open_export(path) for _ in range(cap)]
for i in range(cap + 3):
    ck.check(refused(), "client %d beyond the cap of %d is refused" % (cap + i + 1, cap))
bad = sum(1 for c in held if c.read(0, 4096)[0] != 0)
ck.eq(bad, 0, "held connections still work while others are refused")

held.pop().disc()
ck.check(accepted_eventually("one held client left"), "a freed slot serves a new client")

# A client that stalls in the handshake takes no established slot: with
# it stalled, a new client still gets the free slot, and the one after
# that is refused (the cap counts established connections).
staller = None
t_end = time.monotonic() + 30
while staller is None and time.monotonic() < t_end:
    staller = Client(path)
    try:
        staller.greeting()
    except Closed:
        staller.close()
        staller = None
        time.sleep(0.05)
ck.check(staller is not None, "a client gets a greeting below the cap")
late = None
t_end = time.monotonic() + 30
while late is None and time.monotonic() < t_end:
    try:
        late = open_export(path)
    except Closed:
        time.sleep(0.05)
ck.check(late is not None, "a stalled handshake does not keep a client out of the free slot")
ck.check(refused(), "cap filled again: next client refused")
if staller:
    staller.close()
if late:
    late.disc()

for c in held:
    c.disc()
ck.check(accepted_eventually("all clients left"), "served after everyone left")
ck.check(alive(pid), "server process alive")
ck.done()
