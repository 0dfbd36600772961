"""The Redis Cluster protocol's commands on a standalone node: CLUSTER (every subcommand),
READONLY, READWRITE and ASKING answer as Redis 7 with cluster support disabled, after the same
arity and subcommand checks, and the connection stays. Checked against redis-server too
(DEADBOLT_AGAINST_REDIS=1)."""

import harness
from harness import OK, error

DISABLED = error("ERR This instance has cluster support disabled")

# Redis 7.0's CLUSTER subcommands with a valid call of each.
CALLS = [
    ("INFO",), ("info",), ("Slots",), ("SHARDS",), ("NODES",), ("MYID",), ("LINKS",),
    ("HELP",), ("KEYSLOT", "lock:1"), ("COUNTKEYSINSLOT", "0"), ("GETKEYSINSLOT", "0", "10"),
    ("REPLICAS", "x"), ("SLAVES", "x"), ("RESET",), ("RESET", "HARD"), ("FAILOVER",),
    ("ADDSLOTS", "1", "2"), ("ADDSLOTSRANGE", "1", "2"), ("DELSLOTS", "1"),
    ("DELSLOTSRANGE", "1", "2"), ("FLUSHSLOTS",), ("FORGET", "x"), ("MEET", "127.0.0.1", "1"),
    ("REPLICATE", "x"), ("SAVECONFIG",), ("SET-CONFIG-EPOCH", "1"), ("SETSLOT", "1", "STABLE"),
    ("BUMPEPOCH",), ("COUNT-FAILURE-REPORTS", "x"),
]


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


class ClusterDisabledTest(harness.ServerTestCase):
    def test_every_subcommand_says_disabled(self):
        for call in CALLS:
            self.assertEqual(self.c.cmd("CLUSTER", *call), DISABLED, call)
        self.assertEqual(self.c.cmd("PING"), b"+PONG\r\n")

    def test_arity_and_unknown_subcommand_first(self):
        c = self.c
        self.assertEqual(c.cmd("CLUSTER"), harness.wrong_args("cluster"))
        self.assertEqual(c.cmd("CLUSTER", "INFO", "x"), harness.wrong_args("cluster|info"))
        self.assertEqual(c.cmd("CLUSTER", "keyslot"), harness.wrong_args("cluster|keyslot"))
        self.assertEqual(c.cmd("CLUSTER", "nope"),
                         error("ERR unknown subcommand 'nope'. Try CLUSTER HELP."))
        self.assertEqual(c.cmd("READONLY", "x"), harness.wrong_args("readonly"))
        self.assertEqual(c.cmd("PING"), b"+PONG\r\n")

    def test_readonly_readwrite_asking(self):
        for name in ("READONLY", "readwrite", "Asking"):
            self.assertEqual(self.c.cmd(name), DISABLED, name)

    def test_in_multi_they_queue_and_fail_at_exec(self):
        c = self.c
        self.assertEqual(c.cmd("MULTI"), OK)
        self.assertEqual(c.cmd("CLUSTER", "INFO"), b"+QUEUED\r\n")
        self.assertEqual(c.cmd("READONLY"), b"+QUEUED\r\n")
        self.assertEqual(c.cmd("SET", "cl:k", "v"), b"+QUEUED\r\n")
        self.assertEqual(harness.decode(c.cmd("EXEC")),
                         [harness.RespError(b"ERR This instance has cluster support disabled")] * 2
                         + [b"OK"])

    def test_in_a_pipeline_between_lock_commands(self):
        # Replies stay in order whichever shard the keys live on.
        replies = self.c.pipeline([("SET", "cl:a", "o", "NX", "PX", "30000"), ("CLUSTER", "INFO"),
                                   ("SET", "cl:b", "o", "NX", "PX", "30000"), ("ASKING",),
                                   ("DEL", "cl:a", "cl:b")])
        self.assertEqual(replies, [OK, DISABLED, OK, DISABLED, b":2\r\n"])

    def test_acl_sees_the_subcommand(self):
        c = self.c
        self.assertEqual(c.cmd("ACL", "SETUSER", "clu", "on", "nopass", "+@all", "-@admin"), OK)
        try:
            with self.conn() as u:
                self.assertEqual(u.cmd("AUTH", "clu", "x"), OK)
                self.assertEqual(u.cmd("CLUSTER", "INFO"), DISABLED)
                self.assertEqual(u.cmd("CLUSTER", "RESET"), error(
                    "NOPERM this user has no permissions to run the 'cluster|reset' command"))
        finally:
            c.cmd("ACL", "DELUSER", "clu")

    def test_command_info(self):
        info = harness.decode(self.c.cmd("COMMAND", "INFO", "cluster", "readonly", "asking"))
        cluster, readonly, asking = info
        self.assertEqual(cluster[:2], [b"cluster", -2])
        subs = {s[0]: s for s in cluster[9]}
        self.assertEqual(len(subs), 27)
        self.assertEqual(subs[b"cluster|info"][1], 2)
        self.assertEqual(subs[b"cluster|setslot"][1], -4)
        self.assertIn(b"@admin", subs[b"cluster|reset"][6])
        self.assertEqual(subs[b"cluster|keyslot"][6], [b"@slow"])
        self.assertEqual(readonly[:2], [b"readonly", 1])
        self.assertIn(b"fast", readonly[2])
        self.assertEqual(asking[:2], [b"asking", 1])


if __name__ == "__main__":
    harness.main()
