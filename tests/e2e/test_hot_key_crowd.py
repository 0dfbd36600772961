"""A hot key shared by cross-shard commands (issue 16): many clients pipelining MSET a b /
MGET a b c (a and b sit on different shards, so every one of them locks b on its shard), while
others read b. Every reply must come, and once the clients have gone nothing may stay queued.

On a90e732 a client that pipelined reads of a key a transaction held never got them answered:
its parked reads re-queued each other behind themselves at every release, for good. And a crowd
of queued transactions drained at a cost quadratic in its size, which froze a shard for minutes
(`../shared/repro/wedge.py`).
"""

import socket
import time

import harness
from harness import encode_command
from slots import shard_of


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


MSET = encode_command("MSET", "a", "1", "b", "2")
MGET = encode_command("MGET", "a", "b", "c")


class HotKeyCrowdTest(harness.ServerTestCase):
    def test_keys_sit_on_both_shards(self):
        # The premise of the other tests: with two shards, MSET a b and MGET a b c span both.
        self.assertNotEqual(shard_of("a"), shard_of("b"))
        self.assertEqual(shard_of("b"), shard_of("c"))

    def test_pipelined_reads_of_a_locked_key_are_all_answered(self):
        writers = [self.conn() for _ in range(4)]
        readers = [self.conn() for _ in range(4)]
        rounds = 300
        for w in writers:
            w.send(b"".join(encode_command("MSET", "a", str(i), "b", str(i))
                            for i in range(rounds)))
        gets = 200
        for r in readers:
            r.send(encode_command("GET", "b") * gets)
        for r in readers:
            for _ in range(gets):
                reply = r.read_reply()  # a reply that never comes fails here (socket timeout)
                self.assertTrue(reply.startswith(b"$"), reply)
        for w in writers:
            self.assertEqual(w.read_replies(rounds), [b"+OK\r\n"] * rounds)
        # The last writes are whole: a and b agree.
        a, b = self.c.call("MGET", "a", "b")
        self.assertEqual(a, b)

    def test_a_crowd_that_leaves_mid_pipeline_leaves_nothing_queued(self):
        crowd = []
        try:
            for i in range(1500):
                s = socket.create_connection(("127.0.0.1", harness.port()), timeout=5)
                # Sends and never reads: most of these wait for b when the crowd leaves.
                s.sendall((MSET if i % 2 else MGET) * (1 + i % 8))
                crowd.append(s)
        finally:
            for s in crowd:
                s.close()
        for key in "abcdefghij":
            self.assertIn(self.c.cmd("EXISTS", key), (b":0\r\n", b":1\r\n"), key)
        self.assertEqual(self.c.cmd("GET", "b"), b"$1\r\n2\r\n")
        if harness.AGAINST_REDIS:
            return
        # Whatever the crowd left queued drains by itself (reads of clients that went are
        # dropped, their writes run): nothing stays locked or waiting.
        for _ in range(400):
            info = self.c.call("INFO", "stats").decode()
            fields = dict(line.split(":", 1) for line in info.split("\r\n") if ":" in line)
            if fields["tx_waiting"] == "0" and fields["tx_locked_keys"] == "0":
                break
            time.sleep(0.05)
        self.assertEqual((fields["tx_waiting"], fields["tx_locked_keys"]), ("0", "0"))
        self.assertGreater(int(fields["eventloop_cycles"]), 0)
        self.assertIn("eventloop_duration_max", fields)


if __name__ == "__main__":
    import unittest
    unittest.main()
