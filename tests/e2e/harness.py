"""Shared fixture for deadbolt's end-to-end tests (Python 3 standard library only).

Which server is started:
  DEADBOLT_SERVER=/path/to/deadbolt-server   -> <bin> --port P --bind 127.0.0.1 --threads 2
                                                (+ $DEADBOLT_SERVER_ARGS)
  DEADBOLT_AGAINST_REDIS=1                   -> /usr/bin/redis-server (the reference)
DEADBOLT_SERVER wins when both are set.

Each test module starts one server in setUpModule() and stops it in tearDownModule():

    import harness
    def setUpModule(): harness.start_module_server()
    def tearDownModule(): harness.stop_module_server()

    class MyTest(harness.ServerTestCase):
        def test_x(self):
            self.assertReply(b"$-1\r\n", "GET", "k")  # on self.c, opened on first use
            c = self.conn()                           # another raw connection
            c.send(b"PING\r\n")                       # exact bytes out...
            self.assertEqual(c.read_reply(), b"+PONG\r\n")  # ...one whole reply in

Connections are closed after each test; a test fails if the server died during it; the
server's output is printed after a failing test; tearDownModule fails if the server crashed or
did not exit 0 (or by the default SIGTERM action) within DEADBOLT_E2E_STOP_TIMEOUT seconds.

Replies are compared as exact raw bytes. Every socket read has a timeout, so a server that
hangs makes a test fail instead of hanging the suite.
"""

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

REDIS_SERVER = "/usr/bin/redis-server"

# Generous: the suite also runs against ASan/UBSan debug builds on a 2-core machine.
START_TIMEOUT = float(os.environ.get("DEADBOLT_E2E_START_TIMEOUT", "20"))
STOP_TIMEOUT = float(os.environ.get("DEADBOLT_E2E_STOP_TIMEOUT", "10"))
IO_TIMEOUT = float(os.environ.get("DEADBOLT_E2E_IO_TIMEOUT", "10"))

CRLF = b"\r\n"


# ---------------------------------------------------------------------------------------------
# Server process
# ---------------------------------------------------------------------------------------------

# True when the suite runs against the reference redis-server rather than deadbolt.
# The run's servers keep only per-key order in a pipeline (--pipeline-order key): the tests of
# what only the default mode promises skip.
KEY_ORDER = "key" in os.environ.get("DEADBOLT_SERVER_ARGS", "").split()
# The run's servers fsync every write before acknowledging it (--appendfsync always), where a
# relay's commands from the first one run ahead on are one transaction in the journal.
_ARGS = os.environ.get("DEADBOLT_SERVER_ARGS", "").split()
FSYNC_ALWAYS = any(a == "--appendfsync" and b == "always" for a, b in zip(_ARGS, _ARGS[1:]))
AGAINST_REDIS = (not os.environ.get("DEADBOLT_SERVER")
                 and os.environ.get("DEADBOLT_AGAINST_REDIS") == "1")


def run_tool(test, argv, timeout, env=None):
    """Runs one of the tools/ programs: returns (exit code, "$ argv" + its stdout and stderr);
    fails `test` if it has not finished within `timeout` seconds. `env`: variables added to
    this process's environment for it."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=timeout,
                           env=dict(os.environ, **env) if env else None)
    except subprocess.TimeoutExpired as e:
        test.fail("%s did not finish within %ds:\n%s"
                  % (" ".join(argv), timeout, (e.output or b"").decode("utf-8", "replace")))
    return p.returncode, "$ %s\n%s" % (" ".join(argv), p.stdout.decode("utf-8", "replace"))


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=20):
    """Waits until something accepts connections on 127.0.0.1:port (a server just started by a
    script that does not use ServerProcess); raises RuntimeError after `timeout` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not start on %d" % port)


def server_command(port):
    binary = os.environ.get("DEADBOLT_SERVER")
    if binary:
        if not os.path.isfile(binary) or not os.access(binary, os.X_OK):
            raise RuntimeError("DEADBOLT_SERVER=%r is not an executable file" % binary)
        binary = os.path.abspath(binary)  # the server runs in its own working directory
        # DEADBOLT_SERVER_ARGS: more flags for every server of the run (ctest runs the whole
        # suite again with "--pipeline-order key").
        extra = os.environ.get("DEADBOLT_SERVER_ARGS", "").split()
        return [binary, "--port", str(port), "--bind", "127.0.0.1", "--threads", "2"] + extra
    if os.environ.get("DEADBOLT_AGAINST_REDIS") == "1":
        if not os.access(REDIS_SERVER, os.X_OK):
            raise RuntimeError("DEADBOLT_AGAINST_REDIS=1 but %s is missing" % REDIS_SERVER)
        return [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no"]
    raise RuntimeError("set DEADBOLT_SERVER=/path/to/deadbolt-server, "
                       "or DEADBOLT_AGAINST_REDIS=1 to run against /usr/bin/redis-server")


class ServerProcess:
    """One server on a free port of 127.0.0.1; its stdout+stderr go to a log file.
    extra_args are appended to the command line (a later flag overrides an earlier one)."""

    def __init__(self, extra_args=()):
        self.extra_args = list(extra_args)
        self.port = None
        self.proc = None
        self.argv = None
        self.workdir = None
        self.log_path = None
        self._log = None
        self._final_log = None

    def start(self, port=None):
        """Starts the server on a free port, or on `port` if given (say, the port of a server
        just killed; then it is tried once, and on that port only)."""
        server_command(0)  # configuration errors are not worth retrying
        last_error = None
        # A free port may be taken between probe and bind: then another one is tried.
        for _attempt in range(3 if port is None else 1):
            try:
                self._start_once(free_port() if port is None else port)
                return self
            except Exception as e:  # noqa: BLE001 - retried, then re-raised
                last_error = e
                self._kill()
        raise RuntimeError("could not start server: %s" % last_error)

    def _start_once(self, port):
        self.port = port
        self._final_log = None
        self.argv = server_command(port) + self.extra_args
        self.workdir = tempfile.mkdtemp(prefix="deadbolt-e2e-")
        self.log_path = os.path.join(self.workdir, "server.log")
        self._log = open(self.log_path, "wb")
        # Own session, so that a wrapper's children (valgrind, a shell script) can be killed too.
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, cwd=self.workdir, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited with code %s during startup:\n%s"
                                   % (self.proc.returncode, self.log_tail()))
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
                    s.settimeout(2.0)
                    s.sendall(b"*1\r\n$4\r\nPING\r\n")
                    if read_one_reply_from_socket(s) and self._owns_port(port):
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("server did not accept connections on port %d within %.0fs:\n%s"
                                   % (port, START_TIMEOUT, self.log_tail()))
            time.sleep(0.05)

    def _owns_port(self, port):
        """True if the process listening on `port` is ours (the server or a child in its session),
        so that the suite never talks to (and FLUSHALLs) someone else's server that grabbed the
        port. Without /proc this check is skipped."""
        inodes = set()
        try:
            for table in ("/proc/net/tcp", "/proc/net/tcp6"):
                if not os.path.exists(table):
                    continue
                with open(table) as f:
                    next(f)
                    for line in f:
                        parts = line.split()
                        if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                            inodes.add("socket:[%s]" % parts[9])
        except OSError:
            return True
        if not inodes:
            return False
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                if os.getsid(int(pid)) != self.proc.pid:
                    continue
                fd_dir = "/proc/%s/fd" % pid
                for fd in os.listdir(fd_dir):
                    if os.readlink(os.path.join(fd_dir, fd)) in inodes:
                        return True
            except OSError:
                continue
        return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_text(self):
        if self._final_log is not None:
            return self._final_log
        if not self.log_path or not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def log_tail(self, limit=6000):
        text = self.log_text()
        if len(text) > limit:
            text = "...\n" + text[-limit:]
        return text

    def stop(self):
        """SIGTERM, then SIGKILL after STOP_TIMEOUT. Returns a problem description or None."""
        if self.proc is None:
            return None
        problem = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self._kill_session()
                self.proc.wait()
                problem = "server did not exit within %.0fs of SIGTERM (killed)" % STOP_TIMEOUT
        else:
            problem = "server had already exited (code %s) before it was stopped" % self.proc.returncode
        self._kill_session()  # leftovers of a wrapper, if any
        code = self.proc.returncode
        # 0: clean shutdown; -SIGTERM: no handler installed. Anything else (an abort from a
        # sanitizer, a crash, a leak report's exit code) is a failure.
        if problem is None and code not in (0, -signal.SIGTERM):
            problem = "server exited with code %s after SIGTERM" % code
        self._cleanup_files()
        self.proc = None
        return problem

    def _cleanup_files(self):
        if self._log:
            self._log.close()
            self._log = None
        self._final_log = self.log_text()
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def _kill_session(self):
        """SIGKILL to every process of the session the server was started in (the server and
        any children of a wrapper script), one pid at a time: nothing else is touched."""
        for pid in _pids_in_session(self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def kill(self):
        """SIGKILL (a crash, for tests that restart the server); returns the exit code."""
        code = None
        if self.proc is not None:
            self._kill_session()
            code = self.proc.wait()
        self.proc = None
        self._cleanup_files()
        return code

    def wait_exit(self, timeout=STOP_TIMEOUT):
        """Waits for the server to exit by itself (after SHUTDOWN); returns the exit code, or
        None if it was still running after `timeout` (then it is killed)."""
        if self.proc is None:
            return None
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
        self._kill_session()
        self.proc.wait()
        self.proc = None
        self._cleanup_files()
        return code

    def _kill(self):
        if self.proc is not None:
            self._kill_session()
            self.proc.wait()
        self.proc = None
        self._cleanup_files()


def run_server_to_exit(extra_args, timeout=START_TIMEOUT):
    """Runs the server with extra_args when it is expected to refuse to start: returns
    (exit code, output). Fails if it is still running after `timeout` (it is then killed)."""
    argv = server_command(free_port()) + list(extra_args)
    workdir = tempfile.mkdtemp(prefix="deadbolt-e2e-")
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, cwd=workdir, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for pid in _pids_in_session(proc.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            out, _ = proc.communicate()
            raise AssertionError("%s still running after %.0fs; output:\n%s"
                                 % (shlex.join(argv), timeout, out.decode("utf-8", "replace")))
        return proc.returncode, out.decode("utf-8", "replace")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _pids_in_session(sid):
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.getsid(int(name)) == sid:
                    pids.append(int(name))
            except OSError:
                pass
    return pids


_SERVER = None


def start_module_server(extra_args=()):
    """For setUpModule(): starts the one server this test module uses (extra_args: flags added
    to its command line)."""
    global _SERVER
    if _SERVER is None:
        _SERVER = ServerProcess(extra_args).start()
    return _SERVER


def stop_module_server():
    """For tearDownModule(): stops the server; fails if it crashed or would not stop."""
    global _SERVER
    server, _SERVER = _SERVER, None
    if server is None:
        return
    problem = server.stop()
    if problem:
        raise AssertionError("%s\n--- server output (%s) ---\n%s"
                             % (problem, shlex.join(server.argv), server.log_tail()))


def server():
    if _SERVER is None:
        raise RuntimeError("no server: call harness.start_module_server() in setUpModule()")
    return _SERVER


def port():
    return server().port


# ---------------------------------------------------------------------------------------------
# RESP
# ---------------------------------------------------------------------------------------------

class IncompleteReply(Exception):
    pass


def _line_end(buf, pos):
    end = buf.find(CRLF, pos)
    if end < 0:
        raise IncompleteReply()
    return end


def reply_end(buf, pos=0):
    """Index just past the one RESP2/RESP3 reply starting at buf[pos]; IncompleteReply if the
    buffer does not hold all of it yet; ValueError if the bytes are not RESP."""
    if pos >= len(buf):
        raise IncompleteReply()
    t = buf[pos:pos + 1]
    end = _line_end(buf, pos)
    header = buf[pos + 1:end]
    after = end + 2
    if t in (b"+", b"-", b":", b"_", b",", b"#", b"("):
        return after
    if t in (b"$", b"!", b"="):
        n = int(header)
        if n < 0:
            if t != b"$" or n != -1:
                raise ValueError("bad length %r" % header)
            return after
        if len(buf) < after + n + 2:
            raise IncompleteReply()
        if buf[after + n:after + n + 2] != CRLF:
            raise ValueError("bulk not terminated by CRLF at %d" % (after + n))
        return after + n + 2
    if t in (b"*", b"~", b">", b"%", b"|"):
        n = int(header)
        if n < 0:
            if t != b"*" or n != -1:
                raise ValueError("bad aggregate length %r" % header)
            return after
        if t in (b"%", b"|"):
            n *= 2
        p = after
        for _ in range(n):
            p = reply_end(buf, p)
        if t == b"|":  # an attribute comes before the reply it describes
            p = reply_end(buf, p)
        return p
    raise ValueError("not a RESP type byte %r at %d in %r" % (t, pos, buf[pos:pos + 60]))


def read_one_reply_from_socket(sock, buf=b""):
    while True:
        try:
            end = reply_end(buf)
            return buf[:end]
        except IncompleteReply:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            buf += chunk


class RespError:
    """A decoded error reply."""

    def __init__(self, message):
        self.message = message

    def __repr__(self):
        return "RespError(%r)" % self.message

    def __eq__(self, other):
        return isinstance(other, RespError) and other.message == self.message


class RespSet(list):
    """A decoded RESP3 set (kept as a list: its items may be unhashable)."""


class RespPush(list):
    """A decoded RESP3 push."""


class Verbatim(bytes):
    """A decoded RESP3 verbatim string; .format is e.g. b'txt'."""
    format = b""


def decode(raw):
    """Decodes one raw reply to Python values: bytes for strings, int, float, None, list,
    dict (RESP3 map), RespSet (RESP3 set), RespPush, bool, RespError, Verbatim."""
    value, end = _decode(raw, 0)
    if end != len(raw):
        raise ValueError("trailing bytes after reply: %r" % raw[end:end + 60])
    return value


def _decode(buf, pos):
    t = buf[pos:pos + 1]
    end = _line_end(buf, pos)
    header = buf[pos + 1:end]
    after = end + 2
    if t == b"+":
        return header, after
    if t == b"-":
        return RespError(header), after
    if t == b":":
        return int(header), after
    if t == b"(":
        return int(header), after
    if t == b"_":
        return None, after
    if t == b",":
        return float(header), after
    if t == b"#":
        return header == b"t", after
    if t in (b"$", b"!", b"="):
        n = int(header)
        if n < 0:
            return None, after
        data = buf[after:after + n]
        if t == b"!":
            return RespError(data), after + n + 2
        if t == b"=":
            v = Verbatim(data[4:])
            v.format = data[:3]
            return v, after + n + 2
        return data, after + n + 2
    if t in (b"*", b"~", b">"):
        n = int(header)
        if n < 0:
            return None, after
        items = []
        p = after
        for _ in range(n):
            v, p = _decode(buf, p)
            items.append(v)
        if t == b"~":
            return RespSet(items), p
        if t == b">":
            return RespPush(items), p
        return items, p
    if t in (b"%", b"|"):
        n = int(header)
        d = {}
        p = after
        for _ in range(n):
            k, p = _decode(buf, p)
            v, p = _decode(buf, p)
            d[k] = v
        if t == b"|":
            return _decode(buf, p)
        return d, p
    raise ValueError("not a RESP type byte %r" % t)


def encode_command(*args):
    """A RESP multibulk command; str args are UTF-8 encoded, ints are formatted."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, int):
            a = str(a).encode()
        elif isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def bulk(data):
    """Raw bytes of a RESP bulk string reply (None -> null bulk)."""
    if data is None:
        return b"$-1\r\n"
    if isinstance(data, str):
        data = data.encode()
    return b"$%d\r\n%s\r\n" % (len(data), data)


def integer(n):
    return b":%d\r\n" % n


def error(msg):
    return b"-" + (msg.encode() if isinstance(msg, str) else msg) + CRLF


def array(*raw_items):
    return b"*%d\r\n" % len(raw_items) + b"".join(raw_items)


OK = b"+OK\r\n"
NIL = b"$-1\r\n"
NIL_ARRAY = b"*-1\r\n"
NULL3 = b"_\r\n"
PONG = b"+PONG\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
NOT_INTEGER = b"-ERR value is not an integer or out of range\r\n"
NOT_FLOAT = b"-ERR value is not a valid float\r\n"
SYNTAX = b"-ERR syntax error\r\n"


def wrong_args(cmd):
    return b"-ERR wrong number of arguments for '%s' command\r\n" % cmd.encode()


def info(c, section):
    """INFO `section` as a dict of its fields (strings); comment lines left out."""
    fields = {}
    for line in bytes(decode(c.cmd("INFO", section))).decode().splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            fields[k] = v
    return fields


def drain_until_closed(sock, timeout=30):
    """Reads and discards until the server closes the connection; True if it did."""
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(1 << 20):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


class RespConn:
    """A raw connection: send exact bytes, read exactly one reply as raw bytes."""

    def __init__(self, port_=None, timeout=IO_TIMEOUT):
        self.timeout = timeout
        self.sock = socket.create_connection(("127.0.0.1", port_ or port()), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(timeout)
        self.buf = bytearray()
        self.pos = 0  # start of the unread part of buf

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def settimeout(self, t):
        self.timeout = t
        self.sock.settimeout(t)

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection; unread bytes: %r"
                                  % bytes(self.buf[self.pos:self.pos + 200]))
        if self.pos and self.pos == len(self.buf):
            self.buf.clear()
            self.pos = 0
        elif self.pos > (1 << 20):
            del self.buf[:self.pos]
            self.pos = 0
        self.buf += chunk

    def read_reply(self):
        """The raw bytes of the next reply (raises socket.timeout if it does not come)."""
        while True:
            try:
                end = reply_end(self.buf, self.pos)
                break
            except IncompleteReply:
                self._fill()
        raw = bytes(self.buf[self.pos:end])
        self.pos = end
        return raw

    def read_replies(self, n):
        return [self.read_reply() for _ in range(n)]

    def read_exact(self, n):
        while len(self.buf) - self.pos < n:
            self._fill()
        raw = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return raw

    def cmd(self, *args):
        """Sends one command as a multibulk and returns the raw reply."""
        self.send(encode_command(*args))
        return self.read_reply()

    def call(self, *args):
        """Like cmd() but decoded (see decode())."""
        return decode(self.cmd(*args))

    def pipeline(self, commands):
        """Sends all commands in one write, returns their raw replies in order."""
        self.send(b"".join(encode_command(*c) for c in commands))
        return self.read_replies(len(commands))

    def read_until_closed(self, timeout=5.0):
        """Reads until the server closes the connection; returns what was read (including
        buffered bytes). Raises AssertionError if it is still open after `timeout`."""
        self.sock.settimeout(timeout)
        data = bytes(self.buf[self.pos:])
        self.buf = bytearray()
        self.pos = 0
        deadline = time.monotonic() + timeout
        while True:
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                return data
            except socket.timeout:
                raise AssertionError("connection still open after %.1fs; read %r" % (timeout, data[:300]))
            if not chunk:
                return data
            data += chunk
            if time.monotonic() > deadline:
                raise AssertionError("connection still open after %.1fs; read %r" % (timeout, data[:300]))

    def assert_still_open(self, wait=0.1):
        """True if nothing is pending and the peer has not closed (no EOF within `wait`)."""
        self.sock.settimeout(wait)
        try:
            chunk = self.sock.recv(1)
        except socket.timeout:
            return True
        finally:
            self.sock.settimeout(self.timeout)
        raise AssertionError("expected an open, idle connection; got %r" % chunk)


# ---------------------------------------------------------------------------------------------
# TestCase base
# ---------------------------------------------------------------------------------------------

class ServerTestCase(unittest.TestCase):
    """Base class: conn() opens raw connections that are closed after the test; a test fails
    if the server died during it; server output is printed when a test fails."""

    maxDiff = 4000

    def setUp(self):
        self._conns = []
        self._c = None
        s = server()
        if not s.alive():
            self.fail("server is not running (exit code %s); see the first failure for its output"
                      % s.proc.returncode)
        self.addCleanup(self._close_conns)
        self.addCleanup(self._check_server_alive)

    @property
    def c(self):
        """A connection opened on first use, closed after the test."""
        if self._c is None:
            self._c = self.conn()
        return self._c

    def assertReply(self, expected, *args, c=None):
        """Sends args as one command on `c` (default self.c); the raw reply must be `expected`."""
        got = (c or self.c).cmd(*args)
        self.assertEqual(got, expected, "reply to %s" % " ".join(repr(a) for a in args))
        return got

    def assertReplies(self, table, c=None):
        """table: [(args tuple, expected), ...]; expected is the raw reply, or a range() that
        an integer reply must fall in (for TTLs, which move while the test runs)."""
        for args, expected in table:
            if isinstance(expected, range):
                got = (c or self.c).cmd(*args)
                what = "reply to %s" % " ".join(repr(a) for a in args)
                self.assertRegex(got, rb"^:-?\d+\r\n$", what)
                self.assertIn(int(got[1:-2]), expected, what)
            else:
                self.assertReply(expected, *args, c=c)

    def assertTTL(self, key, lo, hi, c=None, cmd="TTL"):
        """TTL (or PTTL with cmd="PTTL") of key lies in [lo, hi]."""
        raw = (c or self.c).cmd(cmd, key)
        self.assertTrue(raw.startswith(b":"), "%s %s -> %r" % (cmd, key, raw))
        v = int(raw[1:-2])
        if not lo <= v <= hi:
            self.fail("%s %s = %d, expected within [%d, %d]" % (cmd, key, v, lo, hi))
        return v

    def conn(self, timeout=IO_TIMEOUT):
        c = RespConn(port(), timeout=timeout)
        self._conns.append(c)
        return c

    @property
    def port(self):
        return port()

    def _close_conns(self):
        for c in self._conns:
            c.close()
        self._conns = []

    def _check_server_alive(self):
        s = server()
        if not s.alive():
            raise AssertionError("server died during this test (exit code %s):\n%s"
                                 % (s.proc.returncode, s.log_tail()))

    def make_hash(self, c, key):
        """Creates a hash at `key` (to provoke WRONGTYPE); skips the test without HSET."""
        r = c.cmd("HSET", key, "field", "value")
        if r.startswith(b"-ERR unknown command"):
            self.skipTest("server has no HSET yet")
        self.assertEqual(r, b":1\r\n")

    def run(self, result=None):
        before = _problem_count(result)
        out = super().run(result)
        if result is not None and _problem_count(result) > before and _SERVER is not None:
            if not _SERVER.alive():
                if getattr(_SERVER, "dead_log_shown", False):
                    return out
                _SERVER.dead_log_shown = True
            sys.stderr.write("\n--- server output after failure of %s (%s) ---\n%s\n--- end ---\n"
                             % (self.id(), shlex.join(_SERVER.argv or []), _SERVER.log_tail(3000)))
        return out


def _problem_count(result):
    if result is None:
        return 0
    return len(getattr(result, "failures", [])) + len(getattr(result, "errors", []))


def main():
    """For `python3 tests/e2e/test_x.py`."""
    unittest.main(verbosity=2)
