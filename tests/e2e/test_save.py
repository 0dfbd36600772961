"""SAVE, BGSAVE and LASTSAVE. deadbolt writes no RDB file: its snapshot is the journal's rewrite,
so SAVE rewrites every shard's journal and answers once each new file has replaced the old one
and is on disk, BGSAVE starts those rewrites, and LASTSAVE is the time of the oldest shard's last
one (the start until then). The classes marked redis_too also run against redis-server
--appendonly yes (DEADBOLT_AGAINST_REDIS=1): the replies a client sees are Redis's."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, decode, integer  # noqa: E402
from test_journal import SLACK, JournalCase, parse_info  # noqa: E402

AGAINST_REDIS = harness.AGAINST_REDIS


def setUpModule():
    harness.server_command(0)  # DEADBOLT_SERVER or DEADBOLT_AGAINST_REDIS must say what to run


def lastsave(c):
    raw = c.cmd("LASTSAVE")
    assert raw.startswith(b":"), raw
    return int(raw[1:-2])


class SaveRepliesTest(JournalCase):
    """What a client sees, the same from deadbolt and Redis."""

    redis_too = True

    def test_lastsave_is_the_start_then_moves_after_bgsave(self):
        before = int(time.time())
        c = self.start(fsync="everysec")
        t0 = lastsave(c)
        self.assertLessEqual(before - 1, t0)
        self.assertLessEqual(t0, int(time.time()))
        self.assertEqual(parse_info(decode(c.cmd("INFO", "persistence")))["rdb_last_save_time"],
                         str(t0))
        self.assertEqual(c.cmd("SET", "k", "v"), OK)
        time.sleep(max(0.0, t0 + 1.05 - time.time()))  # LASTSAVE counts seconds
        self.assertEqual(c.cmd("BGSAVE"), b"+Background saving started\r\n")
        # The way a client waits for a BGSAVE: until LASTSAVE moves.
        t1 = self.wait_for("LASTSAVE to move", lambda: lastsave(c) > t0 and lastsave(c))
        self.assertLessEqual(t1, int(time.time()))
        self.wait_for("the save to end", lambda: self.info(c)["rdb_bgsave_in_progress"] == "0")
        self.assertEqual(self.info(c)["rdb_last_bgsave_status"], "ok")
        self.assertEqual(self.info(c)["rdb_last_save_time"], str(t1))
        self.stop()

    def test_save_answers_ok_and_lastsave_moves(self):
        c = self.start(fsync="everysec")
        t0 = lastsave(c)
        time.sleep(max(0.0, t0 + 1.05 - time.time()))
        self.assertEqual(c.cmd("SET", "k", "v"), OK)
        self.assertEqual(c.cmd("SAVE"), OK)
        self.assertGreater(lastsave(c), t0)  # at once: SAVE answers when it is done
        self.assertEqual(c.cmd("GET", "k"), b"$1\r\nv\r\n")
        self.stop()

    def test_argument_errors(self):
        c = self.start(fsync="everysec")
        for args in (("BGSAVE", "x"), ("BGSAVE", "schedule", "x"), ("BGSAVE", "SCHEDULE", "y")):
            self.assertEqual(c.cmd(*args), b"-ERR syntax error\r\n", args)
        for args in (("SAVE", "x"), ("LASTSAVE", "x")):
            self.assertEqual(c.cmd(*args), ("-ERR wrong number of arguments for '%s' command\r\n"
                                            % args[0].lower()).encode(), args)
        self.assertEqual(c.cmd("PING"), b"+PONG\r\n")  # the connection stays
        self.stop()

    def test_second_bgsave_while_one_runs(self):
        c = self.start(fsync="everysec")
        self.assertEqual(set(c.pipeline([("SET", "k%d" % i, "v" * 100) for i in range(20000)])),
                         {OK})
        replies = c.pipeline([("BGSAVE",), ("BGSAVE",)])
        self.assertEqual(replies, [b"+Background saving started\r\n",
                                   b"-ERR Background save already in progress\r\n"])
        self.wait_for("the save to end", lambda: self.info(c)["rdb_bgsave_in_progress"] == "0")
        self.assertEqual(c.cmd("DBSIZE"), integer(20000))
        self.stop()

    def test_save_refused_in_multi_and_in_scripts(self):
        c = self.start(fsync="everysec")
        self.assertEqual(c.cmd("MULTI"), OK)
        self.assertEqual(c.cmd("SAVE"), b"-ERR Command not allowed inside a transaction\r\n")
        self.assertEqual(c.cmd("EXEC")[:11], b"-EXECABORT ")
        for cmd in ("save", "bgsave"):
            raw = c.cmd("EVAL", "return redis.call('%s')" % cmd, 0)
            self.assertTrue(raw.startswith(b"-ERR This Redis command is not allowed from script"),
                            raw)
        self.stop()


class SaveJournalTest(JournalCase):
    """deadbolt's own: what SAVE and BGSAVE do to the journal."""

    def test_save_has_rewritten_every_shard_when_it_answers(self):
        c = self.start(threads=2, fsync="everysec",
                       extra=["--auto-aof-rewrite-percentage", "0"])
        cmds = [("SET", "hot:%d" % k, "%d:%s" % (r, "p" * 100)) for r in range(100)
                for k in range(20)]
        self.assertEqual(set(c.pipeline(cmds)), {OK})
        self.assertEqual(c.cmd("WAITAOF", 1, 0, 0), b"*2\r\n:1\r\n:0\r\n")
        size_before = self.journal_size()
        self.assertEqual(c.cmd("SAVE"), OK)
        # Nothing to wait for: both shards' rewrites are done and have replaced their files.
        i = self.info(c)
        self.assertEqual((i["aof_rewrites"], i["aof_rewrite_in_progress"]), ("2", "0"))
        self.assertLess(self.journal_size(), size_before // 10)
        self.assert_layout(2)
        self.kill()
        c = self.start(threads=2, fsync="everysec")
        self.assertEqual(decode(c.cmd("MGET", *["hot:%d" % k for k in range(20)])),
                         [("99:%s" % ("p" * 100)).encode()] * 20)
        self.stop()

    def test_save_waits_for_a_rewrite_already_running(self):
        c = self.start(threads=2, fsync="everysec")
        self.assertEqual(set(c.pipeline([("SET", "k%d" % i, "v" * 100) for i in range(20000)])),
                         {OK})
        replies = c.pipeline([("BGREWRITEAOF",), ("SAVE",), ("INFO", "persistence")])
        self.assertEqual(replies[:2], [b"+Background append only file rewriting started\r\n", OK])
        i = parse_info(decode(replies[2]))
        self.assertEqual((i["aof_rewrites"], i["aof_rewrite_in_progress"]), ("2", "0"))
        self.stop()

    def test_bgsave_schedule_while_rewriting(self):
        c = self.start(threads=2, fsync="everysec")
        self.assertEqual(set(c.pipeline([("SET", "k%d" % i, "v" * 100) for i in range(20000)])),
                         {OK})
        replies = c.pipeline([("BGSAVE",), ("BGSAVE", "SCHEDULE"), ("BGSAVE",)])
        self.assertEqual(replies, [b"+Background saving started\r\n",
                                   b"+Background saving scheduled\r\n",
                                   b"-ERR Background save already in progress\r\n"])
        self.wait_rewrites(c, 2)
        self.stop()

    def test_journal_off(self):
        before = int(time.time())
        c = self.start(appendonly=False)
        off = (b"-ERR the journal is off (start deadbolt with --appendonly yes): nothing to "
               b"save\r\n")
        self.assertEqual(c.cmd("SAVE"), off)
        self.assertEqual(c.cmd("BGSAVE"), off)
        self.assertEqual(c.cmd("BGSAVE", "SCHEDULE"), off)
        t0 = lastsave(c)
        self.assertLessEqual(before - 1, t0)
        self.assertLessEqual(t0, int(time.time()))
        self.stop()


if __name__ == "__main__":
    unittest.main()
