"""CLIENT TRACKING (client-side caching) over TCP: invalidation pushes in RESP3, the RESP2
redirect to a subscriber of __redis__:invalidate, OPTIN/OPTOUT with CLIENT CACHING, NOLOOP,
BCAST prefixes, flushes, expiry, reads in MULTI, scripts and across shards, and the errors.
Keys are taken on both shards of the default two-reactor server, so a change and the client it
invalidates are on different reactors in about half the cases. Passes against redis-server 7.

What a rueidis client (Go) and its lock, rueidislock, do at connect and while waiting is here
too: CLIENT TRACKING ON OPTOUT, then SET NX PXAT pipelined with a GET of the lock key, and the
waiter retries when the key's invalidation arrives."""

import time
import unittest

import harness
from harness import bulk, decode, encode_command, error, integer, RespPush
from slots import on_shard


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def push_invalidate(*keys):
    """The RESP3 push invalidating `keys`, as bytes."""
    return (b">2\r\n$10\r\ninvalidate\r\n" + ("*%d\r\n" % len(keys)).encode()
            + b"".join(bulk(k) for k in keys))


def message_invalidate(*keys):
    """The RESP2 message on __redis__:invalidate a redirect target subscribed to it gets."""
    return (b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
            + ("*%d\r\n" % len(keys)).encode() + b"".join(bulk(k) for k in keys))


class TrackingTest(harness.ServerTestCase):
    def tracker(self, *options, resp3=True):
        """A connection with tracking on (RESP3 unless told), and its id."""
        c = self.conn()
        if resp3:
            c.send(encode_command("HELLO", "3"))
            c.read_reply()
        cid = int(c.cmd("CLIENT", "ID")[1:-2])
        self.assertEqual(c.cmd("CLIENT", "TRACKING", "on", *options), b"+OK\r\n")
        return c, cid

    def assertQuiet(self, c):
        """Nothing was pushed to c: the next thing it reads is the reply to a PING."""
        reply = c.cmd("PING")
        self.assertIn(reply, (b"+PONG\r\n",), "expected nothing pushed before PONG")

    def test_a_read_key_is_invalidated_once_on_either_shard(self):
        for shard in (0, 1):
            with self.subTest(shard=shard):
                key = on_shard(shard, "ct:once")
                c, _ = self.tracker()
                other = self.conn()
                self.assertReply(b"_\r\n", "GET", key, c=c)
                self.assertReply(b"+OK\r\n", "SET", key, "v1", c=other)
                self.assertEqual(c.read_reply(), push_invalidate(key))
                # Told once: a second change is not told until the key is read again.
                self.assertReply(b"+OK\r\n", "SET", key, "v2", c=other)
                self.assertQuiet(c)
                self.assertReply(bulk("v2"), "GET", key, c=c)
                self.assertReply(integer(1), "DEL", key, c=other)
                self.assertEqual(c.read_reply(), push_invalidate(key))

    def test_own_change_is_told_after_its_reply_unless_noloop(self):
        key = on_shard(1, "ct:own")
        c, _ = self.tracker()
        self.assertReply(b"_\r\n", "GET", key, c=c)
        self.assertEqual(c.cmd("SET", key, "x"), b"+OK\r\n")
        self.assertEqual(c.read_reply(), push_invalidate(key))
        n, _ = self.tracker("NOLOOP")
        self.assertReply(bulk("x"), "GET", key, c=n)
        self.assertReply(b"+OK\r\n", "SET", key, "y", c=n)
        self.assertQuiet(n)
        # Someone else's change still reaches it.
        self.assertReply(bulk("y"), "GET", key, c=n)
        self.assertReply(b"+OK\r\n", "SET", key, "z", c=self.conn())
        self.assertEqual(n.read_reply(), push_invalidate(key))

    def test_noloop_knows_its_own_change_across_shards(self):
        a, b = on_shard(0, "ct:nl"), on_shard(1, "ct:nl")
        n, _ = self.tracker("NOLOOP")
        self.assertReply(b"*2\r\n_\r\n_\r\n", "MGET", a, b, c=n)
        self.assertReply(b"+OK\r\n", "MSET", a, "1", b, "1", c=n)
        self.assertQuiet(n)
        # As in Redis, a change forgets the key for every reader, its writer too: read again.
        self.assertReply(b"*2\r\n$1\r\n1\r\n$1\r\n1\r\n", "MGET", a, b, c=n)
        self.assertReply(b"+OK\r\n", "MSET", a, "2", b, "2", c=self.conn())
        self.assertEqual(sorted(n.read_replies(2)), sorted([push_invalidate(a), push_invalidate(b)]))

    def test_caching_yes_and_no_cover_the_next_command_only(self):
        # OPTIN: only the read after CACHING yes is tracked; OPTOUT: all but the one after
        # CACHING no. Either way `a` must go untold and `b` be told.
        for shard, mode, reads in (
                (0, "OPTIN", [("GET", "a"), ("CLIENT", "CACHING", "yes"), ("GET", "b")]),
                (1, "OPTOUT", [("CLIENT", "CACHING", "no"), ("GET", "a"), ("GET", "b")])):
            with self.subTest(mode=mode):
                keys = {"a": on_shard(shard, "ct:%s:a" % mode), "b": on_shard(shard, "ct:%s:b" % mode)}
                c, _ = self.tracker(mode)
                for cmd in reads:
                    expected = b"+OK\r\n" if cmd[0] == "CLIENT" else b"_\r\n"
                    self.assertReply(expected, *[keys.get(x, x) for x in cmd], c=c)
                other = self.conn()
                # Same shard, in this order: had `a` been tracked, its push would come first.
                self.assertReply(b"+OK\r\n", "SET", keys["a"], "1", c=other)
                self.assertReply(b"+OK\r\n", "SET", keys["b"], "1", c=other)
                self.assertEqual(c.read_reply(), push_invalidate(keys["b"]))
                self.assertQuiet(c)

    def test_caching_yes_covers_a_whole_transaction(self):
        keys = [on_shard(0, "ct:tx"), on_shard(1, "ct:tx")]
        c, _ = self.tracker("OPTIN")
        replies = c.pipeline([("CLIENT", "CACHING", "yes"), ("MULTI",), ("GET", keys[0]),
                              ("GET", keys[1]), ("EXEC",)])
        self.assertEqual(replies[-1], b"*2\r\n_\r\n_\r\n")
        other = self.conn()
        for k in keys:
            self.assertReply(b"+OK\r\n", "SET", k, "1", c=other)
            self.assertEqual(c.read_reply(), push_invalidate(k))

    def test_rueidis_cached_read_in_optin_mode(self):
        # rueidis's default: CLIENT TRACKING ON OPTIN at connect; DoCache sends CLIENT CACHING
        # YES, then the read with its PTTL in a transaction, in one write.
        key = on_shard(1, "ct:rueidis")
        self.assertReply(b"+OK\r\n", "SET", key, "v", "PX", "60000")
        c, _ = self.tracker("OPTIN")
        replies = c.pipeline([("CLIENT", "CACHING", "YES"), ("MULTI",), ("PTTL", key),
                              ("GET", key), ("EXEC",)])
        self.assertEqual(replies[:4], [b"+OK\r\n", b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n"])
        pttl, value = decode(replies[4])
        self.assertTrue(0 < pttl <= 60000, pttl)
        self.assertEqual(value, b"v")
        self.assertReply(integer(1), "PEXPIRE", key, "1000", c=self.conn())
        self.assertEqual(c.read_reply(), push_invalidate(key))

    def test_reads_across_shards_are_tracked_on_each(self):
        a, b = on_shard(0, "ct:mget"), on_shard(1, "ct:mget")
        c, _ = self.tracker()
        self.assertReply(b"*2\r\n_\r\n_\r\n", "MGET", a, b, c=c)
        other = self.conn()
        for k in (b, a):
            self.assertReply(b"+OK\r\n", "SET", k, "1", c=other)
            self.assertEqual(c.read_reply(), push_invalidate(k))

    def test_pipelined_reads_on_both_shards(self):
        keys = [on_shard(i % 2, "ct:pipe%d" % i) for i in range(8)]
        c, _ = self.tracker()
        self.assertEqual(c.pipeline([("GET", k) for k in keys]), [b"_\r\n"] * 8)
        other = self.conn()
        for k in keys:
            self.assertReply(b"+OK\r\n", "SET", k, "1", c=other)
            self.assertEqual(c.read_reply(), push_invalidate(k))

    def test_bcast_tells_changes_under_its_prefixes(self):
        c, _ = self.tracker("BCAST", "PREFIX", "ct:user:", "PREFIX", "ct:acct:")
        other = self.conn()
        for shard in (0, 1):
            key = on_shard(shard, "ct:user:x")
            self.assertReply(b"+OK\r\n", "SET", on_shard(shard, "ct:zzz"), "1", c=other)
            self.assertReply(b"+OK\r\n", "SET", key, "1", c=other)
            self.assertEqual(c.read_reply(), push_invalidate(key))
        self.assertQuiet(c)
        info = decode(c.cmd("CLIENT", "TRACKINGINFO"))
        self.assertEqual(info[b"flags"], harness.RespSet([b"on", b"bcast"]))
        self.assertEqual(sorted(info[b"prefixes"]), [b"ct:acct:", b"ct:user:"])
        self.assertEqual(c.cmd("CLIENT", "TRACKING", "off"), b"+OK\r\n")
        self.assertReply(b"+OK\r\n", "SET", on_shard(0, "ct:user:y"), "1", c=other)
        self.assertQuiet(c)

    def test_redirect_to_a_resp2_subscriber(self):
        sub = self.conn()
        sub_id = int(sub.cmd("CLIENT", "ID")[1:-2])
        sub.send(encode_command("SUBSCRIBE", "__redis__:invalidate"))
        sub.read_reply()
        c, _ = self.tracker("REDIRECT", str(sub_id), resp3=False)
        self.assertReply(integer(sub_id), "CLIENT", "GETREDIR", c=c)
        for shard in (0, 1):
            key = on_shard(shard, "ct:redir")
            self.assertReply(b"$-1\r\n", "GET", key, c=c)
            self.assertReply(b"+OK\r\n", "SET", key, "1", c=self.conn())
            self.assertEqual(sub.read_reply(), message_invalidate(key))
        line = bytes(decode(c.cmd("CLIENT", "INFO")))
        self.assertIn(b" flags=t ", line)
        self.assertIn(b" redir=%d " % sub_id, line)

    def test_broken_redirect_is_told_and_shown(self):
        target = self.conn()
        target_id = int(target.cmd("CLIENT", "ID")[1:-2])
        c, _ = self.tracker("REDIRECT", str(target_id))
        key = on_shard(0, "ct:broken")
        self.assertReply(b"_\r\n", "GET", key, c=c)
        target.close()
        time.sleep(0.2)  # the server has seen the close
        self.assertReply(b"+OK\r\n", "SET", key, "1", c=self.conn())
        self.assertEqual(c.read_reply(),
                         b">2\r\n$21\r\ntracking-redir-broken\r\n" + integer(target_id))
        info = decode(c.cmd("CLIENT", "TRACKINGINFO"))
        self.assertIn(b"broken_redirect", info[b"flags"])
        self.assertIn(b" flags=tR ", bytes(decode(c.cmd("CLIENT", "INFO"))))

    def test_flush_invalidates_everything_with_a_null(self):
        c, _ = self.tracker()
        self.assertReply(b"_\r\n", "GET", on_shard(1, "ct:flush"), c=c)
        self.assertReply(b"+OK\r\n", "FLUSHALL", c=self.conn())
        self.assertEqual(c.read_reply(), b">2\r\n$10\r\ninvalidate\r\n_\r\n")
        # The table was emptied: a later change of the key is not told.
        self.assertReply(b"+OK\r\n", "SET", on_shard(1, "ct:flush"), "1", c=self.conn())
        self.assertQuiet(c)

    def test_expiry_invalidates(self):
        key = on_shard(1, "ct:exp")
        self.assertReply(b"+OK\r\n", "SET", key, "v", "PX", "100")
        c, _ = self.tracker()
        self.assertReply(bulk("v"), "GET", key, c=c)
        # Active expiry removes it within a few of its cycles, and the removal is a change.
        c.settimeout(5)
        self.assertEqual(c.read_reply(), push_invalidate(key))

    def test_script_reads_are_the_callers(self):
        key = on_shard(0, "ct:script")
        c, _ = self.tracker()
        self.assertReply(b"_\r\n", "EVAL", "return redis.call('GET', KEYS[1])", "1", key, c=c)
        self.assertReply(b"+OK\r\n", "SET", key, "1", c=self.conn())
        self.assertEqual(c.read_reply(), push_invalidate(key))

    def test_rueidislock_waiter_retries_on_release(self):
        # rueidis connects with CLIENT TRACKING ON OPTOUT; rueidislock acquires with SET NX PXAT
        # pipelined with a GET of the key (which tracks it), and its release and extend scripts
        # compare the owner first.
        key = on_shard(1, "rueidislock:0:job")
        holder, _ = self.tracker("OPTOUT")
        waiter, _ = self.tracker("OPTOUT")
        deadline = str(int(time.time() * 1000) + 30000)
        self.assertEqual(holder.pipeline([("SET", key, "tok-a", "NX", "PXAT", deadline),
                                          ("GET", key)]), [b"+OK\r\n", bulk("tok-a")])
        self.assertEqual(waiter.pipeline([("SET", key, "tok-b", "NX", "PXAT", deadline),
                                          ("GET", key)]), [b"_\r\n", bulk("tok-a")])
        extend = ("if redis.call(\"GET\",KEYS[1]) == ARGV[1] then return "
                  "redis.call(\"PEXPIREAT\",KEYS[1],ARGV[2]) else return 0 end")
        self.assertReply(integer(1), "EVAL", extend, "1", key, "tok-a", deadline, c=holder)
        # The extend changed the key: both are told (the holder waits for its own, as
        # rueidislock does without NOLOOP).
        self.assertEqual(holder.read_reply(), push_invalidate(key))
        self.assertEqual(waiter.read_reply(), push_invalidate(key))
        self.assertReply(bulk("tok-a"), "GET", key, c=waiter)
        delkey = ("if redis.call(\"GET\",KEYS[1]) == ARGV[1] then return "
                  "redis.call(\"DEL\",KEYS[1]) else return 0 end")
        self.assertReply(integer(1), "EVAL", delkey, "1", key, "tok-a", c=holder)
        self.assertEqual(waiter.read_reply(), push_invalidate(key))
        self.assertEqual(waiter.pipeline([("SET", key, "tok-b", "NX", "PXAT", deadline),
                                          ("GET", key)]), [b"+OK\r\n", bulk("tok-b")])

    def test_churn_of_readers_writers_and_closes(self):
        # Readers on both reactors track 50 keys of both shards, in every mode, while a writer
        # changes them and readers come and go; every reader that stays is told of every key it
        # read, and nothing is left owed to those that left.
        keys = [on_shard(i % 2, "ct:churn%d" % i) for i in range(50)]
        writer = self.conn()
        modes = [(), ("NOLOOP",), ("OPTOUT",), ("BCAST", "PREFIX", "ct:churn")]
        for rnd in range(6):
            stay, leave = [], []
            for i, mode in enumerate(modes * 2):
                c, _ = self.tracker(*mode)
                if "BCAST" not in mode:
                    c.pipeline([("GET", k) for k in keys])
                (stay if i % 2 == 0 else leave).append((c, mode))
            for c, _ in leave:
                c.close()
            writer.pipeline([("SET", k, str(rnd)) for k in keys])
            for c, mode in stay:
                told = set()
                while len(told) < len(keys):
                    push = decode(c.read_reply())
                    self.assertIsInstance(push, RespPush)
                    self.assertEqual(push[0], b"invalidate")
                    told.update(push[1])
                self.assertEqual(told, {k.encode() for k in keys})
                c.close()
        # The closes reach the shards in their own time.
        deadline = time.monotonic() + 5
        while True:
            stats = harness.info(writer, "stats")
            if stats["tracking_total_prefixes"] == "0" or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self.assertEqual(stats["tracking_total_prefixes"], "0")
        self.assertEqual(stats["tracking_total_items"], "0")

    def test_trackinginfo_getredir_and_client_list(self):
        c = self.conn()
        self.assertEqual(decode(c.cmd("CLIENT", "TRACKINGINFO")),
                         [b"flags", [b"off"], b"redirect", -1, b"prefixes", []])
        self.assertReply(integer(-1), "CLIENT", "GETREDIR", c=c)
        self.assertIn(b" redir=-1 ", c.cmd("CLIENT", "INFO"))
        self.assertReply(b"+OK\r\n", "CLIENT", "TRACKING", "on", "optin", "noloop", c=c)
        self.assertReply(b"+OK\r\n", "CLIENT", "CACHING", "yes", c=c)
        self.assertEqual(decode(c.cmd("CLIENT", "TRACKINGINFO")),
                         [b"flags", [b"on", b"optin", b"caching-yes", b"noloop"],
                          b"redirect", 0, b"prefixes", []])
        self.assertReply(integer(0), "CLIENT", "GETREDIR", c=c)
        self.assertIn(b" redir=0 ", c.cmd("CLIENT", "INFO"))
        tracking = int(harness.info(c, "clients")["tracking_clients"])
        self.assertGreaterEqual(tracking, 1)
        self.assertReply(b"+OK\r\n", "CLIENT", "TRACKING", "off", c=c)
        self.assertReply(integer(-1), "CLIENT", "GETREDIR", c=c)

    def test_reset_turns_tracking_off(self):
        key = on_shard(0, "ct:reset")
        c, _ = self.tracker("BCAST", "PREFIX", "ct:reset")
        self.assertReply(b"+RESET\r\n", "RESET", c=c)
        self.assertReply(integer(-1), "CLIENT", "GETREDIR", c=c)
        c.send(encode_command("HELLO", "3"))
        c.read_reply()
        self.assertReply(b"+OK\r\n", "SET", key, "1", c=self.conn())
        self.assertQuiet(c)

    def test_errors(self):
        c = self.conn()
        self.assertReplies([
            (("CLIENT", "TRACKING", "maybe"), error("ERR syntax error")),
            (("CLIENT", "TRACKING", "on", "bogus"), error("ERR syntax error")),
            (("CLIENT", "TRACKING", "on", "REDIRECT", "x"),
             error("ERR value is not an integer or out of range")),
            (("CLIENT", "TRACKING", "on", "REDIRECT", "999999"),
             error("ERR The client ID you want redirect to does not exist")),
            (("CLIENT", "TRACKING", "on", "PREFIX", "a"),
             error("ERR PREFIX option requires BCAST mode to be enabled")),
            (("CLIENT", "TRACKING", "on", "BCAST", "OPTIN"),
             error("ERR OPTIN and OPTOUT are not compatible with BCAST")),
            (("CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"),
             error("ERR You can't specify both OPTIN mode and OPTOUT mode")),
            (("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "a"),
             error("ERR Prefix 'ab' overlaps with another provided prefix 'a'. "
                   "Prefixes for a single client must not overlap.")),
            (("CLIENT", "CACHING", "yes"),
             error("ERR CLIENT CACHING can be called only when the client is in tracking mode "
                   "with OPTIN or OPTOUT mode enabled")),
            (("CLIENT", "TRACKING"),
             error("ERR wrong number of arguments for 'client|tracking' command")),
            (("CLIENT", "TRACKING", "on", "OPTOUT"), b"+OK\r\n"),
            (("CLIENT", "CACHING", "yes"),
             error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")),
            (("CLIENT", "CACHING", "maybe"), error("ERR syntax error")),
            (("CLIENT", "TRACKING", "on", "OPTIN"),
             error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this "
                   "client, and then re-enabling it with a different mode.")),
            (("CLIENT", "TRACKING", "on", "BCAST"),
             error("ERR You can't switch BCAST mode on/off before disabling tracking for this "
                   "client, and then re-enabling it with a different mode.")),
            (("CLIENT", "TRACKING", "off"), b"+OK\r\n"),
            (("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p:"), b"+OK\r\n"),
            (("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p:x"),
             error("ERR Prefix 'p:x' overlaps with an existing prefix 'p:'. "
                   "Prefixes for a single client must not overlap.")),
            (("CLIENT", "CACHING", "no"),
             error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")),
        ], c=c)
        self.assertQuiet(c)  # the connection stays

    def test_clients_that_go_away_leave_nothing_behind(self):
        keys = [on_shard(i % 2, "ct:gone%d" % i) for i in range(20)]
        for _ in range(5):
            c, _ = self.tracker()
            c.pipeline([("GET", k) for k in keys])
            b, _ = self.tracker("BCAST", "PREFIX", "ct:gone")
            c.close()
            b.close()
        other = self.conn()
        for k in keys:
            self.assertReply(b"+OK\r\n", "SET", k, "1", c=other)
        self.assertReply(b"+PONG\r\n", "PING", c=other)
        deadline = time.monotonic() + 5
        while (harness.info(other, "stats")["tracking_total_prefixes"] != "0"
               and time.monotonic() < deadline):
            time.sleep(0.02)
        self.assertEqual(harness.info(other, "stats")["tracking_total_prefixes"], "0")


if __name__ == "__main__":
    unittest.main()
