"""RESP framing: big pipelines, frames split across writes at every byte, protocol errors (exact
reply, then the connection is closed while others keep working), and clients that go away in
the middle of a command or a pipeline."""

import os
import random
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import NIL, OK, PONG, bulk, encode_command, integer  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def protocol_error(what):
    return b"-ERR Protocol error: " + what + b"\r\n"


class ProtocolTestCase(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def send_in_background(self, conn, data):
        """sendall() in a thread, so a server that answers while we are still writing cannot
        deadlock the test on full socket buffers. Returns a join() function."""
        errors = []

        def run():
            try:
                conn.send(data)
            except OSError as e:
                errors.append(e)

        t = threading.Thread(target=run, daemon=True)
        t.start()

        def join():
            t.join(harness.IO_TIMEOUT)
            self.assertFalse(t.is_alive(), "send did not finish")
            self.assertEqual(errors, [])
        return join

    def assert_replies(self, got, expected):
        self.assertEqual(len(got), len(expected))
        for i, (g, e) in enumerate(zip(got, expected)):
            if g != e:
                self.fail("reply %d: got %r, expected %r" % (i, g, e))


class PipelineTest(ProtocolTestCase):
    def test_pipeline_10000_commands(self):
        model = {}
        counter = 0
        commands, expected = [], []
        for i in range(10000):
            key = "p:%d" % ((i * 7) % 97)
            op = i % 6
            if op == 0:
                value = "v%d" % i
                commands.append(("SET", key, value))
                expected.append(OK)
                model[key] = value
            elif op == 1:
                commands.append(("GET", key))
                expected.append(bulk(model[key]) if key in model else NIL)
            elif op == 2:
                counter += 1
                commands.append(("INCR", "p:{tag}:counter"))
                expected.append(integer(counter))
            elif op == 3:
                commands.append(("EXISTS", key, "p:nokey"))
                expected.append(integer(1 if key in model else 0))
            elif op == 4:
                commands.append(("PING",))
                expected.append(PONG)
            else:
                commands.append(("ECHO", "e%d" % i))
                expected.append(bulk("e%d" % i))
        c = self.conn()
        payload = b"".join(encode_command(*cmd) for cmd in commands)
        join = self.send_in_background(c, payload)
        got = c.read_replies(len(commands))
        join()
        self.assert_replies(got, expected)
        self.assertReply(bulk(str(counter)), "GET", "p:{tag}:counter")
        c.assert_still_open()

    def test_pipeline_of_inline_commands(self):
        c = self.conn()
        n = 2000
        payload = b"".join(b"SET il:%d %d\r\nINCR il:%d\r\n" % (i, i, i) for i in range(n))
        join = self.send_in_background(c, payload)
        got = c.read_replies(2 * n)
        join()
        expected = []
        for i in range(n):
            expected += [OK, integer(i + 1)]
        self.assert_replies(got, expected)

    def test_pipeline_large_values(self):
        c = self.conn()
        values = [os.urandom(64 * 1024 + i) for i in range(40)]
        commands = [("SET", "big:%d" % i, v) for i, v in enumerate(values)]
        commands += [("GET", "big:%d" % i) for i in range(len(values))]
        payload = b"".join(encode_command(*cmd) for cmd in commands)
        join = self.send_in_background(c, payload)
        got = c.read_replies(len(commands))
        join()
        self.assert_replies(got, [OK] * len(values) + [bulk(v) for v in values])


class SplitFramesTest(ProtocolTestCase):
    DATA = (encode_command("SET", "split:a", "hello world") +
            encode_command("GET", "split:a") +
            b"INCR split:n\r\n" +
            encode_command("APPEND", "split:a", b"\r\n$") +
            encode_command("PING"))
    EXPECTED = [OK, bulk("hello world"), None, integer(14), PONG]

    def expected(self, n):
        return [integer(n) if e is None else e for e in self.EXPECTED]

    def test_split_at_every_point(self):
        c = self.conn()
        for i in range(1, len(self.DATA)):
            self.assertReply(OK, "SET", "split:a", "hello world", c=c)
            c.send(self.DATA[:i])
            time.sleep(0.002)
            c.send(self.DATA[i:])
            self.assert_replies(c.read_replies(5), self.expected(i))

    def test_one_byte_at_a_time(self):
        c = self.conn()
        for b in self.DATA:
            c.send(bytes([b]))
            time.sleep(0.001)
        self.assert_replies(c.read_replies(5), self.expected(1))
        # The server must not answer a command before its last byte arrived.
        cmd = encode_command("ECHO", "partial")
        c.send(cmd[:-1])
        c.assert_still_open(wait=0.2)
        c.send(cmd[-1:])
        self.assertEqual(c.read_reply(), bulk("partial"))

    def test_split_inside_big_bulk(self):
        c = self.conn()
        value = os.urandom(300 * 1024)
        data = encode_command("SET", "split:big", value) + encode_command("STRLEN", "split:big")
        rnd = random.Random(1234)
        pos = 0
        while pos < len(data):
            n = rnd.choice([1, 2, 7, 100, 1500, 4096, 65536])
            c.send(data[pos:pos + n])
            pos += n
            if rnd.random() < 0.1:
                time.sleep(0.001)
        self.assertEqual(c.read_replies(2), [OK, integer(len(value))])
        self.assertReply(bulk(value), "GET", "split:big", c=c)

    def test_header_split_in_crlf(self):
        c = self.conn()
        for parts in ([b"*1\r", b"\n$4\r\nPING\r\n"], [b"*1\r\n$4\r", b"\nPING\r\n"],
                      [b"*1\r\n$4\r\nPING\r", b"\n"], [b"PING\r", b"\n"], [b"*", b"1\r\n$", b"4\r\nPING\r\n"]):
            for p in parts:
                c.send(p)
                time.sleep(0.01)
            self.assertEqual(c.read_reply(), PONG, parts)


class ProtocolErrorTest(ProtocolTestCase):
    def check_error_closes(self, data, expected_error, replies_before=()):
        """Sends `data` on a new connection; expects `replies_before`, then the exact error,
        then EOF. Another connection opened before keeps working."""
        other = self.conn()
        self.assertReply(OK, "SET", "survivor", "yes", c=other)
        bad = self.conn()
        bad.send(data)
        for r in replies_before:
            self.assertEqual(bad.read_reply(), r)
        self.assertEqual(bad.read_reply(), expected_error, data[:80])
        rest = bad.read_until_closed(timeout=5)
        self.assertEqual(rest, b"", "bytes after the protocol error")
        self.assertReply(PONG, "PING", c=other)
        self.assertReply(bulk("yes"), "GET", "survivor", c=other)
        self.assertReply(PONG, "PING", c=self.conn())

    def test_invalid_multibulk_length(self):
        err = protocol_error(b"invalid multibulk length")
        for data in (b"*abc\r\n", b"*2147483648\r\n", b"*9223372036854775808\r\n", b"*+1\r\n$4\r\nPING\r\n",
                     b"*01\r\n$4\r\nPING\r\n", b"*\r\n", b"*1\n$4\r\nPING\r\n", b"*1x\r\n"):
            with self.subTest(data=data):
                self.check_error_closes(data, err)

    def test_invalid_bulk_length(self):
        err = protocol_error(b"invalid bulk length")
        for data in (b"*1\r\n$abc\r\n", b"*1\r\n$-1\r\n", b"*1\r\n$-5\r\n", b"*1\r\n$\r\n",
                     b"*1\r\n$ 4\r\nPING\r\n", b"*1\r\n$4 \r\nPING\r\n", b"*1\r\n$04\r\nPING\r\n",
                     b"*1\r\n$4\nPING\r\n",
                     # over 512MB (proto-max-bulk-len)
                     b"*1\r\n$536870913\r\n",
                     b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1073741824\r\n",
                     b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$9223372036854775807\r\n",
                     b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$9223372036854775808\r\n"):
            with self.subTest(data=data):
                self.check_error_closes(data, err)
        self.assertReply(NIL, "GET", "k")

    def test_expected_dollar(self):
        self.check_error_closes(b"*1\r\nPING\r\n", protocol_error(b"expected '$', got 'P'"))
        self.check_error_closes(b"*2\r\n$4\r\nECHO\r\n:5\r\n", protocol_error(b"expected '$', got ':'"))
        self.check_error_closes(b"*1\r\n*1\r\n$4\r\nPING\r\n", protocol_error(b"expected '$', got '*'"))

    def test_unbalanced_quotes(self):
        err = protocol_error(b"unbalanced quotes in request")
        for data in (b'SET a "b c\r\n', b"SET a 'b c\r\n", b'SET a "b"c\r\n', b"ECHO 'a'b\r\n", b'"\r\n'):
            with self.subTest(data=data):
                self.check_error_closes(data, err)
        self.assertReply(NIL, "GET", "a")

    def test_too_big_inline_and_counts(self):
        # Just over 64KB without a newline, so the server has read everything when it replies.
        self.check_error_closes(b"x" * 66000, protocol_error(b"too big inline request"))
        self.check_error_closes(b"*" + b"1" * 66000, protocol_error(b"too big mbulk count string"))
        self.check_error_closes(b"*1\r\n$" + b"1" * 66000, protocol_error(b"too big bulk count string"))

    def test_commands_before_the_error_are_answered(self):
        data = (encode_command("SET", "before", "1") + b"PING\r\n" + encode_command("INCR", "before") +
                b"*1\r\n:5\r\n" + encode_command("SET", "after", "1"))
        self.check_error_closes(data, protocol_error(b"expected '$', got ':'"),
                                replies_before=[OK, PONG, integer(2)])
        self.assertReply(bulk("2"), "GET", "before")
        self.assertReply(NIL, "GET", "after")

    def test_ignored_frames(self):
        # Redis skips an empty or negative multibulk count and empty inline lines.
        c = self.conn()
        c.send(b"*0\r\n*-1\r\n\r\n*1\r\n$4\r\nPING\r\n")
        self.assertEqual(c.read_reply(), PONG)
        c.assert_still_open()


class DisconnectTest(ProtocolTestCase):
    def other_still_works(self, other):
        self.assertReply(PONG, "PING", c=other)
        self.assertReply(OK, "SET", "alive", "1", c=other)
        self.assertReply(bulk("1"), "GET", "alive", c=other)
        fresh = self.conn()
        self.assertReply(PONG, "PING", c=fresh)

    def test_half_a_command_then_close(self):
        other = self.conn()
        for cut in (1, 5, 12, 20, 25):
            c = harness.RespConn(self.port)
            c.send(encode_command("SET", "half", "value")[:cut])
            time.sleep(0.01)
            c.close()
        time.sleep(0.05)
        self.other_still_works(other)
        self.assertReply(NIL, "GET", "half", c=other)

    def test_half_a_command_then_reset(self):
        other = self.conn()
        c = harness.RespConn(self.port)
        c.send(encode_command("SET", "half", "x" * 100000)[:50000])
        time.sleep(0.05)
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()  # RST
        time.sleep(0.05)
        self.other_still_works(other)
        self.assertReply(NIL, "GET", "half", c=other)

    def test_pipeline_then_close_without_reading(self):
        other = self.conn()
        payload = b"".join(encode_command("SET", "gone:%d" % (i % 50), "v%d" % i) for i in range(1000))
        for linger in (False, True):
            c = harness.RespConn(self.port)
            c.send(payload)
            if linger:
                c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()
        time.sleep(0.1)
        self.other_still_works(other)

    def test_close_while_server_writes_big_replies(self):
        other = self.conn()
        self.assertReply(OK, "SET", "bigval", os.urandom(1 << 20), c=other)
        for linger in (False, True):
            c = harness.RespConn(self.port)
            c.send(encode_command("GET", "bigval") * 30)
            time.sleep(0.05)
            if linger:
                c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()
        time.sleep(0.2)
        self.other_still_works(other)
        self.assertReply(integer(1 << 20), "STRLEN", "bigval", c=other)

    def test_connect_and_close_many_times(self):
        other = self.conn()
        for _ in range(100):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=harness.IO_TIMEOUT)
            s.close()
        self.other_still_works(other)


if __name__ == "__main__":
    harness.main()
