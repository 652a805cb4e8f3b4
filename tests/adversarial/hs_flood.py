#!/usr/bin/env python3
"""hs_flood.py SOCKET PID MODE [PSKFILE] - handshaking sockets must not keep
a well-behaved client out.

MODE "idle": open 200 sockets that connect and send nothing (held open
for the whole test), then a real client (nbdinfo) must be served, three
times: a connection still in the handshake takes no established slot,
and the oldest handshaking one is dropped when the handshake bound is full.
MODE "tls PSKFILE" (a server with --tls require --tls-psk): a keyless
attacker keeps reconnecting raw sockets that start the handshake (greeting,
flags, NBD_OPT_STARTTLS, then half a ClientHello or nothing) and stall or
drop, while nbdinfo with the key must succeed 10 times in a row.
No assertion on time: nbdinfo gets a generous timeout so a hang fails.
"""
import subprocess
import struct
import sys
import threading
import time

from nbdwire import *

path, pid, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ck = Checker("hs_flood " + mode)


def nbdinfo(uri):
    try:
        p = subprocess.run(["nbdinfo", "--size", uri], capture_output=True,
                           text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return False, "nbdinfo hung for 120 s"
    return p.returncode == 0, p.stderr.strip()


if mode == "idle":
    idle = [connect(path) for _ in range(200)]
    for i in range(3):
        ok, err = nbdinfo("nbd+unix:///?socket=" + path)
        ck.check(ok, "nbdinfo %d with 200 idle sockets open: %s" % (i + 1, err))
    for s in idle:
        s.close()
elif mode == "tls":
    psk = sys.argv[4]
    stop = threading.Event()

    def attacker():
        """Keyless: a ring of 96 sockets (more than the 64 handshakes the
        server takes by default), the oldest dropped as a new one starts;
        each sends the client flags and STARTTLS, then some stall and some
        send half a TLS record."""
        ring, n = [], 0
        while not stop.is_set():
            try:
                s = connect(path, timeout=5)
                s.sendall(struct.pack(">I", 3) +
                          struct.pack(">QII", IHAVEOPT, OPT_STARTTLS, 0))
                if n % 2:
                    s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
                ring.append(s)
            except OSError:
                pass
            n += 1
            if len(ring) > 96:
                ring.pop(0).close()
            time.sleep(0.02)  # a pace, not a timing assertion
        for s in ring:
            s.close()

    th = threading.Thread(target=attacker)
    th.start()
    time.sleep(1)  # let the attacker fill the handshake slots first
    uri = "nbds+unix://alice@/?socket=%s&tls-psk-file=%s" % (path, psk)
    for i in range(10):
        ok, err = nbdinfo(uri)
        ck.check(ok, "PSK client %d of 10 while keyless clients reconnect: %s"
                 % (i + 1, err))
    stop.set()
    th.join()
else:
    sys.exit("hs_flood.py: unknown mode " + mode)
ck.check(alive(pid), "server process alive")
ck.done()
