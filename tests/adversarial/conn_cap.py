#!/usr/bin/env python3
"""conn_cap.py SOCKET PID CAP - more connections than the server allows.

CAP clients hold connections; every client beyond them is refused
cleanly (closed before the greeting, never left hanging), the held ones
keep working, and a slot freed by a client that leaves - or by the
handshake timeout dropping a client that stalls - is given to the next
one.
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

# Fill the free slot with a client that stalls in the handshake: refused
# meanwhile, its slot comes back once the handshake timeout drops it.
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
ck.check(staller is not None, "a client gets the free slot")
ck.check(refused(), "cap filled by a stalled handshake: next client refused")
ck.check(accepted_eventually("a client stalled in the handshake"),
         "the handshake timeout frees a stalled client's slot")
staller.close()

for c in held:
    c.disc()
ck.check(accepted_eventually("all clients left"), "served after everyone left")
ck.check(alive(pid), "server process alive")
ck.done()
