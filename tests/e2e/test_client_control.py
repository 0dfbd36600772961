"""CLIENT REPLY ON|OFF|SKIP, CLIENT PAUSE/UNPAUSE (WRITE and ALL), CLIENT NO-EVICT and NO-TOUCH
(issue 14), checked against redis-server too (DEADBOLT_AGAINST_REDIS=1)."""

import socket

import harness
from harness import OK, bulk, error, integer


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def nothing_within(c, seconds):
    """True if no byte arrives on c within `seconds`."""
    c.settimeout(seconds)
    try:
        c._fill()
    except socket.timeout:
        return True
    finally:
        c.settimeout(harness.IO_TIMEOUT)
    return False


class ClientReplyTest(harness.ServerTestCase):
    def test_off_on_skip(self):
        c = self.c
        # Pipelined: keys on both shards, an error and a multi-key command among the silenced.
        c.send(b"".join(harness.encode_command(*a) for a in [
            ("SET", "r:a", "1"),
            ("CLIENT", "REPLY", "OFF"),
            ("SET", "r:b", "2"), ("GET", "r:a"), ("SET", "r:k1", "x"), ("SET", "r:k2", "y"),
            ("MGET", "r:a", "r:b", "r:k1"), ("NOSUCHCOMMAND",), ("GET",),
            ("CLIENT", "REPLY", "SKIP"),  # no effect while OFF
            ("CLIENT", "REPLY", "ON"),
            ("GET", "r:b"),
            ("CLIENT", "REPLY", "SKIP"),
            ("GET", "r:k1"),
            ("GET", "r:k2"),
        ]))
        self.assertEqual(c.read_replies(4), [OK, OK, bulk("2"), bulk("y")])
        self.assertTrue(nothing_within(c, 0.2))

    def test_one_at_a_time(self):
        c = self.c
        self.assertTrue(c.send(harness.encode_command("CLIENT", "REPLY", "OFF")) is None)
        for i in range(20):
            c.send(harness.encode_command("SET", "r1:%d" % i, str(i)))
        c.send(harness.encode_command("CLIENT", "REPLY", "ON"))
        self.assertEqual(c.read_reply(), OK)
        self.assertEqual(c.cmd("GET", "r1:19"), bulk("19"))
        c.send(harness.encode_command("CLIENT", "REPLY", "SKIP"))
        c.send(harness.encode_command("INCR", "r1:0"))
        self.assertEqual(c.cmd("GET", "r1:0"), bulk("1"))

    def test_errors(self):
        c = self.c
        self.assertEqual(c.cmd("CLIENT", "REPLY", "maybe"), harness.SYNTAX)
        self.assertEqual(c.cmd("CLIENT", "REPLY"), harness.wrong_args("client|reply"))
        self.assertEqual(c.cmd("CLIENT", "NO-EVICT", "maybe"), harness.SYNTAX)
        self.assertEqual(c.cmd("CLIENT", "NO-EVICT", "on"), OK)
        self.assertEqual(c.cmd("CLIENT", "NO-EVICT", "OFF"), OK)

    def test_no_touch(self):
        if harness.AGAINST_REDIS:
            self.skipTest("CLIENT NO-TOUCH is Redis 7.2's; the reference here is 7.0")
        c = self.c
        self.assertEqual(c.cmd("CLIENT", "NO-TOUCH", "maybe"), harness.SYNTAX)
        self.assertEqual(c.cmd("CLIENT", "NO-TOUCH", "on"), OK)
        self.assertIn(b"T", c.cmd("CLIENT", "INFO").split(b" flags=")[1].split(b" ")[0])
        self.assertEqual(c.cmd("CLIENT", "NO-TOUCH", "off"), OK)


class ClientPauseTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.addCleanup(self._unpause)

    def _unpause(self):
        with harness.RespConn(self.port) as c:
            c.cmd("CLIENT", "UNPAUSE")

    def test_errors(self):
        c = self.c
        self.assertEqual(c.cmd("CLIENT", "PAUSE", "abc"),
                         error("ERR timeout is not an integer or out of range"))
        self.assertEqual(c.cmd("CLIENT", "PAUSE", "-1"), error("ERR timeout is negative"))
        self.assertEqual(c.cmd("CLIENT", "PAUSE", "10", "nope"),
                         error("ERR CLIENT PAUSE mode must be WRITE or ALL"))
        self.assertEqual(c.cmd("CLIENT", "PAUSE", "10", "write", "x"),
                         error("ERR unknown subcommand or wrong number of arguments for "
                               "'PAUSE'. Try CLIENT HELP."))
        self.assertEqual(c.cmd("CLIENT", "UNPAUSE", "x"), harness.wrong_args("client|unpause"))

    def test_write_pause_holds_writes_only(self):
        admin, reader, writer = self.conn(), self.conn(), self.conn()
        self.assertEqual(admin.cmd("SET", "p:x", "0"), OK)
        self.assertEqual(admin.cmd("CLIENT", "PAUSE", "100000", "WRITE"), OK)
        self.assertEqual(reader.cmd("GET", "p:x"), bulk("0"))
        self.assertEqual(reader.cmd("MGET", "p:x", "p:y"), harness.array(bulk("0"),
                                                                         harness.NIL))
        # Writes on both shards, and a read after them, wait; nothing is applied meanwhile.
        writer.send(b"".join(harness.encode_command(*a) for a in [
            ("SET", "p:x", "1"), ("INCR", "p:k1"), ("INCR", "p:k2"), ("GET", "p:x")]))
        self.assertTrue(nothing_within(writer, 0.3))
        self.assertEqual(reader.cmd("GET", "p:x"), bulk("0"))
        # Inside MULTI a write waits before it is even queued (as in Redis 7.0).
        m = self.conn()
        self.assertEqual(m.cmd("MULTI"), OK)
        m.send(harness.encode_command("SET", "p:m", "1") + harness.encode_command("EXEC"))
        self.assertTrue(nothing_within(m, 0.2))
        self.assertEqual(admin.cmd("CLIENT", "UNPAUSE"), OK)
        self.assertEqual(writer.read_replies(4), [OK, integer(1), integer(1), bulk("1")])
        self.assertEqual(m.read_replies(2), [b"+QUEUED\r\n", harness.array(OK)])
        self.assertEqual(reader.cmd("GET", "p:m"), bulk("1"))

    def test_all_pause_ends_by_itself(self):
        admin, other = self.conn(), self.conn()
        self.assertEqual(admin.cmd("SET", "pa:x", "v"), OK)
        self.assertEqual(admin.cmd("CLIENT", "PAUSE", "400", "ALL"), OK)
        other.send(harness.encode_command("GET", "pa:x"))
        self.assertTrue(nothing_within(other, 0.1))
        # Without UNPAUSE: the timeout ends it (the reply comes within the read timeout).
        self.assertEqual(other.read_reply(), bulk("v"))


if __name__ == "__main__":
    harness.main()
