"""Lock scripts: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, on the scripts popular lock
clients send, which deadbolt runs natively (other scripts run in its embedded Lua: test_lua).

Every scenario runs the same commands against Redis 7.0 (DEADBOLT_AGAINST_REDIS=1, where the real
Lua runs) and against deadbolt, and asserts the exact reply bytes: acquire, re-entry, another
owner, an expired or missing key, a key of the wrong type, missing arguments, read-only calls,
and the errors Redis raises inside a script ("... script: <sha>, on @user_script:<line>.").

Against Redis a script must first be loaded with its real text, and SCRIPT LOAD must answer the
SHA1 deadbolt knows it by (which checks deadbolt's catalogue). The texts come from:
  - redis-py's Lock: the installed python3-redis (redis/lock.py);
  - node-redlock 4.x / 5.0.0-beta, @sesamecare-oss/redlock, redis-semaphore: the npm packages of
    tests/js (`npm ci` there), read with node;
  - Redisson's older acquire and renewal: seed 004 quotes them (the Java string concatenation is
    exact); the classic compare-and-delete: the Redis documentation's text, spelled as it is
    commonly copied;
  - the others (Redisson 3.2x/4.x, go-redsync): not installed anywhere here; their SHA1s are in
    the clients' source. A scenario for them runs against deadbolt by SHA1 only, with replies
    checked once against Redis running the real text; against Redis it is skipped unless
    DEADBOLT_SCRIPT_TEXTS names a directory holding the texts as <sha1>.lua files.

Keys of multi-key scenarios sit on both shards of a `--threads 2` deadbolt (slot < 8192 on
shard 0), so they exercise the atomic cross-shard path; two racing multi-key acquires never both
win."""

import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import redisson_texts  # noqa: E402
from harness import NIL, NULL3, OK, WRONGTYPE, bulk, error, integer  # noqa: E402
from test_atomicity import on_shard, shard_of  # noqa: E402

AGAINST_REDIS = harness.AGAINST_REDIS
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JS_DIR = os.path.join(REPO, "tests", "js")


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


# ---------------------------------------------------------------------------------------------
# The scripts: name -> SHA1 (deadbolt's catalogue) and, where it can be had, the exact text.
# ---------------------------------------------------------------------------------------------

SHAS = {
    # redis-py Lock
    "py_release": "c3f8721cbb97f72bc19e972846bd7aaf91901658",
    "py_extend": "a4e8783852e6b949f9ef3a97212805108459a890",
    "py_reacquire": "1cac51482acf5858da00f6d685d68f886cd6b6b2",
    # Redisson RLock
    "redisson_acquire": "149c5a8bf18676fd99e9e6e24923bd64d9b62f94",
    "redisson_acquire_3x": "dad0f8d619e548e04f21fb48d50be5034df3adae",
    "redisson_acquire_hset": "9401052d872adfd0179ef8c8e8c028512707629a",
    "redisson_release": "6866459238a13a701d42f4971f12d9f3a50e2442",
    "redisson_release_cmd": "778cea8aada230ae060b432fc333adaec85f2f4c",
    "redisson_release_publish": "3ffe249c16dee540ac8ab32e39bd408626b9aff7",
    "redisson_renew": "6a3d31570dc6f4b0bd32bcdc8e75667747c6f635",
    "redisson_renew_one": "8e19a1ddbdee9138df9f32a480c57addab4353d1",
    # Redisson RReadWriteLock, RSemaphore, RCountDownLatch, RSpinLock, RFencedLock (texts:
    # redisson_texts.py)
    "rw_read_acquire": "95553a6ff11176c18e71344e89d116b06fd6f753",
    "rw_read_release": "5947c0fee6ca25ae094ec1b3e7a2559a9273d29f",
    "rw_read_renew": "6563941ff57e01b8cf61e86907b80686438a2f74",
    "rw_read_force_unlock": "27dbe744e95c1d854a7f556cc6817030de2d0d01",
    "rw_read_is_locked": "8ad44f1ba014938c20da38206b6d496c85ec1aed",
    "rw_write_acquire": "6306ba3bf1f563b284bed52d305fce615c6664d9",
    "rw_write_release": "d29c5559782035515d32e926762830b3304b49be",
    "rw_write_force_unlock": "2e2cb2a3b13e2e80e4236ef6a25beaf365dba608",
    "sema_try_acquire": "c7dc9d189c1715465a31a06ddbc008585e0c20be",
    "sema_release": "ae27582488dd01f4e238cc0733a12146d410eb44",
    "sema_drain": "c87766d572855e9461c4ecd453db5d1cbab6119e",
    "sema_try_set_permits": "241ce4e87e652b4f9b39d33cbcd7df9ee8ed906c",
    "sema_add_permits": "98238d408c6755085344670d3a2ddaa55cf177a9",
    "latch_count_down": "38060fab26b0e7c5982a5cfd7ad542e44d3da19b",
    "latch_try_set_count": "2a52d54a6f35bc8af5e84a2930b2ca1aa2a15892",
    "latch_delete": "47aed1b8133417c9bc009ffc08602e37ed4a1bb3",
    "spin_release": "73ac2729af29ea9a975f95e8097f7ee9a74cce3d",
    "spin_force_unlock": "51b433c3cc9a6ca991b3aefec63d23490c246318",
    "fenced_acquire_token": "49babb5a1e6a0c5f188c2ae62b93b51cdfd63e45",
    "fenced_acquire": "46b5551ba403d6152a7a6eca122e08728d6c8c66",
    "pes_try_acquire": "992c96b09a3d8ea0b37f5dc12e5347a44d93909d",
    "pes_try_release": "4ce079451bee2993ce00c8a4e205b536c6ccad67",
    "pes_try_release_many": "bb41a8ec1cd921c89e9d8f2ddde38ad13a2e8b74",
    "pes_available_permits": "26b3972b2c9e617556282f404cb79709d746a713",
    "pes_add_permits": "ec6fb1cd5f66817424e8fe70fee7929391b7c6f0",
    "pes_update_lease_time": "2298b02cc67a89f2a638e47503db3675c73d77f5",
    "pes_acquired_permits": "6f0b0be79a0c146c778cb14f40c10eb5b706e574",
    "pes_get_permits": "e242db5c1c68811b0d26a41937dcf22415b6d872",
    "pes_set_permits": "494d8561fee0cdb033f6c28d74c052c52189a578",
    "fair_acquire": "762bfafa6be221431a0b668685dd15c926483619",
    "fair_try_acquire": "aa0a28d2eb7cbeb50151315a58eb75302d8dfa40",
    "fair_acquire_failed": "d1ddef65ad80886b5d36e023c99930044ddd653a",
    "fair_release": "ca303f8587d0942f8a0021f62338626ca4dd0118",
    "fair_force_unlock": "047c11d7fec40d0102fe9903ff1e19e9a1dec610",
    # go-redsync v4
    "redsync_delete": "e950836ed1e694540c503ef9972b8de518044d3b",
    "redsync_touch": "d75bb8b5bd13532ddedd17762e772346e39b321e",
    "redsync_touch_nx": "b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79",
    "redsync_delete_old": "00583931c4e4d483f6233879c133c71ed5393f9d",
    # redis-semaphore Mutex
    "semaphore_refresh": "594683e49a64ebaf975caf5f8079a1d097c438f1",
    "semaphore_release": "7157921a7cc7cfba979acf6d63f073151df17d12",
    # redis-semaphore Semaphore / MultiSemaphore (also sent by RedlockSemaphore and
    # RedlockMultiSemaphore to each server)
    "sem_acquire": "43ebdb49120d170e08af560cb4e46e36f8585936",
    "sem_refresh": "999a49a1d07671a8027165641001f5bad44608b3",
    "msem_acquire": "10c1c2e05e7c48aa5824d227b8c51abcde87b18e",
    "msem_refresh": "2327bcdc5edb5b8687f6d19b5e1f42b815ebddab",
    "msem_release": "0bd1010c98f1ddd70a6024fd374489a8ea3d2c12",
    # node-redlock
    "redlock4_acquire": "e5a322e2634ef59a516e8ea150cb085afafee684",
    "redlock4_extend": "ce46f80993d5dac20dd066eb301a4e37994bdbed",
    "redlock4_release": "0f0f23b9048b36752b5be114f357ba083449f908",
    "redlock5_acquire": "96da70f7716f27d278a5218544df37fd8b0a5e4c",
    "redlock5_extend": "aed6f382e410db8ba7926d4e5e9aab410bf2a78a",
    "redlock5_release": "e4612211c9f8f51c257e26e056b0a654b3187242",
    "sesame_acquire": "1b77b94aa78451d55dfa97e18819bfbfc596cb5b",
    "sesame_extend": "820e9778d2b6733e9ed771e4be90ae73a95a6f3b",
    "sesame_release": "df51f6837dcfe303d334e6abea9aeae192bab216",
    # the classic compare-and-delete
    "classic_dq": "b70c2384248f88e6b75b9f89241a180f856ad852",
    "classic_dq_2sp": "123f4af3b13ed08b98b0b2a98d211f1a02aff662",
    "classic_sq": "e9f69f2beb755be68b5e456ee2ce9aadfbc4ebf4",
    "classic_sq_nosp": "ae3671744a5dbb24ea37ef607b8b10ac7856d43e",
    "classic_docs": "bd75051e9049411d4a96c0df196ac2667d38f481",
    "classic_docs_nl": "0df94f0c181d164030a056e556fe2176c70f0013",
}

# The Redis documentation's compare-and-delete (SET command page), in the spellings people copy.
CLASSIC_TEXTS = {
    "classic_dq": 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) '
                  'else return 0 end',
    "classic_dq_2sp": 'if redis.call("get",KEYS[1]) == ARGV[1] then return '
                      'redis.call("del",KEYS[1]) else  return 0 end',
    "classic_sq": "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
                  "else return 0 end",
    "classic_sq_nosp": "if redis.call('get',KEYS[1]) == ARGV[1] then return "
                       "redis.call('del',KEYS[1]) else return 0 end",
    "classic_docs": 'if redis.call("get",KEYS[1]) == ARGV[1]\nthen\n    return '
                    'redis.call("del",KEYS[1])\nelse\n    return 0\nend',
}
CLASSIC_TEXTS["classic_docs_nl"] = CLASSIC_TEXTS["classic_docs"] + "\n"

# Redisson's acquire and watchdog renewal as seed 004 quotes them (RedissonLock.java of the 3.1x
# releases): one line each, the Java string pieces joined.
SEED_TEXTS = {
    "redisson_acquire_3x": (
        "if (redis.call('exists', KEYS[1]) == 0) then "
        "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
        "redis.call('pexpire', KEYS[1], ARGV[1]); "
        "return nil; "
        "end; "
        "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then "
        "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
        "redis.call('pexpire', KEYS[1], ARGV[1]); "
        "return nil; "
        "end; "
        "return redis.call('pttl', KEYS[1]);"),
    "redisson_renew_one": (
        "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then "
        "redis.call('pexpire', KEYS[1], ARGV[1]); "
        "return 1; "
        "end; "
        "return 0;"),
}

# Reads the npm packages' script texts (tests/js/node_modules) with node.
NODE_READER = r"""
const fs = require('fs');
const path = require('path');
const out = {};
function tryRead(name, fn) { try { out[name] = fn(); } catch (e) {} }
const nm = process.argv[1];
tryRead('redlock5', () => {
  const Redlock = require(path.join(nm, 'redlock')).default;
  const r = new Redlock([{}]);
  return {acquire: r.scripts.acquireScript.value, extend: r.scripts.extendScript.value,
          release: r.scripts.releaseScript.value};
});
tryRead('redlock4', () => {
  const Redlock = require(path.join(nm, 'redlock4'));
  const r = new Redlock([{}]);
  return {acquire: r.scripts.lockScript.value, extend: r.scripts.extendScript.value,
          release: r.scripts.unlockScript.value};
});
tryRead('sesame', () => {
  const s = require(path.join(nm, '@sesamecare-oss/redlock/build/scripts.js'));
  const got = {};
  s.ensureCommands({defineCommand(name, o) { got[name] = o.lua; }});
  return {acquire: got.acquireLock, extend: got.extendLock, release: got.releaseLock};
});
tryRead('semaphore', () => {
  const lib = path.join(nm, 'redis-semaphore/lib/mutex');
  const grab = f => fs.readFileSync(path.join(lib, f), 'utf8').match(/createEval\)\(`([\s\S]*?)`, 1\)/)[1];
  return {refresh: grab('refresh.js'), release: grab('release.js')};
});
tryRead('sem', () => {
  const lib = path.join(nm, 'redis-semaphore/lib/semaphore');
  const grab = f => fs.readFileSync(path.join(lib, f), 'utf8').match(/createEval\)\(`([\s\S]*?)`, 1\)/)[1];
  return {acquire: grab('acquire/lua.js'), refresh: grab('refresh/lua.js')};
});
tryRead('msem', () => {
  const lib = path.join(nm, 'redis-semaphore/lib/multiSemaphore');
  const grab = f => fs.readFileSync(path.join(lib, f), 'utf8').match(/createEval\)\(`([\s\S]*?)`, 1\)/)[1];
  return {acquire: grab('acquire/lua.js'), refresh: grab('refresh/lua.js'),
          release: grab('release/lua.js')};
});
process.stdout.write(JSON.stringify(out));
"""

_TEXTS = None


def _load_texts():
    texts = dict(CLASSIC_TEXTS)
    texts.update(SEED_TEXTS)
    texts.update(redisson_texts.TEXTS)
    try:
        from redis.lock import Lock  # Debian's python3-redis
        texts["py_release"] = Lock.LUA_RELEASE_SCRIPT
        texts["py_extend"] = Lock.LUA_EXTEND_SCRIPT
        texts["py_reacquire"] = Lock.LUA_REACQUIRE_SCRIPT
    except ImportError:
        pass
    node = shutil.which("node")
    node_modules = os.path.join(JS_DIR, "node_modules")
    if node and os.path.isdir(node_modules):
        try:
            got = json.loads(subprocess.run([node, "-e", NODE_READER, node_modules],
                                            capture_output=True, text=True, timeout=60).stdout)
        except (OSError, ValueError, subprocess.SubprocessError):
            got = {}
        for pkg, scripts in got.items():
            for op, text in scripts.items():
                texts["%s_%s" % (pkg, op)] = text
    folder = os.environ.get("DEADBOLT_SCRIPT_TEXTS")
    if folder:
        for name, sha in SHAS.items():
            path = os.path.join(folder, sha + ".lua")
            if name not in texts and os.path.exists(path):
                with open(path, encoding="utf-8", newline="") as f:
                    texts[name] = f.read()
    return texts


def texts():
    global _TEXTS
    if _TEXTS is None:
        _TEXTS = _load_texts()
    return _TEXTS


def sha(name):
    return SHAS[name].encode()


def script_error(message, name, line):
    """An error raised inside a script, as Redis 7.0 replies it."""
    if isinstance(message, str):
        message = message.encode()
    return b"-%s script: %s, on @user_script:%d.\r\n" % (message, sha(name), line)


WRONGTYPE_MSG = b"WRONGTYPE Operation against a key holding the wrong kind of value"
NIL_ARG_MSG = b"ERR Lua redis lib command arguments must be strings or integers"
READ_ONLY_MSG = b"ERR Write commands are not allowed from read-only scripts."
NOT_INTEGER_MSG = b"ERR value is not an integer or out of range"
NOSCRIPT = b"-NOSCRIPT No matching script. Please use EVAL.\r\n"


class ScriptCase(harness.ServerTestCase):
    """Loads the scripts a test uses (on Redis: with their text; a script without a text skips
    the test there) and runs them by SHA1."""

    # Scripts whose text is needed on Redis; a test may add its own with need().
    SCRIPTS = ()

    def setUp(self):
        super().setUp()
        self.assertEqual(self.c.cmd("FLUSHALL"), OK)
        self.need(*self.SCRIPTS)

    def need(self, *names):
        for name in names:
            text = texts().get(name)
            if text is None:
                if AGAINST_REDIS:
                    self.skipTest("the text of %s (%s) is not available here: against Redis set "
                                  "DEADBOLT_SCRIPT_TEXTS (or `npm ci` in tests/js)"
                                  % (name, SHAS[name]))
                continue
            # The SHA1 deadbolt knows the script by is the SHA1 of the client's text.
            self.assertEqual(self.c.cmd("SCRIPT", "LOAD", text), bulk(SHAS[name]), name)

    def ev(self, name, keys, args=(), c=None, cmd="EVALSHA"):
        args = [repr(a) if isinstance(a, float) else a for a in args]
        return (c or self.c).cmd(cmd, SHAS[name], len(keys), *keys, *args)

    def check(self, name, keys, args, expected, c=None, cmd="EVALSHA"):
        got = self.ev(name, keys, args, c=c, cmd=cmd)
        what = "%s %s %s %r %r" % (cmd, name, SHAS[name][:8], keys, args)
        if isinstance(expected, range):
            self.assertRegex(got, rb"^:-?\d+\r\n$", what)
            self.assertIn(int(got[1:-2]), expected, what)
        else:
            self.assertEqual(got, expected, what)


# ---------------------------------------------------------------------------------------------
# EVAL / EVALSHA / SCRIPT themselves
# ---------------------------------------------------------------------------------------------

class ScriptCommandTest(ScriptCase):
    SCRIPTS = ("py_release",)

    def test_evalsha_unknown_and_numkeys_errors(self):
        self.assertReplies([
            (("EVALSHA", "abc", "0"), NOSCRIPT),
            (("EVALSHA", "abc", "x"), NOSCRIPT),  # not 40 characters: NOSCRIPT before numkeys
            (("EVALSHA", "a" * 40, "0"), NOSCRIPT),
            (("EVALSHA", "a" * 40, "x"), error("ERR value is not an integer or out of range")),
            (("EVALSHA", "g" * 40, "0", "k"), NOSCRIPT),
            (("EVALSHA", SHAS["py_release"], "x", "k", "t"),
             error("ERR value is not an integer or out of range")),
            (("EVALSHA", SHAS["py_release"], " 1", "k", "t"),
             error("ERR value is not an integer or out of range")),
            (("EVALSHA", SHAS["py_release"], "3", "k", "t"),
             error("ERR Number of keys can't be greater than number of args")),
            (("EVALSHA", SHAS["py_release"], "-1", "k", "t"),
             error("ERR Number of keys can't be negative")),
            (("EVAL", CLASSIC_TEXTS["classic_dq"], "-1"),
             error("ERR Number of keys can't be negative")),
            (("EVAL", CLASSIC_TEXTS["classic_dq"], "2", "k"),
             error("ERR Number of keys can't be greater than number of args")),
            (("EVALSHA",), harness.wrong_args("evalsha")),
            (("EVAL", "x"), harness.wrong_args("eval")),
            (("EVALSHA_RO", SHAS["py_release"]), harness.wrong_args("evalsha_ro")),
        ])

    def test_evalsha_is_case_insensitive(self):
        self.assertEqual(self.c.cmd("SET", "k", "tok"), OK)
        self.assertReply(integer(0), "EVALSHA", SHAS["py_release"].upper(), "1", "k", "other")
        self.assertReply(integer(1), "evalsha", SHAS["py_release"].upper(), "1", "k", "tok")

    def test_script_load_exists(self):
        for name, text in sorted(texts().items()):
            self.assertReply(bulk(SHAS[name]), "SCRIPT", "LOAD", text)
        self.assertReply(b"*4\r\n:1\r\n:1\r\n:0\r\n:0\r\n", "SCRIPT", "EXISTS",
                         SHAS["py_release"], SHAS["py_release"].upper(), "a" * 40, "nope")
        self.assertReply(harness.wrong_args("script|load"), "SCRIPT", "LOAD")
        self.assertReply(harness.wrong_args("script|exists"), "SCRIPT", "EXISTS")
        self.assertReply(harness.wrong_args("script"), "SCRIPT")
        self.assertReply(error("ERR unknown subcommand 'FOO'. Try SCRIPT HELP."), "SCRIPT", "FOO")
        self.assertReply(error("NOTBUSY No scripts in execution right now."), "SCRIPT", "KILL")

    def test_script_flush(self):
        for args in (("SCRIPT", "FLUSH"), ("SCRIPT", "FLUSH", "ASYNC"), ("script", "flush", "sync")):
            self.assertReply(OK, *args)
        for args in (("SCRIPT", "FLUSH", "bad"), ("SCRIPT", "FLUSH", "SYNC", "x")):
            self.assertReply(error("ERR SCRIPT FLUSH only support SYNC|ASYNC option"), *args)
        # After a flush a client sends the text again (EVAL); then EVALSHA works.
        text = texts()["classic_dq"]
        self.assertEqual(self.c.cmd("SET", "k", "tok"), OK)
        self.assertReply(integer(0), "EVAL", text, "1", "k", "other")
        self.assertReply(integer(1), "EVALSHA", SHAS["classic_dq"], "1", "k", "tok")

    def test_script_help(self):
        got = harness.decode(self.c.cmd("SCRIPT", "HELP"))
        self.assertEqual(got[0], b"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
        for sub in (b"EXISTS <sha1> [<sha1> ...]", b"FLUSH [ASYNC|SYNC]", b"KILL", b"LOAD <script>",
                    b"HELP"):
            self.assertIn(sub, got)

    def test_unknown_script_runs_in_lua(self):
        # A script the catalogue does not know (here the classic compare-and-delete with one
        # space more) runs in the embedded Lua, with the same effects as in Redis.
        self.assertReply(OK, "SET", "cad", "tok")
        self.assertReply(integer(0), "EVAL", CLASSIC_TEXTS["classic_dq"] + " ", "1", "cad", "x")
        self.assertReply(integer(1), "EVAL", CLASSIC_TEXTS["classic_dq"] + " ", "1", "cad", "tok")
        self.assertReply(NIL, "GET", "cad")
        self.assertReply(integer(1), "EVAL_RO", "return 1", "0")
        # Unknown SHA1s stay NOSCRIPT until the text is loaded.
        self.assertReply(NOSCRIPT, "EVALSHA", "0" * 40, "0")

    def test_eval_by_text_and_read_only(self):
        text = texts()["py_release"]
        self.assertEqual(self.c.cmd("SET", "k", "tok"), OK)
        self.assertReply(integer(0), "EVAL", text, "1", "k", "other")
        self.assertReply(integer(0), "EVAL_RO", text, "1", "k", "other")
        self.assertReply(script_error(READ_ONLY_MSG, "py_release", 6), "EVAL_RO", text, "1", "k",
                         "tok")
        self.assertReply(script_error(READ_ONLY_MSG, "py_release", 6), "EVALSHA_RO",
                         SHAS["py_release"], "1", "k", "tok")
        self.assertReply(bulk("tok"), "GET", "k")
        self.assertReply(integer(1), "EVAL", text, "1", "k", "tok")
        self.assertReply(NIL, "GET", "k")

    def test_resp3_nil_reply(self):
        self.need("redisson_acquire_3x")
        c3 = self.conn()
        c3.cmd("HELLO", "3")
        self.check("redisson_acquire_3x", ["L"], [30000, "id:1"], NULL3, c=c3)
        self.check("redisson_acquire_3x", ["L"], [30000, "id:2"], range(29000, 30001), c=c3)
        self.check("redisson_acquire_3x", ["L"], [30000, "id:1"], NIL)

    def test_pipeline_and_multi(self):
        """EVALSHA in a pipeline and inside MULTI/EXEC, with keys on both shards."""
        self.need("redlock5_acquire", "redlock5_release")
        a, b = on_shard(0, "m"), on_shard(1, "m")
        c = self.c
        replies = c.pipeline([
            ("SET", "p", "tok"),
            ("EVALSHA", SHAS["py_release"], "1", "p", "tok"),
            ("EVALSHA", SHAS["py_release"], "1", "p", "tok"),
            ("GET", "p"),
        ])
        self.assertEqual(replies, [OK, integer(1), integer(0), NIL])
        self.assertEqual(c.cmd("MULTI"), OK)
        self.assertEqual(self.ev("redlock5_acquire", [a, b], ["v", 10000]), b"+QUEUED\r\n")
        self.assertEqual(self.ev("redlock5_acquire", [b], ["w", 10000]), b"+QUEUED\r\n")
        self.assertEqual(c.cmd("MGET", a, b), b"+QUEUED\r\n")
        self.assertEqual(self.ev("redlock5_release", [a, b], ["v"]), b"+QUEUED\r\n")
        self.assertEqual(c.cmd("EXEC"),
                         b"*4\r\n:2\r\n:0\r\n*2\r\n$1\r\nv\r\n$1\r\nv\r\n:2\r\n")
        self.assertReply(integer(0), "EXISTS", a, b)


# ---------------------------------------------------------------------------------------------
# redis-py Lock
# ---------------------------------------------------------------------------------------------

class RedisPyScriptsTest(ScriptCase):
    SCRIPTS = ("py_release", "py_extend", "py_reacquire")

    def test_release(self):
        self.assertEqual(self.c.cmd("SET", "k", "tok", "PX", 100000), OK)
        self.assertEqual(self.c.cmd("HSET", "h", "f", "v"), integer(1))
        self.check("py_release", ["k"], ["other"], integer(0))
        self.check("py_release", ["k"], [], integer(0))  # ARGV[1] is nil: not equal
        self.check("py_release", ["h"], ["tok"], script_error(WRONGTYPE_MSG, "py_release", 2))
        self.check("py_release", [], ["tok"], script_error(NIL_ARG_MSG, "py_release", 2))
        self.check("py_release", ["k"], ["tok"], integer(1))
        self.check("py_release", ["k"], ["tok"], integer(0))  # gone
        self.check("py_release", ["missing"], ["tok"], integer(0))

    def test_release_after_expiry(self):
        self.assertEqual(self.c.cmd("SET", "k", "tok", "PX", 30), OK)
        time.sleep(0.1)
        self.check("py_release", ["k"], ["tok"], integer(0))

    def test_extend(self):
        self.assertEqual(self.c.cmd("SET", "k", "tok", "PX", 5000), OK)
        self.assertEqual(self.c.cmd("SET", "p", "tok"), OK)  # no TTL: never extended
        self.assertEqual(self.c.cmd("HSET", "h", "f", "v"), integer(1))
        self.check("py_extend", ["k"], ["other", 1000, "0"], integer(0))
        self.check("py_extend", ["k"], ["tok", 10000, "0"], integer(1))  # added to the TTL
        self.assertTTL("k", 14000, 15000, cmd="PTTL")
        self.check("py_extend", ["k"], ["tok", 20000, "1"], integer(1))  # replaces it
        self.assertTTL("k", 19000, 20000, cmd="PTTL")
        self.check("py_extend", ["k"], ["tok", " 0x10", "0"], integer(1))  # Lua reads it: 16
        self.assertTTL("k", 19000, 20016, cmd="PTTL")
        self.check("py_extend", ["p"], ["tok", 1000, "1"], integer(0))
        self.assertReply(integer(-1), "PTTL", "p")
        self.check("py_extend", ["missing"], ["tok", 1000, "1"], integer(0))
        self.check("py_extend", ["h"], ["tok", 1000, "1"],
                   script_error(WRONGTYPE_MSG, "py_extend", 2))
        self.check("py_extend", ["k"], ["tok", "abc", "0"], script_error(
            b"ERR user_script:16: attempt to perform arithmetic on field '?' (a string value)",
            "py_extend", 16))
        self.check("py_extend", ["k"], ["tok", "abc", "1"],
                   script_error(NOT_INTEGER_MSG, "py_extend", 18))
        self.check("py_extend", ["k"], ["tok", "1.5", "0"],
                   script_error(NOT_INTEGER_MSG, "py_extend", 18))
        self.check("py_extend", ["k"], ["tok", "9223372036854775807", "1"], script_error(
            b"ERR invalid expire time in 'pexpire' command", "py_extend", 18))
        self.check("py_extend", ["k"], ["tok"], script_error(NIL_ARG_MSG, "py_extend", 18))
        self.check("py_extend", ["k"], ["tok", 1000, "1"],
                   script_error(READ_ONLY_MSG, "py_extend", 18), cmd="EVALSHA_RO")
        self.assertTTL("k", 19000, 20016, cmd="PTTL")

    def test_reacquire(self):
        self.assertEqual(self.c.cmd("SET", "k", "tok", "PX", 1000), OK)
        self.check("py_reacquire", ["k"], ["other", 50000], integer(0))
        self.check("py_reacquire", ["k"], ["tok", 50000], integer(1))
        self.assertTTL("k", 49000, 50000, cmd="PTTL")
        self.check("py_reacquire", ["k"], ["tok", -1], integer(1))  # a past time deletes it
        self.assertReply(integer(0), "EXISTS", "k")
        self.check("py_reacquire", ["k"], ["tok", 1000], integer(0))


# ---------------------------------------------------------------------------------------------
# The classic compare-and-delete, redsync's older delete, redis-semaphore
# ---------------------------------------------------------------------------------------------

class CompareAndDeleteTest(ScriptCase):
    # name -> (line of GET, line of DEL)
    FORMS = {"classic_dq": (1, 1), "classic_dq_2sp": (1, 1), "classic_sq": (1, 1),
             "classic_sq_nosp": (1, 1), "classic_docs": (1, 3), "classic_docs_nl": (1, 3),
             "semaphore_release": (5, 6), "redsync_delete_old": (2, 3)}

    def test_every_form(self):
        for name, (get_line, del_line) in self.FORMS.items():
            with self.subTest(name):
                if name not in texts() and AGAINST_REDIS:
                    continue  # see need()
                self.need(name)
                self.assertEqual(self.c.cmd("SET", "k", "tok"), OK)
                self.assertEqual(self.c.cmd("HSET", "h", "f", "v"), integer(1))
                self.check(name, ["k"], ["other"], integer(0))
                self.check(name, ["k"], [], integer(0))
                self.check(name, ["k"], ["tok"], script_error(READ_ONLY_MSG, name, del_line),
                           cmd="EVALSHA_RO")
                self.check(name, ["h"], ["tok"], script_error(WRONGTYPE_MSG, name, get_line))
                self.check(name, [], ["tok"], script_error(NIL_ARG_MSG, name, get_line))
                self.check(name, ["k"], ["tok"], integer(1))
                self.check(name, ["k"], ["tok"], integer(0))
                self.assertEqual(self.c.cmd("DEL", "h"), integer(1))

    def test_semaphore_refresh(self):
        self.need("semaphore_refresh")
        self.assertEqual(self.c.cmd("SET", "m", "id1", "PX", 1000), OK)
        self.assertEqual(self.c.cmd("HSET", "h", "f", "v"), integer(1))
        self.check("semaphore_refresh", ["m"], ["id2", 60000], integer(0))
        self.check("semaphore_refresh", ["m"], ["id1", 60000], integer(1))
        self.assertTTL("m", 59000, 60000, cmd="PTTL")
        self.check("semaphore_refresh", ["gone"], ["id1", 60000], integer(0))
        self.check("semaphore_refresh", ["h"], ["id1", 60000],
                   script_error(WRONGTYPE_MSG, "semaphore_refresh", 6))
        self.check("semaphore_refresh", ["m"], ["id1", "x"],
                   script_error(NOT_INTEGER_MSG, "semaphore_refresh", 9))
        self.check("semaphore_refresh", ["m"], ["id1"],
                   script_error(NIL_ARG_MSG, "semaphore_refresh", 9))


def zrange_reply(*pairs):
    """ZRANGE ... WITHSCORES in RESP2: member, score, ..."""
    return b"*%d\r\n" % (2 * len(pairs)) + b"".join(bulk(m) + bulk(str(sc)) for m, sc in pairs)


def lua_error(line, message, name):
    """An error of Lua itself (arithmetic, comparison, concatenation) inside a script."""
    return script_error(b"ERR user_script:%d: %s" % (line, message.encode()), name, line)


class SemaphoreScriptsTest(ScriptCase):
    """redis-semaphore's Semaphore and MultiSemaphore: a sorted set of holder -> time of its
    last acquire or refresh (the client's clock, ARGV); holders older than the lock timeout are
    dropped first. KEYS and ARGV as the client sends them."""

    SCRIPTS = ("sem_acquire", "sem_refresh", "msem_acquire", "msem_refresh", "msem_release")
    KEY = "semaphore:s"

    def test_semaphore_acquire_refresh_release(self):
        k = self.KEY
        self.check("sem_acquire", [k], [2, "id1", 500, 1000], integer(1))
        self.assertTTL(k, 400, 500, cmd="PTTL")
        self.check("sem_acquire", [k], [2, "id2", 500, 1001], integer(1))
        self.check("sem_acquire", [k], [2, "id3", 500, 1002], integer(0))  # full
        self.assertReply(zrange_reply(("id1", 1000), ("id2", 1001)), "ZRANGE", k, 0, -1,
                         "WITHSCORES")
        self.check("sem_refresh", [k], [2, "id1", 500, 1400], integer(1))
        self.check("sem_refresh", [k], [2, "id3", 500, 1400], integer(0))  # not a holder
        # id2's time (1001) is older than now - lockTimeout: it has expired and makes room.
        self.check("sem_acquire", [k], [2, "id3", 500, 1600], integer(1))
        self.assertReply(zrange_reply(("id1", 1400), ("id3", 1600)), "ZRANGE", k, 0, -1,
                         "WITHSCORES")
        self.check("sem_refresh", [k], [2, "id2", 500, 1600], integer(0))
        self.assertReply(integer(1), "ZREM", k, "id1")  # Semaphore's release
        self.check("sem_acquire", [k], ["0x2", "id4", " 500 ", "1.6e3"], integer(1))
        self.check("sem_acquire", [k], [2.5, "id5", 500, 1600], integer(1))  # 2 < 2.5
        self.check("sem_acquire", [k], ["nan", "id6", 500, 1600], integer(0))
        self.assertReply(integer(3), "ZCARD", k)
        # A lock timeout of 0: added, then PEXPIRE 0 removes the key.
        self.check("sem_acquire", ["z"], [2, "id", 0, 1000], integer(1))
        self.assertReply(integer(0), "EXISTS", "z")

    def test_semaphore_errors(self):
        k = self.KEY
        self.assertEqual(self.c.cmd("SET", "str", "v"), OK)
        for name in ("sem_acquire", "sem_refresh"):
            with self.subTest(name):
                self.check(name, [k], [2, "id"], lua_error(
                    7, "attempt to perform arithmetic on local 'now' (a nil value)", name))
                self.check(name, [k], [2, "id", 500, "abc"], lua_error(
                    7, "attempt to perform arithmetic on local 'now' (a nil value)", name))
                self.check(name, [k], [2, "id", "x", 1000], lua_error(
                    7, "attempt to perform arithmetic on local 'lockTimeout' (a nil value)", name))
                self.check(name, [], [2, "id", 500, 1000], script_error(NIL_ARG_MSG, name, 9))
                self.check(name, ["str"], [2, "id", 500, 1000],
                           script_error(WRONGTYPE_MSG, name, 9))
                self.check(name, [k], [2, "id", 500, 1000], script_error(READ_ONLY_MSG, name, 9),
                           cmd="EVALSHA_RO")
                self.check(name, [k], [2, "id", 500, "nan"],
                           script_error(b"ERR min or max is not a float", name, 9))
        self.check("sem_acquire", [k], ["", "id", 500, 1000],
                   lua_error(11, "attempt to compare number with nil", "sem_acquire"))
        self.check("sem_refresh", [k], ["", "id", 500, 1000], integer(0))
        # The member is added before PEXPIRE fails; it stays.
        self.check("sem_acquire", [k], [2, "id", 1.5, 1000],
                   script_error(NOT_INTEGER_MSG, "sem_acquire", 13))
        self.assertReply(zrange_reply(("id", 1000)), "ZRANGE", k, 0, -1, "WITHSCORES")
        self.check("sem_refresh", [k], ["", "id", 1.5, 1001],
                   script_error(NOT_INTEGER_MSG, "sem_refresh", 13))
        self.assertReply(zrange_reply(("id", 1001)), "ZRANGE", k, 0, -1, "WITHSCORES")
        self.check("sem_acquire", [k], [2, "id2", 1.5, 1e20],
                   script_error(NOT_INTEGER_MSG, "sem_acquire", 13))
        self.assertReply(zrange_reply(("id2", "1e+20")), "ZRANGE", k, 0, -1, "WITHSCORES")
        self.assertReply(integer(-1), "PTTL", k)

    def test_multi_semaphore(self):
        k = self.KEY
        self.check("msem_acquire", [k], [5, 2, "a", 500, 1000], integer(1))
        self.assertTTL(k, 400, 500, cmd="PTTL")
        self.check("msem_acquire", [k], [5, 3, "b", 500, 1001], integer(1))
        self.check("msem_acquire", [k], [5, 1, "c", 500, 1002], integer(0))  # 5 + 1 > 5
        self.assertReply(zrange_reply(("a_0", 1000), ("a_1", 1000), ("b_0", 1001), ("b_1", 1001),
                                      ("b_2", 1001)), "ZRANGE", k, 0, -1, "WITHSCORES")
        self.check("msem_refresh", [k], [5, 2, "a", 500, 1300], integer(1))
        self.check("msem_refresh", [k], [5, 1, "c", 500, 1300], integer(0))
        self.check("msem_release", [k], [3, "b"], integer(3))
        self.check("msem_release", [k], [3, "b"], integer(0))
        self.check("msem_release", [k], [5, "a"], integer(2))  # only a_0 and a_1 exist
        self.assertReply(integer(0), "EXISTS", k)
        # Fractional permits: the loop runs floor(permits) times.
        self.check("msem_acquire", [k], [5, 1.5, "d", 500, 2000], integer(1))
        self.check("msem_refresh", [k], [5, 2.9, "d", 500, 2100], integer(1))  # adds d_1
        self.assertReply(zrange_reply(("d_0", 2100), ("d_1", 2100)), "ZRANGE", k, 0, -1,
                         "WITHSCORES")
        # Expired holders make room: d's 2100 < 2700 - 500.
        self.check("msem_acquire", [k], [5, 5, "e", 500, 2700], integer(1))
        self.assertReply(integer(5), "ZCARD", k)
        self.check("msem_refresh", [k], [5, 2, "d", 500, 2700], integer(0))
        self.check("msem_acquire", [k], [9000, 3999.5, "big", 500, 2700], integer(1))
        self.assertReply(integer(4004), "ZCARD", k)
        self.check("msem_release", [k], [7999, "big"], integer(3999))

    def test_multi_semaphore_errors(self):
        k = self.KEY
        self.assertEqual(self.c.cmd("SET", "str", "v"), OK)
        for name in ("msem_acquire", "msem_refresh"):
            with self.subTest(name):
                self.check(name, [k], [5, 2, "a", 500], lua_error(
                    8, "attempt to perform arithmetic on local 'now' (a nil value)", name))
                self.check(name, [k], [5, 2, "a", "x", 1000], lua_error(
                    8, "attempt to perform arithmetic on local 'lockTimeout' (a nil value)", name))
                self.check(name, [], [5, 2, "a", 500, 1000], script_error(NIL_ARG_MSG, name, 11))
                self.check(name, ["str"], [5, 2, "a", 500, 1000],
                           script_error(WRONGTYPE_MSG, name, 11))
                self.check(name, [k], [5, 2, "a", 500, 1000],
                           script_error(READ_ONLY_MSG, name, 11), cmd="EVALSHA_RO")
        a = "msem_acquire"
        self.check(a, [k], [5, "", "a", 500, 1000], lua_error(
            13, "attempt to perform arithmetic on local 'permits' (a nil value)", a))
        self.check(a, [k], ["", 2, "a", 500, 1000],
                   lua_error(13, "attempt to compare number with nil", a))
        self.check(a, [k], [5, 0.5, "a", 500, 1000], script_error(
            b"ERR Wrong number of args calling Redis command from script", a, 18))
        self.check(a, [k], [5, -1, "a", 500, 1000], script_error(
            b"ERR Wrong number of args calling Redis command from script", a, 18))
        self.check(a, [k], [9000, 4000, "a", 500, 1000],
                   lua_error(18, "too many results to unpack", a))
        self.check(a, [k], [5, "nan", "a", 500, 1000], integer(0))
        self.assertReply(integer(0), "EXISTS", k)
        self.check(a, [k], [5, 1, "a", 500.5, 1000], script_error(NOT_INTEGER_MSG, a, 19))
        self.assertReply(zrange_reply(("a_0", 1000)), "ZRANGE", k, 0, -1, "WITHSCORES")
        r = "msem_refresh"
        self.check(r, [k], [5, "", "a", 500, 1000], lua_error(
            14, "attempt to perform arithmetic on local 'permits' (a nil value)", r))
        self.check(r, [k], [5, "", "zz", 500, 1000], integer(0))
        self.check(r, [k], [5, 0, "a", 500, 1000], script_error(
            b"ERR Wrong number of args calling Redis command from script", r, 18))
        self.check(r, [k], [5, 4000, "a", 500, 1000],
                   lua_error(18, "too many results to unpack", r))
        rel = "msem_release"
        self.check(rel, [k], ["", "a"], lua_error(
            7, "attempt to perform arithmetic on local 'permits' (a nil value)", rel))
        self.check(rel, [k], [2], lua_error(
            8, "attempt to concatenate local 'identifier' (a nil value)", rel))
        self.check(rel, [k], [0, "a"], script_error(
            b"ERR Wrong number of args calling Redis command from script", rel, 11))
        self.check(rel, [k], [0], script_error(
            b"ERR Wrong number of args calling Redis command from script", rel, 11))
        self.check(rel, [k], [8000, "a"], lua_error(11, "too many results to unpack", rel))
        self.check(rel, ["str"], [1, "a"], script_error(WRONGTYPE_MSG, rel, 11))
        self.check(rel, [], [1, "a"], script_error(NIL_ARG_MSG, rel, 11))
        self.check(rel, [k], [1, "a"], script_error(READ_ONLY_MSG, rel, 11), cmd="EVALSHA_RO")
        self.check(rel, [k], [1, "a"], integer(1))


# ---------------------------------------------------------------------------------------------
# go-redsync v4
# ---------------------------------------------------------------------------------------------

class RedsyncScriptsTest(ScriptCase):
    SCRIPTS = ("redsync_delete", "redsync_touch", "redsync_touch_nx")

    def test_delete(self):
        self.assertEqual(self.c.cmd("SET", "k", "tok", "EX", 8), OK)
        self.assertEqual(self.c.cmd("HSET", "h", "f", "v"), integer(1))
        self.check("redsync_delete", ["k"], ["other"], integer(0))
        self.check("redsync_delete", ["missing"], ["tok"], integer(-1))
        self.check("redsync_delete", ["missing"], [], integer(-1))
        self.check("redsync_delete", ["h"], ["tok"], script_error(WRONGTYPE_MSG, "redsync_delete", 2))
        self.check("redsync_delete", ["k"], ["tok"], script_error(READ_ONLY_MSG, "redsync_delete", 4),
                   cmd="EVALSHA_RO")
        self.check("redsync_delete", ["k"], ["tok"], integer(1))
        self.check("redsync_delete", ["k"], ["tok"], integer(-1))

    def test_touch(self):
        self.assertEqual(self.c.cmd("SET", "k", "tok", "EX", 8), OK)
        self.check("redsync_touch", ["k"], ["other", 30000], integer(0))
        self.check("redsync_touch", ["k"], ["tok", 30000], integer(1))
        self.assertTTL("k", 29000, 30000, cmd="PTTL")
        self.check("redsync_touch", ["missing"], ["tok", 30000], integer(0))
        self.check("redsync_touch", ["k"], ["tok", "x"],
                   script_error(NOT_INTEGER_MSG, "redsync_touch", 3))

    def test_touch_with_set_nx(self):
        self.assertEqual(self.c.cmd("SET", "k", "tok", "EX", 8), OK)
        self.check("redsync_touch_nx", ["k"], ["tok", 30000], integer(1))
        self.assertTTL("k", 29000, 30000, cmd="PTTL")
        self.check("redsync_touch_nx", ["k"], ["other", 30000], integer(0))  # SET NX fails
        self.check("redsync_touch_nx", ["new"], ["mine", 20000], integer(1))  # SET NX takes it
        self.assertReply(bulk("mine"), "GET", "new")
        self.assertTTL("new", 19000, 20000, cmd="PTTL")
        self.check("redsync_touch_nx", ["n2"], ["mine", 0], script_error(
            b"ERR invalid expire time in 'set' command", "redsync_touch_nx", 4))
        self.check("redsync_touch_nx", ["n2"], ["mine"],
                   script_error(NIL_ARG_MSG, "redsync_touch_nx", 4))
        self.check("redsync_touch_nx", ["n2"], ["mine", 1000],
                   script_error(READ_ONLY_MSG, "redsync_touch_nx", 4), cmd="EVALSHA_RO")
        self.assertReply(integer(0), "EXISTS", "n2")


# ---------------------------------------------------------------------------------------------
# Redisson RLock
# ---------------------------------------------------------------------------------------------

LOCK = "{lk}"  # the lock key; the channel and latch keys share its slot, as Redisson names them
CHANNEL = "redisson_lock__channel:{lk}"


def latch(n):
    return "redisson_unlock_latch:{lk}:req%d" % n


class RedissonScriptsTest(ScriptCase):
    def acquire_scenario(self, name):
        self.need(name)
        self.assertEqual(self.c.cmd("SET", "s", "v"), OK)
        self.check(name, [LOCK], [30000, "id:1"], NIL)
        self.assertReply(b"*2\r\n$4\r\nid:1\r\n$1\r\n1\r\n", "HGETALL", LOCK)
        self.assertTTL(LOCK, 29000, 30000, cmd="PTTL")
        self.check(name, [LOCK], [60000, "id:1"], NIL)  # re-entry: count 2, new lease
        self.assertReply(bulk("2"), "HGET", LOCK, "id:1")
        self.assertTTL(LOCK, 59000, 60000, cmd="PTTL")
        self.check(name, [LOCK], [30000, "id:2"], range(58000, 60001))  # held: its PTTL
        self.check(name, ["s"], [30000, "id:1"], script_error(WRONGTYPE_MSG, name, 1))
        self.check(name, ["s"], [], script_error(NIL_ARG_MSG, name, 1))
        self.check(name, ["n"], [30000], script_error(NIL_ARG_MSG, name, 1))
        self.check(name, ["n"], [30000, "id:1"], script_error(READ_ONLY_MSG, name, 1),
                   cmd="EVALSHA_RO")
        # The count is written before PEXPIRE fails, and stays (no rollback in Redis).
        self.check(name, ["n"], ["abc", "id:1"], script_error(NOT_INTEGER_MSG, name, 1))
        self.assertReply(bulk("1"), "HGET", "n", "id:1")
        self.assertReply(integer(-1), "PTTL", "n")
        self.check(name, ["n"], [30000, "id:2"], integer(-1))  # held without a TTL
        self.assertEqual(self.c.cmd("HSET", "n", "id:1", "x"), integer(0))
        self.check(name, ["n"], [30000, "id:1"],
                   script_error(b"ERR hash value is not an integer", name, 1))
        self.assertEqual(self.c.cmd("HSET", "n", "id:1", "9223372036854775807"), integer(0))
        self.check(name, ["n"], [30000, "id:1"],
                   script_error(b"ERR increment or decrement would overflow", name, 1))
        self.check(name, ["n"], [0, "id:3"], integer(-1))

    def test_acquire_3x(self):
        self.acquire_scenario("redisson_acquire_3x")

    def test_acquire_4x(self):
        self.acquire_scenario("redisson_acquire")

    def test_acquire_hset(self):
        self.acquire_scenario("redisson_acquire_hset")

    def test_renew_one(self):
        self.need("redisson_renew_one")
        self.assertEqual(self.c.cmd("HSET", LOCK, "id:1", "1"), integer(1))
        self.assertEqual(self.c.cmd("SET", "s", "v"), OK)
        self.check("redisson_renew_one", [LOCK], [30000, "id:1"], integer(1))
        self.assertTTL(LOCK, 29000, 30000, cmd="PTTL")
        self.check("redisson_renew_one", [LOCK], [30000, "id:2"], integer(0))
        self.check("redisson_renew_one", ["s"], [30000, "id:1"],
                   script_error(WRONGTYPE_MSG, "redisson_renew_one", 1))
        self.check("redisson_renew_one", [LOCK], ["abc", "id:1"],
                   script_error(NOT_INTEGER_MSG, "redisson_renew_one", 1))
        self.check("redisson_renew_one", [LOCK], ["9223372036854775807", "id:1"], script_error(
            b"ERR invalid expire time in 'pexpire' command", "redisson_renew_one", 1))
        self.check("redisson_renew_one", [LOCK], [30000],
                   script_error(NIL_ARG_MSG, "redisson_renew_one", 1))

    def release_scenario(self, name, latch_key, command_arg):
        """The release forms; latch_key: KEYS[3] is the unlock latch; command_arg: ARGV[4]
        names the publish command."""
        self.need(name)
        n = [0]

        def keys():
            n[0] += 1
            return [LOCK, CHANNEL, latch(n[0])] if latch_key else [LOCK, CHANNEL]

        args = ["0", 30000, "id:1", "publish", 1000]
        self.assertEqual(self.c.cmd("HSET", LOCK, "id:1", "2"), integer(1))
        self.check(name, keys(), args, integer(0))  # count 2 -> 1: PEXPIRE
        self.assertTTL(LOCK, 29000, 30000, cmd="PTTL")
        if latch_key:
            self.assertReply(bulk("0"), "GET", latch(n[0]))
            self.assertTTL(latch(n[0]), 900, 1000, cmd="PTTL")
            # A retried unlock with the same request id reads the latch: same reply, no change.
            self.check(name, [LOCK, CHANNEL, latch(n[0])], args, integer(0))
            self.assertReply(bulk("1"), "HGET", LOCK, "id:1")
        self.check(name, keys(), ["0", 30000, "id:2", "publish", 1000], NIL)  # not the holder
        self.check(name, keys(), args, integer(1))  # count 1 -> 0: DEL and publish
        self.assertReply(integer(0), "EXISTS", LOCK)
        if latch_key:
            self.assertReply(bulk("1"), "GET", latch(n[0]))
        self.check(name, keys(), args, NIL)
        # Errors, and what stays done before them.
        self.assertEqual(self.c.cmd("SET", "{lk}s", "v"), OK)
        bad = ["{lk}s", CHANNEL, latch(99)] if latch_key else ["{lk}s", CHANNEL]
        self.check(name, bad, args, script_error(WRONGTYPE_MSG, name, 1))
        self.assertEqual(self.c.cmd("HSET", LOCK, "id:1", "x"), integer(1))
        self.check(name, keys(), args, script_error(b"ERR hash value is not an integer", name, 1))
        self.assertEqual(self.c.cmd("HSET", LOCK, "id:1", "2"), integer(0))
        self.check(name, keys(), ["0", "bad", "id:1", "publish", 1000],
                   script_error(NOT_INTEGER_MSG, name, 1))
        self.assertReply(bulk("1"), "HGET", LOCK, "id:1")  # decremented before PEXPIRE failed
        self.check(name, keys(), args, script_error(READ_ONLY_MSG, name, 1), cmd="EVALSHA_RO")
        if command_arg:
            self.check(name, keys(), ["0", 30000, "id:1", "nosuch", 1000],
                       script_error(b"ERR Unknown Redis command called from script", name, 1))
            self.assertReply(integer(0), "EXISTS", LOCK)  # deleted before the call failed
        self.c.cmd("DEL", LOCK)
        if latch_key:
            self.assertEqual(self.c.cmd("HSET", LOCK, "id:1", "1"), integer(1))
            self.check(name, keys(), ["0", 30000, "id:1", "publish", "bad"],
                       script_error(NOT_INTEGER_MSG, name, 1))
            self.assertReply(integer(0), "EXISTS", LOCK)
            # A latch holding something else: tonumber() of it.
            for value, reply in (("1.9", integer(1)), ("-2.5", integer(-2)), (" 7 ", integer(7)),
                                 ("0x10", integer(16)), ("1e3", integer(1000)), ("abc", NIL),
                                 ("inf", integer(-(1 << 63)))):
                self.assertEqual(self.c.cmd("SET", latch(500), value), OK)
                self.check(name, [LOCK, CHANNEL, latch(500)], args, reply)
            self.check(name, [LOCK, CHANNEL], args, script_error(NIL_ARG_MSG, name, 1))
        else:
            self.assertEqual(self.c.cmd("HSET", LOCK, "id:1", "1"), integer(1))
            # The lock is deleted before PUBLISH fails for want of a channel.
            self.check(name, [LOCK], args, script_error(NIL_ARG_MSG, name, 1))
            self.assertReply(integer(0), "EXISTS", LOCK)

    def test_release_4x(self):
        self.release_scenario("redisson_release", latch_key=True, command_arg=True)

    def test_release_publish_command_argument(self):
        self.release_scenario("redisson_release_cmd", latch_key=False, command_arg=True)

    def test_release_publish(self):
        self.release_scenario("redisson_release_publish", latch_key=False, command_arg=False)

    def test_release_publishes_to_waiters(self):
        self.need("redisson_acquire", "redisson_release")
        sub = self.conn()
        self.assertEqual(sub.cmd("SUBSCRIBE", CHANNEL),
                         b"*3\r\n$9\r\nsubscribe\r\n" + bulk(CHANNEL) + b":1\r\n")
        ssub = self.conn()
        self.assertEqual(ssub.cmd("SSUBSCRIBE", CHANNEL),
                         b"*3\r\n$10\r\nssubscribe\r\n" + bulk(CHANNEL) + b":1\r\n")
        self.check("redisson_acquire", [LOCK], [30000, "id:1"], NIL)
        self.check("redisson_release", [LOCK, CHANNEL, latch(1)],
                   ["0", 30000, "id:1", "publish", 1000], integer(1))
        self.assertEqual(sub.read_reply(),
                         b"*3\r\n$7\r\nmessage\r\n" + bulk(CHANNEL) + bulk("0"))
        self.check("redisson_acquire", [LOCK], [30000, "id:1"], NIL)
        self.check("redisson_release", [LOCK, CHANNEL, latch(2)],
                   ["0", 30000, "id:1", "spublish", 1000], integer(1))
        self.assertEqual(ssub.read_reply(),
                         b"*3\r\n$8\r\nsmessage\r\n" + bulk(CHANNEL) + bulk("0"))

    def test_renew_many_locks_on_both_shards(self):
        """Redisson's watchdog renews up to 100 unrelated locks in one call."""
        self.need("redisson_renew")
        locks = ["rl:%d" % i for i in range(100)]
        self.assertEqual({shard_of(k) for k in locks}, {0, 1})
        held = [i for i in range(100) if i % 3 != 0]
        for i in held:
            self.assertEqual(self.c.cmd("HSET", locks[i], "id:%d" % i, "1"), integer(1))
        fields = ["id:%d" % i for i in range(100)]
        expected = b"*100\r\n" + b"".join(integer(1 if i in held else 0) for i in range(100))
        self.check("redisson_renew", locks, [30000] + fields, expected)
        for i in (1, 2, 98):
            self.assertTTL(locks[i], 29000, 30000, cmd="PTTL")
        self.assertReply(integer(-2), "PTTL", locks[0])
        # Another owner's field: 0, and no TTL change.
        wrong = list(fields)
        wrong[1] = "id:other"
        self.assertEqual(self.c.cmd("PERSIST", locks[1]), integer(1))
        got = harness.decode(self.ev("redisson_renew", locks, [40000] + wrong))
        self.assertEqual(got[:3], [0, 0, 1])
        self.assertReply(integer(-1), "PTTL", locks[1])
        self.assertTTL(locks[2], 39000, 40000, cmd="PTTL")
        # A key of the wrong type in the middle: the script fails there; the locks before it were
        # renewed, the ones after it were not.
        self.assertEqual(self.c.cmd("DEL", locks[50]), integer(1))
        self.assertEqual(self.c.cmd("SET", locks[50], "str"), OK)
        self.check("redisson_renew", locks, [50000] + fields,
                   script_error(WRONGTYPE_MSG, "redisson_renew", 1))
        self.assertTTL(locks[49], 49000, 50000, cmd="PTTL")
        self.assertTTL(locks[52], 39000, 40000, cmd="PTTL")
        self.assertTTL(locks[98], 39000, 40000, cmd="PTTL")
        self.check("redisson_renew", locks[:52], [30000] + fields[:51],
                   script_error(WRONGTYPE_MSG, "redisson_renew", 1))
        # Missing fields, bad lease, read-only.
        self.check("redisson_renew", locks[:4], [30000, "id:0", "id:1"],
                   script_error(NIL_ARG_MSG, "redisson_renew", 1))
        self.check("redisson_renew", locks[:4], ["abc"] + fields[:4],
                   script_error(NOT_INTEGER_MSG, "redisson_renew", 1))
        self.check("redisson_renew", locks[:4], ["abc", "x", "x", "x", "x"],
                   b"*4\r\n:0\r\n:0\r\n:0\r\n:0\r\n")
        self.check("redisson_renew", locks[:4], [30000] + fields[:4],
                   script_error(READ_ONLY_MSG, "redisson_renew", 1), cmd="EVALSHA_RO")
        self.check("redisson_renew", [], [30000], b"*0\r\n")
        # The same lock twice: the second sees what the first did (PEXPIRE 0 deletes).
        self.check("redisson_renew", [locks[1], locks[4], locks[1]], [0, "id:1", "id:1", "id:1"],
                   b"*3\r\n:1\r\n:0\r\n:0\r\n")

    @unittest.skipIf(AGAINST_REDIS, "Redis (not in cluster mode) runs it; deadbolt keeps a "
                                    "one-shard script to one shard, as a cluster does")
    def test_one_shard_script_across_shards_is_crossslot(self):
        a, b = on_shard(0, "x"), on_shard(1, "x")
        self.check("redisson_release", [a, b, a], ["0", 30000, "id:1", "publish", 1000],
                   b"-CROSSSLOT Keys in request don't hash to the same slot\r\n")


# ---------------------------------------------------------------------------------------------
# Redisson RReadWriteLock, RSemaphore, RCountDownLatch, RSpinLock, RFencedLock (3.3x sources)
# ---------------------------------------------------------------------------------------------

RW = "rw"  # Redisson's key names for lock "rw" all hash to its slot
RW_CHANNEL = "redisson_rwlock:{rw}"


def rw_timeout_prefix(holder):
    return "{rw}:%s:rwlock_timeout" % holder


def rw_latch(n):
    return "redisson_unlock_latch:{rw}:req%d" % n


class RedissonPrimitivesTest(ScriptCase):
    SCRIPTS = tuple(redisson_texts.TEXTS) + ("redisson_acquire_3x",)

    def read_acquire(self, holder, expected, lease=30000):
        self.check("rw_read_acquire", [RW, rw_timeout_prefix(holder)],
                   [lease, holder, holder + ":write"], expected)

    def read_release(self, holder, n, expected):
        self.check("rw_read_release", [RW, RW_CHANNEL, rw_timeout_prefix(holder), "{rw}",
                                       rw_latch(n)], ["0", holder, "publish", 1000], expected)

    def write_acquire(self, holder, expected, lease=30000):
        self.check("rw_write_acquire", [RW], [lease, holder + ":write"], expected)

    def write_release(self, holder, n, expected):
        self.check("rw_write_release", [RW, RW_CHANNEL, rw_latch(n)],
                   ["1", 30000, holder + ":write", "publish", 1000], expected)

    def test_read_write_lock(self):
        sub = self.conn()
        sub.cmd("SUBSCRIBE", RW_CHANNEL)
        self.read_acquire("c1:1", NIL)
        self.assertReply(b"*4\r\n$4\r\nmode\r\n$4\r\nread\r\n$4\r\nc1:1\r\n$1\r\n1\r\n",
                         "HGETALL", RW)
        self.assertReply(bulk("1"), "GET", rw_timeout_prefix("c1:1") + ":1")
        self.assertTTL(rw_timeout_prefix("c1:1") + ":1", 29000, 30000, cmd="PTTL")
        self.assertTTL(RW, 29000, 30000, cmd="PTTL")
        self.read_acquire("c1:1", NIL, lease=10000)  # re-entry: keeps the longer PTTL
        self.assertTTL(RW, 29000, 30000, cmd="PTTL")
        self.assertTTL(rw_timeout_prefix("c1:1") + ":2", 9000, 10000, cmd="PTTL")
        self.read_acquire("c2:1", NIL, lease=40000)  # readers share it
        self.assertTTL(RW, 39000, 40000, cmd="PTTL")
        self.write_acquire("c3:1", range(38000, 40001))  # readers hold it: the PTTL
        self.check("rw_read_is_locked", [RW], [], integer(1))
        # c1 leaves twice; the lock lives on as long as the longest read hold left.
        self.read_release("c1:1", 1, integer(0))
        self.assertReply(integer(0), "EXISTS", rw_timeout_prefix("c1:1") + ":2")
        self.assertReply(bulk("0"), "GET", rw_latch(1))
        self.read_release("c1:1", 1, integer(0))  # a retried unlock: the latch's answer
        self.assertReply(bulk("1"), "HGET", RW, "c1:1")
        self.read_release("c1:1", 2, integer(0))
        self.assertReply(integer(0), "HEXISTS", RW, "c1:1")
        self.assertTTL(RW, 38000, 40000, cmd="PTTL")
        self.read_release("c1:1", 3, NIL)  # no longer a holder
        self.read_release("c2:1", 4, integer(1))  # the last reader: DEL, publish "0"
        self.assertReply(integer(0), "EXISTS", RW)
        self.assertEqual(sub.read_reply(), b"*3\r\n$7\r\nmessage\r\n" + bulk(RW_CHANNEL) + bulk("0"))
        self.read_release("c2:1", 5, integer(1))  # free already: publish again
        # The writer; re-entry adds its lease to the PTTL; its own reads are allowed.
        self.write_acquire("c3:1", NIL)
        self.write_acquire("c3:1", NIL)
        self.assertTTL(RW, 58000, 60000, cmd="PTTL")
        self.assertReply(bulk("2"), "HGET", RW, "c3:1:write")
        self.read_acquire("c3:1", NIL)
        self.read_acquire("c4:1", range(57000, 60001))
        self.write_acquire("c4:1", range(57000, 60001))
        self.check("rw_read_is_locked", [RW], [], integer(1))  # mode write, a read hold too
        self.write_release("c4:1", 6, NIL)
        self.write_release("c3:1", 7, integer(0))
        self.assertTTL(RW, 29000, 30000, cmd="PTTL")
        self.write_release("c3:1", 8, integer(1))  # the read hold stays: mode read
        self.assertReply(b"*4\r\n$4\r\nmode\r\n$4\r\nread\r\n$4\r\nc3:1\r\n$1\r\n1\r\n",
                         "HGETALL", RW)
        self.write_release("c3:1", 9, NIL)  # mode read: not the writer's to release
        # The watchdog renews the hash and each read hold's timeout key.
        self.assertEqual(self.c.cmd("PEXPIRE", rw_timeout_prefix("c3:1") + ":1", 100), integer(1))
        self.check("rw_read_renew", [RW, "{rw}"], [50000, "c3:1"], integer(1))
        self.assertTTL(RW, 49000, 50000, cmd="PTTL")
        self.assertTTL(rw_timeout_prefix("c3:1") + ":1", 49000, 50000, cmd="PTTL")
        self.check("rw_read_renew", [RW, "{rw}"], [50000, "c9:1"], integer(0))
        self.check("rw_write_force_unlock", [RW, RW_CHANNEL], ["1", "publish"], integer(0))
        self.check("rw_read_force_unlock", [RW, RW_CHANNEL], ["0", "publish"], integer(1))
        self.assertReply(integer(0), "EXISTS", RW)
        self.check("rw_read_is_locked", [RW], [], integer(0))
        self.write_release("c3:1", 10, integer(1))  # free: publish "1", latch 1
        self.assertReply(bulk("1"), "GET", rw_latch(10))

    def test_read_release_under_a_write_hold(self):
        """A writer's own read hold: releasing it leaves the write lock (mode write), with the
        reply 0 and the latch 0; then the write release deletes the lock."""
        self.write_acquire("c5:1", NIL)
        self.read_acquire("c5:1", NIL)
        self.read_release("c5:1", 20, integer(0))
        self.assertReply(bulk("0"), "GET", rw_latch(20))
        self.assertReply(b"*4\r\n$4\r\nmode\r\n$5\r\nwrite\r\n$10\r\nc5:1:write\r\n$1\r\n1\r\n",
                         "HGETALL", RW)
        self.write_release("c5:1", 21, integer(1))
        self.assertReply(integer(0), "EXISTS", RW)

    @unittest.skipIf(AGAINST_REDIS, "Redis would loop in the script for hours")
    def test_huge_read_hold_count_is_refused(self):
        self.assertEqual(self.c.cmd("HSET", RW, "mode", "read", "c1:1", "1", "c2:1", "2000000"),
                         integer(3))
        got = self.ev("rw_read_renew", [RW, "{rw}"], [30000, "c1:1"])
        self.assertTrue(got.startswith(b"-ERR deadbolt: a read lock hold count above 1000000"),
                        got)

    def test_read_write_lock_errors(self):
        self.assertEqual(self.c.cmd("SET", RW, "x"), OK)
        for name, keys, args in (
                ("rw_read_acquire", [RW, rw_timeout_prefix("c")], [30000, "c", "c:write"]),
                ("rw_write_acquire", [RW], [30000, "c:write"]),
                ("rw_read_release", [RW, RW_CHANNEL, rw_timeout_prefix("c"), "{rw}", rw_latch(1)],
                 ["0", "c", "publish", 1000]),
                ("rw_write_release", [RW, RW_CHANNEL, rw_latch(1)],
                 ["1", 30000, "c:write", "publish", 1000]),
                ("rw_read_renew", [RW, "{rw}"], [30000, "c"]),
                ("rw_read_is_locked", [RW], [])):
            with self.subTest(name):
                self.check(name, keys, args, script_error(WRONGTYPE_MSG, name, 1))
        self.assertEqual(self.c.cmd("DEL", RW), integer(1))
        self.check("rw_read_acquire", [RW, rw_timeout_prefix("c")], [30000, "c", "c:write"],
                   script_error(READ_ONLY_MSG, "rw_read_acquire", 1), cmd="EVALSHA_RO")
        self.check("rw_read_acquire", [RW], [30000, "c", "c:write"], script_error(
            b"ERR user_script:1: attempt to concatenate field '?' (a nil value)",
            "rw_read_acquire", 1))
        self.assertReply(b"*4\r\n$4\r\nmode\r\n$4\r\nread\r\n$1\r\nc\r\n$1\r\n1\r\n",
                         "HGETALL", RW)  # the HSETs before the failure stay
        self.check("rw_read_acquire", [RW, rw_timeout_prefix("c")], ["x", "c", "c:write"],
                   script_error(b"ERR value is not an integer or out of range",
                                "rw_read_acquire", 1))
        self.check("rw_write_acquire", [RW], [30000, "c:write"], integer(-1))
        self.assertEqual(self.c.cmd("DEL", RW), integer(1))
        self.check("rw_write_acquire", [RW], [30000, "c:write"], NIL)
        self.check("rw_write_acquire", [RW], ["x", "c:write"], script_error(
            b"ERR user_script:1: attempt to perform arithmetic on field '?' (a string value)",
            "rw_write_acquire", 1))
        self.check("rw_write_release", [RW, RW_CHANNEL, rw_latch(2)],
                   ["1", 30000, "c:write", "nosuch", 1000], integer(0))
        self.check("rw_write_release", [RW, RW_CHANNEL, rw_latch(3)],
                   ["1", 30000, "c:write", "nosuch", 1000],
                   script_error(b"ERR Unknown Redis command called from script",
                                "rw_write_release", 1))
        self.assertReply(integer(0), "EXISTS", RW)  # deleted before the call failed

    def test_semaphore(self):
        sem, ch = "sem", "redisson_sc:{sem}"
        sub = self.conn()
        sub.cmd("SUBSCRIBE", ch)
        self.check("sema_try_acquire", [sem], [1], integer(0))  # no permits set
        self.check("sema_drain", [sem], [], integer(0))
        self.check("sema_try_set_permits", [sem, ch], [3, "publish"], integer(1))
        self.assertEqual(sub.read_reply(), b"*3\r\n$7\r\nmessage\r\n" + bulk(ch) + bulk("3"))
        self.check("sema_try_set_permits", [sem, ch], [5, "publish"], integer(0))
        self.check("sema_try_acquire", [sem], [2], integer(1))
        self.check("sema_try_acquire", [sem], [2], integer(0))
        self.assertReply(bulk("1"), "GET", sem)
        self.check("sema_release", [sem, ch], [2, "publish"], NIL)
        self.assertEqual(sub.read_reply(), b"*3\r\n$7\r\nmessage\r\n" + bulk(ch) + bulk("3"))
        self.check("sema_add_permits", [sem, ch], [4, "publish"], NIL)
        self.assertEqual(sub.read_reply(), b"*3\r\n$7\r\nmessage\r\n" + bulk(ch) + bulk("7"))
        self.check("sema_add_permits", [sem, ch], [-10, "publish"], NIL)
        self.assertReply(bulk("-3"), "GET", sem)
        self.check("sema_try_acquire", [sem], [0], integer(0))
        self.check("sema_release", [sem, ch], [5, "publish"], NIL)
        self.check("sema_drain", [sem], [], bulk("2"))
        self.assertReply(bulk("0"), "GET", sem)
        self.check("sema_add_permits", ["sem2", "redisson_sc:{sem2}"], [2, "publish"], NIL)
        self.assertReply(bulk("2"), "GET", "sem2")
        # Errors: Lua's comparison and arithmetic, and the commands' own.
        self.assertEqual(self.c.cmd("SET", sem, "abc"), OK)
        self.check("sema_try_acquire", [sem], [1], script_error(
            b"ERR user_script:1: attempt to compare number with nil", "sema_try_acquire", 1))
        self.check("sema_add_permits", [sem, ch], [1, "publish"], script_error(
            b"ERR user_script:1: attempt to perform arithmetic on local 'value' (a string value)",
            "sema_add_permits", 1))
        self.check("sema_release", [sem, ch], [1, "publish"],
                   script_error(NOT_INTEGER_MSG, "sema_release", 1))
        self.assertEqual(self.c.cmd("SET", sem, "4"), OK)
        self.check("sema_try_acquire", [sem], [], script_error(
            b"ERR user_script:1: attempt to compare nil with number", "sema_try_acquire", 1))
        self.check("sema_try_acquire", [sem], ["x"], script_error(
            b"ERR user_script:1: attempt to compare nil with number", "sema_try_acquire", 1))
        self.check("sema_try_acquire", [sem], [1.5], script_error(
            NOT_INTEGER_MSG, "sema_try_acquire", 1))
        self.check("sema_try_acquire", [sem], [1], script_error(
            READ_ONLY_MSG, "sema_try_acquire", 1), cmd="EVALSHA_RO")
        self.assertEqual(self.c.cmd("DEL", sem), integer(1))
        self.assertEqual(self.c.cmd("HSET", sem, "f", "v"), integer(1))
        for name, keys, args in (("sema_try_acquire", [sem], [1]),
                                 ("sema_release", [sem, ch], [1, "publish"]),
                                 ("sema_drain", [sem], []),
                                 ("sema_try_set_permits", [sem, ch], [1, "publish"]),
                                 ("sema_add_permits", [sem, ch], [1, "publish"])):
            self.check(name, keys, args, script_error(WRONGTYPE_MSG, name, 1))

    def test_count_down_latch(self):
        latch, ch = "cdl", "redisson_countdownlatch__channel__{cdl}"
        sub = self.conn()
        sub.cmd("SUBSCRIBE", ch)
        self.check("latch_try_set_count", [latch, ch], ["1", 2, "publish"], integer(1))
        self.assertEqual(sub.read_reply(), b"*3\r\n$7\r\nmessage\r\n" + bulk(ch) + bulk("1"))
        self.check("latch_try_set_count", [latch, ch], ["1", 5, "publish"], integer(0))
        self.check("latch_count_down", [latch, ch], ["0", "publish"], NIL)
        self.assertReply(bulk("1"), "GET", latch)
        self.check("latch_count_down", [latch, ch], ["0", "publish"], NIL)  # zero: DEL, publish
        self.assertReply(integer(0), "EXISTS", latch)
        self.assertEqual(sub.read_reply(), b"*3\r\n$7\r\nmessage\r\n" + bulk(ch) + bulk("0"))
        self.check("latch_count_down", [latch, ch], ["0", "publish"], NIL)  # -1: DEL, no message
        self.assertReply(integer(0), "EXISTS", latch)
        self.check("latch_delete", [latch, ch], ["1", "publish"], integer(0))
        self.check("latch_try_set_count", [latch, ch], ["1", 3, "publish"], integer(1))
        self.check("latch_delete", [latch, ch], ["1", "publish"], integer(1))
        self.assertReply(integer(0), "EXISTS", latch)
        self.assertEqual(self.c.cmd("SET", latch, "x"), OK)
        self.check("latch_count_down", [latch, ch], ["0", "publish"],
                   script_error(NOT_INTEGER_MSG, "latch_count_down", 1))
        self.check("latch_count_down", [latch, ch], ["0", "publish"],
                   script_error(READ_ONLY_MSG, "latch_count_down", 1), cmd="EVALSHA_RO")
        self.check("latch_try_set_count", [latch, ch], ["1", 3, "publish"], integer(0))
        self.check("latch_try_set_count", ["new", ch], ["1", 3], script_error(
            NIL_ARG_MSG, "latch_try_set_count", 1))
        self.assertReply(bulk("3"), "GET", "new")  # SET ran before the nil command

    def test_spin_lock(self):
        lock, lt = "{sp}", "redisson_unlock_latch:{sp}:r"
        self.check("redisson_acquire_3x", [lock], [30000, "id:1"], NIL)  # RSpinLock's acquire
        self.check("redisson_acquire_3x", [lock], [30000, "id:1"], NIL)
        self.check("spin_release", [lock, lt + "1"], [30000, "id:2", 1000], NIL)
        self.check("spin_release", [lock, lt + "2"], [30000, "id:1", 1000], integer(0))
        self.check("spin_release", [lock, lt + "2"], [30000, "id:1", 1000], integer(0))
        self.assertReply(bulk("1"), "HGET", lock, "id:1")
        self.check("spin_release", [lock, lt + "3"], [30000, "id:1", 1000], integer(1))
        self.assertReply(integer(0), "EXISTS", lock)
        self.assertReply(bulk("1"), "GET", lt + "3")
        self.assertTTL(lt + "3", 900, 1000, cmd="PTTL")
        self.check("spin_force_unlock", [lock], [], integer(0))
        self.check("redisson_acquire_3x", [lock], [30000, "id:1"], NIL)
        self.check("spin_force_unlock", [lock], [], integer(1))
        self.check("spin_release", [lock, lt + "4"], [30000, "id:1", "x"], NIL)
        self.assertEqual(self.c.cmd("HSET", lock, "id:1", "1"), integer(1))
        self.check("spin_release", [lock, lt + "5"], [30000, "id:1", "x"],
                   script_error(NOT_INTEGER_MSG, "spin_release", 1))
        self.assertReply(integer(0), "EXISTS", lock)

    def test_fenced_lock(self):
        lock, token = "{fl}", "redisson_lock_token:{fl}"
        self.check("fenced_acquire_token", [lock, token], [30000, "id:1"],
                   b"*2\r\n:-1\r\n:1\r\n")
        self.check("fenced_acquire_token", [lock, token], [30000, "id:1"],
                   b"*2\r\n:-1\r\n:2\r\n")  # re-entry: a new token
        self.assertReply(bulk("2"), "HGET", lock, "id:1")
        got = harness.decode(self.ev("fenced_acquire_token", [lock, token], [30000, "id:2"]))
        self.assertEqual(got[1], -1)
        self.assertTrue(29000 <= got[0] <= 30000, got)
        self.check("fenced_acquire", [lock, token], [30000, "id:2"], range(29000, 30001))
        self.check("fenced_acquire", [lock, token], [30000, "id:1"], NIL)
        self.assertReply(bulk("3"), "GET", token)
        self.assertEqual(self.c.cmd("DEL", lock), integer(1))
        self.check("fenced_acquire", [lock, token], [30000, "id:2"], NIL)
        self.assertReply(bulk("4"), "GET", token)
        self.assertEqual(self.c.cmd("SET", token, "x"), OK)
        self.assertEqual(self.c.cmd("DEL", lock), integer(1))
        self.check("fenced_acquire_token", [lock, token], [30000, "id:1"],
                   script_error(NOT_INTEGER_MSG, "fenced_acquire_token", 1))
        self.check("fenced_acquire", [lock, token], [30000, "id:1"],
                   script_error(READ_ONLY_MSG, "fenced_acquire", 1), cmd="EVALSHA_RO")


PES, PES_TIMEOUTS, PES_CHANNEL = "pes", "{pes}:timeout", "redisson_sc:{pes}"
NEVER = 922337203685477  # RPermitExpirableSemaphore's expiry of a permit without a lease


class RedissonPermitExpirableSemaphoreTest(ScriptCase):
    """Permits are ids (16 random bytes, as Redisson sends them) in a sorted set by expiry; the
    clients' clock (ARGV) decides which have expired and come back."""

    SCRIPTS = ("sema_try_set_permits", "pes_try_acquire", "pes_try_release",
               "pes_try_release_many", "pes_available_permits", "pes_add_permits",
               "pes_update_lease_time", "pes_acquired_permits", "pes_get_permits",
               "pes_set_permits")

    def counts(self, now, acquired, total):
        keys = [PES, PES_TIMEOUTS, PES_CHANNEL]
        self.check("pes_acquired_permits", keys, [now, "publish"], acquired)
        self.check("pes_get_permits", keys, [now, "publish"], total)

    def test_set_permits_and_counts(self):
        set_keys = [PES, PES_CHANNEL, PES_TIMEOUTS]
        self.counts(NOW, integer(0), integer(0))
        self.check("pes_set_permits", set_keys, [3, "publish"], NIL)
        self.acquire([b"a", b"b"], NOW + 1000, NOW, bulk("OK"))
        self.counts(NOW, integer(2), integer(3))
        self.check("pes_set_permits", set_keys, [3, "publish"], NIL)  # already 3 in all
        self.check("pes_set_permits", set_keys, [5, "publish"], NIL)
        self.assertReply(bulk("3"), "GET", PES)
        self.check("pes_set_permits", set_keys, [1, "publish"], NIL)  # 2 out: -1 left
        self.assertReply(bulk("-1"), "GET", PES)
        self.counts(NOW + 2000, integer(0), integer(1))  # both expired: back
        self.assertEqual(self.c.cmd("SET", PES, "x"), OK)
        self.check("pes_get_permits", [PES, PES_TIMEOUTS, PES_CHANNEL], [NOW, "publish"],
                   script_error(b"ERR user_script:1: attempt to perform arithmetic on a nil value",
                                "pes_get_permits", 1))
        self.check("pes_set_permits", set_keys, [1, "publish"], script_error(
            b"ERR user_script:1: attempt to perform arithmetic on a nil value",
            "pes_set_permits", 1))

    def acquire(self, ids, expiry, now, expected):
        self.check("pes_try_acquire", [PES, PES_TIMEOUTS, PES_CHANNEL],
                   [len(ids), expiry, now, NEVER, "publish"] + ids, expected)

    def available(self, now, expected):
        self.check("pes_available_permits", [PES, PES_TIMEOUTS, PES_CHANNEL], [now, "publish"],
                   expected)

    def test_permits_expire_and_come_back(self):
        a, b, c, d = (bytes([i]) * 8 + b"\x00\xff\r\n" + bytes([i]) * 4 for i in range(1, 5))
        sub = self.conn()
        sub.cmd("SUBSCRIBE", PES_CHANNEL)
        self.acquire([a], NOW + 1000, NOW, NIL)  # no permits set: nothing out, nil
        self.check("sema_try_set_permits", [PES, PES_CHANNEL], [2, "publish"], integer(1))
        self.assertEqual(sub.read_reply(), b"*3\r\n$7\r\nmessage\r\n" + bulk(PES_CHANNEL) + bulk("2"))
        self.acquire([a], NOW + 1000, NOW, bulk("OK"))
        self.acquire([b], NEVER, NOW, bulk("OK"))
        self.acquire([c], NOW + 5000, NOW, bulk(":%d" % (NOW + 1000)))  # none left: nearest
        self.available(NOW, bulk("0"))
        # a's lease runs out: the next script takes it back (and publishes the count).
        self.acquire([c, d], NOW + 5000, NOW + 2000, NIL)  # 1 left, 2 asked; b never expires
        self.assertEqual(sub.read_reply(), b"*3\r\n$7\r\nmessage\r\n" + bulk(PES_CHANNEL) + bulk("1"))
        self.acquire([c], NOW + 5000, NOW + 2000, bulk("OK"))
        self.assertReply(b"*4\r\n" + bulk(c) + bulk(str(NOW + 5000)) + bulk(b) + bulk(str(NEVER)),
                         "ZRANGE", PES_TIMEOUTS, 0, -1, "WITHSCORES")
        self.check("pes_update_lease_time", [PES, PES_TIMEOUTS, PES_CHANNEL],
                   [c, NOW + 9000, NOW + 2000, "publish"], integer(1))
        self.check("pes_update_lease_time", [PES, PES_TIMEOUTS, PES_CHANNEL],
                   [a, NOW + 9000, NOW + 2000, "publish"], integer(0))
        self.check("pes_try_release", [PES, PES_CHANNEL, PES_TIMEOUTS], [c, 1, NOW + 3000, "publish"],
                   integer(1))
        self.check("pes_try_release", [PES, PES_CHANNEL, PES_TIMEOUTS], [c, 1, NOW + 3000, "publish"],
                   integer(0))  # gone
        self.available(NOW + 3000, bulk("1"))
        self.check("pes_add_permits", [PES, PES_CHANNEL], [2, "publish"], NIL)
        self.available(NOW + 3000, bulk("3"))
        self.acquire([a, c, d], NOW + 5000, NOW + 3000, bulk("OK"))
        self.check("pes_try_release_many", [PES, PES_CHANNEL, PES_TIMEOUTS],
                   [2, NOW + 3000, "publish", a, b], integer(2))
        self.available(NOW + 9000, integer(4))  # c and d expired: taken back, the count
        self.check("pes_try_release_many", [PES, PES_CHANNEL, PES_TIMEOUTS],
                   [1, NOW + 9000, "publish", c], integer(0))
        self.check("pes_add_permits", [PES, PES_CHANNEL], [-3, "publish"], NIL)
        self.available(NOW + 9000, bulk("1"))
        self.assertReply(integer(0), "EXISTS", PES_TIMEOUTS)

    def test_errors(self):
        self.assertEqual(self.c.cmd("SET", PES, "x"), OK)
        self.acquire([b"id"], NEVER, NOW, script_error(
            b"ERR user_script:1: attempt to compare number with nil", "pes_try_acquire", 1))
        self.check("pes_add_permits", [PES, PES_CHANNEL], [1, "publish"], script_error(
            b"ERR user_script:1: attempt to perform arithmetic on a nil value",
            "pes_add_permits", 1))
        self.assertEqual(self.c.cmd("SET", PES_TIMEOUTS, "x"), OK)
        for name, keys, args in (
                ("pes_try_acquire", [PES, PES_TIMEOUTS, PES_CHANNEL],
                 [1, NEVER, NOW, NEVER, "publish", "id"]),
                ("pes_try_release", [PES, PES_CHANNEL, PES_TIMEOUTS], ["id", 1, NOW, "publish"]),
                ("pes_try_release_many", [PES, PES_CHANNEL, PES_TIMEOUTS],
                 [1, NOW, "publish", "id"]),
                ("pes_available_permits", [PES, PES_TIMEOUTS, PES_CHANNEL], [NOW, "publish"]),
                ("pes_update_lease_time", [PES, PES_TIMEOUTS, PES_CHANNEL],
                 ["id", NOW, NOW, "publish"])):
            with self.subTest(name):
                self.check(name, keys, args, script_error(WRONGTYPE_MSG, name, 1))
        self.assertEqual(self.c.cmd("DEL", PES_TIMEOUTS), integer(1))
        self.check("pes_try_release_many", [PES, PES_CHANNEL, PES_TIMEOUTS], [0, NOW, "publish"],
                   script_error(b"ERR Wrong number of args calling Redis command from script",
                                "pes_try_release_many", 1))
        self.assertEqual(self.c.cmd("ZADD", PES_TIMEOUTS, NOW, "id"), integer(1))
        self.check("pes_try_release", [PES, PES_CHANNEL, PES_TIMEOUTS], ["id", 1, NOW, "publish"],
                   script_error(NOT_INTEGER_MSG, "pes_try_release", 1))
        self.check("pes_available_permits", [PES, PES_TIMEOUTS, PES_CHANNEL], [NOW, "publish"],
                   bulk("x"))  # the failed release removed "id" first; GET
        self.assertEqual(self.c.cmd("SET", PES, "5"), OK)
        self.assertEqual(self.c.cmd("ZADD", PES_TIMEOUTS, NOW, "id"), integer(1))
        self.check("pes_try_release", [PES, PES_CHANNEL, PES_TIMEOUTS], ["id", 1, "x", "publish"],
                   script_error(b"ERR user_script:1: attempt to compare number with nil",
                                "pes_try_release", 1))
        self.assertReply(bulk("6"), "GET", PES)


FAIR = "fair"
FAIR_KEYS = [FAIR, "redisson_lock_queue:{fair}", "redisson_lock_timeout:{fair}"]
FAIR_CHANNEL = "redisson_lock__channel:{fair}"
WAIT = 300000  # Redisson's default threadWaitTime (5 minutes)
NOW = 1700000000000  # the clients' clock, passed in ARGV


class RedissonFairLockTest(ScriptCase):
    """RFairLock: waiters queue in order, each with a timeout (the previous one's + the wait
    time); the first is told when the lock is released; a waiter whose timeout passes is dropped
    from the queue by the next script that runs. The times are the clients' (ARGV), so only the
    lock's own PTTL depends on the server's clock."""

    SCRIPTS = ("fair_acquire", "fair_try_acquire", "fair_acquire_failed", "fair_release",
               "fair_force_unlock")

    def acquire(self, holder, expected, now=NOW, lease=30000):
        self.check("fair_acquire", FAIR_KEYS, [lease, holder, WAIT, now], expected)

    def release(self, holder, n, expected, now=NOW):
        self.check("fair_release", FAIR_KEYS + [FAIR_CHANNEL, "redisson_unlock_latch:{fair}:%d" % n],
                   ["0", 30000, holder, now, "publish", 1000], expected)

    def queue(self):
        return harness.decode(self.c.cmd("LRANGE", FAIR_KEYS[1], 0, -1))

    def timeouts(self):
        got = harness.decode(self.c.cmd("ZRANGE", FAIR_KEYS[2], 0, -1, "WITHSCORES"))
        return [(got[i], int(got[i + 1])) for i in range(0, len(got), 2)]

    def test_queue_order_handover_and_timeout(self):
        b_sub, c_sub = self.conn(), self.conn()
        b_sub.cmd("SUBSCRIBE", FAIR_CHANNEL + ":B")
        c_sub.cmd("SUBSCRIBE", FAIR_CHANNEL + ":C")
        self.acquire("A", NIL)
        self.acquire("A", NIL)  # re-entry
        self.assertReply(bulk("2"), "HGET", FAIR, "A")
        # B and C queue behind A, in order; B's timeout is the lock's PTTL + the wait, C's is
        # B's + the wait. Asking again changes nothing.
        got_b = harness.decode(self.ev("fair_acquire", FAIR_KEYS, [30000, "B", WAIT, NOW]))
        self.assertTrue(29000 <= got_b <= 30000, got_b)
        self.acquire("C", integer(got_b + WAIT))
        self.acquire("B", integer(got_b))
        self.acquire("C", integer(got_b + WAIT))
        self.assertEqual(self.queue(), [b"B", b"C"])
        self.assertEqual(self.timeouts(), [(b"B", NOW + got_b + WAIT),
                                           (b"C", NOW + got_b + 2 * WAIT)])
        # tryLock() without waiting never queues.
        self.check("fair_try_acquire", FAIR_KEYS, [30000, "D", NOW, WAIT], integer(1))
        self.check("fair_try_acquire", FAIR_KEYS, [30000, "A", NOW, WAIT], NIL)  # re-entry
        self.assertEqual(self.queue(), [b"B", b"C"])
        self.release("A", 1, integer(0))
        self.release("A", 2, integer(0))
        self.release("A", 3, integer(1))  # free: B, first in line, is told
        self.assertEqual(b_sub.read_reply(), b"*3\r\n$7\r\nmessage\r\n" +
                         bulk(FAIR_CHANNEL + ":B") + bulk("0"))
        self.release("A", 3, integer(1))  # retried: the latch
        # C may not jump the queue, and its wait is unchanged; B takes it, and C's timeout moves
        # one wait earlier.
        self.acquire("C", integer(got_b + WAIT))
        self.check("fair_try_acquire", FAIR_KEYS, [30000, "C", NOW, WAIT], integer(1))
        self.acquire("B", NIL)
        self.assertEqual(self.queue(), [b"C"])
        self.assertEqual(self.timeouts(), [(b"C", NOW + got_b + WAIT)])
        # D queues behind C; then C's timeout passes (the clients' clock moves on) while it has
        # not come back: the next script drops it from the front of the queue.
        self.acquire("D", integer(got_b + WAIT))  # C's timeout - now
        later = NOW + got_b + WAIT
        self.acquire("E", integer(WAIT), now=later)  # D's timeout - later
        self.assertEqual(self.queue(), [b"D", b"E"])
        # D gives up (tryLock's wait ran out): E moves one wait earlier.
        self.check("fair_acquire_failed", FAIR_KEYS[1:], ["D", WAIT], NIL)
        self.assertEqual(self.queue(), [b"E"])
        self.assertEqual(self.timeouts(), [(b"E", NOW + got_b + 2 * WAIT)])
        self.check("fair_acquire_failed", FAIR_KEYS[1:], ["nobody", WAIT], NIL)
        self.assertEqual(self.queue(), [b"E"])
        # B releases: E is first and told; forceUnlock tells E again.
        e_sub = self.conn()
        e_sub.cmd("SUBSCRIBE", FAIR_CHANNEL + ":E")
        self.release("B", 4, integer(1), now=later)
        self.assertEqual(e_sub.read_reply(), b"*3\r\n$7\r\nmessage\r\n" +
                         bulk(FAIR_CHANNEL + ":E") + bulk("0"))
        self.check("fair_force_unlock", FAIR_KEYS + [FAIR_CHANNEL], ["0", later, "publish"],
                   integer(0))
        self.acquire("E", NIL, now=later)
        self.assertEqual(self.queue(), [])
        self.assertReply(integer(0), "EXISTS", FAIR_KEYS[1], FAIR_KEYS[2])
        self.check("fair_force_unlock", FAIR_KEYS + [FAIR_CHANNEL], ["0", later, "publish"],
                   integer(1))
        self.assertReply(integer(0), "EXISTS", FAIR)
        # C, dropped, was never told: the next thing its connection reads is a PING's reply.
        self.assertEqual(c_sub.cmd("PING"), b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")

    def test_every_waiter_timed_out(self):
        self.acquire("A", NIL)
        got_b = harness.decode(self.ev("fair_acquire", FAIR_KEYS, [30000, "B", WAIT, NOW]))
        self.acquire("C", integer(got_b + WAIT))
        # Long after both timeouts: A's release drops them both and tells nobody.
        far = NOW + 10 * WAIT
        self.release("A", 1, integer(1), now=far)
        self.assertEqual(self.queue(), [])
        self.assertReply(integer(0), "EXISTS", FAIR_KEYS[1], FAIR_KEYS[2])

    def test_errors(self):
        self.assertEqual(self.c.cmd("SET", FAIR_KEYS[1], "x"), OK)
        for name, keys, args in (
                ("fair_acquire", FAIR_KEYS, [30000, "A", WAIT, NOW]),
                ("fair_try_acquire", FAIR_KEYS, [30000, "A", NOW, WAIT]),
                ("fair_acquire_failed", FAIR_KEYS[1:], ["A", WAIT]),
                ("fair_release", FAIR_KEYS + [FAIR_CHANNEL, "l"], ["0", 1, "A", NOW, "publish", 1]),
                ("fair_force_unlock", FAIR_KEYS + [FAIR_CHANNEL], ["0", NOW, "publish"])):
            with self.subTest(name):
                self.check(name, keys, args, script_error(WRONGTYPE_MSG, name, 1))
        self.assertEqual(self.c.cmd("DEL", FAIR_KEYS[1]), integer(1))
        self.acquire("A", NIL)
        self.check("fair_acquire", FAIR_KEYS, [30000, "B", WAIT], script_error(
            b"ERR user_script:1: attempt to perform arithmetic on a nil value", "fair_acquire", 1))
        got_b = harness.decode(self.ev("fair_acquire", FAIR_KEYS, [30000, "B", WAIT, NOW]))
        self.assertTrue(29000 <= got_b <= 30000, got_b)
        self.check("fair_acquire", FAIR_KEYS, [30000, "C", WAIT], script_error(
            b"ERR user_script:1: attempt to compare number with nil", "fair_acquire", 1))
        self.check("fair_acquire", FAIR_KEYS, [30000, "C", WAIT, NOW],
                   script_error(READ_ONLY_MSG, "fair_acquire", 1), cmd="EVALSHA_RO")
        self.check("fair_acquire_failed", FAIR_KEYS[1:], ["nobody", WAIT], NIL)
        self.check("fair_acquire", FAIR_KEYS, [30000, "C", WAIT, NOW], integer(got_b + WAIT))
        self.check("fair_acquire_failed", FAIR_KEYS[1:], ["B"], script_error(
            b"ERR user_script:1: attempt to perform arithmetic on a nil value",
            "fair_acquire_failed", 1))
        self.assertEqual(self.c.cmd("ZADD", FAIR_KEYS[2], "XX", NOW, "B"), integer(0))
        self.check("fair_release", FAIR_KEYS + [FAIR_CHANNEL, "l"], ["0", 30000, "A", NOW,
                                                                    "publish", "x"],
                   script_error(NOT_INTEGER_MSG, "fair_release", 1))
        self.assertEqual(self.queue(), [b"C"])  # B was dropped before the failure
        self.assertReply(integer(0), "EXISTS", FAIR)


# ---------------------------------------------------------------------------------------------
# node-redlock and @sesamecare-oss/redlock: one lock over several keys
# ---------------------------------------------------------------------------------------------

class RedlockScriptsTest(ScriptCase):
    # prefix -> (ARGV offset, line of EXISTS/GET in acquire/extend, line of SET, GET and DEL
    # lines of release)
    FORMS = {"redlock4": (0, 4, 11, 5), "redlock5": (0, 4, 11, 5), "sesame": (1, 9, 16, 10)}

    def forms(self):
        for prefix, form in self.FORMS.items():
            names = [prefix + "_" + op for op in ("acquire", "extend", "release")]
            if AGAINST_REDIS and any(n not in texts() for n in names):
                continue
            yield prefix, form

    def test_acquire_extend_release_on_both_shards(self):
        ran = 0
        for prefix, (off, check_line, set_line, get_line) in self.forms():
            with self.subTest(prefix):
                ran += 1
                acq, ext, rel = (prefix + "_" + op for op in ("acquire", "extend", "release"))
                self.need(acq, ext, rel)
                db = ["0"] if off else []
                a, b, c = on_shard(0, prefix), on_shard(1, prefix), on_shard(0, prefix + "c")
                self.assertEqual(self.c.cmd("HSET", c, "f", "v"), integer(1))
                self.check(acq, [a, b], db + ["v1", 10000], integer(2))
                self.assertReply(b"*2\r\n$2\r\nv1\r\n$2\r\nv1\r\n", "MGET", a, b)
                self.assertTTL(b, 9000, 10000, cmd="PTTL")
                self.check(acq, [b, "free"], db + ["v2", 10000], integer(0))
                self.assertReply(integer(0), "EXISTS", "free")
                self.check(acq, ["free", c], db + ["v2", 10000], integer(0))  # c is a hash: exists
                self.check(ext, [a, b], db + ["v1", 20000], integer(2))
                self.assertTTL(a, 19000, 20000, cmd="PTTL")
                self.assertTTL(b, 19000, 20000, cmd="PTTL")
                self.check(ext, [a, b], db + ["v2", 30000], integer(0))
                self.check(ext, ["free", c], db + ["v1", 30000], integer(0))  # mismatch first
                self.check(ext, [a, c], db + ["v1", 30000], script_error(WRONGTYPE_MSG, ext,
                                                                         check_line))
                self.check(ext, [c, a], db + ["v1", 30000], script_error(WRONGTYPE_MSG, ext,
                                                                         check_line))
                self.assertTTL(a, 18000, 20000, cmd="PTTL")  # not extended
                self.check(ext, [a, b], db + ["v1", "abc"], script_error(NOT_INTEGER_MSG, ext,
                                                                         set_line))
                self.check(ext, [a, b], db + ["v1", 30000],
                           script_error(READ_ONLY_MSG, ext, set_line), cmd="EVALSHA_RO")
                self.check(ext, [a, b], db + ["v1", 30000], integer(2), cmd="EVALSHA")
                # Release: only this value's keys; a key of the wrong type fails the script at
                # that key, after the keys before it were released.
                self.check(rel, [a, b, "free"], db + ["other"], integer(0))
                # Read-only: each pcall DEL fails, silently, and is counted (b twice: still there).
                self.check(rel, [a, b, b, "free"], db + ["v1"], integer(3), cmd="EVALSHA_RO")
                self.assertReply(integer(2), "EXISTS", a, b)
                self.check(rel, [a, c, b], db + ["v1"], script_error(WRONGTYPE_MSG, rel,
                                                                     get_line))
                self.assertReply(integer(0), "EXISTS", a)
                self.assertReply(integer(1), "EXISTS", b)
                self.check(rel, [b, b], db + ["v1"], integer(1))
                self.assertReply(integer(0), "EXISTS", b)
                # Acquire's SET arguments.
                self.check(acq, [a, b], db + ["v3", 0], script_error(
                    b"ERR invalid expire time in 'set' command", acq, set_line))
                self.check(acq, [a, b], db + ["v3", "x"], script_error(NOT_INTEGER_MSG, acq,
                                                                       set_line))
                self.check(acq, [a, b], db + ["v3"], script_error(NIL_ARG_MSG, acq, set_line))
                self.check(acq, [a, b], db + ["v3", 1000], script_error(READ_ONLY_MSG, acq,
                                                                        set_line),
                           cmd="EVALSHA_RO")
                self.assertReply(integer(0), "EXISTS", a, b)
                self.check(acq, [], db + ["v3", 1000], integer(0))
                self.check(acq, [a, a], db + ["v3", 1000], integer(2))
                self.check(rel, [a, a], db + ["v3"], integer(1))
                self.assertEqual(self.c.cmd("DEL", c), integer(1))
        if AGAINST_REDIS and not ran:
            self.skipTest("the npm packages' scripts are not available (`npm ci` in tests/js)")

    def test_sesame_selects_database(self):
        self.need("sesame_acquire", "sesame_release")
        a, b = on_shard(0, "sdb"), on_shard(1, "sdb")
        self.check("sesame_acquire", [a, b], ["3", "v", 10000], integer(2))
        self.assertReply(integer(0), "EXISTS", a, b)
        c3 = self.conn()
        self.assertEqual(c3.cmd("SELECT", "3"), OK)
        self.assertReply(integer(2), "EXISTS", a, b, c=c3)
        self.check("sesame_acquire", [a], ["0x3", "w", 10000], integer(0))  # tonumber: db 3
        self.check("sesame_acquire", [a], ["abc", "w", 10000], integer(1))  # stays in db 0
        self.check("sesame_acquire", [b], ["99", "w", 10000], integer(1))
        self.assertReply(b"*2\r\n$1\r\nw\r\n$1\r\nw\r\n", "MGET", a, b)
        self.check("sesame_release", [a, b], ["3", "v"], integer(2))
        self.assertReply(integer(0), "EXISTS", a, b, c=c3)
        self.assertReply(integer(2), "EXISTS", a, b)
        self.assertEqual(harness.decode(self.c.cmd("CLIENT", "INFO")).split(b" db=")[1][:2], b"0 ")

    def test_racing_multi_key_acquires_never_both_win(self):
        """Threads race to acquire overlapping sets of keys on both shards; whoever wins a set
        must hold all of its keys, so no two winners ever overlap."""
        self.need("redlock5_acquire", "redlock5_release")
        keys = [on_shard(i % 2, "race%d" % i) for i in range(6)]
        self.assertEqual({shard_of(k) for k in keys}, {0, 1})
        rounds, threads = 25, 8
        wins = []
        failures = []
        barrier = threading.Barrier(threads)

        def worker(t):
            try:
                c = harness.RespConn(self.port, timeout=8.0)
                rnd = random.Random(t)
                for r in range(rounds):
                    chosen = rnd.sample(keys, 3)
                    value = "t%d-r%d" % (t, r)
                    barrier.wait(timeout=10)
                    got = c.cmd("EVALSHA", SHAS["redlock5_acquire"], 3, *chosen, value, 60000)
                    if got == integer(3):
                        wins.append((r, value, chosen))
                    elif got != integer(0):
                        failures.append("unexpected reply %r" % got)
                    barrier.wait(timeout=10)
                    if t == 0:  # one checker per round, while nobody writes
                        for rr, v, ks in [w for w in wins if w[0] == r]:
                            held = c.cmd("MGET", *ks)
                            if held != b"*3\r\n" + bulk(v) * 3:
                                failures.append("round %d: %s won %r but they hold %r"
                                                % (rr, v, ks, held))
                        c.cmd("DEL", *keys)
                    barrier.wait(timeout=10)
                c.close()
            except Exception as e:  # noqa: BLE001 - reported below
                failures.append("worker %d: %r" % (t, e))
                barrier.abort()

        ts = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        self.assertFalse(any(t.is_alive() for t in ts), "workers hung")
        self.assertEqual(failures, [])
        per_round = {}
        for r, v, ks in wins:
            per_round.setdefault(r, []).append(set(ks))
        self.assertEqual(len(per_round), rounds, "every round has a winner")
        for r, sets in per_round.items():
            for i in range(len(sets)):
                for j in range(i + 1, len(sets)):
                    self.assertFalse(sets[i] & sets[j], "round %d: overlapping winners" % r)


if __name__ == "__main__":
    harness.main()
