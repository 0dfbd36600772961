"""What operators use to look inside the server (issue 14): INFO commandstats with real times,
INFO latencystats, SLOWLOG with slowlog-log-slower-than / slowlog-max-len, LATENCY. Checked
against redis-server too (DEADBOLT_AGAINST_REDIS=1)."""

import re
import time

import harness
from harness import OK, bulk, error, integer


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


class CommandStatsTest(harness.ServerTestCase):
    def test_usec_is_measured(self):
        # Before issue 14 every command said usec=0: 300 SETs take more than a microsecond.
        c = self.c
        self.assertEqual(c.cmd("CONFIG", "RESETSTAT"), OK)
        c.pipeline([("SET", "cs:%d" % i, "v") for i in range(300)])
        line = harness.info(c, "commandstats")["cmdstat_set"]
        m = re.fullmatch(r"calls=(\d+),usec=(\d+),usec_per_call=(\d+\.\d\d),"
                         r"rejected_calls=0,failed_calls=0", line)
        self.assertIsNotNone(m, line)
        calls, usec, per = int(m.group(1)), int(m.group(2)), float(m.group(3))
        self.assertEqual(calls, 300)
        self.assertGreater(usec, 0)
        self.assertAlmostEqual(per, usec / calls, delta=0.01 + usec / calls * 0.01)

    def test_subcommands_are_counted_apart(self):
        # Redis 7 counts a container command's calls by subcommand: cmdstat_client|getname.
        c = self.c
        self.assertEqual(c.cmd("CONFIG", "RESETSTAT"), OK)
        c.cmd("CLIENT", "SETNAME", "sub")
        c.cmd("CLIENT", "GETNAME")
        c.cmd("CLIENT", "GETNAME")
        c.cmd("CONFIG", "GET", "maxmemory")
        stats = harness.info(c, "commandstats")
        self.assertTrue(stats["cmdstat_client|getname"].startswith("calls=2,"), stats)
        self.assertTrue(stats["cmdstat_client|setname"].startswith("calls=1,"), stats)
        self.assertTrue(stats["cmdstat_config|get"].startswith("calls=1,"), stats)
        self.assertNotIn("cmdstat_client", stats)
        self.assertIn("latency_percentiles_usec_client|getname", harness.info(c, "latencystats"))
        hist = harness.decode(c.cmd("LATENCY", "HISTOGRAM", "client|getname"))
        self.assertEqual(hist[0], b"client|getname")
        self.assertEqual(hist[1][:2], [b"calls", 2])

    def test_latencystats(self):
        c = self.c
        self.assertEqual(c.cmd("CONFIG", "RESETSTAT"), OK)
        c.pipeline([("GET", "ls:%d" % i) for i in range(50)])
        stats = harness.info(c, "latencystats")
        self.assertRegex(stats["latency_percentiles_usec_get"],
                         r"^p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$")
        p = [float(x.split("=")[1]) for x in stats["latency_percentiles_usec_get"].split(",")]
        self.assertTrue(0 < p[0] <= p[1] <= p[2], p)
        self.assertNotIn("latency_percentiles_usec_get", harness.info(c, "default"))
        # Which percentiles is a setting.
        self.assertEqual(c.cmd("CONFIG", "GET", "latency-tracking-info-percentiles"),
                         harness.array(bulk("latency-tracking-info-percentiles"),
                                       bulk("50 99 99.9")))
        self.assertEqual(c.cmd("CONFIG", "SET", "latency-tracking-info-percentiles", "90 25"),
                         OK)
        try:
            line = harness.info(c, "latencystats")["latency_percentiles_usec_get"]
            self.assertRegex(line, r"^p90=\d+\.\d{3},p25=\d+\.\d{3}$")
            self.assertTrue(c.cmd("CONFIG", "SET", "latency-tracking-info-percentiles",
                                  "101").startswith(b"-ERR CONFIG SET failed"))
            # latency-tracking no: no section lines.
            self.assertEqual(c.cmd("CONFIG", "SET", "latency-tracking", "no"), OK)
            self.assertNotIn("latency_percentiles_usec_get", harness.info(c, "latencystats"))
        finally:
            c.cmd("CONFIG", "SET", "latency-tracking-info-percentiles", "50 99 99.9")
            c.cmd("CONFIG", "SET", "latency-tracking", "yes")


class SlowlogTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.addCleanup(self._restore)

    def _restore(self):
        with harness.RespConn(self.port) as c:
            c.cmd("CONFIG", "SET", "slowlog-log-slower-than", "10000")
            c.cmd("CONFIG", "SET", "slowlog-max-len", "128")
            c.cmd("SLOWLOG", "RESET")

    def entries(self, c):
        return harness.decode(c.cmd("SLOWLOG", "GET", "-1"))

    def test_config_and_errors(self):
        c = self.c
        self.assertEqual(c.cmd("CONFIG", "GET", "slowlog-log-slower-than"),
                         harness.array(bulk("slowlog-log-slower-than"), bulk("10000")))
        self.assertEqual(c.cmd("CONFIG", "GET", "slowlog-max-len"),
                         harness.array(bulk("slowlog-max-len"), bulk("128")))
        self.assertEqual(c.cmd("SLOWLOG", "GET", "-2"),
                         error("ERR count should be greater than or equal to -1"))
        self.assertEqual(c.cmd("SLOWLOG", "GET", "x"),
                         error("ERR count should be greater than or equal to -1"))
        self.assertEqual(c.cmd("SLOWLOG", "nope"),
                         error("ERR unknown subcommand 'nope'. Try SLOWLOG HELP."))
        self.assertEqual(c.cmd("SLOWLOG", "LEN", "x"),
                         harness.wrong_args("slowlog|len"))
        self.assertEqual(c.cmd("SLOWLOG"), harness.wrong_args("slowlog"))
        help_ = harness.decode(c.cmd("SLOWLOG", "HELP"))
        self.assertEqual(help_[0], b"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. "
                                   b"Subcommands are:")

    def test_entries(self):
        c = self.c
        me = "%s:%d" % c.sock.getsockname()
        self.assertEqual(c.cmd("CLIENT", "SETNAME", "slowpoke"), OK)
        self.assertEqual(c.cmd("CONFIG", "SET", "slowlog-log-slower-than", "0"), OK)
        self.assertEqual(c.cmd("SLOWLOG", "RESET"), OK)
        before = int(time.time())
        # Keys on both shards, pipelined: some run on another reactor than the client's.
        c.pipeline([("SET", "slow:%d" % i, "v%d" % i) for i in range(20)])
        long_value = "x" * 200
        c.cmd("SET", "slow:long", long_value)
        c.cmd("SADD", "slow:set", *["m%d" % i for i in range(40)])
        got = self.entries(c)
        sets = {}
        for e in got:
            self.assertEqual(len(e), 6, e)
            self.assertIsInstance(e[0], int)
            self.assertTrue(before - 1 <= e[1] <= int(time.time()) + 1, e)
            self.assertGreaterEqual(e[2], 0)
            if e[3][0] == b"SET" and e[3][1].startswith(b"slow:"):
                sets[e[3][1]] = e
                self.assertEqual(e[4], me.encode())
                self.assertEqual(e[5], b"slowpoke")
        for i in range(20):
            self.assertEqual(sets[b"slow:%d" % i][3], [b"SET", b"slow:%d" % i, b"v%d" % i])
        self.assertEqual(sets[b"slow:long"][3],
                         [b"SET", b"slow:long", b"x" * 128 + b"... (72 more bytes)"])
        sadd = [e for e in got if e[3][0] == b"SADD"][0][3]
        self.assertEqual(len(sadd), 32)
        self.assertEqual(sadd[:3], [b"SADD", b"slow:set", b"m0"])
        self.assertEqual(sadd[31], b"... (11 more arguments)")
        # Newest first, ids decreasing.
        ids = [e[0] for e in got]
        self.assertEqual(ids, sorted(ids, reverse=True))
        self.assertEqual(len(set(ids)), len(ids))
        if not harness.KEY_ORDER:  # --pipeline-order key runs the two shards' parts at once
            self.assertGreater(sets[b"slow:19"][0], sets[b"slow:0"][0])
        self.assertEqual(len(harness.decode(c.cmd("SLOWLOG", "GET"))), 10)
        self.assertEqual(len(harness.decode(c.cmd("SLOWLOG", "GET", "3"))), 3)
        self.assertGreaterEqual(harness.decode(c.cmd("SLOWLOG", "LEN")), 22)

    def test_a_slow_call_among_cheap_ones_is_logged_alone(self):
        # At the default threshold deadbolt times a pipeline's cheap calls (SET, GET) in runs,
        # sharing a run's time; a call that is not cheap closes the run and is timed alone, so
        # a slow script between SETs is the one entry, with its own arguments.
        c = self.c
        self.assertEqual(c.cmd("SLOWLOG", "RESET"), OK)
        busy = "local i = 0 while i < 20000000 do i = i + 1 end return 1"
        replies = c.pipeline([("SET", "alone:%d" % i, "v") for i in range(10)] +
                             [("EVAL", busy, "0")] +
                             [("GET", "alone:%d" % i) for i in range(10)])
        self.assertEqual(replies[10], integer(1))
        got = self.entries(c)
        self.assertEqual([e[3] for e in got], [[b"EVAL", busy.encode(), b"0"]])
        self.assertGreaterEqual(got[0][2], 10000)

    def test_max_len_and_off(self):
        c = self.c
        self.assertEqual(c.cmd("CONFIG", "SET", "slowlog-log-slower-than", "0"), OK)
        self.assertEqual(c.cmd("CONFIG", "SET", "slowlog-max-len", "3"), OK)
        c.pipeline([("SET", "ml:%d" % i, "v") for i in range(10)])
        self.assertEqual(c.cmd("SLOWLOG", "LEN"), integer(3))
        got = self.entries(c)
        self.assertEqual(len(got), 3)
        # Off: nothing more is logged.
        self.assertEqual(c.cmd("CONFIG", "SET", "slowlog-log-slower-than", "-1"), OK)
        self.assertEqual(c.cmd("SLOWLOG", "RESET"), OK)
        c.pipeline([("SET", "ml:%d" % i, "v") for i in range(10)])
        self.assertEqual(c.cmd("SLOWLOG", "LEN"), integer(0))
        self.assertEqual(c.cmd("SLOWLOG", "GET"), b"*0\r\n")
        # A high threshold: fast commands stay out.
        self.assertEqual(c.cmd("CONFIG", "SET", "slowlog-log-slower-than", "5000000"), OK)
        c.pipeline([("GET", "ml:%d" % i) for i in range(10)])
        self.assertEqual(c.cmd("SLOWLOG", "LEN"), integer(0))


class LatencyTest(harness.ServerTestCase):
    def test_latency_commands(self):
        c = self.c
        self.assertEqual(c.cmd("LATENCY", "RESET"), integer(0))
        self.assertEqual(c.cmd("LATENCY", "LATEST"), b"*0\r\n")
        self.assertEqual(c.cmd("LATENCY", "HISTORY", "command"), b"*0\r\n")
        self.assertEqual(c.cmd("LATENCY", "HISTORY"), harness.wrong_args("latency|history"))
        self.assertEqual(c.cmd("LATENCY", "nope"),
                         error("ERR unknown subcommand 'nope'. Try LATENCY HELP."))
        self.assertEqual(c.cmd("CONFIG", "GET", "latency-monitor-threshold"),
                         harness.array(bulk("latency-monitor-threshold"), bulk("0")))

    def test_histogram(self):
        c = self.c
        self.assertEqual(c.cmd("CONFIG", "RESETSTAT"), OK)
        c.pipeline([("SET", "h:%d" % i, "v") for i in range(40)])
        h = harness.decode(c.cmd("LATENCY", "HISTOGRAM", "set", "nosuchcommand"))
        # RESP2: a flat array [name, [calls, n, histogram_usec, [bucket, count, ...]]].
        self.assertEqual(h[0], b"set")
        self.assertEqual(h[1][:3], [b"calls", 40, b"histogram_usec"])
        buckets = h[1][3]
        bounds, counts = buckets[0::2], buckets[1::2]
        self.assertEqual(bounds, sorted(set(bounds)))
        if not harness.AGAINST_REDIS:
            # deadbolt's buckets are exact powers of two. Redis reports each bucket's
            # highest equivalent value in its HDR histogram (1024 ns steps cut to us), so
            # past 32 us it prints 65, 131, 262...; a slow CI machine reaches those.
            for b in bounds:
                self.assertEqual(b & (b - 1), 0, bounds)
        self.assertEqual(counts, sorted(counts))
        self.assertEqual(counts[-1], 40)
        with self.conn() as c3:
            c3.cmd("HELLO", "3")
            raw = c3.cmd("LATENCY", "HISTOGRAM", "set")
            self.assertTrue(raw.startswith(b"%1\r\n$3\r\nset\r\n%2\r\n$5\r\ncalls\r\n:40\r\n"
                                           b"$14\r\nhistogram_usec\r\n%"), raw)


if __name__ == "__main__":
    harness.main()


class MonitorTest(harness.ServerTestCase):
    LINE = re.compile(rb"^\+(\d+)\.(\d{6}) \[(\d+) 127\.0\.0\.1:(\d+)\] (.*)\r\n$")

    def read_line(self, m):
        raw = m.read_reply()
        got = self.LINE.match(raw)
        self.assertIsNotNone(got, raw)
        self.assertLess(abs(int(got.group(1)) - time.time()), 60)
        return int(got.group(3)), int(got.group(4)), got.group(5)

    def test_lines_from_every_reactor(self):
        m = self.conn()
        self.assertEqual(m.cmd("MONITOR"), OK)
        # Several clients: they land on both reactors.
        clients = [self.conn() for _ in range(4)]
        for i, c in enumerate(clients):
            self.assertEqual(c.cmd("SET", "mon:%d" % i, 'a "b"\n\x01\\'), OK)
            got = self.read_line(m)
            self.assertEqual(got, (0, c.sock.getsockname()[1],
                                   b'"SET" "mon:%d" "a \\"b\\"\\n\\x01\\\\"' % i))
        c = clients[0]
        c.cmd("SELECT", "3")
        self.assertEqual(self.read_line(m)[::2], (3, b'"SELECT" "3"'))
        c.cmd("GET", "x")
        self.assertEqual(self.read_line(m)[::2], (3, b'"GET" "x"'))
        c.cmd("AUTH", "secret")
        self.assertEqual(self.read_line(m)[2], b'"AUTH" "(redacted)"')
        # Admin commands are not shown.
        c.cmd("CONFIG", "GET", "maxclients")
        c.cmd("SLOWLOG", "LEN")
        c.cmd("PING")
        self.assertEqual(self.read_line(m)[2], b'"PING"')
        # RESET ends it.
        self.assertEqual(m.cmd("RESET"), b"+RESET\r\n")
        c.cmd("PING")
        self.assertTrue(m.assert_still_open(0.2))


class ConfigParamsTest(harness.ServerTestCase):
    def test_every_redis_parameter(self):
        """CONFIG GET * names every parameter redis-server 7 has (those of no effect here too)."""
        import os
        import subprocess
        if not os.access(harness.REDIS_SERVER, os.X_OK):
            self.skipTest("no redis-server to compare with")
        port = harness.free_port()
        ref = subprocess.Popen([harness.REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1",
                                "--save", "", "--appendonly", "no"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            harness.wait_port(port)
            with harness.RespConn(port) as r:
                theirs = set(harness.decode(r.cmd("CONFIG", "GET", "*"))[0::2])
        finally:
            ref.terminate()
            ref.wait(10)
        ours = set(harness.decode(self.c.cmd("CONFIG", "GET", "*"))[0::2])
        self.assertGreater(len(theirs), 150)
        self.assertEqual(sorted(theirs - ours), [])

    def test_no_effect_parameters(self):
        c = self.c
        self.assertEqual(c.cmd("CONFIG", "SET", "save", ""), OK)
        self.assertEqual(c.cmd("CONFIG", "GET", "save"), harness.array(bulk("save"), bulk("")))
        self.assertEqual(c.cmd("CONFIG", "SET", "activerehashing", "no"), OK)
        self.assertEqual(c.cmd("CONFIG", "GET", "activerehashing"),
                         harness.array(bulk("activerehashing"), bulk("no")))
        self.assertEqual(c.cmd("CONFIG", "SET", "activerehashing", "yes"), OK)
        self.assertEqual(c.cmd("CONFIG", "SET", "activerehashing", "maybe"),
                         error("ERR CONFIG SET failed (possibly related to argument "
                               "'activerehashing') - argument must be 'yes' or 'no'"))
        self.assertEqual(c.cmd("CONFIG", "SET", "nosuchparam", "1"),
                         error("ERR Unknown option or number of arguments for CONFIG SET - "
                               "'nosuchparam'"))
        got = harness.decode(c.cmd("CONFIG", "GET", "maxmemory*"))
        self.assertEqual(dict(zip(got[0::2], got[1::2]))[b"maxmemory-policy"], b"noeviction")
