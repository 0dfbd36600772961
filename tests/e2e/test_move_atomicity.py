"""Cross-shard moves under concurrency, on a `--threads 2` server: LMOVE / RPOPLPUSH between two
lists, SMOVE between two sets and RENAME / RENAMENX of a key back and forth, with the two keys on
different shards and movers going both ways (so that both shard orders are taken: source on the
lower shard, and destination on the lower shard). Readers that see both keys at once (MULTI/EXEC,
or one multi-key command) never find an element in both places or in neither, nor a key in both
or neither.

Work-bounded as test_atomicity.py is: each worker does at least MIN_ROUNDS, the movers keep
going until the readers have done theirs, and only a server that stops answering fails on the
clock. Against redis-server (trivially atomic) everything passes, which checks the test logic."""

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, decode  # noqa: E402
from slots import on_shard  # noqa: E402
from test_atomicity import AtomicityTestCase, Quota, read_transaction, transaction_bytes  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


class MoveAtomicityTest(AtomicityTestCase):
    MOVERS = 6
    READERS = 3
    MIN_ROUNDS = 300
    DURATION = 1.0
    ITEMS = 12

    def race(self, move, read, check):
        """MOVERS threads calling move(worker, conn, idx, rnd) and READERS threads whose
        read(worker, conn) result must pass check(result) (else: its message)."""
        readers_ready = Quota(self.READERS)
        movers_done = Quota(self.MOVERS)
        abort_flag = []

        def mover(idx):
            def body(w, c):
                rnd, stop = 0, time.monotonic() + self.DURATION
                try:
                    while not abort_flag and (time.monotonic() < stop or rnd < self.MIN_ROUNDS
                                              or not readers_ready.is_set()):
                        move(w, c, idx, rnd)
                        rnd += 1
                finally:
                    movers_done.reached()
                return rnd
            return body

        def reader(idx):
            def body(w, c):
                reads, seen = 0, set()
                while not abort_flag and (not movers_done.is_set() or reads < self.MIN_ROUNDS):
                    got = read(w, c)
                    problem = check(got)
                    if problem:
                        w.fail("read %d: %s: %r" % (reads, problem, got))
                    seen.add(repr(got))
                    reads += 1
                    if reads == self.MIN_ROUNDS:
                        readers_ready.reached()
                return reads, len(seen)
            return body

        def on_error():
            abort_flag.append(1)
            readers_ready.set()
            movers_done.set()

        bodies = [("mover%d" % i, mover(i)) for i in range(self.MOVERS)]
        bodies += [("reader%d" % i, reader(i)) for i in range(self.READERS)]
        results = self.run_workers(bodies, on_error=on_error)
        # The readers saw the keys change (they raced with the movers).
        self.assertGreaterEqual(sum(results["reader%d" % i][1] for i in range(self.READERS)), 5,
                                results)

    def test_lmove_and_rpoplpush_never_lose_or_double_an_element(self):
        a, b = keys = (on_shard(0, "mv:list"), on_shard(1, "mv:list"))
        items = ["e%d" % i for i in range(self.ITEMS)]
        self.assertEqual(decode(self.c.cmd("RPUSH", a, *items)), self.ITEMS)
        ends = ("LEFT", "RIGHT")

        def move(w, c, idx, rnd):
            src, dst = keys if idx % 2 == 0 else keys[::-1]
            if idx % 3 == 2:
                got = c.cmd("RPOPLPUSH", src, dst)
            else:
                got = c.cmd("LMOVE", src, dst, ends[rnd % 2], ends[(rnd // 2) % 2])
            if not got.startswith((b"$", b"*-1", b"$-1")):
                w.fail("move: %r" % got)

        def read(w, c):
            c.send(transaction_bytes(("LRANGE", a, "0", "-1"), ("LRANGE", b, "0", "-1")))
            return decode(read_transaction(w, c, 2, "MULTI LRANGE LRANGE EXEC"))

        def check(got):
            together = sorted(x.decode() for x in got[0] + got[1])
            return None if together == sorted(items) else "the elements are not each in one list"

        self.race(move, read, check)

    def test_smove_never_loses_or_doubles_a_member(self):
        a, b = keys = (on_shard(0, "mv:set"), on_shard(1, "mv:set"))
        members = ["m%d" % i for i in range(self.ITEMS)]
        self.assertEqual(decode(self.c.cmd("SADD", a, *members)), self.ITEMS)

        def move(w, c, idx, rnd):
            src, dst = keys if idx % 2 == 0 else keys[::-1]
            got = c.cmd("SMOVE", src, dst, random.choice(members))
            if got not in (b":0\r\n", b":1\r\n"):
                w.fail("SMOVE: %r" % got)

        def read(w, c):
            c.send(transaction_bytes(("SMEMBERS", a), ("SMEMBERS", b)))
            return decode(read_transaction(w, c, 2, "MULTI SMEMBERS SMEMBERS EXEC"))

        def check(got):
            together = sorted(x.decode() for x in got[0] + got[1])
            return None if together == sorted(members) else "the members are not each in one set"

        self.race(move, read, check)

    def test_rename_back_and_forth_keeps_exactly_one_key(self):
        a, b = keys = (on_shard(0, "mv:key"), on_shard(1, "mv:key"))
        self.assertReply(OK, "SET", a, "v", "PX", "1000000")
        no_such_key = b"-ERR no such key\r\n"

        def move(w, c, idx, rnd):
            src, dst = keys if idx % 2 == 0 else keys[::-1]
            if idx % 3 == 2:
                got = c.cmd("RENAMENX", src, dst)
                ok = (b":0\r\n", b":1\r\n", no_such_key)
            else:
                got = c.cmd("RENAME", src, dst)
                ok = (OK, no_such_key)
            if got not in ok:
                w.fail("move: %r" % got)

        def read(w, c):
            if random.random() < 0.5:
                return ("EXISTS", decode(c.cmd("EXISTS", a, b)))
            c.send(transaction_bytes(("GET", a), ("GET", b), ("PTTL", a), ("PTTL", b)))
            return ("MULTI", decode(read_transaction(w, c, 4, "MULTI GET GET PTTL PTTL EXEC")))

        def check(got):
            kind, r = got
            if kind == "EXISTS":
                return None if r == 1 else "EXISTS counted %r keys" % r
            values = [v for v in r[:2] if v is not None]
            if values != [b"v"]:
                return "not exactly one key holds the value"
            ttl = max(r[2:])
            return None if ttl > 900000 else "the TTL did not move with the key"

        self.race(move, read, check)


if __name__ == "__main__":
    harness.main()
