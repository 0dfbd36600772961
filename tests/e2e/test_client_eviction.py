"""maxmemory-clients (issue 15), against deadbolt and redis-server alike: the setting reads and
parses as Redis's (bytes, a percentage of maxmemory, 0 for off); a client that pipelines GETs of
a large value and never reads its replies is evicted once the clients' memory passes the limit,
whether its keys are on its own reactor or the other one, while another client's PING is
answered and that client is kept; a CLIENT NO-EVICT client over the limit is kept (and gets
every reply once it reads) while an ordinary idle client is evicted to make room, as Redis does
while the total stays over. Evictions are counted (INFO stats evicted_clients)."""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK  # noqa: E402
from slots import on_shard  # noqa: E402

LIMIT = "10mb"
LIMIT_BYTES = 10 << 20
VALUE = "v" * (1 << 20)


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def raw_client(rcvbuf=64 * 1024):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect(("127.0.0.1", harness.port()))
    return s


def read_reply(sock, want):
    """Reads exactly `want` bytes (bounded by the socket's timeout)."""
    got = b""
    while len(got) < want:
        chunk = sock.recv(min(1 << 20, want - len(got)))
        if not chunk:
            raise AssertionError("closed after %d of %d bytes" % (len(got), want))
        got += chunk
    return got


class ClientEvictionTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        # The test's own connection is never evicted.
        self.assertEqual(self.c.cmd("CLIENT", "NO-EVICT", "on"), OK)
        self.addCleanup(lambda: self.c.cmd("CONFIG", "SET", "maxmemory-clients", "0"))

    def setting(self):
        return harness.decode(self.c.cmd("CONFIG", "GET", "maxmemory-clients"))[1]

    def evicted(self):
        for line in bytes(harness.decode(self.c.cmd("INFO", "stats"))).decode().splitlines():
            if line.startswith("evicted_clients:"):
                return int(line.split(":", 1)[1])
        self.fail("INFO stats has no evicted_clients")

    def client_names(self):
        names = []
        for line in bytes(harness.decode(self.c.cmd("CLIENT", "LIST"))).decode().splitlines():
            fields = dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
            names.append((fields.get("name", ""), int(fields.get("tot-mem", "0"))))
        return names

    def wait_named(self, name):
        for _ in range(200):
            if any(n == name for n, _ in self.client_names()):
                return
            time.sleep(0.01)
        self.fail("no client named %s" % name)

    def test_setting_reads_and_parses_as_redis(self):
        self.assertEqual(self.setting(), b"0")
        self.assertEqual(self.c.cmd("CONFIG", "SET", "maxmemory-clients", "10%"), OK)
        self.assertEqual(self.setting(), b"10%")
        self.assertEqual(self.c.cmd("CONFIG", "SET", "maxmemory-clients", "20mb"), OK)
        self.assertEqual(self.setting(), b"20971520")
        prefix = b"-ERR CONFIG SET failed (possibly related to argument 'maxmemory-clients') - "
        for bad, why in [("101%", b"percentage argument must be less or equal to 100"),
                         ("abc", b"argument must be a memory or percent value"),
                         ("-5", b"argument must be a memory or percent value"),
                         ("1.5%", b"argument must be a memory or percent value")]:
            self.assertEqual(self.c.cmd("CONFIG", "SET", "maxmemory-clients", bad),
                             prefix + why + b"\r\n", bad)
        self.assertEqual(self.setting(), b"20971520")
        self.assertEqual(self.c.cmd("CONFIG", "SET", "maxmemory-clients", "0"), OK)

    def test_client_no_evict_replies(self):
        self.assertEqual(self.c.cmd("CLIENT", "NO-EVICT", "off"), OK)
        self.assertEqual(self.c.cmd("CLIENT", "NO-EVICT", "ON"), OK)
        self.assertEqual(self.c.cmd("CLIENT", "NO-EVICT", "maybe"), b"-ERR syntax error\r\n")

    def test_reader_that_never_reads_is_evicted_while_others_are_served(self):
        keys = [on_shard(0, "bigv"), on_shard(1, "bigv")]
        for k in keys:
            self.assertEqual(self.c.cmd("SET", k, VALUE), OK)
        other = self.conn()
        self.assertEqual(other.cmd("PING"), b"+PONG\r\n")
        self.assertEqual(other.cmd("CLIENT", "SETNAME", "other"), OK)
        before = self.evicted()
        self.assertEqual(self.c.cmd("CONFIG", "SET", "maxmemory-clients", LIMIT), OK)
        hog = raw_client()
        self.addCleanup(hog.close)
        # 100 MB of replies asked for, never read.
        hog.sendall(harness.encode_command("CLIENT", "SETNAME", "hog") +
                    b"".join(harness.encode_command("GET", keys[i % 2]) for i in range(100)))
        # It never reads: wait for the server to drop it (reading here could keep its output
        # under the limit), then see the connection closed.
        deadline = time.monotonic() + 30
        while self.evicted() == before and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(harness.drain_until_closed(hog), "the reader was not evicted")
        self.assertEqual(other.cmd("PING"), b"+PONG\r\n")
        names = [n for n, _ in self.client_names()]
        self.assertNotIn("hog", names)
        self.assertIn("other", names)
        self.assertGreaterEqual(self.evicted() - before, 1)

    def test_no_evict_client_over_the_limit_is_kept(self):
        key = on_shard(0, "bigv")
        self.assertEqual(self.c.cmd("SET", key, VALUE), OK)
        self.assertEqual(self.c.cmd("CONFIG", "SET", "maxmemory-clients", LIMIT), OK)
        idle = raw_client()
        self.addCleanup(idle.close)
        idle.sendall(harness.encode_command("CLIENT", "SETNAME", "idle"))
        self.assertEqual(read_reply(idle, 5), OK)
        keeper = raw_client()
        self.addCleanup(keeper.close)
        keeper.settimeout(30)
        keeper.sendall(harness.encode_command("CLIENT", "SETNAME", "keeper") +
                       harness.encode_command("CLIENT", "NO-EVICT", "on"))
        self.assertEqual(read_reply(keeper, 10), OK + OK)
        n = 30  # 30 MB of replies, three times the limit, unread for now
        keeper.sendall(b"".join(harness.encode_command("GET", key) for _ in range(n)))
        for _ in range(300):
            if sum(m for name, m in self.client_names() if name == "keeper") > LIMIT_BYTES:
                break
            time.sleep(0.01)
        else:
            self.fail("the keeper's replies never went over the limit: %r" % self.client_names())
        # Over the limit with a client that may not go: the others do, the keeper stays.
        self.assertTrue(harness.drain_until_closed(idle), "the idle client was not evicted")
        self.assertIn("keeper", [name for name, _ in self.client_names()])
        reply = b"$%d\r\n%s\r\n" % (len(VALUE), VALUE.encode())
        self.assertEqual(read_reply(keeper, n * len(reply)), reply * n)
        keeper.sendall(harness.encode_command("PING"))
        self.assertEqual(read_reply(keeper, 7), b"+PONG\r\n")


if __name__ == "__main__":
    harness.main()
