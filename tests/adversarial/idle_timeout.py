#!/usr/bin/env python3
"""idle_timeout.py SOCKET PID CAP - established clients that stay idle are
closed (uraid serve --idle-timeout), so CAP of them cannot keep a new
client out for ever.

CAP clients enter transmission, do one read, and then send nothing: the
server must close each of them, and a real client (nbdinfo) must then be
served.  Generous limits turn a hang into a failure; nothing is timed.
"""
import subprocess
import sys
import time

from nbdwire import *

path, pid, cap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ck = Checker("idle_timeout")

idle = [open_export(path) for _ in range(cap)]
ck.eq(sum(c.read(0, 4096)[0] for c in idle), 0, "reads before going idle")
for i, c in enumerate(idle):
    ck.check(sees_eof(c.s, timeout=60), "idle client %d closed by the server" % (i + 1))
served = False
t_end = time.monotonic() + 60
while not served and time.monotonic() < t_end:
    p = subprocess.run(["nbdinfo", "--size", "nbd+unix:///?socket=" + path],
                       capture_output=True, timeout=120)
    served = p.returncode == 0
    if not served:
        time.sleep(0.1)  # the server may not have counted the closes yet
ck.check(served, "a client is served once the idle ones are closed")
for c in idle:
    c.close()
ck.check(alive(pid), "server process alive")
ck.done()
