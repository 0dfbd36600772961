"""String commands: GET, SET and every option, SETNX/SETEX/PSETEX, GETSET/GETDEL/GETEX,
MGET/MSET/MSETNX, APPEND/STRLEN/GETRANGE/SETRANGE, INCR family and INCRBYFLOAT, LCS.

Every expected reply is the exact byte string Redis 7.0 sends."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (NIL, NOT_FLOAT, NOT_INTEGER, OK, SYNTAX, WRONGTYPE, array,  # noqa: E402
                     bulk, integer, wrong_args)
from slots import on_shard  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def invalid_expire(cmd):
    return b"-ERR invalid expire time in '%s' command\r\n" % cmd.encode()


OVERFLOW = b"-ERR increment or decrement would overflow\r\n"


class StringTestCase(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")


class GetSetTest(StringTestCase):
    def test_get_missing_and_existing(self):
        self.assertReply(NIL, "GET", "nokey")
        self.assertReply(OK, "SET", "k", "v")
        self.assertReply(bulk("v"), "GET", "k")
        self.assertReply(OK, "SET", "k", "other")
        self.assertReply(bulk("other"), "GET", "k")

    def test_binary_safe_keys_and_values(self):
        value = b"a\r\nb\x00c\xff$-1\r\n*2\r\n"
        key = b"key with spaces\r\n\x00"
        self.assertReply(OK, "SET", key, value)
        self.assertReply(bulk(value), "GET", key)
        self.assertReply(OK, "SET", "empty", "")
        self.assertReply(b"$0\r\n\r\n", "GET", "empty")
        self.assertReply(OK, "SET", "", "emptykey")
        self.assertReply(bulk("emptykey"), "GET", "")

    def test_large_value(self):
        value = os.urandom(1 << 20)
        self.assertReply(OK, "SET", "big", value)
        self.assertReply(bulk(value), "GET", "big")
        self.assertReply(integer(1 << 20), "STRLEN", "big")

    def test_arity(self):
        self.assertReplies([
            (("GET",), wrong_args("get")),
            (("GET", "a", "b"), wrong_args("get")),
            (("SET",), wrong_args("set")),
            (("SET", "k"), wrong_args("set")),
        ])

    def test_nx_xx(self):
        self.assertReplies([
            (("SET", "k", "v1", "XX"), NIL),
            (("GET", "k"), NIL),
            (("SET", "k", "v1", "NX"), OK),
            (("SET", "k", "v2", "NX"), NIL),
            (("GET", "k"), bulk("v1")),
            (("SET", "k", "v3", "XX"), OK),
            (("GET", "k"), bulk("v3")),
        ])

    def test_ex_px(self):
        self.assertReply(OK, "SET", "k", "v", "EX", "100")
        self.assertTTL("k", 99, 100)
        self.assertReply(OK, "SET", "k", "v", "PX", "100000")
        self.assertTTL("k", 99000, 100000, cmd="PTTL")
        self.assertTTL("k", 99, 100)
        # A plain SET clears the TTL.
        self.assertReply(OK, "SET", "k", "v")
        self.assertReply(integer(-1), "TTL", "k")

    def test_exat_pxat(self):
        now = int(time.time())
        self.assertReply(OK, "SET", "k", "v", "EXAT", str(now + 100))
        self.assertTTL("k", 98, 101)
        self.assertReply(OK, "SET", "k", "v", "PXAT", str((now + 200) * 1000))
        self.assertTTL("k", 198, 201)
        # A time in the past is accepted and the key is gone at once.
        self.assertReply(OK, "SET", "k", "v", "EXAT", "1")
        self.assertReply(NIL, "GET", "k")
        self.assertReply(integer(0), "EXISTS", "k")
        self.assertReply(OK, "SET", "k", "v", "PXAT", "1")
        self.assertReply(integer(0), "EXISTS", "k")
        # PXAT at the largest integer is valid (no relative-to-absolute conversion).
        self.assertReply(OK, "SET", "k", "v", "PXAT", "9223372036854775807")
        self.assertReply(bulk("v"), "GET", "k")

    def test_keepttl(self):
        self.assertReply(OK, "SET", "k", "v", "EX", "100")
        self.assertReply(OK, "SET", "k", "v2", "KEEPTTL")
        self.assertTTL("k", 99, 100)
        self.assertReply(bulk("v2"), "GET", "k")
        self.assertReply(bulk("v2"), "SET", "k", "v3", "KEEPTTL", "GET", "XX")
        self.assertTTL("k", 99, 100)
        self.assertReply(OK, "SET", "nottl", "v", "KEEPTTL")
        self.assertReply(integer(-1), "TTL", "nottl")

    def test_get_option(self):
        self.assertReplies([
            (("SET", "k", "v1", "GET"), NIL),
            (("GET", "k"), bulk("v1")),
            (("SET", "k", "v2", "GET"), bulk("v1")),
            (("GET", "k"), bulk("v2")),
            # GET with NX (allowed since 7.0): returns the old value and does not set.
            (("SET", "k", "v3", "NX", "GET"), bulk("v2")),
            (("GET", "k"), bulk("v2")),
            (("SET", "n", "v", "NX", "GET"), NIL),
            (("GET", "n"), bulk("v")),
            # GET with XX
            (("SET", "m", "v", "XX", "GET"), NIL),
            (("EXISTS", "m"), integer(0)),
            (("SET", "k", "v4", "GET", "XX"), bulk("v2")),
            (("GET", "k"), bulk("v4")),
            # GET with an expire
            (("SET", "k", "v5", "GET", "EX", "100"), bulk("v4")),
            (("SET", "k", "v6", "get", "get"), bulk("v5")),
        ])
        self.assertTTL("k", -1, -1)

    def test_options_any_order_and_case(self):
        self.assertReplies([
            (("set", "k", "v", "ex", "8", "nx"), OK),            # go-redis SetNX style
            (("SET", "k", "tok", "NX", "PX", "30000"), NIL),     # redis-py Lock style
            (("GET", "k"), bulk("v")),
            (("SET", "lock", "tok", "NX", "PX", "30000"), OK),
            (("GET", "lock"), bulk("tok")),
            (("sEt", "k", "w", "xX", "Px", "5000"), OK),
            (("SET", "k", "x", "px", "5000", "XX", "GET"), bulk("w")),
            (("SET", "k", "y", "KeepTtl", "xx"), OK),
            (("SET", "k", "z", "ExAt", str(int(time.time()) + 50), "GeT"), bulk("y")),
            (("SET", "k", "a", "pxat", str(int(time.time() * 1000) + 50000), "nx"), NIL),
            # Repeating the same option is allowed; the last value wins.
            (("SET", "k", "b", "EX", "10", "EX", "20"), OK),
        ])
        self.assertTTL("k", 19, 20)
        self.assertReply(NIL, "SET", "k", "b", "NX", "NX")
        self.assertReply(OK, "SET", "k", "c", "XX", "XX")
        self.assertReply(bulk("c"), "GET", "k")

    def test_option_syntax_errors(self):
        for opts in (
            ["NX", "XX"], ["XX", "NX"],
            ["EX", "10", "PX", "100"], ["PX", "100", "EX", "10"],
            ["EX", "10", "EXAT", "99999999999"], ["PX", "10", "PXAT", "99999999999"],
            ["EXAT", "99999999999", "PXAT", "99999999999999"],
            ["EX", "10", "KEEPTTL"], ["KEEPTTL", "EX", "10"], ["PX", "10", "KEEPTTL"],
            ["PXAT", "100000000000000", "KEEPTTL"], ["KEEPTTL", "EXAT", "99999999999"],
            ["FOO"], ["EX"], ["PX"], ["EXAT"], ["PXAT"], ["NX", "EX"], ["EX", "10", "FOO"],
            # Option errors win over a bad number, whatever the order.
            ["EX", "abc", "NX", "XX"], ["NX", "XX", "EX", "abc"], ["EX", "0", "NX", "XX"],
            ["FOO", "EX", "abc"], ["EX", "abc", "FOO"], ["EX", "0", "FOO"],
        ):
            self.assertReply(SYNTAX, "SET", "k", "v", *opts)
        self.assertReply(integer(0), "EXISTS", "k")

    def test_bad_expire_values(self):
        for opt, value, expected in (
            ("EX", "0", invalid_expire("set")),
            ("EX", "-1", invalid_expire("set")),
            ("PX", "0", invalid_expire("set")),
            ("PX", "-100", invalid_expire("set")),
            ("EXAT", "0", invalid_expire("set")),
            ("PXAT", "0", invalid_expire("set")),
            ("EXAT", "-5", invalid_expire("set")),
            ("EX", "9223372036854775807", invalid_expire("set")),
            ("EX", "9223372036854775", invalid_expire("set")),    # overflows when added to now
            ("PX", "9223372036854775807", invalid_expire("set")),
            ("EXAT", "9223372036854775807", invalid_expire("set")),
            ("EX", "9223372036854775808", NOT_INTEGER),
            ("EX", "-9223372036854775809", NOT_INTEGER),
            ("EX", "abc", NOT_INTEGER),
            ("EX", "1.5", NOT_INTEGER),
            ("PX", "1.5e3", NOT_INTEGER),
            ("EX", "", NOT_INTEGER),
            ("EX", "+10", NOT_INTEGER),
            ("EX", "010", NOT_INTEGER),
            ("EX", " 10", NOT_INTEGER),
            ("EX", "10abc", NOT_INTEGER),
            ("EX", "0x10", NOT_INTEGER),
            ("EX", "-0", NOT_INTEGER),
        ):
            self.assertReply(expected, "SET", "k", "v", opt, value)
            self.assertReply(expected, "set", "k", "v", opt.lower(), value, "nx")
        self.assertReply(integer(0), "EXISTS", "k")
        # A large but valid relative expire.
        self.assertReply(OK, "SET", "k", "v", "EX", "100000000")
        self.assertTTL("k", 99999999, 100000000)

    def test_set_overwrites_other_types(self):
        self.make_hash(self.c, "h")
        self.assertReply(WRONGTYPE, "SET", "h", "v", "GET")
        self.assertReply(b"+hash\r\n", "TYPE", "h")
        self.assertReply(NIL, "SET", "h", "v", "NX")
        self.assertReply(OK, "SET", "h", "v")
        self.assertReply(bulk("v"), "GET", "h")
        self.assertReply(b"+string\r\n", "TYPE", "h")


class SetVariantsTest(StringTestCase):
    def test_setnx(self):
        self.assertReplies([
            (("SETNX", "k", "v1"), integer(1)),
            (("SETNX", "k", "v2"), integer(0)),
            (("GET", "k"), bulk("v1")),
            (("SETNX", "k"), wrong_args("setnx")),
            (("SETNX", "k", "v", "x"), wrong_args("setnx")),
        ])
        self.assertReply(OK, "SET", "t", "v", "EX", "100")
        self.assertReply(integer(0), "SETNX", "t", "z")
        self.assertTTL("t", 99, 100)

    def test_setex(self):
        self.assertReply(OK, "SETEX", "k", "100", "v")
        self.assertReply(bulk("v"), "GET", "k")
        self.assertTTL("k", 99, 100)
        self.assertReplies([
            (("SETEX", "k", "0", "v"), invalid_expire("setex")),
            (("SETEX", "k", "-5", "v"), invalid_expire("setex")),
            (("SETEX", "k", "9223372036854775807", "v"), invalid_expire("setex")),
            (("SETEX", "k", "abc", "v"), NOT_INTEGER),
            (("SETEX", "k", "1.5", "v"), NOT_INTEGER),
            (("SETEX", "k", "10"), wrong_args("setex")),
            (("SETEX", "k", "10", "v", "x"), wrong_args("setex")),
        ])
        self.assertReply(bulk("v"), "GET", "k")

    def test_psetex(self):
        self.assertReply(OK, "PSETEX", "k", "100000", "v")
        self.assertReply(bulk("v"), "GET", "k")
        self.assertTTL("k", 99000, 100000, cmd="PTTL")
        self.assertReplies([
            (("PSETEX", "k", "0", "v"), invalid_expire("psetex")),
            (("PSETEX", "k", "-1", "v"), invalid_expire("psetex")),
            (("PSETEX", "k", "9223372036854775807", "v"), invalid_expire("psetex")),
            (("PSETEX", "k", "x", "v"), NOT_INTEGER),
            (("PSETEX", "k", "1"), wrong_args("psetex")),
        ])

    def test_getset(self):
        self.assertReplies([
            (("GETSET", "k", "v1"), NIL),
            (("GETSET", "k", "v2"), bulk("v1")),
            (("GET", "k"), bulk("v2")),
            (("GETSET", "k"), wrong_args("getset")),
        ])
        self.assertReply(OK, "SET", "t", "v", "EX", "100")
        self.assertReply(bulk("v"), "GETSET", "t", "w")
        self.assertReply(integer(-1), "TTL", "t")  # GETSET clears the TTL

    def test_getdel(self):
        self.assertReplies([
            (("GETDEL", "k"), NIL),
            (("SET", "k", "v"), OK),
            (("GETDEL", "k"), bulk("v")),
            (("GETDEL", "k"), NIL),
            (("EXISTS", "k"), integer(0)),
            (("GETDEL",), wrong_args("getdel")),
            (("GETDEL", "a", "b"), wrong_args("getdel")),
        ])


class GetexTest(StringTestCase):
    def test_getex_without_options(self):
        self.assertReply(NIL, "GETEX", "nokey")
        self.assertReply(OK, "SET", "k", "v", "EX", "100")
        self.assertReply(bulk("v"), "GETEX", "k")
        self.assertTTL("k", 99, 100)
        self.assertReply(wrong_args("getex"), "GETEX")

    def test_getex_options(self):
        now = int(time.time())
        self.assertReply(OK, "SET", "k", "v")
        self.assertReply(bulk("v"), "GETEX", "k", "EX", "100")
        self.assertTTL("k", 99, 100)
        self.assertReply(bulk("v"), "GETEX", "k", "px", "50000")
        self.assertTTL("k", 49000, 50000, cmd="PTTL")
        self.assertReply(bulk("v"), "GETEX", "k", "EXAT", str(now + 300))
        self.assertTTL("k", 298, 301)
        self.assertReply(bulk("v"), "GETEX", "k", "PXAT", str((now + 400) * 1000))
        self.assertTTL("k", 398, 401)
        self.assertReply(bulk("v"), "GETEX", "k", "PERSIST")
        self.assertReply(integer(-1), "TTL", "k")
        self.assertReply(bulk("v"), "GETEX", "k", "EX", "10", "EX", "20")
        self.assertTTL("k", 19, 20)
        # A time in the past deletes the key after returning it.
        self.assertReply(bulk("v"), "GETEX", "k", "EXAT", "1")
        self.assertReply(integer(0), "EXISTS", "k")
        self.assertReply(OK, "SET", "k", "v")
        self.assertReply(bulk("v"), "GETEX", "k", "PXAT", "1")
        self.assertReply(integer(0), "EXISTS", "k")

    def test_getex_errors(self):
        self.assertReply(OK, "SET", "k", "v")
        self.assertReplies([
            (("GETEX", "k", "EX", "0"), invalid_expire("getex")),
            (("GETEX", "k", "EX", "-1"), invalid_expire("getex")),
            (("GETEX", "k", "PX", "0"), invalid_expire("getex")),
            (("GETEX", "k", "EXAT", "0"), invalid_expire("getex")),
            (("GETEX", "k", "PXAT", "-1"), invalid_expire("getex")),
            (("GETEX", "k", "EX", "9223372036854775807"), invalid_expire("getex")),
            (("GETEX", "k", "EX", "9223372036854775"), invalid_expire("getex")),
            (("GETEX", "k", "PX", "9223372036854775807"), invalid_expire("getex")),
            (("GETEX", "k", "EXAT", "9223372036854775807"), invalid_expire("getex")),
            (("GETEX", "k", "EX", "abc"), NOT_INTEGER),
            (("GETEX", "k", "EX", "10", "PX", "10"), SYNTAX),
            (("GETEX", "k", "PERSIST", "EX", "10"), SYNTAX),
            (("GETEX", "k", "EX", "10", "PERSIST"), SYNTAX),
            (("GETEX", "k", "EXAT", "10", "PXAT", "10"), SYNTAX),
            (("GETEX", "k", "FOO"), SYNTAX),
            (("GETEX", "k", "EX"), SYNTAX),
            (("GETEX", "k", "KEEPTTL"), SYNTAX),
            (("GETEX", "k", "NX"), SYNTAX),
        ])
        self.assertReply(integer(-1), "TTL", "k")
        self.assertReply(bulk("v"), "GET", "k")

    def test_getex_missing_key(self):
        # Syntax is checked first; a missing key then replies nil before the number is read.
        self.assertReplies([
            (("GETEX", "nokey", "FOO"), SYNTAX),
            (("GETEX", "nokey", "EX", "10", "PX", "10"), SYNTAX),
            (("GETEX", "nokey", "EX", "10"), NIL),
            (("GETEX", "nokey", "PERSIST"), NIL),
            (("GETEX", "nokey", "EX", "0"), NIL),
            (("GETEX", "nokey", "EX", "abc"), NIL),
            (("EXISTS", "nokey"), integer(0)),
        ])


class MultiKeyTest(StringTestCase):
    def test_mget(self):
        self.assertReply(OK, "SET", "a", "1")
        self.assertReply(OK, "SET", "b", "")
        self.assertReply(b"*4\r\n$1\r\n1\r\n$0\r\n\r\n$-1\r\n$1\r\n1\r\n", "MGET", "a", "b", "nokey", "a")
        self.assertReply(b"*1\r\n$-1\r\n", "MGET", "nokey")
        self.assertReply(wrong_args("mget"), "MGET")

    def test_mget_wrong_type_is_nil(self):
        self.make_hash(self.c, "h")
        self.assertReply(OK, "SET", "a", "1")
        self.assertReply(b"*2\r\n$-1\r\n$1\r\n1\r\n", "MGET", "h", "a")

    def test_mset(self):
        self.assertReply(OK, "MSET", "a", "1", "b", "2", "a", "3")
        self.assertReply(b"*2\r\n$1\r\n3\r\n$1\r\n2\r\n", "MGET", "a", "b")
        self.assertReply(OK, "SET", "t", "v", "EX", "100")
        self.assertReply(OK, "MSET", "t", "w")
        self.assertReply(integer(-1), "TTL", "t")  # MSET clears the TTL
        self.assertReplies([
            (("MSET",), wrong_args("mset")),
            (("MSET", "a"), wrong_args("mset")),
            (("MSET", "a", "1", "b"), wrong_args("mset")),
            (("MSET", "x", "1", "y", "2", "z"), wrong_args("mset")),
        ])
        self.assertReply(integer(0), "EXISTS", "x")

    def test_msetnx(self):
        self.assertReplies([
            (("MSETNX", "a", "1", "b", "2"), integer(1)),
            (("MSETNX", "b", "3", "c", "4"), integer(0)),
            (("EXISTS", "c"), integer(0)),
            (("GET", "b"), bulk("2")),
            (("MSETNX", "a", "1", "b"), wrong_args("msetnx")),
            (("MSETNX",), wrong_args("msetnx")),
        ])


class StringOpsTest(StringTestCase):
    def test_append_strlen(self):
        self.assertReplies([
            (("APPEND", "s", "hello"), integer(5)),
            (("APPEND", "s", " world"), integer(11)),
            (("APPEND", "s", ""), integer(11)),
            (("GET", "s"), bulk("hello world")),
            (("STRLEN", "s"), integer(11)),
            (("STRLEN", "nokey"), integer(0)),
            (("APPEND", "bin", b"\x00\r\n"), integer(3)),
            (("STRLEN", "bin"), integer(3)),
            (("APPEND", "s"), wrong_args("append")),
            (("STRLEN",), wrong_args("strlen")),
        ])
        self.assertReply(OK, "SET", "t", "v", "EX", "100")
        self.assertReply(integer(2), "APPEND", "t", "w")
        self.assertTTL("t", 99, 100)  # APPEND keeps the TTL
        # APPEND to an integer-looking value
        self.assertReply(OK, "SET", "n", "12")
        self.assertReply(integer(3), "APPEND", "n", "3")
        self.assertReply(integer(124), "INCR", "n")

    def test_getrange(self):
        self.assertReply(OK, "SET", "s", "hello world")
        self.assertReplies([
            (("GETRANGE", "s", "0", "4"), bulk("hello")),
            (("GETRANGE", "s", "-5", "-1"), bulk("world")),
            (("GETRANGE", "s", "0", "-1"), bulk("hello world")),
            (("GETRANGE", "s", "5", "1"), bulk("")),
            (("GETRANGE", "s", "100", "200"), bulk("")),
            (("GETRANGE", "s", "-100", "-1"), bulk("hello world")),
            (("GETRANGE", "s", "-100", "2"), bulk("hel")),
            (("GETRANGE", "s", "0", "100"), bulk("hello world")),
            (("GETRANGE", "s", "-1", "-100"), bulk("")),
            (("GETRANGE", "s", "10", "10"), bulk("d")),
            (("GETRANGE", "nokey", "0", "10"), bulk("")),
            (("GETRANGE", "s", "a", "b"), NOT_INTEGER),
            (("GETRANGE", "s", "0", "1.5"), NOT_INTEGER),
            (("GETRANGE", "s", "0"), wrong_args("getrange")),
        ])
        self.assertReply(OK, "SET", "e", "")
        self.assertReply(bulk(""), "GETRANGE", "e", "0", "-1")
        self.assertReply(bulk(""), "GETRANGE", "e", "-1", "-1")
        self.assertReply(OK, "SET", "n", "12345")
        self.assertReply(bulk("234"), "GETRANGE", "n", "1", "3")
        # SUBSTR is GETRANGE's old name.
        self.assertReply(bulk("world"), "SUBSTR", "s", "-5", "-1")
        self.assertReply(wrong_args("substr"), "SUBSTR", "s", "0")

    def test_setrange(self):
        self.assertReply(OK, "SET", "s", "hello world")
        self.assertReplies([
            (("SETRANGE", "s", "6", "WORLD"), integer(11)),
            (("GET", "s"), bulk("hello WORLD")),
            (("SETRANGE", "s", "20", "x"), integer(21)),
            (("GET", "s"), bulk(b"hello WORLD" + b"\x00" * 9 + b"x")),
            (("SETRANGE", "s", "0", ""), integer(21)),
            # An empty value on a missing key creates nothing.
            (("SETRANGE", "nokey", "0", ""), integer(0)),
            (("SETRANGE", "nokey", "3", ""), integer(0)),
            (("EXISTS", "nokey"), integer(0)),
            (("SETRANGE", "new", "3", "ab"), integer(5)),
            (("GET", "new"), bulk(b"\x00\x00\x00ab")),
            (("SETRANGE", "s", "-1", "x"), b"-ERR offset is out of range\r\n"),
            (("SETRANGE", "s", "536870912", "x"),
             b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"),
            (("SETRANGE", "s", "abc", "x"), NOT_INTEGER),
            (("SETRANGE", "s", "1"), wrong_args("setrange")),
        ])
        self.assertReply(OK, "SET", "t", "abc", "EX", "100")
        self.assertReply(integer(3), "SETRANGE", "t", "0", "x")
        self.assertTTL("t", 99, 100)
        self.assertReply(bulk("xbc"), "GET", "t")


class LcsTest(StringTestCase):
    """LCS: the subsequence, its length, and the matching ranges as Redis 7.0 gives them, with the
    two keys on one shard and on two."""

    def test_replies(self):
        for a, b in (("{k}a", "{k}b"), (on_shard(0, "lcs"), on_shard(1, "lcs"))):
            self.assertReply(OK, "SET", a, "ohmytext")
            self.assertReply(OK, "SET", b, "mynewtext")

            def m(a0, a1, b0, b1, *n):
                return array(array(integer(a0), integer(a1)), array(integer(b0), integer(b1)),
                             *[integer(x) for x in n])
            self.assertReplies([
                (("LCS", a, b), bulk("mytext")),
                (("LCS", a, b, "LEN"), integer(6)),
                (("LCS", a, b, "IDX"), array(bulk("matches"), array(m(4, 7, 5, 8), m(2, 3, 0, 1)),
                                             bulk("len"), integer(6))),
                (("LCS", a, b, "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"),
                 array(bulk("matches"), array(m(4, 7, 5, 8, 4)), bulk("len"), integer(6))),
                (("LCS", a, "missing"), bulk("")),
                (("LCS", a, "missing", "IDX"),
                 array(bulk("matches"), array(), bulk("len"), integer(0))),
            ])

    def test_errors_keys_first(self):
        self.c.cmd("SET", "{k}a", "x")
        self.c.cmd("RPUSH", "{k}l", "x")
        self.c.cmd("RPUSH", on_shard(1, "lcsl"), "x")
        not_strings = b"-ERR The specified keys must contain string values\r\n"
        self.assertReplies([
            (("LCS", "{k}a", "{k}l"), not_strings),
            (("LCS", "{k}l", "{k}a", "BOGUS"), not_strings),  # the types before the options
            (("LCS", on_shard(0, "lcs"), on_shard(1, "lcsl")), not_strings),
            (("LCS", "{k}a", "{k}a", "BOGUS"), SYNTAX),
            (("LCS", "{k}a", "{k}a", "MINMATCHLEN"), SYNTAX),
            (("LCS", "{k}a", "{k}a", "MINMATCHLEN", "x"), NOT_INTEGER),
            (("LCS", "{k}a", "{k}a", "LEN", "IDX"),
             b"-ERR If you want both the length and indexes, please just use IDX.\r\n"),
            (("LCS", "{k}a"), wrong_args("lcs")),
        ])

    def test_the_table_is_bounded_by_proto_max_bulk_len(self):
        if harness.AGAINST_REDIS:
            self.skipTest("deadbolt's own bound")
        self.c.cmd("SET", "{k}a", "a" * 2000)
        self.c.cmd("SET", "{k}b", "b" * 2000)
        self.assertReply(OK, "CONFIG", "SET", "proto-max-bulk-len", "1mb")
        try:
            self.assertReply(b"-ERR Insufficient memory, transient memory for LCS exceeds "
                             b"proto-max-bulk-len\r\n", "LCS", "{k}a", "{k}b")
        finally:
            self.assertReply(OK, "CONFIG", "SET", "proto-max-bulk-len", "512mb")
        self.assertReply(integer(0), "LCS", "{k}a", "{k}b", "LEN")


class CounterTest(StringTestCase):
    def test_incr_decr(self):
        self.assertReplies([
            (("INCR", "n"), integer(1)),
            (("INCR", "n"), integer(2)),
            (("INCRBY", "n", "10"), integer(12)),
            (("INCRBY", "n", "-20"), integer(-8)),
            (("DECR", "n"), integer(-9)),
            (("DECRBY", "n", "5"), integer(-14)),
            (("DECRBY", "n", "-5"), integer(-9)),
            (("GET", "n"), bulk("-9")),
            (("DECR", "d"), integer(-1)),
            (("DECRBY", "e", "7"), integer(-7)),
            (("INCRBY", "f", "0"), integer(0)),
            (("GET", "f"), bulk("0")),
        ])
        self.assertReply(OK, "SET", "t", "10", "EX", "100")
        self.assertReply(integer(11), "INCR", "t")
        self.assertTTL("t", 99, 100)  # INCR keeps the TTL

    def test_incr_arity_and_bad_increment(self):
        self.assertReplies([
            (("INCR",), wrong_args("incr")),
            (("INCR", "a", "b"), wrong_args("incr")),
            (("DECR", "a", "b"), wrong_args("decr")),
            (("INCRBY", "n"), wrong_args("incrby")),
            (("DECRBY", "n"), wrong_args("decrby")),
            (("INCRBY", "n", "abc"), NOT_INTEGER),
            (("INCRBY", "n", "1.5"), NOT_INTEGER),
            (("INCRBY", "n", ""), NOT_INTEGER),
            (("INCRBY", "n", "9223372036854775808"), NOT_INTEGER),
            (("DECRBY", "n", "9223372036854775808"), NOT_INTEGER),
            (("DECRBY", "n", "-9223372036854775808"), b"-ERR decrement would overflow\r\n"),
            (("EXISTS", "n"), integer(0)),
        ])

    def test_incr_non_integer_values(self):
        for value in ("abc", " 1", "1 ", "01", "+1", "-0", "00", "", "1.0",
                      "9223372036854775808", "-9223372036854775809", "1e3", "0x10"):
            self.assertReply(OK, "SET", "n", value)
            self.assertReply(NOT_INTEGER, "INCR", "n")
            self.assertReply(NOT_INTEGER, "DECRBY", "n", "1")
            self.assertReply(bulk(value), "GET", "n")

    def test_overflow(self):
        self.assertReplies([
            (("SET", "n", "9223372036854775807"), OK),
            (("INCR", "n"), OVERFLOW),
            (("INCRBY", "n", "1"), OVERFLOW),
            (("DECRBY", "n", "-1"), OVERFLOW),
            (("INCRBY", "n", "0"), integer(9223372036854775807)),
            (("SET", "n", "-9223372036854775808"), OK),
            (("DECR", "n"), OVERFLOW),
            (("DECRBY", "n", "1"), OVERFLOW),
            (("INCRBY", "n", "-1"), OVERFLOW),
            (("GET", "n"), bulk("-9223372036854775808")),
            (("INCR", "n"), integer(-9223372036854775807)),
            (("SET", "m", "-1"), OK),
            (("INCRBY", "m", "-9223372036854775808"), OVERFLOW),
            (("SET", "m", "1"), OK),
            (("INCRBY", "m", "9223372036854775807"), OVERFLOW),
            (("SET", "m", "0"), OK),
            (("INCRBY", "m", "-9223372036854775808"), integer(-9223372036854775808)),
        ])

    def test_incrbyfloat_formatting(self):
        self.assertReply(OK, "SET", "f", "10.50")
        self.assertReplies([
            (("INCRBYFLOAT", "f", "0.1"), bulk("10.6")),
            (("INCRBYFLOAT", "f", "-5"), bulk("5.6")),
            (("GET", "f"), bulk("5.6")),
            # Redis computes in long double and prints %.17Lf with trailing zeros removed.
            (("INCRBYFLOAT", "f", "5.0e3"), bulk("5005.60000000000000009")),
            (("INCRBYFLOAT", "new1", "3"), bulk("3")),
            (("INCRBYFLOAT", "new2", "1.5"), bulk("1.5")),
            (("INCRBYFLOAT", "new3", "0.1"), bulk("0.1")),
            (("INCRBYFLOAT", "new3", "0.2"), bulk("0.3")),
            (("INCRBYFLOAT", "new4", "-2.5"), bulk("-2.5")),
            (("INCRBYFLOAT", "new4", "2.5"), bulk("0")),
            (("INCRBYFLOAT", "new5", "1e-10"), bulk("0.0000000001")),
            (("INCRBYFLOAT", "new6", "1.5e3"), bulk("1500")),
            (("INCRBYFLOAT", "new6", ".5"), bulk("1500.5")),
            (("INCRBYFLOAT", "new6", "1."), bulk("1501.5")),
            (("SET", "i", "3.0"), OK),
            (("INCRBYFLOAT", "i", "0"), bulk("3")),
            (("SET", "i", "1e5"), OK),
            (("INCRBYFLOAT", "i", "0"), bulk("100000")),
            (("SET", "i", "5"), OK),
            (("INCRBYFLOAT", "i", "1e-10"), bulk("5.0000000001")),
            (("SET", "i", "-0"), OK),
            (("INCRBYFLOAT", "i", "0"), bulk("0")),
            (("SET", "i", "12345678901234567890"), OK),
            (("INCRBYFLOAT", "i", "1"), bulk("12345678901234567891")),
            (("INCR", "i"), NOT_INTEGER),
        ])
        self.assertReply(OK, "SET", "t", "1", "EX", "100")
        self.assertReply(bulk("2.5"), "INCRBYFLOAT", "t", "1.5")
        self.assertTTL("t", 99, 100)

    def test_incrbyfloat_errors(self):
        self.assertReply(OK, "SET", "f", "1")
        nan_inf = b"-ERR increment would produce NaN or Infinity\r\n"
        self.assertReplies([
            (("INCRBYFLOAT", "f", "abc"), NOT_FLOAT),
            (("INCRBYFLOAT", "f", ""), NOT_FLOAT),
            (("INCRBYFLOAT", "f", "nan"), NOT_FLOAT),
            (("INCRBYFLOAT", "f", "1.5x"), NOT_FLOAT),
            (("INCRBYFLOAT", "f", " 1"), NOT_FLOAT),
            (("INCRBYFLOAT", "f", "inf"), nan_inf),
            (("INCRBYFLOAT", "f", "-inf"), nan_inf),
            (("INCRBYFLOAT", "f"), wrong_args("incrbyfloat")),
            (("GET", "f"), bulk("1")),
            (("SET", "g", "abc"), OK),
            (("INCRBYFLOAT", "g", "1"), NOT_FLOAT),
            (("SET", "g", " 1"), OK),
            (("INCRBYFLOAT", "g", "1"), NOT_FLOAT),
            (("SET", "g", "1 "), OK),
            (("INCRBYFLOAT", "g", "1"), NOT_FLOAT),
        ])


class WrongTypeTest(StringTestCase):
    def test_string_commands_on_a_hash(self):
        self.make_hash(self.c, "h")
        for args in (
            ("GET", "h"), ("GETSET", "h", "v"), ("GETDEL", "h"), ("GETEX", "h"),
            ("GETEX", "h", "EX", "10"), ("GETEX", "h", "PERSIST"), ("SET", "h", "v", "GET"),
            ("APPEND", "h", "x"), ("STRLEN", "h"), ("GETRANGE", "h", "0", "1"),
            ("SETRANGE", "h", "0", "x"), ("INCR", "h"), ("DECR", "h"), ("INCRBY", "h", "1"),
            ("DECRBY", "h", "1"), ("INCRBYFLOAT", "h", "1"),
        ):
            self.assertReply(WRONGTYPE, *args)
        self.assertReply(b"+hash\r\n", "TYPE", "h")
        # Commands that only test existence or overwrite do not care about the type.
        self.assertReply(integer(0), "SETNX", "h", "v")
        self.assertReply(integer(0), "MSETNX", "h", "v")
        self.assertReply(b"+hash\r\n", "TYPE", "h")
        self.assertReply(OK, "MSET", "h", "v")
        self.assertReply(bulk("v"), "GET", "h")


if __name__ == "__main__":
    harness.main()
