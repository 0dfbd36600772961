"""Protected mode (issue 15), against deadbolt and redis-server alike: bound to every address
with no password, a client that connects through a non-loopback address of this machine gets
Redis's DENIED text and is disconnected; a loopback client is served; CONFIG SET protected-mode
no, or a password, lets the outsider in.

The outsider is this machine itself, reached through its first non-loopback IPv4 address (its
connection's source address is then that address, not 127.0.0.1). Skipped on a machine that
has none."""

import os
import socket
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK  # noqa: E402

DENIED_START = b"-DENIED Redis is running in protected mode because protected mode is enabled"
DENIED_END = (b"NOTE: You only need to do one of the above things in order for the server to "
              b"start accepting connections from the outside.\r\n")


def outside_address():
    """A non-loopback IPv4 address of this machine, or None."""
    for probe in ("192.0.2.1", "10.255.255.255", "203.0.113.1"):
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((probe, 9))  # UDP: nothing is sent, the route picks a source
                ip = s.getsockname()[0]
            if not ip.startswith("127.") and ip != "0.0.0.0":
                return ip
        except OSError:
            continue
    return None


ADDR = outside_address()


def setUpModule():
    if ADDR is None:
        raise unittest.SkipTest("no non-loopback IPv4 address on this machine")
    harness.start_module_server(["--bind", "0.0.0.0"])


def tearDownModule():
    harness.stop_module_server()


def read_until_closed(sock):
    """Everything the server sends until it closes (a reset after the data counts as closed)."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


class ProtectedModeTest(harness.ServerTestCase):
    def outsider(self):
        s = socket.create_connection((ADDR, harness.port()), timeout=harness.IO_TIMEOUT)
        self.addCleanup(s.close)
        return s

    def set_protected(self, value):
        self.assertEqual(self.c.cmd("CONFIG", "SET", "protected-mode", value), OK)
        self.addCleanup(self.c.cmd, "CONFIG", "SET", "protected-mode", "yes")

    def test_outsider_is_denied_with_redis_text_and_closed(self):
        self.assertEqual(self.c.cmd("CONFIG", "GET", "protected-mode"),
                         harness.array(harness.bulk(b"protected-mode"), harness.bulk(b"yes")))
        s = self.outsider()
        got = read_until_closed(s)
        self.assertTrue(got.startswith(DENIED_START), got[:200])
        self.assertTrue(got.endswith(DENIED_END), got[-200:])
        self.assertEqual(got.count(b"\r\n"), 1)
        # Even a command already on its way gets nothing else.
        s2 = self.outsider()
        s2.sendall(harness.encode_command("SET", "k", "v"))
        got = read_until_closed(s2)
        self.assertFalse(b"+OK" in got)
        self.assertEqual(self.c.cmd("EXISTS", "k"), harness.integer(0))
        # Loopback clients are served meanwhile.
        self.assertEqual(self.c.cmd("PING"), b"+PONG\r\n")

    def test_config_set_protected_mode_no_lets_the_outsider_in(self):
        self.set_protected("no")
        for _ in range(4):  # connections go to the reactors in turn: each has the setting
            s = self.outsider()
            s.sendall(b"PING\r\n")
            self.assertEqual(harness.read_one_reply_from_socket(s), b"+PONG\r\n")
        self.c.cmd("CONFIG", "SET", "protected-mode", "yes")
        # Refused again from the next connection on.
        self.assertTrue(read_until_closed(self.outsider()).startswith(DENIED_START))

    def test_a_password_lets_the_outsider_in_to_authenticate(self):
        self.assertEqual(self.c.cmd("CONFIG", "SET", "requirepass", "pw"), OK)
        try:
            s = self.outsider()
            s.sendall(b"PING\r\n")
            self.assertTrue(harness.read_one_reply_from_socket(s).startswith(b"-NOAUTH"))
            s.sendall(harness.encode_command("AUTH", "pw"))
            self.assertEqual(harness.read_one_reply_from_socket(s), OK)
        finally:
            self.assertEqual(self.c.cmd("AUTH", "pw"), OK)
            self.assertEqual(self.c.cmd("CONFIG", "SET", "requirepass", ""), OK)

    def test_invalid_value_is_refused(self):
        got = self.c.cmd("CONFIG", "SET", "protected-mode", "maybe")
        self.assertTrue(got.startswith(b"-ERR CONFIG SET failed (possibly related to argument "
                                       b"'protected-mode')"), got)


if __name__ == "__main__":
    harness.main()
