"""client-output-buffer-limit (issue 15), against deadbolt and redis-server alike: the setting
reads and parses as Redis's; a client that pipelines GETs of a large value and never reads its
replies is closed once they pass its class's hard limit, whether its keys are on its own
reactor or on the other one (replies that come back from another shard), while another
client is served and the server's memory stays near the limit; a subscriber that does not read
is closed at the pubsub limit.

PING's latency meanwhile is printed, not asserted (no timing assertions in tests)."""

import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, bulk  # noqa: E402
from slots import on_shard  # noqa: E402

DEFAULT = b"normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
LIMIT_MB = 16
VALUE_MB = 1


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def allocator(c):
    for line in bytes(harness.decode(c.cmd("INFO", "memory"))).decode().splitlines():
        if line.startswith("mem_allocator:"):
            return line.split(":", 1)[1]
    return ""


def setting(c):
    return harness.decode(c.cmd("CONFIG", "GET", "client-output-buffer-limit"))[1]


class OutputLimitTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.addCleanup(lambda: self.conn().cmd("CONFIG", "SET", "client-output-buffer-limit",
                                                 DEFAULT.decode()))

    def test_setting_reads_and_parses_as_redis(self):
        self.assertEqual(setting(self.c), DEFAULT)
        self.assertEqual(self.c.cmd("CONFIG", "SET", "client-output-buffer-limit",
                                    "Normal 8mb 4mb 10 replica 1 1 1"), OK)
        self.assertEqual(setting(self.c),
                         b"normal 8388608 4194304 10 slave 1 1 1 pubsub 33554432 8388608 60")
        prefix = (b"-ERR CONFIG SET failed (possibly related to argument "
                  b"'client-output-buffer-limit') - ")
        for bad, why in [("foo 1 2 3", b"Invalid client class specified in buffer limit "
                                       b"configuration."),
                         ("normal 1 2", b"Wrong number of arguments in buffer limit "
                                        b"configuration."),
                         ("normal x 2 3", b"Error in hard, soft or soft_seconds setting in "
                                          b"buffer limit configuration.")]:
            self.assertEqual(self.c.cmd("CONFIG", "SET", "client-output-buffer-limit", bad),
                             prefix + why + b"\r\n")

    def reader_that_never_reads(self, keys):
        value = "v" * (VALUE_MB << 20)
        for k in keys:
            self.assertEqual(self.c.cmd("SET", k, value), OK)
        self.assertEqual(self.c.cmd("CONFIG", "SET", "client-output-buffer-limit",
                                    "normal %dmb %dmb 60" % (LIMIT_MB, LIMIT_MB // 2)), OK)
        pid = harness.server().proc.pid
        base = rss_mb(pid)
        reader = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        reader.connect(("127.0.0.1", harness.port()))
        self.addCleanup(reader.close)
        # 1 GB of replies asked for, never read.
        batch = b"".join(harness.encode_command("GET", keys[i % len(keys)]) for i in range(1024))
        stop = threading.Event()
        pings, peak = [], [base]

        def ping():
            c = self.conn()
            while not stop.is_set():
                t = time.monotonic()
                self.assertEqual(c.cmd("PING"), b"+PONG\r\n")
                pings.append(time.monotonic() - t)
                peak[0] = max(peak[0], rss_mb(pid))
                time.sleep(0.005)

        t = threading.Thread(target=ping)
        t.start()
        try:
            reader.settimeout(5)
            try:
                reader.sendall(batch)
            except OSError:
                pass  # closed while sending: what we want
            time.sleep(0.5)
            peak[0] = max(peak[0], rss_mb(pid))
            self.assertTrue(harness.drain_until_closed(reader), "the reader was not closed")
        finally:
            stop.set()
            t.join()
        # Memory stayed near the limit: far from the 1 GB asked for. Checked with the allocators
        # servers run with (deadbolt's mimalloc, Redis's jemalloc); a sanitizer build's malloc
        # keeps freed memory in quarantine, so there only correctness is checked.
        if allocator(self.c).startswith(("mimalloc", "jemalloc")):
            self.assertLess(peak[0] - base, LIMIT_MB + 100, "RSS grew %.0f MB" % (peak[0] - base))
        self.assertEqual(self.c.cmd("PING"), b"+PONG\r\n")
        if pings:
            print("\n  PING while a reader filled its buffer: %d pings, max %.1f ms; RSS grew "
                  "%.0f MB" % (len(pings), 1000 * max(pings), peak[0] - base), file=sys.stderr)
        if not harness.AGAINST_REDIS:
            info = bytes(harness.decode(self.c.cmd("INFO", "stats"))).decode()
            self.assertIn("client_output_buffer_limit_disconnections:1", info.replace("\r", ""))

    def test_reader_of_local_and_remote_keys_is_closed_at_the_hard_limit(self):
        self.assertEqual(self.c.cmd("CONFIG", "RESETSTAT"), OK)
        self.reader_that_never_reads([on_shard(0, "big"), on_shard(1, "big")])

    def test_a_client_closed_at_the_limit_ran_a_prefix_of_its_pipeline(self):
        # A pipeline whose later command (SET m0, shard 0) may run ahead of earlier ones on shard
        # 1 (server/core/relay.cc): the reader is closed at the limit while the GETs' replies
        # pile up, before INCR c1. Whatever ran must be a prefix of what it sent, as in Redis:
        # m0 set means c1 was incremented first.
        big, c1, m0 = on_shard(1, "pbig"), on_shard(1, "pc1"), on_shard(0, "pm0")
        first = on_shard(0, "pfirst")
        self.assertEqual(self.c.cmd("SET", big, "v" * (VALUE_MB << 20)), OK)
        self.assertEqual(self.c.cmd("CONFIG", "SET", "client-output-buffer-limit",
                                    "normal %dmb %dmb 60" % (LIMIT_MB, LIMIT_MB // 2)), OK)
        # Twice, on two connections: one of them is on each reactor, and each sees the hazard.
        for round_ in range(2):
            self.c.cmd("DEL", c1, m0)
            reader = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
            reader.connect(("127.0.0.1", harness.port()))
            self.addCleanup(reader.close)
            batch = [harness.encode_command("GET", first)]
            batch += [harness.encode_command("GET", big)] * (3 * LIMIT_MB // VALUE_MB)
            batch += [harness.encode_command("INCR", c1), harness.encode_command("SET", m0, "1")]
            reader.settimeout(5)
            try:
                reader.sendall(b"".join(batch))
            except OSError:
                pass
            time.sleep(0.5)  # (read nothing meanwhile: the replies reach the limit)
            self.assertTrue(harness.drain_until_closed(reader), "the reader was not closed")
            ran_m0 = self.c.cmd("GET", m0) != bulk(None)
            ran_c1 = self.c.cmd("GET", c1) == bulk("1")
            self.assertFalse(ran_m0 and not ran_c1,
                             "round %d: SET m0 ran but the INCR before it did not" % round_)

    def test_subscriber_that_does_not_read_is_closed_at_the_pubsub_limit(self):
        self.assertEqual(self.c.cmd("CONFIG", "SET", "client-output-buffer-limit",
                                    "pubsub 2mb 1mb 60"), OK)
        sub = socket.create_connection(("127.0.0.1", harness.port()))
        sub.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        self.addCleanup(sub.close)
        sub.sendall(harness.encode_command("SUBSCRIBE", "news"))
        got = b""
        while got.count(b"\r\n") < 6:
            got += sub.recv(1024)
        message = "m" * (64 * 1024)
        for _ in range(200):  # 12.5 MB, never read
            self.c.cmd("PUBLISH", "news", message)
        self.assertTrue(harness.drain_until_closed(sub), "the subscriber was not closed")
        self.assertEqual(self.c.cmd("PUBLISH", "news", "x"), harness.integer(0))


if __name__ == "__main__":
    harness.main()


class HeldInputTest(unittest.TestCase):
    """With no output limit (the default), a client that pipelines GETs of a large value and
    does not read the replies has no more of its commands run once 16 MB of replies wait for
    it: the server holds its input, not hundreds of MB of replies, and every reply still comes
    once the client reads. deadbolt only: Redis builds every reply. Local keys (--threads 1),
    and keys on another shard, whose relay comes home early and waits (with --pipeline-order
    key, where each command goes out on its own, at most 32 reads are out at once)."""

    def relay_readers(self, keys, values, key_of):
        """A --threads 2 server holding values[i] at keys[i]; two readers in turn (accepted
        connections go to the reactors in turn, so one is on each) each pipeline 300 GETs of
        keys[key_of(round, i)] (300 MB of replies) and read nothing for a second: the server's
        memory must stay far below that. Then every reply must come, in order. Returns the
        server and a connection to it."""
        srv = harness.ServerProcess(["--threads", "2"]).start()
        self.addCleanup(srv.stop)
        c = harness.RespConn(srv.port)
        for k, v in zip(keys, values):
            self.assertEqual(c.cmd("SET", k, v), OK)
        base = rss_mb(srv.proc.pid)
        real_allocator = allocator(c).startswith("mimalloc")
        n = 300
        for round_ in range(2):
            reader = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
            reader.connect(("127.0.0.1", srv.port))
            self.addCleanup(reader.close)
            reader.sendall(b"".join(harness.encode_command("GET", keys[key_of(round_, i)])
                                    for i in range(n)))
            time.sleep(1.0)
            # Far below the 300 MB asked for (before the hold: 312 MB, 605 MB with
            # --pipeline-order key). What it comes to: 16 MB of unread replies and what was out
            # when they got there (33 MB in all), the output buffer's copies as it grew by
            # doubling, and what the allocator kept of the round before: 80-130 MB here.
            # (A sanitizer build's malloc keeps freed memory in quarantine: not checked there.)
            if real_allocator:
                self.assertLess(rss_mb(srv.proc.pid) - base, 160, "round %d" % round_)
            self.assertEqual(c.cmd("PING"), b"+PONG\r\n")
            reader.settimeout(30)
            buf = b""
            for i in range(n):
                want = bulk(values[key_of(round_, i)])
                while len(buf) < len(want):
                    data = reader.recv(1 << 20)
                    self.assertTrue(data, "round %d: closed at reply %d" % (round_, i))
                    buf += data
                self.assertTrue(buf.startswith(want), "round %d: reply %d" % (round_, i))
                buf = buf[len(want):]
            reader.close()
        return srv, c

    def test_a_relay_is_held_while_replies_are_unread(self):
        # The same for replies built on the other shard: the relay comes home at the hold with
        # what it has, and goes on once they are read. Every key on shard 1, so that no command
        # runs ahead of an earlier one.
        if harness.AGAINST_REDIS:
            self.skipTest("redis-server builds every reply")
        key = on_shard(1, "big")
        srv, c = self.relay_readers([key], [b"x" * (VALUE_MB << 20)], lambda round_, i: 0)
        stats = bytes(harness.decode(c.cmd("INFO", "stats"))).decode()
        if not harness.KEY_ORDER:  # (there, at most 32 reads are out at once instead)
            self.assertRegex(stats, r"pipeline_relay_pauses:[1-9]")
        # Readers that go away while their relay waits: the rest of their commands is dropped
        # with them, and the server goes on.
        for _ in range(2):
            reader = socket.create_connection(("127.0.0.1", srv.port))
            reader.sendall(harness.encode_command("GET", key) * 100)
            time.sleep(0.3)
            reader.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            clients = bytes(harness.decode(c.cmd("CLIENT", "LIST"))).decode().splitlines()
            if len(clients) == 1:
                break
            time.sleep(0.05)
        self.assertEqual(len(clients), 1, clients)
        self.assertEqual(c.cmd("GET", on_shard(0, "small")), bulk(None))

    def test_a_relay_that_runs_ahead_is_held_while_replies_are_unread(self):
        # GETs alternating between the shards: a relay runs one shard's ahead of earlier ones on
        # the other. It stops running ahead at the hold, and waits for the reader once the
        # commands it ran ahead have every earlier one run; the replies come in the order sent.
        if harness.AGAINST_REDIS:
            self.skipTest("redis-server builds every reply")
        keys = [on_shard(s, "big") for s in range(2)]
        values = [(b"%d" % s) * (VALUE_MB << 20) for s in range(2)]
        _, c = self.relay_readers(keys, values, lambda round_, i: (i + round_) % 2)
        stats = bytes(harness.decode(c.cmd("INFO", "stats"))).decode()
        if not harness.KEY_ORDER:  # (there, at most 32 reads are out at once instead)
            self.assertRegex(stats, r"pipeline_relay_pauses:[1-9]")
            self.assertRegex(stats, r"pipeline_cmds_run_ahead:[1-9]")
            self.assertRegex(stats, r"pipeline_ahead_stops:[1-9]")

    def test_input_is_held_while_replies_are_unread(self):
        if harness.AGAINST_REDIS:
            self.skipTest("redis-server builds every reply")
        srv = harness.ServerProcess(["--threads", "1"]).start()
        self.addCleanup(srv.stop)
        c = harness.RespConn(srv.port)
        self.assertEqual(c.cmd("SET", "big", "x" * (VALUE_MB << 20)), OK)
        base = rss_mb(srv.proc.pid)
        reader = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        reader.connect(("127.0.0.1", srv.port))
        self.addCleanup(reader.close)
        n = 300  # 300 MB of replies asked for
        reader.sendall(harness.encode_command("GET", "big") * n)
        held = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            lines = bytes(harness.decode(c.cmd("CLIENT", "LIST"))).decode().splitlines()
            fields = [dict(f.split("=", 1) for f in line.split() if "=" in f)
                      for line in lines if "cmd=get" in line]
            if fields and int(fields[0]["qbuf"]) > 0 and int(fields[0]["omem"]) >= (16 << 20):
                held = fields[0]
                break
            time.sleep(0.05)
        self.assertIsNotNone(held, "the reader's input was never held")
        time.sleep(0.3)  # (were it not held, more replies would be built meanwhile)
        fields = [dict(f.split("=", 1) for f in line.split() if "=" in f)
                  for line in bytes(harness.decode(c.cmd("CLIENT", "LIST"))).decode().splitlines()
                  if "cmd=get" in line][0]
        self.assertLess(int(fields["omem"]), 40 << 20, fields)
        self.assertGreater(int(fields["qbuf"]), 0, fields)
        self.assertLess(rss_mb(srv.proc.pid) - base, 120)
        self.assertEqual(c.cmd("PING"), b"+PONG\r\n")
        want = n * len(bulk("x" * (VALUE_MB << 20)))
        got = 0
        reader.settimeout(30)
        while got < want:
            data = reader.recv(1 << 20)
            if not data:
                break
            got += len(data)
        self.assertEqual(got, want)
