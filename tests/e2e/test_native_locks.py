"""deadbolt's own lock commands (docs/LOCKS.md): LOCK.ACQUIRE / LOCK.RELEASE / LOCK.EXTEND /
LOCK.INFO. Fencing tokens, owners and leases, reentrancy, and waiting in the server: first come
first served across both reactors, handover on release, DELIFEQ and lease expiry, timeouts,
waiters whose connection closes, and a blocked connection's pipelined commands.

No Redis has these commands, so the module is skipped with DEADBOLT_AGAINST_REDIS=1. The server
runs with --threads 2; connections are handed to the reactors round-robin, so consecutive
connections live on different reactors and a queue's waiters come from both."""

import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (NIL, NULL3, OK, SYNTAX, WRONGTYPE, NOT_INTEGER, bulk, decode,  # noqa: E402
                     encode_command, integer, wrong_args)

AGAINST_REDIS = harness.AGAINST_REDIS

# Timing is checked from below only (a lease or a WAIT never ends early); how late something
# happens is not asserted, because the suite also runs under ASan on a busy 2-core machine. A
# reply or state that never comes fails after harness.IO_TIMEOUT, the suite's guard against hangs.


def setUpModule():
    if AGAINST_REDIS:
        raise unittest.SkipTest("LOCK.* are deadbolt's own commands; redis-server has none")
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def info(c, key):
    """LOCK.INFO as a dict (RESP2 flat array or RESP3 map)."""
    r = c.call("LOCK.INFO", key)
    if isinstance(r, list):
        r = dict(zip(r[0::2], r[1::2]))
    return r


class LockTestCase(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def token(self, raw):
        self.assertRegex(raw, rb"^:[1-9][0-9]*\r\n$")
        return int(raw[1:-2])

    def acquire(self, c, key, owner, lease=10000, *opts):
        return self.token(c.cmd("LOCK.ACQUIRE", key, owner, lease, *opts))

    def start_wait(self, c, key, owner, lease=10000, timeout=10000):
        """Sends an acquire with WAIT on `c` without reading its reply."""
        c.send(encode_command("LOCK.ACQUIRE", key, owner, lease, "WAIT", timeout))

    def wait_for_waiters(self, key, n, c=None):
        """Polls LOCK.INFO until `key` has n waiters (each queued acquire is seen by the shard
        before the next is sent, so arrival order is known)."""
        deadline = time.monotonic() + harness.IO_TIMEOUT
        while True:
            got = info(c or self.c, key)[b"waiters"]
            if got == n:
                return
            if time.monotonic() > deadline:
                self.fail("%s: %d waiters, expected %d" % (key, got, n))
            time.sleep(0.005)

    def assert_no_reply(self, c, wait=0.2):
        c.assert_still_open(wait)


class ReplyTest(LockTestCase):
    def test_acquire_release_extend_info(self):
        t = self.acquire(self.c, "lock", "alice", 5000)
        self.assertReply(NIL, "LOCK.ACQUIRE", "lock", "bob", 5000)
        self.assertReply(NIL, "LOCK.ACQUIRE", "lock", "alice", 5000)  # not reentrant
        self.assertReply(bulk("alice"), "GET", "lock")                # an ordinary string key
        self.assertTTL("lock", 4000, 5000, cmd="PTTL")
        i = info(self.c, "lock")
        self.assertEqual(i[b"owner"], b"alice")
        self.assertEqual(i[b"token"], t)
        self.assertEqual(i[b"holds"], 1)
        self.assertEqual(i[b"waiters"], 0)
        self.assertTrue(4000 <= i[b"ttl_ms"] <= 5000, i)
        self.assertReplies([
            (("LOCK.EXTEND", "lock", "bob", 60000), integer(0)),
            (("LOCK.EXTEND", "lock", "alice", 60000), integer(1)),
            (("LOCK.EXTEND", "nolock", "alice", 60000), integer(0)),
            (("LOCK.RELEASE", "lock", "bob"), integer(-1)),
            (("LOCK.RELEASE", "lock", "alice"), integer(0)),
            (("LOCK.RELEASE", "lock", "alice"), integer(-1)),
            (("EXISTS", "lock"), integer(0)),
        ])
        self.assertTTL("nolock", -2, -2, cmd="PTTL")
        raw = self.c.cmd("LOCK.INFO", "lock")
        self.assertEqual(raw, b"*10\r\n$5\r\nowner\r\n$-1\r\n$6\r\nttl_ms\r\n:-2\r\n"
                              b"$5\r\ntoken\r\n$-1\r\n$5\r\nholds\r\n:0\r\n$7\r\nwaiters\r\n:0\r\n")
        c3 = self.conn()
        c3.cmd("HELLO", "3")
        self.assertReply(b"%5\r\n$5\r\nowner\r\n_\r\n$6\r\nttl_ms\r\n:-2\r\n"
                         b"$5\r\ntoken\r\n_\r\n$5\r\nholds\r\n:0\r\n$7\r\nwaiters\r\n:0\r\n",
                         "LOCK.INFO", "lock", c=c3)
        self.acquire(self.c, "busy", "y")
        self.assertReply(NULL3, "LOCK.ACQUIRE", "busy", "x", 1000, c=c3)

    def test_reentrant(self):
        t = self.acquire(self.c, "r", "svc", 5000, "REENTRANT")
        self.assertEqual(self.acquire(self.c, "r", "svc", 9000, "reentrant"), t)
        self.assertTTL("r", 8000, 9000, cmd="PTTL")  # renewed
        self.assertReply(NIL, "LOCK.ACQUIRE", "r", "other", 5000, "REENTRANT")
        self.assertEqual(info(self.c, "r")[b"holds"], 2)
        self.assertReplies([
            (("LOCK.RELEASE", "r", "svc"), integer(1)),
            (("GET", "r"), bulk("svc")),
            (("LOCK.RELEASE", "r", "svc"), integer(0)),
            (("GET", "r"), NIL),
        ])
        # A lock taken with SET NX is one hold; re-entering it gives the holding a token.
        self.assertReply(OK, "SET", "r", "svc", "NX", "PX", 5000)
        i = info(self.c, "r")
        self.assertEqual((i[b"token"], i[b"holds"]), (None, 1))
        t2 = self.acquire(self.c, "r", "svc", 5000, "REENTRANT")
        self.assertGreater(t2, t)
        self.assertEqual(info(self.c, "r")[b"holds"], 2)

    def test_errors(self):
        self.make_hash(self.c, "h")
        self.assertReplies([
            (("LOCK.ACQUIRE", "k", "o"), wrong_args("lock.acquire")),
            (("LOCK.RELEASE", "k"), wrong_args("lock.release")),
            (("LOCK.RELEASE", "k", "o", "x"), wrong_args("lock.release")),
            (("LOCK.EXTEND", "k", "o"), wrong_args("lock.extend")),
            (("LOCK.INFO",), wrong_args("lock.info")),
            (("LOCK.ACQUIRE", "k", "o", "abc"), NOT_INTEGER),
            (("LOCK.ACQUIRE", "k", "o", 0), b"-ERR invalid expire time in 'lock.acquire' command\r\n"),
            (("LOCK.ACQUIRE", "k", "o", -5), b"-ERR invalid expire time in 'lock.acquire' command\r\n"),
            (("LOCK.ACQUIRE", "k", "o", 100, "WAIT"), SYNTAX),
            (("LOCK.ACQUIRE", "k", "o", 100, "NOPE"), SYNTAX),
            (("LOCK.ACQUIRE", "k", "o", 100, "WAIT", "x"),
             b"-ERR timeout is not an integer or out of range\r\n"),
            (("LOCK.ACQUIRE", "k", "o", 100, "WAIT", -1), b"-ERR timeout is negative\r\n"),
            (("LOCK.EXTEND", "k", "o", 0), b"-ERR invalid expire time in 'lock.extend' command\r\n"),
            (("LOCK.ACQUIRE", "h", "o", 100), WRONGTYPE),
            (("LOCK.ACQUIRE", "h", "o", 100, "WAIT", 100), WRONGTYPE),
            (("LOCK.RELEASE", "h", "o"), WRONGTYPE),
            (("LOCK.EXTEND", "h", "o", 100), WRONGTYPE),
            (("LOCK.INFO", "h"), WRONGTYPE),
            (("EXISTS", "k"), integer(0)),  # nothing was created by the failed calls
        ])

    def test_command_table(self):
        r = self.c.call("COMMAND", "INFO", "lock.acquire", "lock.release", "lock.extend",
                        "lock.info")
        self.assertEqual([e[0] for e in r],
                         [b"lock.acquire", b"lock.release", b"lock.extend", b"lock.info"])
        self.assertEqual([e[1] for e in r], [-4, 3, 4, 2])
        self.assertIn(b"blocking", r[0][2])
        self.assertIn(b"write", r[0][2])
        self.assertIn(b"fast", r[1][2])
        self.assertIn(b"readonly", r[3][2])
        for e in r:
            self.assertEqual(e[3:6], [1, 1, 1])  # one key, the first argument

    def test_wait_inside_multi_does_not_block(self):
        self.acquire(self.c, "m", "holder")
        c = self.conn()
        self.assertReplies([
            (("MULTI",), OK),
            (("LOCK.ACQUIRE", "m", "x", 1000, "WAIT", 0), b"+QUEUED\r\n"),
            (("LOCK.ACQUIRE", "m2", "x", 1000, "WAIT", 0), b"+QUEUED\r\n"),
        ], c=c)
        r = c.call("EXEC")
        self.assertEqual(r[0], None)
        self.assertIsInstance(r[1], int)


class FencingTest(LockTestCase):
    def test_tokens_grow_across_release_expiry_delete_and_flush(self):
        tokens = [self.acquire(self.c, "f", "a", 10000)]
        self.assertReply(integer(0), "LOCK.RELEASE", "f", "a")
        tokens.append(self.acquire(self.c, "f", "b", 50))
        time.sleep(0.15)  # expires
        tokens.append(self.acquire(self.c, "f", "c", 10000))
        self.assertReply(integer(1), "DEL", "f")
        tokens.append(self.acquire(self.c, "f", "d", 10000))
        self.assertReply(integer(1), "DELIFEQ", "f", "d")
        tokens.append(self.acquire(self.c, "f", "e", 10000))
        self.assertReply(OK, "FLUSHALL")
        tokens.append(self.acquire(self.c, "f", "e", 10000))
        self.assertEqual(tokens, sorted(set(tokens)), tokens)

    def test_tokens_fence_1000_cycles_by_several_clients(self):
        """4 clients (on both reactors) take turns, 250 acquire/release cycles each, waiting in
        the server. In each critical section the holder checks that its token is above the last
        one written and writes its own: a stale token, or two holders at once, would show."""
        clients, cycles = 4, 250
        errors, tokens = [], []
        lock = threading.Lock()

        def run(i):
            try:
                with harness.RespConn(self.port, timeout=30) as c:
                    for n in range(cycles):
                        raw = c.cmd("LOCK.ACQUIRE", "fence", "c%d" % i, 10000, "WAIT", 20000)
                        if not raw.startswith(b":"):
                            errors.append("client %d cycle %d: %r" % (i, n, raw))
                            return
                        t = int(raw[1:-2])
                        last = c.call("GET", "last-token")
                        if last is not None and int(last) >= t:
                            errors.append("token %d after %s" % (t, last))
                        c.cmd("SET", "last-token", t)
                        with lock:
                            tokens.append(t)
                        got = c.cmd("LOCK.RELEASE", "fence", "c%d" % i)
                        if got != integer(0):
                            errors.append("release by c%d: %r" % (i, got))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append("client %d: %s: %s" % (i, type(e).__name__, e))

        threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        self.assertEqual(len(tokens), clients * cycles)
        self.assertEqual(len(set(tokens)), len(tokens))
        self.assertEqual(tokens, sorted(tokens))  # granted (and recorded) in token order


class WaitTest(LockTestCase):
    def test_release_hands_over_in_arrival_order_across_reactors(self):
        holder = self.conn()
        self.acquire(holder, "q", "holder")
        waiters = [self.conn() for _ in range(6)]  # alternate between the two reactors
        for i, w in enumerate(waiters):
            self.start_wait(w, "q", "w%d" % i)
            self.wait_for_waiters("q", i + 1)
        for w in waiters:
            self.assert_no_reply(w, 0.05)
        prev = "holder"
        last_token = 0
        for i, w in enumerate(waiters):
            self.assertReply(integer(0), "LOCK.RELEASE", "q", prev, c=holder)
            t = self.token(w.read_reply())  # the next in line, and nobody else
            self.assertGreater(t, last_token)
            last_token = t
            for other in waiters[i + 1:]:
                self.assert_no_reply(other, 0.02)
            self.assertReply(bulk("w%d" % i), "GET", "q", c=holder)
            self.assertEqual(info(holder, "q")[b"waiters"], len(waiters) - i - 1)
            prev = "w%d" % i
        self.assertReply(integer(0), "LOCK.RELEASE", "q", prev, c=holder)

    def test_newcomers_queue_behind_waiters(self):
        self.acquire(self.c, "n", "holder")
        w = self.conn()
        self.start_wait(w, "n", "first")
        self.wait_for_waiters("n", 1)
        # A newcomer does not jump the queue, even when it comes right after the lock was freed
        # (by a DEL, whose handover runs after the commands already at the shard).
        late = self.conn()
        late.send(encode_command("DEL", "n") + encode_command("LOCK.ACQUIRE", "n", "late", 1000))
        self.assertEqual(late.read_replies(2), [integer(1), NIL])
        self.token(w.read_reply())
        self.assertReply(bulk("first"), "GET", "n")

    def test_delifeq_and_del_hand_over(self):
        self.acquire(self.c, "d", "holder")
        a, b = self.conn(), self.conn()
        self.start_wait(a, "d", "a")
        self.wait_for_waiters("d", 1)
        self.start_wait(b, "d", "b")
        self.wait_for_waiters("d", 2)
        self.assertReply(integer(1), "DELIFEQ", "d", "holder")
        self.token(a.read_reply())
        self.assertReply(bulk("a"), "GET", "d")
        self.assert_no_reply(b)
        self.assertReply(integer(1), "DEL", "d")
        self.token(b.read_reply())
        self.assertReply(bulk("b"), "GET", "d")

    def test_lease_expiry_hands_over(self):
        self.acquire(self.c, "e", "holder", 400)
        w = self.conn()
        start = time.monotonic()
        # Nobody touches the key: the server itself hands the lock over when the lease ends. A
        # server that did not would answer nil when the 20 s WAIT ran out (or not within
        # IO_TIMEOUT): a token is the proof, with no upper bound on the time.
        self.start_wait(w, "e", "next", 10000, 20000)
        t = self.token(w.read_reply())
        elapsed = time.monotonic() - start
        self.assertGreaterEqual(elapsed, 0.3)  # not before the lease ended
        self.assertEqual(info(self.c, "e")[b"token"], t)

    def test_wait_timeout_returns_nil(self):
        self.acquire(self.c, "t", "holder", 10000)
        w = self.conn()
        start = time.monotonic()
        # nil, not a token: the WAIT ended before the holder's 10 s lease (no upper bound on
        # the time beyond that, a slow machine may take its time).
        self.assertReply(NIL, "LOCK.ACQUIRE", "t", "w", 1000, "WAIT", 200, c=w)
        elapsed = time.monotonic() - start
        self.assertGreaterEqual(elapsed, 0.15)  # not before the WAIT ended
        self.assertEqual(info(self.c, "t")[b"waiters"], 0)
        self.assertReply(bulk("holder"), "GET", "t")
        # RESP3: the null
        w.cmd("HELLO", "3")
        self.assertReply(NULL3, "LOCK.ACQUIRE", "t", "w", 1000, "WAIT", 50, c=w)
        # A free lock with WAIT is taken at once.
        self.token(w.cmd("LOCK.ACQUIRE", "free", "w", 1000, "WAIT", 0))

    def test_a_waiter_whose_connection_closes_leaves_at_once(self):
        # Waiters on both reactors: the key's own (inline) and the other (forwarded).
        for n in range(2):
            with self.subTest(n=n):
                key = "x%d" % n
                self.acquire(self.c, key, "holder")
                gone, kept = self.conn(), self.conn()
                self.start_wait(gone, key, "gone")
                self.wait_for_waiters(key, 1)
                self.start_wait(kept, key, "kept")
                self.wait_for_waiters(key, 2)
                gone.close()
                self.wait_for_waiters(key, 1)  # dropped without any release or timeout
                self.assertReply(integer(0), "LOCK.RELEASE", key, "holder")
                self.token(kept.read_reply())
                self.assertReply(bulk("kept"), "GET", key)

    def test_client_kill_of_a_waiter(self):
        self.acquire(self.c, "kk", "holder")
        victim = self.conn()
        victim_id = victim.call("CLIENT", "ID")
        self.start_wait(victim, "kk", "victim")
        self.wait_for_waiters("kk", 1)
        self.assertReply(integer(1), "CLIENT", "KILL", "ID", victim_id)
        self.wait_for_waiters("kk", 0)
        self.assertReply(integer(0), "LOCK.RELEASE", "kk", "holder")
        self.assertReply(integer(0), "EXISTS", "kk")  # nobody took it

    def test_pipelined_commands_run_after_the_waiting_acquire(self):
        for n in range(2):  # two connections in a row: one on each reactor
            with self.subTest(n=n):
                self.assertReply(OK, "FLUSHALL")
                self.acquire(self.c, "p", "holder")
                w = self.conn()
                w.send(encode_command("LOCK.ACQUIRE", "p", "w", 10000, "WAIT", 10000) +
                       encode_command("GET", "p") +
                       encode_command("SET", "after", "1") +
                       encode_command("SET", "{p}after", "1") +
                       encode_command("PING"))
                self.wait_for_waiters("p", 1)
                self.assert_no_reply(w)
                # Blocked: none of its later commands has run, on either shard.
                self.assertReply(NIL, "GET", "after")
                self.assertReply(NIL, "GET", "{p}after")
                # Other connections on the same reactors carry on meanwhile.
                for _ in range(3):
                    self.assertReply(b"+PONG\r\n", "PING", c=self.conn())
                self.assertReply(integer(0), "LOCK.RELEASE", "p", "holder")
                replies = w.read_replies(5)
                self.token(replies[0])
                self.assertEqual(replies[1:], [bulk("w"), OK, OK, b"+PONG\r\n"])
                # A WAIT on a free lock answers at once, and the pipeline flows on.
                r = w.pipeline([("LOCK.RELEASE", "p", "w"),
                                ("LOCK.ACQUIRE", "p", "w", 1000, "WAIT", 1000),
                                ("GET", "p")])
                self.assertEqual(r[0], integer(0))
                self.token(r[1])
                self.assertEqual(r[2], bulk("w"))

    def blocked_clients(self):
        """INFO clients' blocked_clients (summed over the reactors)."""
        text = decode(self.c.cmd("INFO", "clients")).decode()
        fields = dict(l.split(":", 1) for l in text.splitlines() if ":" in l)
        return int(fields["blocked_clients"])

    def client_fields(self, client_id):
        """CLIENT LIST ID <id>: that client's line as a dict (flags, cmd, ...)."""
        line = decode(self.c.cmd("CLIENT", "LIST", "ID", client_id)).decode().strip()
        self.assertEqual(len(line.splitlines()), 1, line)
        return dict(f.split("=", 1) for f in line.split(" "))

    def test_waiting_clients_show_as_blocked(self):
        # Like a client in BLPOP on Redis 7: INFO's blocked_clients counts it and CLIENT LIST
        # shows flags=b cmd=lock.acquire, until it is served or gives up.
        self.assertEqual(self.blocked_clients(), 0)
        self.acquire(self.c, "bc", "holder")
        a, b = self.conn(), self.conn()  # consecutive: one on each reactor
        ids = [a.call("CLIENT", "ID"), b.call("CLIENT", "ID")]
        self.assertEqual(self.client_fields(ids[0])["flags"], "N")
        self.start_wait(a, "bc", "a")
        self.wait_for_waiters("bc", 1)
        self.assertEqual(self.blocked_clients(), 1)
        fa = self.client_fields(ids[0])
        self.assertEqual((fa["flags"], fa["cmd"]), ("b", "lock.acquire"))
        self.assertEqual(self.client_fields(ids[1])["flags"], "N")
        self.assertEqual(self.client_fields(self.c.call("CLIENT", "ID"))["flags"], "N")
        self.start_wait(b, "bc", "b")
        self.wait_for_waiters("bc", 2)
        self.assertEqual(self.blocked_clients(), 2)  # waiting on both reactors
        self.assertEqual([self.client_fields(i)["flags"] for i in ids], ["b", "b"])
        # Handed over: `a` is no longer blocked, `b` still is.
        self.assertReply(integer(0), "LOCK.RELEASE", "bc", "holder")
        self.token(a.read_reply())
        self.assertEqual(self.blocked_clients(), 1)
        self.assertEqual([self.client_fields(i)["flags"] for i in ids], ["N", "b"])
        self.assertReply(integer(0), "LOCK.RELEASE", "bc", "a")
        self.token(b.read_reply())
        self.assertEqual(self.blocked_clients(), 0)
        self.assertEqual([self.client_fields(i)["flags"] for i in ids], ["N", "N"])
        # A WAIT on a free lock never blocks; one that times out is blocked until it does.
        self.token(a.cmd("LOCK.ACQUIRE", "free", "a", 1000, "WAIT", 1000))
        self.assertEqual(self.client_fields(ids[0])["flags"], "N")
        self.assertReply(NIL, "LOCK.ACQUIRE", "bc", "a", 1000, "WAIT", 50, c=a)
        self.assertEqual(self.blocked_clients(), 0)
        self.assertEqual(self.client_fields(ids[0])["flags"], "N")

    def test_a_closed_waiter_is_no_longer_blocked(self):
        self.acquire(self.c, "bx", "holder")
        for n in range(2):  # one connection on each reactor
            with self.subTest(n=n):
                w = self.conn()
                self.start_wait(w, "bx", "w")
                self.wait_for_waiters("bx", 1)
                self.assertEqual(self.blocked_clients(), 1)
                w.close()
                self.wait_for_waiters("bx", 0)
                self.assertEqual(self.blocked_clients(), 0)

    def test_reentrant_waiter_of_the_holder_passes(self):
        self.acquire(self.c, "re", "svc", 10000, "REENTRANT")
        other = self.conn()
        self.start_wait(other, "re", "other")
        self.wait_for_waiters("re", 1)
        # The holder re-entering does not queue behind `other` (that would deadlock it).
        c2 = self.conn()
        self.token(c2.cmd("LOCK.ACQUIRE", "re", "svc", 10000, "REENTRANT", "WAIT", 1000))
        self.assertEqual(info(self.c, "re")[b"holds"], 2)
        self.assertReply(integer(1), "LOCK.RELEASE", "re", "svc")
        self.assert_no_reply(other)
        self.assertReply(integer(0), "LOCK.RELEASE", "re", "svc")
        self.token(other.read_reply())


if __name__ == "__main__":
    harness.main()
