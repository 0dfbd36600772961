"""Compare-and-set for locks: DELIFEQ (Valkey 9.0), DELEX and DIGEST (Redis 8.4), SET's IFEQ /
IFNE / IFDEQ / IFDNE options (Redis 8.4), the lock patterns built on them, and a redis-py
scenario with threads racing for one lock.

These commands do not exist in Debian's redis-server 7.0, so every class here is skipped with
DEADBOLT_AGAINST_REDIS=1. The expected replies follow the Redis 8.4 / Valkey 9.0 documentation
and the replies of those servers as reported by client test suites: for example DIGEST of
"hello" is 9555e8555c62dcfd, DELEX with a condition on a hash is "-ERR Key should be of string
type if conditions are specified" (not WRONGTYPE), a digest must be 16 characters long and is
compared ignoring case."""

import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import NIL, NULL3, OK, SYNTAX, WRONGTYPE, bulk, integer, wrong_args  # noqa: E402

try:
    import redis  # Debian's python3-redis: run with /usr/bin/python3
except ImportError:  # pragma: no cover - depends on the interpreter
    redis = None

AGAINST_REDIS = harness.AGAINST_REDIS
SKIP_REASON = ("DELIFEQ (Valkey 9.0), DELEX, DIGEST and SET IFEQ/IFNE/IFDEQ/IFDNE (Redis 8.4) "
               "do not exist in the reference redis-server 7.0")

DELEX_NOT_STRING = b"-ERR Key should be of string type if conditions are specified\r\n"
DELEX_CONDITION = b"-ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE\r\n"
DIGEST_LENGTH = b"-ERR must be exactly 16 hexadecimal characters\r\n"

# XXH3-64 (seed 0) of some values: published test vectors and documented DIGEST replies.
DIGESTS = {
    b"": b"2d06800538d394c2",
    b"hello": b"9555e8555c62dcfd",
    b"Hello world": b"b6acb9d84a38ff74",
    b"123": b"404a763b3f4c8c9a",
    b"v8": b"0cc76dbb41381419",  # a leading zero digit is kept
    b"\x00": b"c44bdff4074eecdb",
    b"\x00\x01\x02": b"5f4299fc161c9cbb",
}
HELLO_DIGEST = DIGESTS[b"hello"]


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


@unittest.skipIf(AGAINST_REDIS, SKIP_REASON)
class CasTestCase(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def require_set_conditions(self):
        """SET's IF* options are parsed by SET's option parser (server/commands/cmd_string.cc), which
        calls ParseSetCondition (server/commands/cmd_lock.h); skip until it does."""
        reply = self.c.cmd("SET", "__probe__", "v", "IFNE", "x")
        if reply == SYNTAX:
            self.skipTest("SET's option parser does not call ParseSetCondition yet")
        self.assertEqual(reply, OK)
        self.assertReply(integer(1), "DEL", "__probe__")


class DigestTest(CasTestCase):
    def test_known_values(self):
        for value, digest in DIGESTS.items():
            self.assertReply(OK, "SET", "k", value)
            self.assertReply(bulk(digest), "DIGEST", "k")

    def test_missing_wrong_type_and_arity(self):
        self.make_hash(self.c, "h")
        self.assertReplies([
            (("DIGEST", "nokey"), NIL),
            (("DIGEST", "h"), WRONGTYPE),
            (("DIGEST",), wrong_args("digest")),
            (("DIGEST", "a", "b"), wrong_args("digest")),
        ])
        c3 = self.conn()
        c3.cmd("HELLO", "3")
        self.assertReply(NULL3, "DIGEST", "nokey", c=c3)

    def test_large_and_grown_values(self):
        big = bytes(range(256)) * 4096  # 1 MiB of every byte value
        self.assertReply(OK, "SET", "big", big)
        d1 = self.c.cmd("DIGEST", "big")
        self.assertRegex(d1, rb"^\$16\r\n[0-9a-f]{16}\r\n$")
        self.assertReply(integer(len(big) + 1), "APPEND", "big", b"\x00")
        d2 = self.c.cmd("DIGEST", "big")
        self.assertNotEqual(d1, d2)
        # The same bytes built by APPEND and by SET digest the same.
        self.assertReply(OK, "SET", "copy", big + b"\x00")
        self.assertReply(d2, "DIGEST", "copy")
        self.assertReply(integer(1), "DELEX", "big", "IFDEQ", d2[5:21])

    def test_expired_key(self):
        self.assertReply(OK, "SET", "k", "hello", "PX", "500")  # margin for a loaded machine
        self.assertReply(bulk(HELLO_DIGEST), "DIGEST", "k")
        time.sleep(0.8)
        self.assertReply(NIL, "DIGEST", "k")


class DelIfEqTest(CasTestCase):
    def test_release(self):
        self.assertReplies([
            (("DELIFEQ", "k", "tok"), integer(0)),      # missing
            (("SET", "k", "tok"), OK),
            (("DELIFEQ", "k", "other"), integer(0)),    # another value
            (("DELIFEQ", "k", "TOK"), integer(0)),      # values compare exactly
            (("DELIFEQ", "k", "to"), integer(0)),
            (("GET", "k"), bulk("tok")),
            (("DELIFEQ", "k", "tok"), integer(1)),
            (("EXISTS", "k"), integer(0)),
            (("DELIFEQ", "k", "tok"), integer(0)),      # released twice
        ])

    def test_binary_and_empty_values(self):
        value = b"t\x00k\r\n"
        self.assertReplies([
            (("SET", "b", value), OK),
            (("DELIFEQ", "b", b"t"), integer(0)),
            (("DELIFEQ", "b", value), integer(1)),
            (("SET", "e", ""), OK),
            (("DELIFEQ", "e", "x"), integer(0)),
            (("DELIFEQ", "e", ""), integer(1)),
            (("SET", "n", "123"), OK),
            (("INCR", "n"), integer(124)),
            (("DELIFEQ", "n", "124"), integer(1)),   # a counter compares as its decimal text
        ])

    def test_wrong_type_expired_and_arity(self):
        self.make_hash(self.c, "h")
        self.assertReplies([
            (("DELIFEQ", "h", "value"), WRONGTYPE),
            (("EXISTS", "h"), integer(1)),
            (("DELIFEQ", "k"), wrong_args("delifeq")),
            (("DELIFEQ", "k", "a", "b"), wrong_args("delifeq")),
            (("SET", "k", "tok", "PX", "50"), OK),
        ])
        time.sleep(0.2)
        self.assertReply(integer(0), "DELIFEQ", "k", "tok")

    def test_keys_on_every_shard(self):
        # Enough keys that both reactors own some: the handler runs inline and forwarded.
        n = 200
        replies = self.c.pipeline([("SET", "lock:%d" % i, "tok%d" % i) for i in range(n)])
        self.assertEqual(replies, [OK] * n)
        replies = self.c.pipeline([("DELIFEQ", "lock:%d" % i, "tok%d" % (i + 1)) for i in range(n)]
                                  + [("DELIFEQ", "lock:%d" % i, "tok%d" % i) for i in range(n)])
        self.assertEqual(replies, [integer(0)] * n + [integer(1)] * n)
        self.assertReply(integer(0), "DBSIZE")


class DelExTest(CasTestCase):
    def test_without_condition_is_del(self):
        self.make_hash(self.c, "h")
        self.assertReplies([
            (("DELEX", "nokey"), integer(0)),
            (("SET", "s", "v"), OK),
            (("DELEX", "s"), integer(1)),
            (("DELEX", "h"), integer(1)),            # any type
            (("DBSIZE",), integer(0)),
        ])

    def test_conditions(self):
        self.assertReplies([
            (("SET", "k", "hello"), OK),
            (("DELEX", "k", "IFEQ", "other"), integer(0)),
            (("DELEX", "k", "IFNE", "hello"), integer(0)),
            (("DELEX", "k", "IFDEQ", "0000000000000000"), integer(0)),
            (("DELEX", "k", "IFDNE", HELLO_DIGEST), integer(0)),
            (("DELEX", "k", "IFDNE", HELLO_DIGEST.upper()), integer(0)),
            (("GET", "k"), bulk("hello")),
            (("DELEX", "k", "ifeq", "hello"), integer(1)),
            (("SET", "k", "hello"), OK),
            (("DELEX", "k", "IfNe", "other"), integer(1)),
            (("SET", "k", "hello"), OK),
            (("DELEX", "k", "IFDEQ", HELLO_DIGEST.upper()), integer(1)),  # case-insensitive
            (("SET", "k", "hello"), OK),
            (("DELEX", "k", "ifdne", "0000000000000000"), integer(1)),
            (("EXISTS", "k"), integer(0)),
        ])

    def test_digest_of_the_value_as_digest_returns_it(self):
        self.assertReply(OK, "SET", "k", b"\x00\x01\x02")
        digest = harness.decode(self.c.cmd("DIGEST", "k"))
        self.assertReply(integer(1), "DELEX", "k", "IFDEQ", digest)

    def test_digest_text_rules(self):
        self.assertReply(OK, "SET", "k", "hello")
        self.assertReplies([
            # Only the length is checked; a 16-character non-hex text matches no digest.
            (("DELEX", "k", "IFDEQ", "z" * 16), integer(0)),
            (("DELEX", "k", "IFDEQ", ""), DIGEST_LENGTH),
            (("DELEX", "k", "IFDEQ", "0123"), DIGEST_LENGTH),
            (("DELEX", "k", "IFDNE", HELLO_DIGEST[1:]), DIGEST_LENGTH),
            (("DELEX", "k", "IFDNE", b"0" + HELLO_DIGEST), DIGEST_LENGTH),
            (("GET", "k"), bulk("hello")),
            (("DELEX", "k", "IFDNE", "z" * 16), integer(1)),
        ])

    def test_errors_and_their_order(self):
        self.make_hash(self.c, "h")
        self.assertReply(OK, "SET", "s", "v")
        self.assertReplies([
            # The argument count comes first, even for a missing key.
            (("DELEX", "s", "IFEQ"), wrong_args("delex")),
            (("DELEX", "nokey", "IFEQ"), wrong_args("delex")),
            (("DELEX", "s", "IFEQ", "v", "extra"), wrong_args("delex")),
            (("DELEX",), wrong_args("delex")),
            # Then the key: missing is 0, not a string is an error, whatever the condition.
            (("DELEX", "nokey", "FOO", "bar"), integer(0)),
            (("DELEX", "nokey", "IFDEQ", "bar"), integer(0)),
            (("DELEX", "nokey", "IFEQ", "bar"), integer(0)),
            (("DELEX", "h", "IFEQ", "value"), DELEX_NOT_STRING),
            (("DELEX", "h", "IFNE", "x"), DELEX_NOT_STRING),
            (("DELEX", "h", "IFDEQ", "0000000000000000"), DELEX_NOT_STRING),
            (("DELEX", "h", "IFDNE", "bad"), DELEX_NOT_STRING),
            (("DELEX", "h", "FOO", "bar"), DELEX_NOT_STRING),
            # Then the condition.
            (("DELEX", "s", "FOO", "v"), DELEX_CONDITION),
            (("DELEX", "s", "NX", "v"), DELEX_CONDITION),
            (("DELEX", "s", "IFDEQ", "abc"), DIGEST_LENGTH),
            (("EXISTS", "s", "h"), integer(2)),
        ])

    def test_expired_key(self):
        self.assertReply(OK, "SET", "k", "v", "PX", "50")
        time.sleep(0.2)
        self.assertReply(integer(0), "DELEX", "k", "IFNE", "other")


class SetConditionTest(CasTestCase):
    def setUp(self):
        super().setUp()
        self.require_set_conditions()

    def test_ifeq_ifne(self):
        self.assertReplies([
            (("SET", "k", "v1", "IFEQ", "x"), NIL),   # a missing key equals nothing
            (("EXISTS", "k"), integer(0)),
            (("SET", "k", "v1", "IFNE", "x"), OK),    # ... so IFNE creates it
            (("GET", "k"), bulk("v1")),
            (("SET", "k", "v2", "IFNE", "v1"), NIL),
            (("SET", "k", "v2", "IFEQ", "other"), NIL),
            (("SET", "k", "v2", "IFEQ", "V1"), NIL),  # values compare exactly
            (("GET", "k"), bulk("v1")),
            (("SET", "k", "v2", "ifeq", "v1"), OK),
            (("SET", "k", "v3", "IfNe", "zzz"), OK),
            (("GET", "k"), bulk("v3")),
        ])

    def test_ifdeq_ifdne(self):
        self.assertReplies([
            (("SET", "k", "v", "IFDEQ", HELLO_DIGEST), NIL),
            (("EXISTS", "k"), integer(0)),
            (("SET", "k", "hello", "IFDNE", HELLO_DIGEST), OK),  # created
            (("SET", "k", "x", "IFDNE", HELLO_DIGEST.upper()), NIL),
            (("SET", "k", "x", "IFDEQ", "0000000000000000"), NIL),
            (("SET", "k", "x", "IFDEQ", "z" * 16), NIL),
            (("GET", "k"), bulk("hello")),
            (("SET", "k", "world", "IFDEQ", HELLO_DIGEST.upper()), OK),
            (("GET", "k"), bulk("world")),
            (("SET", "k", "x", "IFDEQ", "0123"), DIGEST_LENGTH),
            (("SET", "k", "x", "IFDNE", b"0" + HELLO_DIGEST), DIGEST_LENGTH),
            (("GET", "k"), bulk("world")),
        ])

    def test_with_get(self):
        self.assertReplies([
            (("SET", "k", "v", "IFEQ", "x", "GET"), NIL),  # missing: nothing, nothing written
            (("EXISTS", "k"), integer(0)),
            (("SET", "k", "v1", "GET", "IFNE", "x"), NIL),  # missing: created, no old value
            (("SET", "k", "v2", "IFEQ", "nope", "GET"), bulk("v1")),  # not met: the old value
            (("GET", "k"), bulk("v1")),
            (("SET", "k", "v2", "IFEQ", "v1", "GET"), bulk("v1")),
            (("GET", "k"), bulk("v2")),
        ])

    def test_with_expire_options(self):
        now = int(time.time())
        self.assertReply(OK, "SET", "k", "v", "EX", "100")
        self.assertReply(OK, "SET", "k", "v", "IFEQ", "v", "KEEPTTL")
        self.assertTTL("k", 99, 100)
        self.assertReply(OK, "SET", "k", "v", "IFEQ", "v", "PX", "200000")
        self.assertTTL("k", 199, 200)
        self.assertReply(NIL, "SET", "k", "v", "IFEQ", "other", "EX", "300")
        self.assertTTL("k", 199, 200)
        self.assertReply(OK, "SET", "k", "v", "EXAT", str(now + 400), "IFNE", "zz")
        self.assertTTL("k", 398, 401)
        self.assertReply(OK, "SET", "k", "v", "IFEQ", "v", "PXAT", str((now + 500) * 1000))
        self.assertTTL("k", 498, 501)
        self.assertReply(OK, "SET", "k", "w", "IFEQ", "v")  # a plain SET drops the TTL
        self.assertReply(integer(-1), "TTL", "k")
        self.assertReply(OK, "SET", "k", "x", "IFEQ", "w", "PXAT", "1")  # already expired
        self.assertReply(integer(0), "EXISTS", "k")
        self.assertReply(b"-ERR invalid expire time in 'set' command\r\n",
                         "SET", "k", "v", "IFNE", "x", "EX", "0")

    def test_syntax_errors(self):
        self.assertReply(OK, "SET", "k", "v")
        self.assertReplies([
            (("SET", "k", "x", "IFEQ"), SYNTAX),                 # no value
            (("SET", "k", "x", "IFEQ", "v", "NX"), SYNTAX),
            (("SET", "k", "x", "NX", "IFEQ", "v"), SYNTAX),
            (("SET", "k", "x", "IFEQ", "v", "XX"), SYNTAX),
            (("SET", "k", "x", "XX", "IFNE", "v"), SYNTAX),
            (("SET", "k", "x", "IFEQ", "v", "IFNE", "v"), SYNTAX),
            (("SET", "k", "x", "IFDEQ", HELLO_DIGEST, "IFEQ", "v"), SYNTAX),
            (("SET", "k", "x", "IFEQ", "v", "IFEQ", "v"), SYNTAX),
            (("SET", "k", "x", "IFEQX", "v"), SYNTAX),
            (("GET", "k"), bulk("v")),
        ])

    def test_wrong_type(self):
        self.make_hash(self.c, "h")
        for cond, value in (("IFEQ", "value"), ("IFNE", "x"), ("IFDEQ", "0000000000000000"),
                            ("IFDNE", "0000000000000000")):
            self.assertReply(WRONGTYPE, "SET", "h", "x", cond, value)
            self.assertReply(WRONGTYPE, "SET", "h", "x", cond, value, "GET")
        self.assertReply(bulk("value"), "HGET", "h", "field")


class LockPatternTest(CasTestCase):
    """acquire: SET k tok NX PX 30000; release: DELIFEQ k tok; extend: SET k tok IFEQ tok PX
    60000."""

    def test_acquire_and_release(self):
        a, b = self.conn(), self.conn()
        self.assertReply(OK, "SET", "lock", "tokA", "NX", "PX", "30000", c=a)
        self.assertReply(NIL, "SET", "lock", "tokB", "NX", "PX", "30000", c=b)
        self.assertReply(integer(0), "DELIFEQ", "lock", "tokB", c=b)   # not the owner
        self.assertReply(integer(0), "DELEX", "lock", "IFEQ", "tokB", c=b)
        self.assertReply(bulk("tokA"), "GET", "lock", c=b)
        self.assertTTL("lock", 29000, 30000, c=b, cmd="PTTL")
        self.assertReply(integer(1), "DELIFEQ", "lock", "tokA", c=a)
        self.assertReply(OK, "SET", "lock", "tokB", "NX", "PX", "30000", c=b)
        self.assertReply(integer(1), "DELEX", "lock", "IFEQ", "tokB", c=b)
        self.assertReply(integer(0), "EXISTS", "lock", c=a)

    def test_extend(self):
        self.require_set_conditions()
        self.assertReply(OK, "SET", "lock", "tokA", "NX", "PX", "30000")
        self.assertReply(NIL, "SET", "lock", "tokB", "IFEQ", "tokB", "PX", "60000")  # wrong owner
        self.assertTTL("lock", 29000, 30000, cmd="PTTL")
        self.assertReply(OK, "SET", "lock", "tokA", "IFEQ", "tokA", "PX", "60000")
        self.assertTTL("lock", 59000, 60000, cmd="PTTL")
        self.assertReply(bulk("tokA"), "GET", "lock")
        # Once the lease ran out, the old owner can neither extend nor release.
        self.assertReply(OK, "SET", "lock", "tokA", "IFEQ", "tokA", "PX", "50")
        time.sleep(0.2)
        self.assertReply(NIL, "SET", "lock", "tokA", "IFEQ", "tokA", "PX", "60000")
        self.assertReply(integer(0), "DELIFEQ", "lock", "tokA")
        self.assertReply(integer(0), "EXISTS", "lock")


@unittest.skipIf(redis is None, "redis-py is not importable by %s (use /usr/bin/python3 with "
                                "python3-redis installed)" % sys.executable)
class RedisPyLockTest(CasTestCase):
    def client(self):
        r = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=30)
        self.addCleanup(r.close)
        return r

    def test_threads_take_turns(self):
        """Threads increment a counter with GET + SET under the lock: any overlap would lose an
        increment."""
        threads, rounds = 8, 40
        errors = []

        def worker(n):
            r = self.client()
            try:
                for i in range(rounds):
                    token = "w%d-%d" % (n, i)
                    while not r.set("lock", token, nx=True, px=30000):
                        time.sleep(0.0005)
                    value = int(r.get("counter") or 0)
                    r.set("counter", value + 1)
                    if r.execute_command("DELIFEQ", "lock", token) != 1:
                        errors.append("lost the lock %s" % token)
                    if r.execute_command("DELIFEQ", "lock", token) != 0:
                        errors.append("released %s twice" % token)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))

        ts = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
        self.assertEqual(errors, [])
        self.assertEqual(int(self.client().get("counter")), threads * rounds)

    def test_digest_and_delex(self):
        r = self.client()
        r.set("k", "hello")
        self.assertEqual(r.execute_command("DIGEST", "k"), HELLO_DIGEST)
        self.assertEqual(r.execute_command("DELEX", "k", "IFDNE", HELLO_DIGEST), 0)
        self.assertEqual(r.execute_command("DELEX", "k", "IFDEQ", HELLO_DIGEST), 1)
        with self.assertRaises(redis.ResponseError):
            r.hset("h", "f", "v")
            r.execute_command("DELEX", "h", "IFEQ", "v")


if __name__ == "__main__":
    harness.main()
