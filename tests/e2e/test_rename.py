"""RENAME, RENAMENX, COPY and MOVE, with source and destination on the same shard and on different
shards (the server runs with --threads 2; slots 0-8191 are shard 0, the rest shard 1).

Checked against redis-server first: DEADBOLT_AGAINST_REDIS=1 /usr/bin/python3 tests/e2e/test_rename.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import NIL, OK, array, bulk, integer  # noqa: E402
from slots import on_shard, shard_of  # noqa: E402

NO_SUCH_KEY = b"-ERR no such key\r\n"
SAME_OBJECT = b"-ERR source and destination objects are the same\r\n"
INT_RANGE = b"-ERR value is out of range, value must between -2147483648 and 2147483647\r\n"


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


class RenameTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def pairs(self):
        """(src, dst) on one shard, then on different shards."""
        a0, b0 = on_shard(0, "rn:a"), on_shard(0, "rn:b")
        a1 = on_shard(1, "rn:a")
        self.assertEqual(shard_of(a0), shard_of(b0))
        self.assertNotEqual(shard_of(a0), shard_of(a1))
        return [(a0, b0), (a0, a1), (a1, a0)]

    def test_rename_moves_value_and_ttl(self):
        for src, dst in self.pairs():
            with self.subTest(src=src, dst=dst):
                self.assertReply(OK, "FLUSHALL")
                self.assertReply(NO_SUCH_KEY, "RENAME", src, dst)
                self.assertReply(OK, "SET", src, "v", "PX", "100000")
                self.assertReply(OK, "SET", dst, "old")
                self.assertReply(OK, "RENAME", src, dst)
                self.assertReply(NIL, "GET", src)
                self.assertReply(bulk("v"), "GET", dst)
                self.assertTTL(dst, 98000, 100000, cmd="PTTL")
                # A key without a TTL makes the destination persistent.
                self.assertReply(OK, "SET", src, "w")
                self.assertReply(OK, "RENAME", src, dst)
                self.assertReply(integer(-1), "PTTL", dst)

    def test_rename_to_itself(self):
        k = on_shard(1, "rn:self")
        self.assertReply(NO_SUCH_KEY, "RENAME", k, k)
        self.assertReply(OK, "SET", k, "v")
        self.assertReply(OK, "RENAME", k, k)
        self.assertReply(integer(0), "RENAMENX", k, k)
        self.assertReply(bulk("v"), "GET", k)

    def test_renamenx(self):
        for src, dst in self.pairs():
            with self.subTest(src=src, dst=dst):
                self.assertReply(OK, "FLUSHALL")
                self.assertReply(NO_SUCH_KEY, "RENAMENX", src, dst)
                self.assertReply(OK, "SET", src, "v")
                self.assertReply(OK, "SET", dst, "taken")
                self.assertReply(integer(0), "RENAMENX", src, dst)
                self.assertReply(bulk("v"), "GET", src)
                self.assertReply(bulk("taken"), "GET", dst)
                self.assertReply(integer(1), "DEL", dst)
                self.assertReply(integer(1), "RENAMENX", src, dst)
                self.assertReply(integer(0), "EXISTS", src)
                self.assertReply(bulk("v"), "GET", dst)

    def test_rename_hash(self):
        for src, dst in self.pairs():
            with self.subTest(src=src, dst=dst):
                self.assertReply(OK, "FLUSHALL")
                self.assertReply(integer(2), "HSET", src, "owner:1", "1", "f", "x")
                self.assertReply(integer(1), "PEXPIRE", src, "50000")
                self.assertReply(OK, "RENAME", src, dst)
                self.assertReply(bulk("1"), "HGET", dst, "owner:1")
                self.assertReply(integer(2), "HLEN", dst)
                self.assertTTL(dst, 48000, 50000, cmd="PTTL")
                self.assertReply(integer(0), "EXISTS", src)

    def test_copy(self):
        for src, dst in self.pairs():
            with self.subTest(src=src, dst=dst):
                self.assertReply(OK, "FLUSHALL")
                self.assertReply(integer(0), "COPY", src, dst)
                self.assertReply(OK, "SET", src, "v", "PX", "100000")
                self.assertReply(integer(1), "COPY", src, dst)
                self.assertReply(bulk("v"), "GET", src)
                self.assertReply(bulk("v"), "GET", dst)
                self.assertTTL(dst, 98000, 100000, cmd="PTTL")
                self.assertReply(OK, "SET", src, "w")
                self.assertReply(integer(0), "COPY", src, dst)
                self.assertReply(bulk("v"), "GET", dst)
                self.assertReply(integer(1), "COPY", src, dst, "REPLACE")
                self.assertReply(bulk("w"), "GET", dst)
                self.assertReply(integer(-1), "PTTL", dst)

    def test_copy_errors_and_db(self):
        k = on_shard(0, "cp:k")
        self.assertReply(OK, "SET", k, "v")
        self.assertReply(SAME_OBJECT, "COPY", k, k)
        self.assertReply(b"-ERR syntax error\r\n", "COPY", k, "x", "BOGUS")
        self.assertReply(b"-ERR DB index is out of range\r\n", "COPY", k, "x", "DB", "99999")
        self.assertReply(INT_RANGE, "COPY", k, "x", "DB", "99999999999")
        self.assertReply(integer(1), "COPY", k, k, "DB", "1")
        c = self.conn()
        self.assertReply(OK, "SELECT", "1", c=c)
        self.assertReply(bulk("v"), "GET", k, c=c)
        other = on_shard(1, "cp:k")
        self.assertReply(integer(1), "COPY", k, other, "DB", "2")
        self.assertReply(OK, "SELECT", "2", c=c)
        self.assertReply(bulk("v"), "GET", other, c=c)
        self.assertReply(OK, "SELECT", "0", c=c)
        self.assertReply(NIL, "GET", other, c=c)


class MoveTest(harness.ServerTestCase):
    """MOVE key db: the value and its TTL to another database, on either shard."""

    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def test_moves_value_and_ttl_and_never_overwrites(self):
        other = self.conn()
        self.assertReply(OK, "SELECT", "3", c=other)
        for k in (on_shard(0, "mv"), on_shard(1, "mv")):
            self.assertReply(OK, "SET", k, "v", "PX", "100000")
            self.assertReply(integer(1), "MOVE", k, "3")
            self.assertReply(integer(0), "EXISTS", k)
            self.assertReply(bulk("v"), "GET", k, c=other)
            self.assertTTL(k, 98000, 100000, c=other, cmd="PTTL")
            self.assertReply(integer(0), "MOVE", k, "3")  # missing here
            self.assertReply(OK, "SET", k, "mine")
            self.assertReply(integer(0), "MOVE", k, "3")  # there already: nothing moves
            self.assertReply(bulk("mine"), "GET", k)
            self.assertReply(bulk("v"), "GET", k, c=other)
            self.assertReply(integer(2), "RPUSH", "l" + k, "a", "b")
            self.assertReply(integer(1), "MOVE", "l" + k, "3")
            self.assertReply(array(bulk("a"), bulk("b")), "LRANGE", "l" + k, "0", "-1", c=other)

    def test_a_moved_lock_keeps_its_owner_and_fencing_token(self):
        k = on_shard(1, "mvlock")
        token = self.c.cmd("LOCK.ACQUIRE", k, "owner", "60000")
        if token.startswith(b"-ERR unknown command"):
            self.skipTest("LOCK.ACQUIRE is deadbolt's")
        self.assertReply(integer(1), "MOVE", k, "5")
        other = self.conn()
        self.assertReply(OK, "SELECT", "5", c=other)
        self.assertReply(bulk("owner"), "GET", k, c=other)
        info = other.cmd("LOCK.INFO", k)
        self.assertIn(token[1:-2], info)

    def test_errors(self):
        k = on_shard(0, "mv")
        self.assertReply(OK, "SET", k, "v")
        self.assertReplies([
            (("MOVE", k, "0"), SAME_OBJECT),
            (("MOVE", k, "16"), b"-ERR DB index is out of range\r\n"),
            (("MOVE", k, "-1"), b"-ERR DB index is out of range\r\n"),
            (("MOVE", k, "x"), b"-ERR value is not an integer or out of range\r\n"),
            (("MOVE", k, "2147483648"), INT_RANGE),
            (("MOVE", k), b"-ERR wrong number of arguments for 'move' command\r\n"),
            (("MOVE", "missing", "0"), SAME_OBJECT),  # the db is checked first
            (("GET", k), bulk("v")),
        ])


if __name__ == "__main__":
    harness.main()
