"""nbdwire.py - a raw NBD client for the adversarial tests (stdlib only).

It speaks the fixed-newstyle handshake and the transmission phase byte by
byte, so that a test can send exactly what a well-behaved client never
would: wrong magics, lying lengths, unknown options, commands and flags,
requests that overflow, payloads that stop half way.  Nothing here
validates what it sends; it only parses what comes back, strictly, so a
desynchronised stream shows up as a bad magic or a wrong cookie.
"""
import os
import random
import socket
import struct
import sys

NBD_MAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REP_MAGIC = 0x0003E889045565A9
REQ_MAGIC = 0x25609513
SIMPLE_MAGIC = 0x67446698
STRUCT_MAGIC = 0x668E33EF

OPT_EXPORT_NAME, OPT_ABORT, OPT_LIST, OPT_STARTTLS = 1, 2, 3, 5
OPT_INFO, OPT_GO, OPT_STRUCTURED_REPLY = 6, 7, 8
OPT_LIST_META_CONTEXT, OPT_SET_META_CONTEXT = 9, 10

REP_ACK, REP_SERVER, REP_INFO, REP_META_CONTEXT = 1, 2, 3, 4
REP_ERR = 0x80000000
REP_ERR_UNSUP, REP_ERR_POLICY, REP_ERR_INVALID = REP_ERR | 1, REP_ERR | 2, REP_ERR | 3
REP_ERR_UNKNOWN, REP_ERR_TOO_BIG = REP_ERR | 6, REP_ERR | 9

INFO_EXPORT, INFO_NAME, INFO_DESCRIPTION, INFO_BLOCK_SIZE = 0, 1, 2, 3

CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH = 0, 1, 2, 3
CMD_TRIM, CMD_CACHE, CMD_WRITE_ZEROES, CMD_BLOCK_STATUS = 4, 5, 6, 7

FLAG_FUA, FLAG_NO_HOLE, FLAG_DF, FLAG_REQ_ONE, FLAG_FAST_ZERO = 1, 2, 4, 8, 16

REPLY_TYPE_NONE, REPLY_TYPE_OFFSET_DATA = 0, 1
REPLY_TYPE_OFFSET_HOLE, REPLY_TYPE_BLOCK_STATUS = 2, 5
REPLY_TYPE_ERROR, REPLY_TYPE_ERROR_OFFSET = 0x8001, 0x8002
REPLY_FLAG_DONE = 1

EPERM, EIO, ENOMEM, EINVAL, ENOSPC, EOVERFLOW, ENOTSUP = 1, 5, 12, 22, 28, 75, 95


class Closed(Exception):
    """The server closed the connection."""


class Checker:
    """Counts failed expectations; a script exits 1 if any failed."""

    def __init__(self, name):
        self.name = name
        self.failed = 0
        self.passed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("%s: FAIL: %s" % (self.name, what), file=sys.stderr)
        return cond

    def eq(self, got, want, what):
        return self.check(got == want, "%s: got %r, want %r" % (what, got, want))

    def done(self):
        print("%s: %d checks passed, %d failed" % (self.name, self.passed, self.failed))
        sys.exit(1 if self.failed else 0)


def connect(path, timeout=20.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def recvn(s, n):
    out = bytearray()
    while len(out) < n:
        try:
            chunk = s.recv(min(n - len(out), 1 << 20))
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            raise Closed("EOF after %d of %d bytes" % (len(out), n))
        out += chunk
    return bytes(out)


def sees_eof(s, timeout=20.0):
    """True once the server has closed the connection (reading whatever it
    still sends first); False if it is still open after timeout."""
    s.settimeout(timeout)
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def sendall_quiet(s, data):
    """Send, ignoring a server that has already hung up."""
    try:
        s.sendall(data)
        return True
    except (BrokenPipeError, ConnectionResetError):
        return False


class Client:
    """One connection.  Handshake helpers return the parsed replies; the
    request helpers build headers from explicit fields."""

    def __init__(self, path, timeout=20.0):
        self.s = connect(path, timeout)
        self.structured = False
        self.status = None  # the last BLOCK_STATUS chunk: (context, [(len, flags)])
        self.size = None
        self.tflags = None
        self.block = None

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass

    # --- handshake ---
    def greeting(self):
        magic, ihaveopt, hflags = struct.unpack(">QQH", recvn(self.s, 18))
        if magic != NBD_MAGIC or ihaveopt != IHAVEOPT:
            raise AssertionError("bad greeting %x %x" % (magic, ihaveopt))
        return hflags

    def start(self, cflags=3):
        """Greeting + client flags: the start of every fixed-newstyle session."""
        self.greeting()
        self.s.sendall(struct.pack(">I", cflags))

    def send_opt(self, opt, data=b"", length=None, magic=IHAVEOPT):
        n = len(data) if length is None else length
        self.s.sendall(struct.pack(">QII", magic, opt, n) + data)

    def opt_reply(self):
        magic, opt, rtype, n = struct.unpack(">QIII", recvn(self.s, 20))
        if magic != REP_MAGIC:
            raise AssertionError("bad option reply magic %x" % magic)
        if n > (1 << 20):
            raise AssertionError("option reply of %d bytes" % n)
        return opt, rtype, recvn(self.s, n)

    def opt_replies(self):
        """Replies to one option up to the final one (ACK or an error)."""
        out = []
        while True:
            r = self.opt_reply()
            out.append(r)
            if r[1] not in (REP_INFO, REP_SERVER, REP_META_CONTEXT):
                return out

    @staticmethod
    def go_data(name=b"", infos=()):
        return (struct.pack(">I", len(name)) + name +
                struct.pack(">H", len(infos)) +
                b"".join(struct.pack(">H", i) for i in infos))

    @staticmethod
    def meta_data(name=b"", queries=()):
        """NBD_OPT_{LIST,SET}_META_CONTEXT data: export name, queries."""
        return (struct.pack(">I", len(name)) + name + struct.pack(">I", len(queries)) +
                b"".join(struct.pack(">I", len(q)) + q for q in queries))

    def go(self, name=b"", structured=False, infos=(INFO_BLOCK_SIZE,)):
        """Finish a handshake started with start(); returns the replies."""
        if structured:
            self.send_opt(OPT_STRUCTURED_REPLY)
            _, t, _ = self.opt_reply()
            if t != REP_ACK:
                raise AssertionError("structured replies refused: %x" % t)
            self.structured = True
        self.send_opt(OPT_GO, self.go_data(name, infos))
        reps = self.opt_replies()
        self.parse_infos(reps)
        if reps[-1][1] != REP_ACK:
            raise AssertionError("OPT_GO failed: %x" % reps[-1][1])
        return reps

    def parse_infos(self, reps):
        for _, t, d in reps:
            if t != REP_INFO or len(d) < 2:
                continue
            it = struct.unpack(">H", d[:2])[0]
            if it == INFO_EXPORT and len(d) == 12:
                self.size, self.tflags = struct.unpack(">QH", d[2:])
            elif it == INFO_BLOCK_SIZE and len(d) == 14:
                self.block = struct.unpack(">III", d[2:])

    # --- transmission ---
    def send_req(self, cmd, off=0, length=0, flags=0, cookie=0, payload=b"",
                 magic=REQ_MAGIC):
        self.s.sendall(struct.pack(">IHHQQI", magic, flags, cmd, cookie,
                                   off & (2**64 - 1), length) + payload)

    def reply(self, read_len=0):
        """One complete reply: (error, cookie, data).  For a structured
        reply, chunks are read up to the one flagged DONE; data is the
        concatenation of OFFSET_DATA chunks (checked to be in range)."""
        magic = struct.unpack(">I", recvn(self.s, 4))[0]
        if magic == SIMPLE_MAGIC:
            err, cookie = struct.unpack(">IQ", recvn(self.s, 12))
            data = recvn(self.s, read_len) if read_len and err == 0 else b""
            return err, cookie, data
        if magic != STRUCT_MAGIC:
            raise AssertionError("bad reply magic %08x (stream out of step)" % magic)
        err, data, cookie = 0, bytearray(), None
        while True:
            flags, rtype, ck, n = struct.unpack(">HHQI", recvn(self.s, 16))
            if cookie is not None and ck != cookie:
                raise AssertionError("chunks of two replies interleaved")
            cookie = ck
            body = recvn(self.s, n)
            if rtype == REPLY_TYPE_OFFSET_DATA:
                data += body[8:]
            elif rtype == REPLY_TYPE_BLOCK_STATUS:
                if n < 12 or (n - 4) % 8:
                    raise AssertionError("block status chunk of %d bytes" % n)
                ctx = struct.unpack(">I", body[:4])[0]
                self.status = (ctx, [struct.unpack(">II", body[i:i + 8])
                                     for i in range(4, n, 8)])
            elif rtype & 0x8000:
                err = struct.unpack(">I", body[:4])[0]
            if flags & REPLY_FLAG_DONE:
                return err, cookie, bytes(data)
            magic = struct.unpack(">I", recvn(self.s, 4))[0]
            if magic != STRUCT_MAGIC:
                raise AssertionError("bad chunk magic %08x" % magic)

    def cmd(self, cmd, off=0, length=0, flags=0, payload=b"", cookie=0x1122334455667788):
        """Send one request, wait for its reply; returns (error, data)."""
        self.send_req(cmd, off, length, flags, cookie, payload)
        err, ck, data = self.reply(length if cmd == CMD_READ else 0)
        if ck != cookie:
            raise AssertionError("reply cookie %x, sent %x" % (ck, cookie))
        return err, data

    def read(self, off, length, flags=0):
        return self.cmd(CMD_READ, off, length, flags)

    def write(self, off, data, flags=0):
        return self.cmd(CMD_WRITE, off, len(data), flags, data)[0]

    def disc(self):
        self.send_req(CMD_DISC)
        self.close()


def open_export(path, structured=False, timeout=20.0):
    """A connected client in the transmission phase."""
    c = Client(path, timeout)
    c.start()
    c.go(structured=structured)
    return c


def pattern(seed, n):
    """Deterministic bytes that differ per seed."""
    return random.Random(seed).randbytes(n)


def server_mem_kib(pid, field="VmHWM"):
    """A memory figure of the server process from /proc (VmHWM: peak RSS,
    VmRSS: now) in KiB, or None if it cannot be read."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
