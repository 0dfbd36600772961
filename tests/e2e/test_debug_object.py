"""OBJECT, MEMORY and DEBUG (issue 14): replies byte-exact with redis-server 7.0 in RESP2 and
RESP3 (DEBUG PROTOCOL's every type, OBJECT ENCODING's names), DEBUG behind
enable-debug-command, and the latency monitor and slow log fed by DEBUG SLEEP. Checked against
redis-server too (DEADBOLT_AGAINST_REDIS=1)."""

import time

import harness
from harness import OK, bulk, error, integer


def setUpModule():
    harness.start_module_server(["--enable-debug-command", "yes"])


def tearDownModule():
    harness.stop_module_server()


TYPES = ("string integer double bignum null array set map attrib push verbatim true "
         "false").split()

PROTOCOL_RESP2 = {
    "string": b"$11\r\nHello World\r\n",
    "integer": b":12345\r\n",
    "double": b"$5\r\n3.141\r\n",
    "bignum": b"$37\r\n1234567999999999999999999999999999999\r\n",
    "null": b"$-1\r\n",
    "array": b"*3\r\n:0\r\n:1\r\n:2\r\n",
    "set": b"*3\r\n:0\r\n:1\r\n:2\r\n",
    "map": b"*6\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:0\r\n",
    "attrib": b"$39\r\nSome real reply following the attribute\r\n",
    "push": b"-ERR RESP2 is not supported by this command\r\n",
    "verbatim": b"$25\r\nThis is a verbatim\nstring\r\n",
    "true": b":1\r\n",
    "false": b":0\r\n",
}
PROTOCOL_RESP3 = {
    "string": b"$11\r\nHello World\r\n",
    "integer": b":12345\r\n",
    "double": b",3.141\r\n",
    "bignum": b"(1234567999999999999999999999999999999\r\n",
    "null": b"_\r\n",
    "array": b"*3\r\n:0\r\n:1\r\n:2\r\n",
    "set": b"~3\r\n:0\r\n:1\r\n:2\r\n",
    "map": b"%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n",
    "attrib": b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n"
              b"$39\r\nSome real reply following the attribute\r\n",
    "push": b">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n"
            b"$40\r\nSome real reply following the push reply\r\n",
    "verbatim": b"=29\r\ntxt:This is a verbatim\nstring\r\n",
    "true": b"#t\r\n",
    "false": b"#f\r\n",
}


class DebugTest(harness.ServerTestCase):
    def test_protocol_every_type(self):
        for t in TYPES:
            self.assertReply(PROTOCOL_RESP2[t], "DEBUG", "PROTOCOL", t)
        self.assertReply(error("ERR Wrong protocol type name. Please use one of the following: "
                               "string|integer|double|bignum|null|array|set|map|attrib|push|"
                               "verbatim|true|false"), "DEBUG", "PROTOCOL", "nope")
        c3 = self.conn()
        c3.cmd("HELLO", "3")
        for t in TYPES:
            got = c3.cmd("DEBUG", "PROTOCOL", t)
            if t == "push":  # a push message, then the reply
                got += c3.read_reply()
            self.assertEqual(got, PROTOCOL_RESP3[t], t)

    def test_subcommands(self):
        c = self.c
        self.assertEqual(c.cmd("DEBUG", "SLEEP", "0"), OK)
        c.cmd("FLUSHALL")
        self.assertEqual(c.cmd("DEBUG", "SET-ACTIVE-EXPIRE", "0"), OK)
        try:
            self.assertEqual(c.cmd("SET", "dbg:e", "v", "PX", "1"), OK)
            time.sleep(0.3)
            # Expired but not removed in the background: still counted.
            self.assertEqual(c.cmd("DBSIZE"), integer(1))
        finally:
            self.assertEqual(c.cmd("DEBUG", "SET-ACTIVE-EXPIRE", "1"), OK)
        for _ in range(100):  # back on: the background removes it
            if c.cmd("DBSIZE") == integer(0):
                break
            time.sleep(0.05)
        self.assertEqual(c.cmd("DBSIZE"), integer(0))
        self.assertEqual(c.cmd("DEBUG", "OBJECT", "dbg:none"), error("ERR no such key"))
        c.cmd("SET", "dbg:k", "hello")
        self.assertRegex(c.cmd("DEBUG", "OBJECT", "dbg:k"),
                         rb"^\+Value at:0x[0-9a-f]+ refcount:1 encoding:embstr serializedlength:"
                         rb"\d+ lru:\d+ lru_seconds_idle:\d+\r\n$")
        self.assertEqual(c.cmd("DEBUG", "NOPE"),
                         error("ERR unknown subcommand or wrong number of arguments for 'NOPE'. "
                               "Try DEBUG HELP."))
        self.assertEqual(c.cmd("DEBUG"), harness.wrong_args("debug"))

    def test_sleep_feeds_latency_monitor_and_slowlog(self):
        c = self.c
        self.assertEqual(c.cmd("CONFIG", "SET", "latency-monitor-threshold", "10"), OK)
        try:
            c.cmd("LATENCY", "RESET")
            c.cmd("SLOWLOG", "RESET")
            self.assertEqual(c.cmd("DEBUG", "SLEEP", "0.05"), OK)
            latest = harness.decode(c.cmd("LATENCY", "LATEST"))
            events = {e[0]: e for e in latest}
            self.assertIn(b"command", events)
            ev = events[b"command"]
            self.assertLess(abs(ev[1] - time.time()), 60)
            # The call is timed with the CPU's time-stamp counter, calibrated against the clock
            # at start-up: a 50 ms sleep can read a millisecond short (CI once saw 49).
            self.assertGreaterEqual(ev[2], 45)
            self.assertGreaterEqual(ev[3], ev[2])
            hist = harness.decode(c.cmd("LATENCY", "HISTORY", "command"))
            self.assertGreaterEqual(len(hist), 1)
            self.assertGreaterEqual(hist[-1][1], 45)
            slow = [e for e in harness.decode(c.cmd("SLOWLOG", "GET", "-1"))
                    if e[3][:2] == [b"DEBUG", b"SLEEP"]]
            self.assertEqual(len(slow), 1)
            self.assertGreaterEqual(slow[0][2], 45000)
            self.assertEqual(c.cmd("LATENCY", "RESET", "command"), integer(1))
            self.assertEqual(c.cmd("LATENCY", "LATEST"), b"*0\r\n")
        finally:
            c.cmd("CONFIG", "SET", "latency-monitor-threshold", "0")

    def test_refused_unless_enabled(self):
        for mode in ("no", "local"):
            srv = harness.ServerProcess(["--enable-debug-command", mode]).start()
            try:
                with harness.RespConn(srv.port) as c:
                    got = c.cmd("DEBUG", "PROTOCOL", "true")
                    if mode == "no":
                        self.assertEqual(got, error(
                            'ERR DEBUG command not allowed. If the enable-debug-command option is '
                            'set to "local", you can run it from a local connection, otherwise '
                            'you need to set this option in the configuration file, and then '
                            'restart the server.'))
                    else:
                        self.assertEqual(got, b":1\r\n")  # 127.0.0.1 is local
                    self.assertEqual(c.cmd("CONFIG", "GET", "enable-debug-command"),
                                     harness.array(bulk("enable-debug-command"), bulk(mode)))
            finally:
                self.assertIsNone(srv.stop())


class ObjectMemoryTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        c = self.c
        c.cmd("FLUSHALL")
        for args in [("SET", "o:int", "123"), ("SET", "o:big", "12345678"),
                     ("SET", "o:neg", "-5"), ("SET", "o:emb", "abc"),
                     ("SET", "o:raw", "x" * 50), ("SET", "o:lead0", "0123"),
                     ("HSET", "o:h", "a", "b"), ("ZADD", "o:z", "1", "a"),
                     ("SADD", "o:si", "1", "2"), ("SADD", "o:ss", "a"), ("RPUSH", "o:l", "a")]:
            c.cmd(*args)

    def test_encoding_refcount(self):
        table = {"o:int": b"int", "o:big": b"int", "o:neg": b"int", "o:emb": b"embstr",
                 "o:raw": b"raw", "o:lead0": b"embstr", "o:h": b"listpack", "o:z": b"listpack",
                 "o:si": b"intset", "o:ss": b"hashtable", "o:l": b"quicklist"}
        for key, enc in table.items():
            self.assertReply(bulk(enc), "OBJECT", "ENCODING", key)
        self.c.cmd("HSET", "o:h", "long", "v" * 100)
        self.c.cmd("ZADD", "o:z", "2", "m" * 100)
        self.assertReply(bulk("hashtable"), "OBJECT", "ENCODING", "o:h")
        self.assertReply(bulk("skiplist"), "OBJECT", "ENCODING", "o:z")
        self.assertReply(harness.NIL, "OBJECT", "ENCODING", "o:none")
        self.assertReply(integer(2147483647), "OBJECT", "REFCOUNT", "o:int")
        self.assertReply(integer(1), "OBJECT", "REFCOUNT", "o:big")
        self.assertReply(integer(1), "OBJECT", "REFCOUNT", "o:emb")
        # Written in setUp, just now. The access clock counts whole seconds, so a second's
        # boundary between the write and this read makes it 1 (a slow ASan run caught that).
        self.assertIn(self.c.cmd("OBJECT", "IDLETIME", "o:emb"), (integer(0), integer(1)))
        self.assertReply(error(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please "
            "note that when switching between policies at runtime LRU and LFU data will take "
            "some time to adjust."), "OBJECT", "FREQ", "o:emb")
        self.assertReply(error("ERR unknown subcommand 'nope'. Try OBJECT HELP."), "OBJECT",
                         "nope")
        self.assertReply(harness.wrong_args("object|encoding"), "OBJECT", "ENCODING")
        self.assertTrue(self.c.cmd("OBJECT", "HELP").startswith(
            b"*15\r\n+OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"))

    def test_memory(self):
        c = self.c
        small = harness.decode(c.cmd("MEMORY", "USAGE", "o:emb"))
        big = harness.decode(c.cmd("MEMORY", "USAGE", "o:raw"))
        self.assertIsInstance(small, int)
        self.assertGreater(big, small)
        c.cmd("RPUSH", "o:big-list", *["e%d" % i for i in range(1000)])
        self.assertGreater(harness.decode(c.cmd("MEMORY", "USAGE", "o:big-list")), 5000)
        self.assertReply(harness.NIL, "MEMORY", "USAGE", "o:none")
        self.assertIsInstance(harness.decode(c.cmd("MEMORY", "USAGE", "o:emb", "SAMPLES", "0")),
                              int)
        self.assertReply(harness.SYNTAX, "MEMORY", "USAGE", "o:emb", "x", "y")
        self.assertReply(harness.wrong_args("memory|usage"), "MEMORY", "USAGE")
        self.assertReply(error("ERR unknown subcommand 'nope'. Try MEMORY HELP."), "MEMORY",
                         "nope")
        stats = harness.decode(c.cmd("MEMORY", "STATS"))
        stats = dict(zip(stats[0::2], stats[1::2]))
        self.assertEqual(stats[b"keys.count"], 12)
        self.assertGreater(stats[b"total.allocated"], 0)
        self.assertTrue(harness.decode(c.cmd("MEMORY", "DOCTOR")).startswith(b"Hi Sam, "))


if __name__ == "__main__":
    harness.main()


class DebugReloadTest(harness.ServerTestCase):
    def state(self, c, names):
        """What each key holds, read back through commands (order-free where Redis's is)."""
        out = {}
        for k in names:
            t = harness.decode(c.cmd("TYPE", k))
            if t == b"string":
                v = c.cmd("GET", k)
            elif t == b"hash":
                v = sorted(harness.decode(c.cmd("HGETALL", k)))
            elif t == b"list":
                v = c.cmd("LRANGE", k, 0, -1)
            elif t == b"set":
                v = sorted(harness.decode(c.cmd("SMEMBERS", k)))
            elif t == b"zset":
                v = c.cmd("ZRANGE", k, 0, -1, "WITHSCORES")
            else:
                self.fail("%s is a %r" % (k, t))
            out[k] = (t, v, harness.decode(c.cmd("PTTL", k)) > 0)
        return out

    def test_every_type_survives_a_reload(self):
        # Redis's test suites check persistence with DEBUG RELOAD: here every key goes through
        # the journal's encoding and back, on every shard.
        c = self.c
        names = []
        for i in range(40):  # keys on every shard, each type in small and large encodings
            n = 3 if i % 2 else 300
            c.cmd("SET", "rl:s%d" % i, "v%d" % i, "PX", 600000)
            c.cmd("HSET", "rl:h%d" % i, *sum((["f%d" % j, "x%d" % j] for j in range(n)), []))
            c.cmd("RPUSH", "rl:l%d" % i, *["e%d" % j for j in range(n)])
            c.cmd("SADD", "rl:i%d" % i, *[str(j * 7) for j in range(n)])
            c.cmd("SADD", "rl:t%d" % i, *["m%d" % j for j in range(n)])
            c.cmd("ZADD", "rl:z%d" % i, *sum(([str(j / 4), "z%d" % j] for j in range(n)), []))
            names += ["rl:%s%d" % (t, i) for t in "shlitz"]
        c.cmd("SET", "rl:lock", "token", "NX", "PX", 600000)
        c.cmd("SET", "rl:big", "x" * 100000)
        names += ["rl:lock", "rl:big"]
        before = self.state(c, names)
        size = c.cmd("DBSIZE")
        self.assertEqual(c.cmd("DEBUG", "RELOAD"), OK)
        self.assertEqual(c.cmd("DBSIZE"), size)
        self.assertEqual(self.state(c, names), before)
        self.assertTrue(before["rl:s0"][2] and before["rl:lock"][2])
        # The lock is still held: a second SET NX fails, the owner's compare-and-delete works.
        self.assertEqual(c.cmd("SET", "rl:lock", "other", "NX", "PX", 1000), harness.NIL)
        release = ("if redis.call('get', KEYS[1]) == ARGV[1] then "
                   "return redis.call('del', KEYS[1]) else return 0 end")
        self.assertEqual(c.cmd("EVAL", release, 1, "rl:lock", "token"), integer(1))
