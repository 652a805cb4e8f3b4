#!/usr/bin/python3
"""nbd-tls-client.py — a raw NBD client over TLS (X.509) for the nbd-tls
tests: it does what real clients never do, record by record.

    nbd-tls-client.py SOCK DIR MODE
    nbd-tls-client.py - DIR MODE CMD...

SOCK is the server's Unix socket, or - to run CMD (uraid serve --stdio)
and talk to it through pipes; DIR holds ca-cert.pem (the CA the
server's certificate for "localhost" must chain to) and, if present,
client-cert.pem and client-key.pem, presented to the server.  The TLS
session runs over memory BIOs, so the client chooses which bytes of each
record go out.  Exit status 0 when the server behaved as MODE expects:

  list          the session works: NBD_OPT_LIST is answered (then
                NBD_OPT_ABORT; with CMD, it must then exit with 0)
  refused       the server ends the session (our certificate refused)
  opt-stall     half a TLS record of an option, then silence: the server
                drops the connection (the handshake timeout)
  opt-garbage   bytes that are not TLS records in the negotiation: dropped
  write-cut     enter transmission, one WRITE of 64 KiB at 1 MiB (must
                succeed), then a WRITE at 0 whose payload stops half way
                and the client closes: dropped, nothing written at 0
  write-torn    the same, but the last record is cut in half
  write-garbage the same, but garbage follows the WRITE header
  read-garbage  a READ, then garbage instead of the next record: dropped
"""
import os
import select
import socket
import ssl
import struct
import subprocess
import sys

IHAVEOPT = 0x49484156454F5054
REQ_MAGIC = 0x25609513
OPT_ABORT, OPT_GO, OPT_LIST, OPT_STARTTLS = 2, 7, 3, 5
REP_ACK, REP_SERVER, REP_INFO = 1, 2, 3
CMD_READ, CMD_WRITE = 0, 1
WAIT = 30  # far longer than the servers' handshake timeouts


class Dropped(Exception):
    """The server closed the connection or ended the TLS session."""


class Pipes:
    """CMD on the other end of two pipes, used like a socket."""

    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def sendall(self, b):
        self.p.stdin.write(b)
        self.p.stdin.flush()

    def recv(self, n):
        if not select.select([self.p.stdout], [], [], WAIT)[0]:
            raise socket.timeout()
        return os.read(self.p.stdout.fileno(), n)

    def shutdown(self, how):
        self.p.stdin.close()


class Client:
    def __init__(self, path, certdir, cmd=None):
        if cmd:
            self.s = Pipes(cmd)
        else:
            self.s = socket.socket(socket.AF_UNIX)
            self.s.settimeout(WAIT)
            self.s.connect(path)
        self.dir = certdir
        self.broken = False  # the misbehaviour started: a drop is expected
        self.acked = False  # STARTTLS acknowledged: the TLS handshake runs

    def raw_send(self, b):
        try:
            self.s.sendall(b)
        except (BrokenPipeError, ConnectionResetError):
            raise Dropped("closed while we sent")

    def raw_recv(self, n):
        b = b""
        while len(b) < n:
            c = self.s.recv(n - len(b))
            if not c:
                raise Dropped("closed in the clear")
            b += c
        return b

    def starttls(self):
        self.raw_recv(18)
        self.s.sendall(struct.pack(">I", 3))  # FIXED_NEWSTYLE | NO_ZEROES
        self.s.sendall(struct.pack(">QII", IHAVEOPT, OPT_STARTTLS, 0))
        _, opt, typ, n = struct.unpack(">QIII", self.raw_recv(20))
        if (opt, typ, n) != (OPT_STARTTLS, REP_ACK, 0):
            sys.exit("STARTTLS: reply %#x" % typ)
        self.acked = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(os.path.join(self.dir, "ca-cert.pem"))
        cert = os.path.join(self.dir, "client-cert.pem")
        if os.path.exists(cert):
            ctx.load_cert_chain(cert, os.path.join(self.dir, "client-key.pem"))
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.inc, self.out, server_hostname="localhost")
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.flush()
                self.fill()
            except ssl.SSLError as e:
                raise Dropped("TLS handshake: %s" % e.reason)
        self.flush()

    def fill(self):
        try:
            c = self.s.recv(65536)
        except ConnectionResetError:
            c = b""
        if not c:
            raise Dropped("closed")
        self.inc.write(c)

    def flush(self, cut=None):
        """Send what TLS produced; cut: send only that many bytes of it."""
        b = self.out.read()
        self.raw_send(b if cut is None else b[:cut])
        return len(b)

    def records(self, data):
        """data as TLS records, not sent."""
        self.tls.write(data)
        return self.out.read()

    def send(self, data):
        self.tls.write(data)
        self.flush()

    def recv(self, n):
        b = b""
        while len(b) < n:
            try:
                c = self.tls.read(n - len(b))
                if not c:
                    raise Dropped("close_notify")
                b += c
            except ssl.SSLWantReadError:
                self.fill()
            except ssl.SSLError as e:
                raise Dropped("TLS: %s" % e.reason)
        return b

    def option(self, opt, data=b""):
        self.send(struct.pack(">QII", IHAVEOPT, opt, len(data)) + data)

    def reply(self):
        _, opt, typ, n = struct.unpack(">QIII", self.recv(20))
        return opt, typ, self.recv(n)

    def go(self):
        self.option(OPT_GO, struct.pack(">IH", 0, 0))
        while True:
            _, typ, _ = self.reply()
            if typ == REP_ACK:
                return
            if typ != REP_INFO:
                sys.exit("GO: reply %#x" % typ)

    def request(self, cmd, cookie, offset, length):
        return struct.pack(">IHHQQI", REQ_MAGIC, 0, cmd, cookie, offset, length)

    def wait_dropped(self):
        """Nothing more may come but the end of the connection."""
        try:
            while True:
                c = self.s.recv(65536)
                if not c:
                    return
        except ConnectionResetError:
            return
        except socket.timeout:
            sys.exit("the server did not drop the connection in %d s" % WAIT)


def main():
    path, certdir, mode = sys.argv[1:4]
    c = Client(path, certdir, sys.argv[4:] if path == "-" else None)
    try:
        c.starttls()
        if mode in ("list", "refused"):
            c.option(OPT_LIST)
            while c.reply()[1] != REP_ACK:
                pass
            if mode == "refused":
                sys.exit("a refused client got an answer")
            c.option(OPT_ABORT)
            if isinstance(c.s, Pipes):
                c.s.shutdown(socket.SHUT_WR)
                rc = c.s.p.wait(WAIT)
                sys.exit("uraid serve --stdio exited with %d" % rc if rc else 0)
            return
        if mode == "opt-stall":
            # An option's record cut in half: its header promises more.
            rec = c.records(struct.pack(">QII", IHAVEOPT, OPT_LIST, 0))
            c.broken = True
            c.raw_send(rec[: len(rec) // 2])
            c.wait_dropped()
            return
        if mode == "opt-garbage":
            c.broken = True
            c.raw_send(b"\x00" * 4 + b"not a TLS record" * 8)
            c.wait_dropped()
            return
        c.go()
        if mode == "read-garbage":
            c.send(c.request(CMD_READ, 1, 0, 4096))
            if struct.unpack(">IIQ", c.recv(16))[1] != 0:
                sys.exit("READ failed")
            c.recv(4096)
            c.broken = True
            c.raw_send(b"\x17\x03\x03\x00\x20" + b"\xff" * 32)  # a record that does not decrypt
            c.wait_dropped()
            return
        # One WRITE that must land, so that "nothing written" below means
        # something.
        c.send(c.request(CMD_WRITE, 1, 1 << 20, 65536) + b"\xaa" * 65536)
        if struct.unpack(">IIQ", c.recv(16))[1] != 0:
            sys.exit("the complete WRITE failed")
        head = c.request(CMD_WRITE, 2, 0, 65536)
        if mode == "write-garbage":
            c.send(head)
            c.broken = True
            c.raw_send(b"garbage, not TLS" * 64)
            c.wait_dropped()
            return
        c.broken = True
        c.send(head + b"\xbb" * 32768)
        if mode == "write-torn":
            c.tls.write(b"\xbb" * 4096)
            c.flush(cut=100)
        c.s.shutdown(socket.SHUT_WR)
        c.wait_dropped()
    except Dropped as e:
        if c.broken or (mode == "refused" and c.acked):
            return
        sys.exit("dropped: %s" % e)


if __name__ == "__main__":
    main()
