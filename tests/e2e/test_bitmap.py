"""Bitmap commands: GETBIT, SETBIT, BITCOUNT, BITPOS, BITFIELD, BITFIELD_RO, BITOP (on one shard
and across shards), over a socket, with their exact Redis
replies and error texts, and SETBIT through the journal across a crash.

The same cases as shard/db_bitmap_test.cc, as a client sends them. Against redis-server
(DEADBOLT_AGAINST_REDIS=1) everything passes but the argument checks on a missing key, which
follow Redis 7.2 (arguments are checked before the key is looked up; 7.0 answers 0 or -1)."""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import slots  # noqa: E402
from harness import NOT_INTEGER, OK, SYNTAX, WRONGTYPE, bulk, integer, wrong_args  # noqa: E402
from test_journal import JournalCase  # noqa: E402

BIT_OFFSET = b"-ERR bit offset is not an integer or out of range\r\n"
BIT_VALUE = b"-ERR bit is not an integer or out of range\r\n"
BIT_ARGUMENT = b"-ERR The bit argument must be 1 or 0.\r\n"


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


class BitmapTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def test_setbit_creates_pads_and_answers_the_old_bit(self):
        self.assertReply(integer(0), "SETBIT", "k", "7", "1")
        self.assertReply(bulk(b"\x01"), "GET", "k")
        self.assertReply(integer(0), "SETBIT", "k", "100", "1")
        self.assertReply(integer(13), "STRLEN", "k")
        self.assertReply(integer(1), "GETBIT", "k", "100")
        self.assertReply(integer(1), "SETBIT", "k", "7", "0")
        self.assertReply(integer(0), "SETBIT", "k", "7", "0")
        self.assertReply(integer(0), "GETBIT", "k", "7")
        self.assertReply(integer(0), "GETBIT", "k", "1000000")
        self.assertReply(integer(0), "GETBIT", "nokey", "3")
        # Clearing a bit of a missing key creates it all the same.
        self.assertReply(integer(0), "SETBIT", "z", "20", "0")
        self.assertReply(bulk(b"\x00\x00\x00"), "GET", "z")

    def test_setbit_keeps_the_ttl_and_bits_of_a_set_value(self):
        self.assertReply(OK, "SET", "k", "`", "EX", "100")  # 0110 0000
        self.assertReply(integer(1), "GETBIT", "k", "1")
        self.assertReply(integer(0), "SETBIT", "k", "3", "1")
        self.assertReply(bulk("p"), "GET", "k")
        self.assertReply(integer(0), "SETBIT", "k", "800", "1")
        self.assertEqual(self.c.cmd("TTL", "k"), integer(100))

    def test_offsets_and_values_out_of_range(self):
        for bad in ("-1", "x", "1.5", "4294967296", "99999999999999999999"):
            self.assertReply(BIT_OFFSET, "SETBIT", "k", bad, "1")
            self.assertReply(BIT_OFFSET, "GETBIT", "k", bad)
        for bad in ("2", "-1", "x", ""):
            self.assertReply(BIT_VALUE, "SETBIT", "k", "7", bad)
        self.assertReply(integer(0), "EXISTS", "k")
        self.assertReply(integer(0), "GETBIT", "k", "4294967295")  # the last bit allowed

    def test_bitcount(self):
        self.assertReply(OK, "SET", "foo", "foobar")
        self.assertReply(integer(26), "BITCOUNT", "foo")
        self.assertReply(integer(4), "BITCOUNT", "foo", "0", "0")
        self.assertReply(integer(6), "BITCOUNT", "foo", "1", "1", "byte")
        self.assertReply(integer(17), "BITCOUNT", "foo", "5", "30", "BIT")
        self.assertReply(integer(26), "BITCOUNT", "foo", "-100", "100")
        self.assertReply(integer(4), "BITCOUNT", "foo", "-100", "-50")
        self.assertReply(integer(0), "BITCOUNT", "foo", "-50", "-100")
        self.assertReply(integer(0), "BITCOUNT", "nokey")
        self.assertReply(SYNTAX, "BITCOUNT", "foo", "1")
        self.assertReply(SYNTAX, "BITCOUNT", "foo", "1", "2", "3", "4")
        self.assertReply(SYNTAX, "BITCOUNT", "foo", "1", "2", "nope")
        self.assertReply(NOT_INTEGER, "BITCOUNT", "foo", "a", "1")

    def test_bitpos(self):
        self.assertReply(OK, "SET", "k", b"\xff\xf0\x00")
        self.assertReply(integer(12), "BITPOS", "k", "0")
        self.assertReply(OK, "SET", "k", b"\x00\xff\xf0")
        self.assertReply(integer(8), "BITPOS", "k", "1", "0")
        self.assertReply(integer(16), "BITPOS", "k", "1", "2")
        self.assertReply(integer(8), "BITPOS", "k", "1", "7", "15", "bit")
        self.assertReply(OK, "SET", "k", b"\xff\xff")
        self.assertReply(integer(16), "BITPOS", "k", "0")  # zeros go on past the end...
        self.assertReply(integer(-1), "BITPOS", "k", "0", "0", "-1")  # ...unless an end is given
        self.assertReply(integer(0), "BITPOS", "nokey", "0")
        self.assertReply(integer(-1), "BITPOS", "nokey", "1")
        self.assertReply(OK, "SET", "e", "")
        self.assertReply(integer(-1), "BITPOS", "e", "0")
        self.assertReply(BIT_ARGUMENT, "BITPOS", "k", "2")
        self.assertReply(NOT_INTEGER, "BITPOS", "k", "x")
        self.assertReply(SYNTAX, "BITPOS", "k", "1", "0", "1", "nope")
        self.assertReply(SYNTAX, "BITPOS", "k", "1", "0", "x", "nope")  # the unit comes first
        self.assertReply(SYNTAX, "BITPOS", "k", "1", "0", "1", "bit", "extra")

    def test_wrong_type_and_arity(self):
        self.assertReply(integer(1), "HSET", "h", "f", "v")
        for cmd in (("GETBIT", "h", "0"), ("SETBIT", "h", "0", "1"), ("BITCOUNT", "h"),
                    ("BITPOS", "h", "1"), ("BITCOUNT", "h", "0", "-1", "bit")):
            self.assertReply(WRONGTYPE, *cmd)
        self.assertReply(wrong_args("getbit"), "GETBIT", "k")
        self.assertReply(wrong_args("setbit"), "SETBIT", "k", "1")
        self.assertReply(wrong_args("bitcount"), "BITCOUNT")
        self.assertReply(wrong_args("bitpos"), "BITPOS", "k")

    def test_arguments_are_checked_before_the_key(self):
        info = self.c.cmd("INFO", "server").decode(errors="replace")
        version = re.search(r"redis_version:(\d+)\.(\d+)", info)
        if harness.AGAINST_REDIS and version and (int(version[1]), int(version[2])) < (7, 2):
            self.skipTest("Redis before 7.2 answers 0 or -1 for a missing key first")
        self.assertReply(SYNTAX, "BITCOUNT", "nokey", "1")
        self.assertReply(NOT_INTEGER, "BITCOUNT", "nokey", "a", "b")
        self.assertReply(SYNTAX, "BITCOUNT", "nokey", "0", "1", "nope")
        self.assertReply(NOT_INTEGER, "BITPOS", "nokey", "1", "x")
        self.assertReply(SYNTAX, "BITPOS", "nokey", "1", "0", "1", "nope")

    def test_a_watched_key_is_touched_only_when_a_bit_changes(self):
        self.assertReply(integer(0), "SETBIT", "k", "3", "1")
        other = self.conn()
        for value, changed in (("1", False), ("0", True)):
            self.assertReply(OK, "WATCH", "k")
            self.assertEqual(other.cmd("SETBIT", "k", "3", value), integer(1))
            self.assertReply(OK, "MULTI")
            self.assertReply(b"+QUEUED\r\n", "GETBIT", "k", "3")
            self.assertReply(b"*-1\r\n" if changed else b"*1\r\n" + integer(1), "EXEC")


def ints(*values):
    """An array of integers (None: a null)."""
    return b"*%d\r\n" % len(values) + b"".join(
        b"$-1\r\n" if v is None else integer(v) for v in values)


class BitFieldTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def test_get_set_incrby_and_the_overflow_rules(self):
        self.assertReply(ints(0), "BITFIELD", "k", "GET", "u8", "0")
        self.assertReply(integer(0), "EXISTS", "k")  # reads create nothing
        self.assertReply(ints(0, 255), "BITFIELD", "k", "SET", "u8", "0", "255", "GET", "u8", "0")
        self.assertReply(ints(9), "BITFIELD", "k", "INCRBY", "u8", "0", "10")
        self.assertReply(ints(255), "BITFIELD", "k", "OVERFLOW", "SAT", "INCRBY", "u8", "0", "300")
        self.assertReply(ints(None), "BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "1")
        self.assertReply(ints(0, None, 1), "BITFIELD", "k", "overflow", "wrap", "incrby", "u8", "0",
                         "1", "OVERFLOW", "FAIL", "SET", "u8", "0", "-1", "incrby", "u8", "0", "1")
        self.assertReply(ints(1, -56), "BITFIELD", "k", "SET", "i8", "0", "200", "GET", "i8", "0")
        self.assertReply(ints(-56, -128), "BITFIELD", "k", "OVERFLOW", "SAT", "SET", "i8", "0",
                         "-200", "GET", "i8", "0")
        self.assertReply(ints(128, 255), "BITFIELD", "k", "OVERFLOW", "SAT", "SET", "u8", "0", "-1",
                         "GET", "u8", "0")
        self.assertReply(ints(-72057594037927936, 9223372036854775807), "BITFIELD", "k", "SET",
                         "i64", "0", "-9223372036854775808", "INCRBY", "i64", "0", "-1")
        self.assertReply(ints(0, 15, 15), "BITFIELD", "k", "SET", "u4", "#20", "15", "GET", "u4",
                         "#20", "GET", "u4", "80")
        self.assertReply(ints(), "BITFIELD", "k")
        self.assertReply(ints(), "BITFIELD", "k", "OVERFLOW", "SAT")

    def test_a_write_creates_the_key_even_when_it_fails(self):
        self.assertReply(ints(None), "BITFIELD", "m", "OVERFLOW", "FAIL", "INCRBY", "u2", "100",
                         "9")
        self.assertReply(bulk(b"\x00" * 13), "GET", "m")

    def test_errors(self):
        bad_type = (b"-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not "
                    b"supported but i64 is.\r\n")
        for t in ("u64", "i65", "x8", "I8", "u0", "u", ""):
            self.assertReply(bad_type, "BITFIELD", "k", "GET", t, "0")
        for offset in ("-1", "x", "#x", "#-1", "4294967296", "#9223372036854775807"):
            self.assertReply(BIT_OFFSET, "BITFIELD", "k", "GET", "u8", offset)
        self.assertReply(ints(0), "BITFIELD", "k", "GET", "u8", "4294967295")
        self.assertReply(SYNTAX, "BITFIELD", "k", "SET", "u8", "0")
        self.assertReply(NOT_INTEGER, "BITFIELD", "k", "SET", "u8", "0", "x")
        self.assertReply(b"-ERR Invalid OVERFLOW type specified\r\n", "BITFIELD", "k", "OVERFLOW",
                         "nope", "GET", "u8", "0")
        self.assertReply(SYNTAX, "BITFIELD", "k", "OVERFLOW")
        self.assertReply(SYNTAX, "BITFIELD", "k", "nope")
        # Every operation is checked before any runs: nothing was written.
        self.assertReply(SYNTAX, "BITFIELD", "k", "SET", "u8", "0", "1", "nope")
        self.assertReply(integer(0), "EXISTS", "k")
        self.assertReply(integer(1), "HSET", "h", "f", "v")
        self.assertReply(WRONGTYPE, "BITFIELD", "h", "GET", "u8", "0")
        self.assertReply(WRONGTYPE, "BITFIELD_RO", "h", "GET", "u8", "0")
        self.assertReply(wrong_args("bitfield"), "BITFIELD")

    def test_bitfield_ro_takes_get_alone(self):
        self.assertReply(OK, "SET", "k", "`")
        self.assertReply(ints(96, 0), "BITFIELD_RO", "k", "GET", "u8", "0", "GET", "i4", "4")
        self.assertReply(ints(96), "BITFIELD_RO", "k", "OVERFLOW", "SAT", "GET", "u8", "0")
        ro_only = b"-ERR BITFIELD_RO only supports the GET subcommand\r\n"
        self.assertReply(ro_only, "BITFIELD_RO", "k", "SET", "u8", "0", "1")
        self.assertReply(ro_only, "BITFIELD_RO", "k", "INCRBY", "u8", "0", "1")
        self.assertReply(BIT_OFFSET, "BITFIELD_RO", "k", "SET", "u8", "x", "1")  # parsed first
        self.assertReply(bulk("`"), "GET", "k")


class BitOpTest(harness.ServerTestCase):
    """BITOP, with its keys on one shard ({t} tags) and spread over the shards."""

    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def check_ops(self, a, b, c, dst):
        self.assertReply(OK, "SET", a, "foobar")
        self.assertReply(OK, "SET", b, "abcdef")
        self.assertReply(integer(6), "BITOP", "AND", dst, a, b)
        self.assertReply(bulk(b"`bc`ab"), "GET", dst)
        self.assertReply(integer(6), "BITOP", "or", dst, a, b, c)  # c missing: zeros
        self.assertReply(bulk(b"goofev"), "GET", dst)
        self.assertReply(integer(6), "BITOP", "Xor", dst, a, b)
        self.assertReply(bulk(b"\x07\x0d\x0c\x06\x04\x14"), "GET", dst)
        self.assertReply(integer(6), "BITOP", "NOT", dst, a)
        self.assertReply(bulk(bytes(255 - x for x in b"foobar")), "GET", dst)
        self.assertReply(integer(6), "BITOP", "AND", dst, a, c)
        self.assertReply(bulk(b"\x00" * 6), "GET", dst)
        # The destination is replaced, TTL and type included; an empty result deletes it.
        self.assertReply(integer(1), "DEL", dst)
        self.assertReply(integer(1), "HSET", dst, "f", "v")
        self.assertReply(integer(6), "BITOP", "OR", dst, a)
        self.assertReply(bulk("foobar"), "GET", dst)
        self.assertReply(OK, "SET", dst, "x", "EX", "100")
        self.assertReply(integer(6), "BITOP", "OR", dst, a)
        self.assertReply(integer(-1), "TTL", dst)
        self.assertReply(integer(0), "BITOP", "OR", dst, c)
        self.assertReply(integer(0), "EXISTS", dst)
        # A source of another type: WRONGTYPE, and nothing stored.
        self.assertReply(integer(1), "HSET", c, "f", "v")
        self.assertReply(OK, "SET", dst, "kept")
        self.assertReply(WRONGTYPE, "BITOP", "OR", dst, a, c)
        self.assertReply(bulk("kept"), "GET", dst)
        # The destination among the sources.
        self.assertReply(integer(6), "BITOP", "AND", a, a, b)
        self.assertReply(bulk(b"`bc`ab"), "GET", a)

    def test_on_one_shard(self):
        self.check_ops("{t}a", "{t}b", "{t}c", "{t}d")

    def test_across_shards(self):
        self.assertEqual([slots.shard_of(k) for k in "abcd"], [1, 0, 0, 1])  # on --threads 2
        self.check_ops("a", "b", "c", "d")

    def test_errors(self):
        self.assertReply(SYNTAX, "BITOP", "nope", "d", "a")
        self.assertReply(b"-ERR BITOP NOT must be called with a single source key.\r\n",
                         "BITOP", "NOT", "d", "a", "b")
        self.assertReply(wrong_args("bitop"), "BITOP", "AND", "d")

    def test_in_a_transaction_across_shards(self):
        self.assertReply(OK, "SET", "a", "foo")
        self.assertReply(OK, "MULTI")
        self.assertReply(b"+QUEUED\r\n", "SET", "b", "bar")
        self.assertReply(b"+QUEUED\r\n", "BITOP", "XOR", "d", "a", "b")
        self.assertReply(b"+QUEUED\r\n", "GET", "d")
        self.assertReply(b"*3\r\n+OK\r\n:3\r\n" + bulk(b"\x04\x0e\x1d"), "EXEC")


class BitmapJournalTest(JournalCase):
    redis_too = True

    def test_setbit_comes_back_after_a_crash(self):
        c = self.start()
        for offset in (7, 100, 5000, 5001):
            self.assertEqual(c.cmd("SETBIT", "bits", str(offset), "1"), integer(0))
        self.assertEqual(c.cmd("SETBIT", "bits", "100", "0"), integer(1))
        before = c.cmd("GET", "bits")
        self.kill()
        c = self.start()
        self.assertEqual(c.cmd("GET", "bits"), before)
        self.assertEqual(c.cmd("BITCOUNT", "bits"), integer(3))
        self.assertEqual(c.cmd("BITPOS", "bits", "1", "1"), integer(5000))

    def test_bitfield_comes_back_after_a_crash(self):
        c = self.start()
        self.assertEqual(c.cmd("BITFIELD", "f", "INCRBY", "u16", "#40", "1000", "SET", "i8", "0",
                               "-5"), ints(1000, 0))
        self.assertEqual(c.cmd("BITFIELD", "f", "INCRBY", "u16", "#40", "7"), ints(1007))
        self.kill()
        c = self.start()
        self.assertEqual(c.cmd("BITFIELD_RO", "f", "GET", "u16", "#40", "GET", "i8", "0"),
                         ints(1007, -5))
        self.assertEqual(c.cmd("STRLEN", "f"), integer(82))

    def test_bitop_across_shards_comes_back_after_a_crash(self):
        c = self.start()
        self.assertEqual(c.cmd("SET", "a", "foobar"), OK)
        self.assertEqual(c.cmd("SET", "b", "abcdef"), OK)
        self.assertEqual(c.cmd("BITOP", "XOR", "d", "a", "b"), integer(6))
        self.kill()
        c = self.start()
        self.assertEqual(c.cmd("GET", "d"), bulk(b"\x07\x0d\x0c\x06\x04\x14"))


if __name__ == "__main__":
    unittest.main()
