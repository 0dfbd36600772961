"""Pub/sub: SUBSCRIBE/UNSUBSCRIBE/PSUBSCRIBE/PUNSUBSCRIBE/SSUBSCRIBE/SUNSUBSCRIBE, PUBLISH and
SPUBLISH, PUBSUB's subcommands; exact RESP2 and RESP3 bytes of confirmations and messages; the
RESP2 subscribed-mode rules; receiver counts and delivery with subscribers spread over both
reactors (connections are handed out round-robin, so four or more land on both); the order of
1000 messages from one publisher; redis-py's pubsub(); a slow subscriber that never reads is
disconnected while another keeps receiving.

Every expected byte string was checked against Redis 7.0 (DEADBOLT_AGAINST_REDIS=1)."""

import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import NIL, NULL3, OK, PONG, bulk, encode_command, error, integer  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def sub_reply(kind, name, count, resp=2):
    """[subscribe, name, count] and friends."""
    head = (b"*3\r\n" if resp == 2 else b">3\r\n") + bulk(kind)
    if name is None:
        head += NIL if resp == 2 else NULL3
    else:
        head += bulk(name)
    return head + integer(count)


def message(channel, payload, resp=2):
    return (b"*3\r\n" if resp == 2 else b">3\r\n") + bulk("message") + bulk(channel) + bulk(payload)


def smessage(channel, payload, resp=2):
    return (b"*3\r\n" if resp == 2 else b">3\r\n") + bulk("smessage") + bulk(channel) + bulk(payload)


def pmessage(pattern, channel, payload, resp=2):
    return ((b"*4\r\n" if resp == 2 else b">4\r\n") + bulk("pmessage") + bulk(pattern)
            + bulk(channel) + bulk(payload))


def not_allowed(name):
    return error("ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
                 "RESET are allowed in this context" % name)


PONG_SUBSCRIBED = b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"


class PubSubCase(harness.ServerTestCase):
    def send_read(self, c, n, *args):
        """Sends one command, returns its n raw replies."""
        c.send(encode_command(*args))
        return c.read_replies(n)

    def subscribe(self, c, kind, *names):
        """(P|S)SUBSCRIBE on c; returns the confirmations (already checked for shape)."""
        got = self.send_read(c, len(names), kind, *names)
        for raw, name in zip(got, names):
            self.assertIn(bulk(kind.lower()) + bulk(name), raw)
        return got

    def wait_for(self, fn, expected, what, timeout=5.0):
        """Polls fn() until it returns `expected` (server-wide counts change as other tests'
        connections close, which is asynchronous in Redis too)."""
        deadline = time.monotonic() + timeout
        while True:
            got = fn()
            if got == expected or time.monotonic() > deadline:
                self.assertEqual(got, expected, what)
                return
            time.sleep(0.02)

    def hello3(self, c):
        c.send(encode_command("HELLO", "3"))
        self.assertTrue(c.read_reply().startswith(b"%7\r\n"))


class SubscribeRepliesTest(PubSubCase):
    def test_resp2_confirmations(self):
        c = self.conn()
        self.assertReply(sub_reply("unsubscribe", None, 0), "UNSUBSCRIBE", c=c)
        self.assertReply(sub_reply("punsubscribe", None, 0), "PUNSUBSCRIBE", c=c)
        self.assertReply(sub_reply("sunsubscribe", None, 0), "SUNSUBSCRIBE", c=c)
        self.assertEqual(self.send_read(c, 3, "SUBSCRIBE", "a", "b", "a"),
                         [sub_reply("subscribe", "a", 1), sub_reply("subscribe", "b", 2),
                          sub_reply("subscribe", "a", 2)])
        # Channels and patterns share one count; shard channels have their own.
        self.assertReply(sub_reply("psubscribe", "p*", 3), "PSUBSCRIBE", "p*", c=c)
        self.assertReply(sub_reply("ssubscribe", "s1", 1), "SSUBSCRIBE", "s1", c=c)
        self.assertEqual(self.send_read(c, 2, "UNSUBSCRIBE", "a", "zz"),
                         [sub_reply("unsubscribe", "a", 2), sub_reply("unsubscribe", "zz", 2)])
        self.assertReply(sub_reply("punsubscribe", "p*", 1), "PUNSUBSCRIBE", c=c)
        self.assertReply(sub_reply("unsubscribe", "b", 0), "UNSUBSCRIBE", c=c)
        # Still subscribed to a shard channel: still in subscribed mode.
        self.assertReply(not_allowed("get"), "GET", "k", c=c)
        self.assertReply(sub_reply("sunsubscribe", "s1", 0), "SUNSUBSCRIBE", c=c)
        self.assertReply(NIL, "GET", "k", c=c)

    def test_unsubscribe_all_lists_every_channel(self):
        c = self.conn()
        self.subscribe(c, "SUBSCRIBE", "x", "y", "z")
        got = self.send_read(c, 3, "UNSUBSCRIBE")
        names = set()
        for raw, count in zip(got, (2, 1, 0)):
            self.assertTrue(raw.startswith(b"*3\r\n$11\r\nunsubscribe\r\n$1\r\n"), raw)
            self.assertTrue(raw.endswith(integer(count)), raw)
            names.add(raw[len(b"*3\r\n$11\r\nunsubscribe\r\n$1\r\n"):][:1])
        self.assertEqual(names, {b"x", b"y", b"z"})
        self.assertReply(sub_reply("unsubscribe", None, 0), "UNSUBSCRIBE", c=c)
        self.assertReply(NIL, "GET", "k", c=c)

    def test_unsubscribe_when_never_subscribed(self):
        c = self.conn()
        self.assertEqual(self.send_read(c, 2, "UNSUBSCRIBE", "a", "b"),
                         [sub_reply("unsubscribe", "a", 0), sub_reply("unsubscribe", "b", 0)])
        self.assertReply(NIL, "GET", "k", c=c)  # not in subscribed mode

    def test_empty_and_binary_names(self):
        c = self.conn()
        p = self.conn()
        self.assertReply(sub_reply("psubscribe", "", 1), "PSUBSCRIBE", "", c=c)
        self.assertReply(sub_reply("subscribe", "", 2), "SUBSCRIBE", "", c=c)
        self.assertReply(integer(2), "PUBLISH", "", "e", c=p)
        self.assertEqual(c.read_replies(2), [message("", "e"), pmessage("", "", "e")])
        binary = b"bin\x00\r\n\xff"
        self.assertReply(sub_reply("subscribe", binary, 3), "SUBSCRIBE", binary, c=c)
        self.assertReply(integer(1), "PUBLISH", binary, b"\r\n\x00", c=p)
        self.assertEqual(c.read_reply(), message(binary, b"\r\n\x00"))

    def test_arity_errors(self):
        for cmd in ("SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "PUBSUB"):
            self.assertReply(harness.wrong_args(cmd.lower()), cmd)
        self.assertReply(harness.wrong_args("publish"), "PUBLISH", "ch")
        self.assertReply(harness.wrong_args("spublish"), "SPUBLISH", "ch")
        self.assertReply(harness.wrong_args("publish"), "PUBLISH", "ch", "a", "b")


class SubscribedModeTest(PubSubCase):
    def test_resp2_only_some_commands(self):
        c = self.conn()
        self.subscribe(c, "SUBSCRIBE", "modechan")
        self.assertReplies([
            (("GET", "k"), not_allowed("get")),
            (("SET", "k", "v"), not_allowed("set")),
            (("ECHO", "x"), not_allowed("echo")),
            (("HELLO", "3"), not_allowed("hello")),
            (("PUBLISH", "modechan", "x"), not_allowed("publish")),
            (("SPUBLISH", "modechan", "x"), not_allowed("spublish")),
            (("CLIENT", "ID"), not_allowed("client|id")),
            (("client", "list"), not_allowed("client|list")),
            (("PUBSUB", "NUMSUB", "modechan"), not_allowed("pubsub|numsub")),
            # Errors found before the mode check keep their own text.
            (("CLIENT", "FOO"), error("ERR unknown subcommand 'FOO'. Try CLIENT HELP.")),
            (("nosuch",), error("ERR unknown command 'nosuch', with args beginning with: ")),
            (("get",), harness.wrong_args("get")),
            (("PING",), PONG_SUBSCRIBED),
            (("PING", "hi"), b"*2\r\n$4\r\npong\r\n$2\r\nhi\r\n"),
            (("SUBSCRIBE", "other"), sub_reply("subscribe", "other", 2)),
            (("PSUBSCRIBE", "o*"), sub_reply("psubscribe", "o*", 3)),
            (("SSUBSCRIBE", "so"), sub_reply("ssubscribe", "so", 1)),
            (("SUNSUBSCRIBE", "so"), sub_reply("sunsubscribe", "so", 0)),
            (("PUNSUBSCRIBE", "o*"), sub_reply("punsubscribe", "o*", 2)),
        ], c=c)
        self.assertReply(OK, "QUIT", c=c)
        self.assertEqual(c.read_until_closed(), b"")

    def test_pipelined_commands_in_subscribed_mode(self):
        c = self.conn()
        c.send(encode_command("SUBSCRIBE", "pipechan") + encode_command("GET", "k")
               + encode_command("PING") + encode_command("UNSUBSCRIBE")
               + encode_command("GET", "k") + encode_command("PING"))
        self.assertEqual(c.read_replies(6), [
            sub_reply("subscribe", "pipechan", 1), not_allowed("get"), PONG_SUBSCRIBED,
            sub_reply("unsubscribe", "pipechan", 0), NIL, PONG])

    def test_reset_drops_subscriptions(self):
        c = self.conn()
        other = self.conn()
        self.subscribe(c, "SUBSCRIBE", "resetchan")
        self.subscribe(c, "PSUBSCRIBE", "resetpat*")
        self.subscribe(c, "SSUBSCRIBE", "resetshard")
        self.assertReply(b"+RESET\r\n", "RESET", c=c)
        self.assertReply(PONG, "PING", c=c)
        self.assertReply(NIL, "GET", "k", c=c)
        self.assertReply(integer(0), "PUBLISH", "resetchan", "x", c=other)
        self.assertReply(integer(0), "PUBLISH", "resetpattern", "x", c=other)
        self.assertReply(integer(0), "SPUBLISH", "resetshard", "x", c=other)
        self.assertReply(b"*2\r\n" + bulk("resetchan") + integer(0),
                         "PUBSUB", "NUMSUB", "resetchan", c=other)
        self.assertReply(sub_reply("unsubscribe", None, 0), "UNSUBSCRIBE", c=c)

    def test_resp3_allows_every_command(self):
        c = self.conn()
        p = self.conn()
        self.hello3(c)
        self.assertReply(sub_reply("unsubscribe", None, 0, resp=3), "UNSUBSCRIBE", c=c)
        self.assertReply(sub_reply("sunsubscribe", None, 0, resp=3), "SUNSUBSCRIBE", c=c)
        self.assertEqual(self.send_read(c, 2, "SUBSCRIBE", "r3a", "r3b"),
                         [sub_reply("subscribe", "r3a", 1, resp=3),
                          sub_reply("subscribe", "r3b", 2, resp=3)])
        self.assertReply(sub_reply("psubscribe", "r3a*", 3, resp=3), "PSUBSCRIBE", "r3a*", c=c)
        self.assertReply(sub_reply("ssubscribe", "r3a", 1, resp=3), "SSUBSCRIBE", "r3a", c=c)
        self.assertReply(NULL3, "GET", "r3:nokey", c=c)
        self.assertReply(PONG, "PING", c=c)
        self.assertReply(integer(2), "PUBLISH", "r3a", "hello", c=p)
        got = c.read_replies(2)
        self.assertEqual(got, [message("r3a", "hello", resp=3),
                               pmessage("r3a*", "r3a", "hello", resp=3)])
        self.assertReply(integer(1), "SPUBLISH", "r3a", "sh", c=p)
        self.assertEqual(c.read_reply(), smessage("r3a", "sh", resp=3))
        # Publishing to itself: the messages come before the reply, as in Redis 7.0.
        c.send(encode_command("PUBLISH", "r3a", "self"))
        self.assertEqual(c.read_replies(3), [message("r3a", "self", resp=3),
                                             pmessage("r3a*", "r3a", "self", resp=3),
                                             integer(2)])
        self.assertEqual(self.send_read(c, 2, "UNSUBSCRIBE", "r3a", "zz"),
                         [sub_reply("unsubscribe", "r3a", 2, resp=3),
                          sub_reply("unsubscribe", "zz", 2, resp=3)])
        # Back to RESP2 while subscribed: subscribed-mode rules apply again.
        c.send(encode_command("HELLO", "2"))
        self.assertTrue(c.read_reply().startswith(b"*14\r\n"))
        self.assertReply(not_allowed("get"), "GET", "k", c=c)
        self.assertReply(PONG_SUBSCRIBED, "PING", c=c)


class PublishTest(PubSubCase):
    def test_counts_across_reactors(self):
        subs = [self.conn() for _ in range(6)]
        pub = self.conn()
        for c in subs[:4]:
            self.assertReply(sub_reply("subscribe", "acr.news", 1), "SUBSCRIBE", "acr.news", c=c)
        self.assertReply(sub_reply("psubscribe", "acr.*", 1), "PSUBSCRIBE", "acr.*", c=subs[4])
        self.assertReply(sub_reply("psubscribe", "acr.n*", 2), "PSUBSCRIBE", "acr.n*", c=subs[4])
        self.assertReply(sub_reply("ssubscribe", "acr.news", 1), "SSUBSCRIBE", "acr.news",
                         c=subs[5])
        # 4 channel subscribers + 2 matching patterns of one connection.
        self.assertReply(integer(6), "PUBLISH", "acr.news", "m1", c=pub)
        for c in subs[:4]:
            self.assertEqual(c.read_reply(), message("acr.news", "m1"))
        self.assertEqual(sorted(subs[4].read_replies(2)),
                         sorted([pmessage("acr.*", "acr.news", "m1"),
                                 pmessage("acr.n*", "acr.news", "m1")]))
        self.assertReply(integer(1), "SPUBLISH", "acr.news", "s1", c=pub)
        self.assertEqual(subs[5].read_reply(), smessage("acr.news", "s1"))
        self.assertReply(integer(1), "PUBLISH", "acr.other", "m2", c=pub)
        self.assertEqual(subs[4].read_reply(), pmessage("acr.*", "acr.other", "m2"))
        self.assertReply(integer(0), "PUBLISH", "nobody.listens", "m3", c=pub)
        self.assertReply(integer(0), "SPUBLISH", "nobody.listens", "m3", c=pub)
        for c in subs:
            c.assert_still_open()  # nothing else arrived
        # Introspection sums over reactors.
        self.assertReply(b"*4\r\n" + bulk("acr.news") + integer(4) + bulk("acr.none") + integer(0),
                         "PUBSUB", "NUMSUB", "acr.news", "acr.none", c=pub)
        self.assertReply(b"*2\r\n" + bulk("acr.news") + integer(1),
                         "PUBSUB", "SHARDNUMSUB", "acr.news", c=pub)
        self.assertReply(b"*1\r\n" + bulk("acr.news"), "PUBSUB", "CHANNELS", "acr.*", c=pub)
        self.assertReply(b"*1\r\n" + bulk("acr.news"), "PUBSUB", "SHARDCHANNELS", "acr.*",
                         c=pub)
        self.wait_for(lambda: pub.cmd("PUBSUB", "NUMPAT"), integer(2), "PUBSUB NUMPAT")
        # Unsubscribing on some connections lowers the count at once.
        for c in subs[:2]:
            self.assertReply(sub_reply("unsubscribe", "acr.news", 0), "UNSUBSCRIBE", c=c)
        self.assertReply(integer(4), "PUBLISH", "acr.news", "m4", c=pub)

    def test_same_pattern_on_several_connections(self):
        subs = [self.conn() for _ in range(4)]
        pub = self.conn()
        for c in subs:
            self.subscribe(c, "PSUBSCRIBE", "samepat.*")
        self.assertReply(integer(4), "PUBLISH", "samepat.x", "v", c=pub)
        for c in subs:
            self.assertEqual(c.read_reply(), pmessage("samepat.*", "samepat.x", "v"))
        # NUMPAT counts distinct patterns, not subscriptions.
        self.wait_for(lambda: pub.cmd("PUBSUB", "NUMPAT"), integer(1), "PUBSUB NUMPAT")
        self.assertEqual(pub.cmd("PUBSUB", "NUMSUB", "samepat.x"),
                         b"*2\r\n" + bulk("samepat.x") + integer(0))

    def test_order_of_1000_messages(self):
        subs = [self.conn() for _ in range(4)]
        psub = self.conn()
        pub = self.conn()
        for c in subs:
            self.subscribe(c, "SUBSCRIBE", "order")
        self.subscribe(psub, "PSUBSCRIBE", "ord*")
        n = 1000
        pub.send(b"".join(encode_command("PUBLISH", "order", str(i)) for i in range(n)))
        self.assertEqual(pub.read_replies(n), [integer(5)] * n)
        for c in subs:
            self.assertEqual(c.read_replies(n), [message("order", str(i)) for i in range(n)])
        self.assertEqual(psub.read_replies(n), [pmessage("ord*", "order", str(i)) for i in range(n)])

    def test_publishers_on_both_reactors_keep_their_order(self):
        subs = [self.conn() for _ in range(2)]
        pubs = [self.conn() for _ in range(2)]
        for c in subs:
            self.subscribe(c, "SUBSCRIBE", "two")
        n = 500
        for k, p in enumerate(pubs):
            p.send(b"".join(encode_command("PUBLISH", "two", "%d:%d" % (k, i)) for i in range(n)))
        for p in pubs:
            self.assertEqual(p.read_replies(n), [integer(2)] * n)
        for c in subs:
            got = [harness.decode(r)[2].decode() for r in c.read_replies(2 * n)]
            for k in range(2):
                mine = [m for m in got if m.startswith("%d:" % k)]
                self.assertEqual(mine, ["%d:%d" % (k, i) for i in range(n)])

    def test_resp3_messages_between_pipelined_replies(self):
        # Keys on both shards: some GETs are answered by the other reactor while messages
        # arrive; replies stay in order and every push arrives whole and in order.
        setter = self.conn()
        n = 200
        setter.send(b"".join(encode_command("SET", "mix:%d" % i, "v%d" % i) for i in range(n)))
        self.assertEqual(setter.read_replies(n), [OK] * n)
        c = self.conn()
        pub = self.conn()
        self.hello3(c)
        self.subscribe(c, "SUBSCRIBE", "mixchan")
        c.send(b"".join(encode_command("GET", "mix:%d" % i) for i in range(n)))
        pub.send(b"".join(encode_command("PUBLISH", "mixchan", str(i)) for i in range(n)))
        got = c.read_replies(2 * n)
        self.assertEqual([r for r in got if not r.startswith(b">")],
                         [bulk("v%d" % i) for i in range(n)])
        self.assertEqual([r for r in got if r.startswith(b">")],
                         [message("mixchan", str(i), resp=3) for i in range(n)])
        self.assertEqual(pub.read_replies(n), [integer(1)] * n)

    def test_publish_inside_multi(self):
        sub = self.conn()
        c = self.conn()
        self.subscribe(sub, "SUBSCRIBE", "multichan")
        self.assertReply(OK, "MULTI", c=c)
        self.assertReply(b"+QUEUED\r\n", "PUBLISH", "multichan", "m1", c=c)
        self.assertReply(b"+QUEUED\r\n", "PUBLISH", "nobody", "m2", c=c)
        self.assertReply(b"*2\r\n:1\r\n:0\r\n", "EXEC", c=c)
        self.assertEqual(sub.read_reply(), message("multichan", "m1"))

    def test_publish_to_self_inside_multi(self):
        if harness.server().argv and harness.server().argv[0] == harness.REDIS_SERVER:
            self.skipTest("Redis 7.0 writes the push inside EXEC's array (fixed in 7.2)")
        c = self.conn()
        self.hello3(c)
        self.subscribe(c, "SUBSCRIBE", "selfmulti")
        self.assertReply(OK, "MULTI", c=c)
        self.assertReply(b"+QUEUED\r\n", "PUBLISH", "selfmulti", "m1", c=c)
        self.assertReply(b"+QUEUED\r\n", "PING", c=c)
        c.send(encode_command("EXEC"))
        # As Redis 7.2: EXEC's array stays whole, the message follows it.
        self.assertEqual(c.read_replies(2), [b"*2\r\n:1\r\n+PONG\r\n",
                                             message("selfmulti", "m1", resp=3)])

    def test_disconnected_subscriber_is_forgotten(self):
        subs = [self.conn() for _ in range(3)]
        pub = self.conn()
        for c in subs:
            self.subscribe(c, "SUBSCRIBE", "gone")
            self.subscribe(c, "PSUBSCRIBE", "gone.pat.*")
        for c in subs:
            c.close()
        numsub = b"*2\r\n" + bulk("gone") + integer(0)
        self.wait_for(lambda: pub.cmd("PUBSUB", "NUMSUB", "gone"), numsub, "NUMSUB after close")
        self.wait_for(lambda: pub.cmd("PUBLISH", "gone.pat.x", "x"), integer(0),
                      "PUBLISH after close")
        self.assertReply(integer(0), "PUBLISH", "gone", "x", c=pub)


class PubSubCommandTest(PubSubCase):
    def test_introspection(self):
        subs = [self.conn() for _ in range(4)]
        pub = self.conn()
        self.subscribe(subs[0], "SUBSCRIBE", "intro.a", "intro.b")
        self.subscribe(subs[1], "SUBSCRIBE", "intro.a", "intro.c")
        self.subscribe(subs[2], "SSUBSCRIBE", "intro.s")
        self.subscribe(subs[3], "PSUBSCRIBE", "intro.*")
        got = harness.decode(pub.cmd("PUBSUB", "CHANNELS", "intro.*"))
        self.assertEqual(sorted(got), [b"intro.a", b"intro.b", b"intro.c"])
        got = harness.decode(pub.cmd("PUBSUB", "CHANNELS", "intro.[ab]"))
        self.assertEqual(sorted(got), [b"intro.a", b"intro.b"])
        self.assertIn(b"intro.a", harness.decode(pub.cmd("PUBSUB", "CHANNELS")))
        self.assertReply(b"*1\r\n" + bulk("intro.s"), "PUBSUB", "SHARDCHANNELS", "intro.*", c=pub)
        self.assertReply(b"*0\r\n", "PUBSUB", "SHARDCHANNELS", "nomatch*", c=pub)
        self.assertReply(b"*0\r\n", "PUBSUB", "NUMSUB", c=pub)
        self.assertReply(b"*0\r\n", "PUBSUB", "SHARDNUMSUB", c=pub)
        self.assertReply(b"*6\r\n" + bulk("intro.a") + integer(2) + bulk("intro.b") + integer(1)
                         + bulk("intro.zz") + integer(0),
                         "PUBSUB", "NUMSUB", "intro.a", "intro.b", "intro.zz", c=pub)
        self.assertReply(b"*4\r\n" + bulk("intro.s") + integer(1) + bulk("intro.a") + integer(0),
                         "pubsub", "shardnumsub", "intro.s", "intro.a", c=pub)
        self.hello3(pub)  # the same shapes in RESP3
        self.assertReply(b"*2\r\n" + bulk("intro.a") + integer(2),
                         "PUBSUB", "NUMSUB", "intro.a", c=pub)
        self.assertReply(b"*1\r\n" + bulk("intro.s"), "PUBSUB", "SHARDCHANNELS", "intro.*", c=pub)

    def test_errors(self):
        self.assertReplies([
            (("PUBSUB", "FOO"), error("ERR unknown subcommand 'FOO'. Try PUBSUB HELP.")),
            (("PUBSUB", "NUMPAT", "x"), harness.wrong_args("pubsub|numpat")),
            (("PUBSUB", "HELP", "x"), harness.wrong_args("pubsub|help")),
            (("PUBSUB", "CHANNELS", "x", "y"), error(
                "ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. "
                "Try PUBSUB HELP.")),
            (("pubsub", "shardchannels", "x", "y"), error(
                "ERR unknown subcommand or wrong number of arguments for 'shardchannels'. "
                "Try PUBSUB HELP.")),
        ])

    def test_help(self):
        got = self.c.cmd("PUBSUB", "HELP")
        lines = harness.decode(got)
        self.assertTrue(got.startswith(b"*"), got)
        self.assertTrue(lines[0].startswith(b"PUBSUB <subcommand>"), lines[0])
        for sub in (b"CHANNELS", b"NUMPAT", b"NUMSUB", b"SHARDCHANNELS", b"SHARDNUMSUB", b"HELP"):
            self.assertTrue(any(line.startswith(sub) for line in lines), sub)

    def test_command_info(self):
        got = harness.decode(self.c.cmd("COMMAND", "INFO", "subscribe", "publish", "spublish"))
        self.assertEqual([g[:2] for g in got], [[b"subscribe", -2], [b"publish", 3],
                                                [b"spublish", 3]])
        self.assertIn(b"pubsub", got[0][2])
        self.assertEqual(got[0][3:6], [0, 0, 0])
        self.assertEqual(got[2][3:6], [1, 1, 1])  # the shard channel is a key, as in Redis 7


class RedisPyTest(PubSubCase):
    def setUp(self):
        super().setUp()
        try:
            import redis  # Debian's python3-redis: run with /usr/bin/python3
        except ImportError:
            self.skipTest("redis-py is not installed")
        self.redis = redis
        self.r = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10)
        self.addCleanup(self.r.close)

    def get_messages(self, ps, n, timeout=5.0):
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < deadline:
            m = ps.get_message(ignore_subscribe_messages=True, timeout=0.1)
            if m:
                out.append(m)
        return out

    def test_pubsub_across_reactors_with_patterns(self):
        pss = []
        for i in range(4):  # four connections: both reactors
            ps = self.r.pubsub()
            self.addCleanup(ps.close)
            if i % 2:
                ps.psubscribe("rp.*")
            else:
                ps.subscribe("rp.x")
            self.assertEqual(ps.get_message(timeout=5)["type"],
                             "psubscribe" if i % 2 else "subscribe")
            pss.append(ps)
        self.assertEqual(self.r.publish("rp.x", "hello"), 4)
        self.assertEqual(self.r.publish("rp.y", "only-patterns"), 2)
        for i, ps in enumerate(pss):
            got = [(m["type"], m["pattern"], m["channel"], m["data"])
                   for m in self.get_messages(ps, 2 if i % 2 else 1)]
            if i % 2:
                self.assertEqual(got, [("pmessage", b"rp.*", b"rp.x", b"hello"),
                                       ("pmessage", b"rp.*", b"rp.y", b"only-patterns")])
            else:
                self.assertEqual(got, [("message", None, b"rp.x", b"hello")])
        self.assertEqual(self.r.pubsub_numsub("rp.x"), [(b"rp.x", 2)])
        self.assertIn(b"rp.x", self.r.pubsub_channels("rp.*"))
        # A callback handler in a worker thread, as lock libraries use it.
        seen = []
        done = threading.Event()

        def handler(m):
            if m["data"] != b"warmup":
                seen.append(m["data"])
            if len(seen) == 3:
                done.set()

        ps = self.r.pubsub()
        self.addCleanup(ps.close)
        ps.subscribe(**{"rpt.thread": handler})
        worker = ps.run_in_thread(sleep_time=0.01, daemon=True)
        self.addCleanup(lambda: (worker.stop(), worker.join(5)))
        deadline = time.monotonic() + 5
        while self.r.publish("rpt.thread", "warmup") == 0 and time.monotonic() < deadline:
            time.sleep(0.01)  # until the subscription is confirmed
        for i in range(3):
            self.assertEqual(self.r.publish("rpt.thread", "m%d" % i), 1)
        self.assertTrue(done.wait(5), seen)
        self.assertEqual(seen, [b"m0", b"m1", b"m2"])


class SlowSubscriberTest(PubSubCase):
    def test_slow_subscriber_is_disconnected(self):
        # The slow subscriber never reads and has a tiny receive buffer.
        slow = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.settimeout(harness.IO_TIMEOUT)
        slow.connect(("127.0.0.1", self.port))
        self.addCleanup(slow.close)
        slow.sendall(encode_command("SUBSCRIBE", "flood"))
        self.assertEqual(harness.read_one_reply_from_socket(slow),
                         sub_reply("subscribe", "flood", 1))

        # The good subscriber reads everything in a thread; it counts bytes and keeps the tail.
        good = self.conn()
        self.subscribe(good, "SUBSCRIBE", "flood")
        payload = b"x" * (1 << 20)
        one = message("flood", payload)
        state = {"bytes": 0, "tail": b"", "error": None}
        stop = threading.Event()

        def reader():
            try:
                good.sock.settimeout(0.2)
                while True:
                    try:
                        chunk = good.sock.recv(1 << 20)
                    except socket.timeout:
                        if stop.is_set():
                            return
                        continue
                    if not chunk:
                        return
                    state["bytes"] += len(chunk)
                    state["tail"] = (state["tail"] + chunk)[-4096:]
            except OSError as e:
                state["error"] = e

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        pub = self.conn()
        published = 0
        for _ in range(300):  # 300 MB at most; the hard limit is 32 MB
            got = pub.cmd("PUBLISH", "flood", payload)
            published += 1
            if got == integer(1):
                break
            self.assertEqual(got, integer(2))
        else:
            self.fail("the slow subscriber was never disconnected")
        self.assertGreater(published, 20)
        # The slow one is gone: the server closed its socket.
        slow.settimeout(5)
        closed = False
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if not slow.recv(1 << 20):
                    closed = True
                    break
            except ConnectionResetError:
                closed = True
                break
            except socket.timeout:
                break
        self.assertTrue(closed, "slow subscriber still connected")
        numsub = b"*2\r\n" + bulk("flood") + integer(1)
        self.wait_for(lambda: pub.cmd("PUBSUB", "NUMSUB", "flood"), numsub, "NUMSUB")
        # The good subscriber got every message, and still receives.
        self.assertEqual(pub.cmd("PUBLISH", "flood", "after"), integer(1))
        last = message("flood", "after")
        expected = published * len(one) + len(last)
        deadline = time.monotonic() + 20
        while state["bytes"] < expected and time.monotonic() < deadline:
            time.sleep(0.02)
        stop.set()
        t.join(5)
        self.assertIsNone(state["error"])
        self.assertEqual(state["bytes"], expected)
        self.assertTrue(state["tail"].endswith(last))


if __name__ == "__main__":
    harness.main()
