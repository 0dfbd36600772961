"""Scripts the native catalogue does not know, run by the embedded Lua 5.1.

A corpus of scripts (the Redis documentation's examples, rate limiters, an idempotency key,
compare-and-delete variants, type conversions both ways, nested tables, pcall and error
replies, cjson, bit, struct, EVALSHA after SCRIPT LOAD) runs against the server under test and
against a reference /usr/bin/redis-server started by this module, in RESP2 and in RESP3; every
reply must be byte-exact. Each case starts from an empty database, runs its setup commands, the
script (by EVAL, then again by EVALSHA after SCRIPT LOAD), and commands that read the result.

Also: keys across shards (atomic under a racing test), undeclared keys, SCRIPT FLUSH, the
sandbox, BUSY and SCRIPT KILL, INFO's counters, FUNCTION FLUSH/LIST.
"""

import os
import socket
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, bulk, integer  # noqa: E402
from slots import on_shard  # noqa: E402

AGAINST_REDIS = harness.AGAINST_REDIS
_REF = {}


def setUpModule():
    harness.start_module_server()
    if os.access(harness.REDIS_SERVER, os.X_OK):
        port = harness.free_port()
        work = tempfile.mkdtemp(prefix="deadbolt-lua-ref-")
        proc = subprocess.Popen(
            [harness.REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, cwd=work, start_new_session=True)
        harness.wait_port(port)
        _REF.update(proc=proc, port=port, work=work)


def tearDownModule():
    proc = _REF.get("proc")
    if proc:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(_REF["work"], ignore_errors=True)
    harness.stop_module_server()


# (name, setup commands, script, keys, argv, commands that read the result)
CORPUS = [
    # --- the Redis documentation's EVAL examples ---
    ("doc_keys_argv", [], "return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}", ["{d}k1", "{d}k2"],
     ["first", "second"], []),
    ("doc_set", [], "return redis.call('SET', KEYS[1], ARGV[1])", ["{d}foo"], ["bar"],
     [["GET", "{d}foo"]]),
    # Blocking commands are noscript in Redis 7.0 (BLMPOP/BZMPOP are not, and run without
    # blocking; deadbolt has neither).
    ("blpop_not_allowed", [["RPUSH", "{d}q", "x"]], "return redis.pcall('blpop', KEYS[1], 0)",
     ["{d}q"], [], [["LLEN", "{d}q"]]),
    ("bzpopmin_not_allowed", [], "return redis.pcall('bzpopmin', KEYS[1], 0)", ["{d}z"], [], []),
    ("doc_set_status", [], "return redis.call('set',KEYS[1],'bar')", ["{d}foo"], [],
     [["GET", "{d}foo"]]),
    ("doc_integer", [], "return 10", [], [], []),
    ("empty_script", [], "", [], [], []),
    ("doc_nested", [], "return {1,2,{3,'Hello World!'}}", [], [], []),
    ("doc_get", [["SET", "{d}foo", "bar"]], "return redis.call('get',KEYS[1])", ["{d}foo"], [],
     []),
    ("doc_pcall_wrongtype", [["LPUSH", "{d}l", "a"]], "return redis.pcall('get', KEYS[1])",
     ["{d}l"], [], []),
    ("doc_call_wrongtype", [["LPUSH", "{d}l", "a"]], "return redis.call('get', KEYS[1])",
     ["{d}l"], [], []),
    ("doc_error_reply", [], "return redis.error_reply('My Error')", [], [], []),
    ("doc_error_table", [], "return {err='My Error'}", [], [], []),
    ("doc_status_reply", [], "return redis.status_reply('TICK')", [], [], []),
    ("doc_status_table", [], "return {ok='TICK'}", [], [], []),
    ("doc_float_truncated", [], "return 3.99", [], [], []),
    ("doc_float_as_string", [], "return tostring(3.99)", [], [], []),
    ("doc_nil_stops_array", [], "return {1,2,3,'ciao',nil,'foo'}", [], [], []),
    ("doc_bool_true", [], "return true", [], [], []),
    ("doc_bool_false", [], "return false", [], [], []),
    ("doc_nil", [], "return nil", [], [], []),
    ("doc_sha1hex", [], "return redis.sha1hex(ARGV[1])", [], [""], []),
    ("doc_log", [], "redis.log(redis.LOG_WARNING, 'Something is wrong')", [], [], []),
    # --- lock scripts, spelled differently from the catalogue's ---
    ("cad_extra_space", [["SET", "{c}lock", "tok"]],
     "if redis.call('get', KEYS[1]) == ARGV[1] then  return redis.call('del', KEYS[1]) else "
     "return 0 end", ["{c}lock"], ["tok"], [["EXISTS", "{c}lock"]]),
    ("cad_not_owner", [["SET", "{c}lock", "tok"]],
     "if redis.call('get', KEYS[1]) == ARGV[1] then  return redis.call('del', KEYS[1]) else "
     "return 0 end", ["{c}lock"], ["other"], [["GET", "{c}lock"]]),
    ("extend_owned", [["SET", "{c}lock", "tok"]],
     "if redis.call('get', KEYS[1]) == ARGV[1] then\n  return redis.call('pexpire', KEYS[1], "
     "ARGV[2])\nend\nreturn 0", ["{c}lock"], ["tok", "100000"], [["EXISTS", "{c}lock"]]),
    ("team_unlock", [["HSET", "{c}h", "owner", "me", "count", "2"]],
     "local c = redis.call('hincrby', KEYS[1], 'count', -1)\nif c <= 0 then "
     "redis.call('del', KEYS[1]) end\nreturn c", ["{c}h"], [], [["HGETALL", "{c}h"]]),
    # --- a sliding-window rate limiter and friends ---
    ("sliding_window", [["ZADD", "{r}w", "1000", "a", "1500", "b", "1900", "c"]],
     "local key, now, window, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), "
     "tonumber(ARGV[3])\nredis.call('ZREMRANGEBYSCORE', key, 0, now - window)\n"
     "local count = redis.call('ZCARD', key)\nif count < limit then\n"
     "  redis.call('ZADD', key, now, ARGV[4])\n  redis.call('PEXPIRE', key, window)\n"
     "  return {1, limit - count - 1}\nend\nreturn {0, 0}",
     ["{r}w"], ["2000", "600", "4", "req-9"], [["ZRANGE", "{r}w", "0", "-1", "WITHSCORES"]]),
    ("sliding_window_full", [["ZADD", "{r}w", "1500", "a", "1600", "b"]],
     "local key, now, window, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), "
     "tonumber(ARGV[3])\nredis.call('ZREMRANGEBYSCORE', key, 0, now - window)\n"
     "local count = redis.call('ZCARD', key)\nif count < limit then\n"
     "  redis.call('ZADD', key, now, ARGV[4])\n  return {1, limit - count - 1}\nend\n"
     "return {0, 0}", ["{r}w"], ["2000", "600", "2", "req-9"], [["ZCARD", "{r}w"]]),
    ("fixed_window", [],
     "local n = redis.call('INCR', KEYS[1])\nif n == 1 then redis.call('EXPIRE', KEYS[1], "
     "ARGV[1]) end\nif n > tonumber(ARGV[2]) then return 0 end\nreturn n",
     ["{r}fw"], ["60", "10"], [["GET", "{r}fw"]]),
    ("token_bucket", [["HSET", "{r}tb", "tokens", "3", "ts", "1000"]],
     "local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')\n"
     "local tokens, ts = tonumber(b[1]), tonumber(b[2])\nlocal now = tonumber(ARGV[1])\n"
     "tokens = math.min(tonumber(ARGV[2]), tokens + math.floor((now - ts) / 1000))\n"
     "if tokens < 1 then return 0 end\n"
     "redis.call('HSET', KEYS[1], 'tokens', tokens - 1, 'ts', now)\nreturn tokens - 1",
     ["{r}tb"], ["4000", "5"], [["HGETALL", "{r}tb"]]),
    # --- an idempotency key ---
    ("idempotency_first", [],
     "local prev = redis.call('GET', KEYS[1])\nif prev then return {0, prev} end\n"
     "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\nreturn {1, ARGV[1]}",
     ["{i}req"], ["result-1", "60000"], [["GET", "{i}req"]]),
    ("idempotency_again", [["SET", "{i}req", "result-0"]],
     "local prev = redis.call('GET', KEYS[1])\nif prev then return {0, prev} end\n"
     "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\nreturn {1, ARGV[1]}",
     ["{i}req"], ["result-1", "60000"], [["GET", "{i}req"]]),
    # --- type conversions ---
    ("conv_integer_reply", [["SET", "{t}n", "41"]], "return redis.call('INCR', KEYS[1])",
     ["{t}n"], [], []),
    ("conv_nil_bulk_is_false", [], "return redis.call('GET', KEYS[1]) == false", ["{t}x"], [],
     []),
    ("conv_nil_type", [], "return type(redis.call('GET', KEYS[1]))", ["{t}x"], [], []),
    ("conv_status_table", [], "local r = redis.call('SET', KEYS[1], 'v')\nreturn r.ok",
     ["{t}s"], [], []),
    ("conv_number_arg", [], "redis.call('SET', KEYS[1], 42)\nreturn redis.call('GET', KEYS[1])",
     ["{t}s"], [], []),
    ("conv_negative_truncation", [], "return -3.7", [], [], []),
    ("conv_table_of_bools", [], "return {true, false, true}", [], [], []),
    ("conv_array_of_replies", [["RPUSH", "{t}l", "a", "b", "c"]],
     "return redis.call('LRANGE', KEYS[1], 0, -1)", ["{t}l"], [], []),
    ("conv_empty_array", [], "return redis.call('LRANGE', KEYS[1], 0, -1)", ["{t}l"], [], []),
    ("conv_hgetall", [["HSET", "{t}h", "f", "v"]], "return redis.call('HGETALL', KEYS[1])",
     ["{t}h"], [], []),
    ("conv_tonumber_string", [], "return tonumber('0x10') + tonumber(' 5 ')", [], [], []),
    ("conv_string_arith", [], "return '10' + 5", [], [], []),
    ("conv_double_table", [], "return {double=3.5}", [], [], []),
    ("conv_big_number", [], "return {big_number='123456789012345678901234567890'}", [], [], []),
    ("conv_map", [], "return {map={a=1}}", [], [], []),
    ("conv_set", [], "return {set={x=true}}", [], [], []),
    ("resp3_map_from_call", [["HSET", "{t}h", "f", "v"]],
     "redis.setresp(3)\nlocal r = redis.call('HGETALL', KEYS[1])\nreturn r.map.f", ["{t}h"],
     [], []),
    ("resp3_bool_reply", [], "redis.setresp(3)\nreturn true", [], [], []),
    ("resp3_null", [], "redis.setresp(3)\nreturn redis.call('GET', KEYS[1]) == nil",
     ["{t}x"], [], []),
    ("setresp_bad", [], "redis.setresp(4)", [], [], []),
    # --- nested tables ---
    ("nested_deep", [], "return {1,{2,{3,{4,{5,'deep'}}}}}", [], [], []),
    ("nested_with_nil", [], "return {{1,nil,3},{'a'},{}}", [], [], []),
    ("nested_mixed", [], "local t = {1, 'two', {x=1}, {ok='fine'}, {err='bad'}}\nreturn t", [],
     [], []),
    # --- errors ---
    ("pcall_error_table", [["SET", "{e}s", "abc"]],
     "local r = redis.pcall('INCR', KEYS[1])\nreturn {type(r), r.err}", ["{e}s"], [], []),
    ("pcall_returns_error", [["SET", "{e}s", "abc"]], "return redis.pcall('INCR', KEYS[1])",
     ["{e}s"], [], []),
    ("lua_pcall_catches", [["SET", "{e}s", "abc"]],
     "local ok, e = pcall(redis.call, 'INCR', KEYS[1])\nreturn {tostring(ok), e.err}",
     ["{e}s"], [], []),
    ("runtime_error_line", [], "local a = 1\nlocal b = nil\nreturn a + b", [], [], []),
    ("error_string", [], "error('boom')", [], [], []),
    ("error_table", [], "error({err='CUSTOM failure'})", [], [], []),
    ("error_reply_no_code", [], "return redis.error_reply('oops')", [], [], []),
    ("unknown_command", [], "return redis.call('nosuchcommand')", [], [], []),
    ("wrong_arity", [], "return redis.call('get')", [], [], []),
    ("no_arguments", [], "return redis.call()", [], [], []),
    ("bad_argument", [], "return redis.call('get', {})", [], [], []),
    ("nonexistent_global", [], "return undefined_thing", [], [], []),
    ("create_global", [], "newglobal = 1", [], [], []),
    ("modify_library", [], "string.foo = 1", [], [], []),
    ("no_os", [], "return os.time()", [], [], []),
    ("no_loadfile", [], "return loadfile('/etc/passwd')", [], [], []),
    ("compile_error", [], "return 1 +", [], [], []),
    ("write_in_ro_via_call", [], "return redis.call('SET', KEYS[1], 'x')", ["{e}ro"], [], []),
    # --- libraries ---
    ("cjson_encode", [], "return cjson.encode({1, 2, 3, 'x'})", [], [], []),
    ("cjson_decode", [], "local t = cjson.decode(ARGV[1])\nreturn {t.name, t.n, #t.list}", [],
     ['{"name":"lock","n":7,"list":[1,2,3]}'], []),
    ("cjson_roundtrip_stored", [],
     "redis.call('SET', KEYS[1], cjson.encode({owner=ARGV[1]}))\n"
     "return cjson.decode(redis.call('GET', KEYS[1])).owner", ["{j}doc"], ["me"], []),
    ("bit_ops", [], "return {bit.band(0xff, 0x0f), bit.bor(1, 2), bit.bxor(5, 3), "
     "bit.lshift(1, 10), bit.tohex(255)}", [], [], []),
    ("struct_pack_unpack", [],
     "local s = struct.pack('>I2', 258)\nreturn {#s, string.byte(s, 1), string.byte(s, 2), "
     "struct.unpack('>I2', s)}", [], [], []),
    ("struct_string", [], "local s = struct.pack('<i4s', 7, 'abc')\nlocal n, t, nxt = "
     "struct.unpack('<i4s', s)\nreturn {n, t, nxt}", [], [], []),
    ("cmsgpack_roundtrip", [], "local p = cmsgpack.pack({1, 'two', 3})\n"
     "local t = cmsgpack.unpack(p)\nreturn {#p, t[1], t[2], t[3]}", [], [], []),
    # --- control flow and the standard library ---
    ("string_ops", [], "return {string.upper(ARGV[1]), string.rep('ab', 3), "
     "string.format('%05d', 42), string.sub('deadbolt', 1, 4)}", [], ["lock"], []),
    ("table_ops", [], "local t = {3, 1, 2}\ntable.sort(t)\nreturn table.concat(t, ',')", [], [],
     []),
    ("loop_sum", [], "local s = 0\nfor i = 1, 100 do s = s + i end\nreturn s", [], [], []),
    ("multi_key_mget", [["SET", "{m}a", "1"], ["SET", "{m}b", "2"]],
     "return redis.call('MGET', KEYS[1], KEYS[2], KEYS[3])", ["{m}a", "{m}b", "{m}c"], [], []),
    ("transfer_two_keys", [["SET", "{x}a", "10"], ["SET", "{x}bb", "5"]],
     "local a = tonumber(redis.call('GET', KEYS[1]))\nredis.call('SET', KEYS[1], a - 3)\n"
     "redis.call('INCRBY', KEYS[2], 3)\nreturn {redis.call('GET', KEYS[1]), "
     "redis.call('GET', KEYS[2])}", ["{x}a", "{x}bb"], [], [["MGET", "{x}a", "{x}bb"]]),
    ("write_then_fail", [["SET", "{x}a", "1"], ["HSET", "{x}bb", "f", "v"]],
     "redis.call('DEL', KEYS[1])\nredis.call('SET', KEYS[3], 'new', 'PX', 100000)\n"
     "return redis.call('INCR', KEYS[2])", ["{x}a", "{x}bb", "{x}c"], [],
     [["EXISTS", "{x}a"], ["HGETALL", "{x}bb"], ["GET", "{x}c"]]),
    ("keys_count", [], "return #KEYS + #ARGV * 10", ["{m}a", "{m}b"], ["x", "y", "z"], []),
    ("ping_echo", [], "return {redis.call('PING'), redis.call('PING', 'hi'), "
     "redis.call('ECHO', 'e')}", [], [], []),
    ("time_shape", [], "local t = redis.call('TIME')\nreturn {#t, type(t[1]), "
     "tonumber(t[1]) > 1600000000, tonumber(t[2]) < 1000000}", [], [], []),
    ("math_random_seeded", [], "math.randomseed(7)\nreturn {math.random(1000), "
     "math.random(1, 6), tostring(math.random())}", [], [], []),
    ("publish_no_subscribers", [], "return redis.call('PUBLISH', 'nobody-listens', 'x')", [],
     [], []),
]


def ref_conn():
    return harness.RespConn(_REF["port"])


def run_case(conn, resp, case, by_sha):
    """The raw replies of one case on one connection."""
    name, setup, script, keys, argv, checks = case
    out = []
    conn.cmd("HELLO", str(resp))
    conn.cmd("FLUSHALL")
    for c in setup:
        out.append(conn.cmd(*c))
    cmd = "EVAL"
    if name == "write_in_ro_via_call":
        cmd = "EVAL_RO"
    if by_sha:
        sha = conn.cmd("SCRIPT", "LOAD", script)
        out.append(sha)
        if not sha.startswith(b"$"):
            return out
        target = harness.decode(sha).decode()
        cmd = "EVALSHA_RO" if cmd == "EVAL_RO" else "EVALSHA"
    else:
        target = script
    out.append(conn.cmd(cmd, target, str(len(keys)), *keys, *argv))
    for c in checks:
        out.append(conn.cmd(*c))
    return out


@unittest.skipUnless(os.access(harness.REDIS_SERVER, os.X_OK), "needs /usr/bin/redis-server")
class LuaCorpusTest(harness.ServerTestCase):
    def test_corpus_is_big_enough(self):
        self.assertGreaterEqual(len(CORPUS), 50)
        self.assertEqual(len({c[0] for c in CORPUS}), len(CORPUS))

    def _compare(self, resp, by_sha):
        with ref_conn() as ref:
            mine = self.conn()
            for case in CORPUS:
                with self.subTest(case=case[0], resp=resp, by_sha=by_sha):
                    self.assertEqual(run_case(mine, resp, case, by_sha),
                                     run_case(ref, resp, case, by_sha))

    def test_resp2_eval(self):
        self._compare(2, False)

    def test_resp3_eval(self):
        self._compare(3, False)

    def test_resp2_evalsha_after_script_load(self):
        self._compare(2, True)

    def test_resp3_evalsha_after_script_load(self):
        self._compare(3, True)

    def test_keys_without_hash_tags(self):
        # The same corpus with the hash tags taken out of the key names: a case with several keys
        # then spans both shards of deadbolt and runs through the copy-run-write-back path.
        def untag(args):
            return [a.replace("{", "").replace("}", "") for a in args]
        spread = [(name, [untag(c) for c in setup], script, untag(keys), argv,
                   [untag(c) for c in checks])
                  for name, setup, script, keys, argv, checks in CORPUS]
        self.assertTrue(any(len(c[3]) > 1 for c in spread))
        with ref_conn() as ref:
            mine = self.conn()
            for resp in (2, 3):
                for case in spread:
                    with self.subTest(case=case[0], resp=resp):
                        self.assertEqual(run_case(mine, resp, case, False),
                                         run_case(ref, resp, case, False))


class LuaServerTest(harness.ServerTestCase):
    def test_evalsha_needs_a_loaded_script(self):
        script = "return 'never loaded ' .. ARGV[1]"
        sha = harness.decode(self.c.cmd("SCRIPT", "LOAD", script)).decode()
        self.assertReply(bulk(b"never loaded x"), "EVALSHA", sha, "0", "x")
        self.assertReply(harness.array(integer(1), integer(0)), "SCRIPT", "EXISTS", sha, "f" * 40)
        self.assertReply(OK, "SCRIPT", "FLUSH")
        self.assertReply(harness.error("NOSCRIPT No matching script. Please use EVAL."),
                         "EVALSHA", sha, "0", "x")
        self.assertReply(harness.array(integer(0)), "SCRIPT", "EXISTS", sha)

    def test_evalsha_on_every_connection(self):
        # Connections land on both reactors: each compiles the script from the shared text.
        sha = harness.decode(self.c.cmd("SCRIPT", "LOAD", "return #ARGV")).decode()
        for _ in range(6):
            with self.conn() as c:
                self.assertEqual(c.cmd("EVALSHA", sha, "0", "a", "b"), integer(2))

    def test_msgpack_unpack_past_the_stack_is_an_error(self):
        # Every value unpacked is a return value: past Lua's stack, Redis's error (it used to
        # write past the stack's end).
        got = self.c.cmd("EVAL", "return #({cmsgpack.unpack(string.rep('a', 100000))})", "0")
        self.assertTrue(got.startswith(b"-ERR user_script:1: stack overflow (too many return "
                                       b"values at once; use unpack_one or unpack_limit "
                                       b"instead.)"), got)
        self.assertEqual(self.c.cmd("EVAL", "return #({cmsgpack.unpack(string.rep('a', 7000))})",
                                    "0"), b":7000\r\n")

    @unittest.skipIf(AGAINST_REDIS, "Redis lets a script touch any key")
    def test_undeclared_key(self):
        got = self.c.cmd("EVAL", "return redis.call('GET', 'elsewhere')", "1", "declared")
        self.assertTrue(got.startswith(
            b"-ERR script tried accessing undeclared key, key: elsewhere script: "), got)
        self.assertTrue(got.endswith(b", on @user_script:1.\r\n"), got)

    def test_function_flush_and_list(self):
        self.assertReply(OK, "FUNCTION", "FLUSH")
        self.assertReply(b"*0\r\n", "FUNCTION", "LIST")

    @unittest.skipIf(AGAINST_REDIS, "deadbolt's own INFO fields")
    def test_info_counts_native_and_lua(self):
        def counts():
            info = harness.decode(self.c.cmd("INFO", "stats")).decode()
            fields = dict(l.split(":", 1) for l in info.split("\r\n") if ":" in l)
            return int(fields["scripts_native_runs"]), int(fields["scripts_lua_runs"])
        native, lua = counts()
        # The classic compare-and-delete is catalogued; with a trailing space it is not.
        classic = ('if redis.call("get",KEYS[1]) == ARGV[1] then return '
                   'redis.call("del",KEYS[1]) else return 0 end')
        self.c.cmd("EVAL", classic, "1", "k", "v")
        self.c.cmd("EVAL", classic + " ", "1", "k", "v")
        self.c.cmd("EVAL", classic + "  ", "1", "k", "v")
        self.assertEqual(counts(), (native + 1, lua + 2))


@unittest.skipIf(AGAINST_REDIS, "keys on both shards of a --threads 2 deadbolt")
class LuaAcrossShardsTest(harness.ServerTestCase):
    TRANSFER = ("local a = tonumber(redis.call('GET', KEYS[1]))\n"
                "local b = tonumber(redis.call('GET', KEYS[2]))\n"
                "redis.call('SET', KEYS[1], a - 1)\nredis.call('SET', KEYS[2], b + 1)\n"
                "return a + b")

    def test_keys_on_two_shards(self):
        a, b = on_shard(0, "xa"), on_shard(1, "xb")
        self.assertReply(OK, "SET", a, "10")
        self.assertReply(OK, "SET", b, "5")
        self.assertReply(integer(15), "EVAL", self.TRANSFER, "2", a, b)
        self.assertReply(bulk(b"9"), "GET", a)
        self.assertReply(bulk(b"6"), "GET", b)
        # A deletion and an error after a write, across shards, as Redis: effects stay.
        got = self.c.cmd("EVAL", "redis.call('DEL', KEYS[1])\nredis.call('SET', KEYS[2], 'x')\n"
                         "return redis.call('INCR', KEYS[2])", "2", a, b)
        self.assertTrue(got.startswith(b"-ERR value is not an integer or out of range script: "),
                        got)
        self.assertReply(integer(0), "EXISTS", a)
        self.assertReply(bulk(b"x"), "GET", b)

    def test_racing_transfers_stay_atomic(self):
        # Transfers between a key on each shard race with readers that read both keys in one
        # script: every reader sees the sum unchanged.
        a, b = on_shard(0, "ra"), on_shard(1, "rb")
        self.assertReply(OK, "SET", a, "1000")
        self.assertReply(OK, "SET", b, "1000")
        errors = []

        def writer():
            with self.conn() as c:
                for _ in range(150):
                    if c.cmd("EVAL", self.TRANSFER, "2", a, b) != integer(2000):
                        errors.append("writer saw a torn state")

        def reader():
            with self.conn() as c:
                for _ in range(150):
                    got = c.cmd("EVAL_RO", "return redis.call('GET', KEYS[1]) + "
                                "redis.call('GET', KEYS[2])", "2", a, b)
                    if got != integer(2000):
                        errors.append(got)
                    pair = c.cmd("MGET", a, b)
                    vals = [int(v) for v in harness.decode(pair)]
                    if sum(vals) != 2000:
                        errors.append(pair)

        threads = [threading.Thread(target=writer) for _ in range(2)]
        threads += [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        self.assertReply(bulk(b"700"), "GET", a)
        self.assertReply(bulk(b"1300"), "GET", b)


def kill_quietly(conns):
    """SCRIPT KILL from each of conns, ignoring what they answer: a failed test's clean-up."""
    for c in conns:
        try:
            c.cmd("SCRIPT", "KILL")
        except (socket.timeout, OSError):
            pass


def assert_killed(test, reply):
    test.assertTrue(reply.startswith(b"-ERR Script killed by user with SCRIPT KILL..."), reply)


def kill_from_another_reactor(test, others):
    """SCRIPT KILL from the first of `others` that answers (every one should: the reactor
    running the script serves its clients from the script's hook). Returns that connection."""
    for c in list(others):
        try:
            got = c.cmd("SCRIPT", "KILL")
        except (socket.timeout, OSError):
            continue
        test.assertEqual(got, OK)
        c.settimeout(harness.IO_TIMEOUT)
        return c
    test.fail("no connection could send SCRIPT KILL")
    return None


@unittest.skipIf(AGAINST_REDIS, "keys on both shards of a --threads 2 deadbolt")
class LuaKillAcrossShardsTest(harness.ServerTestCase):
    def test_killed_script_across_shards_writes_nothing_back(self):
        # It wrote into its private copy of the keys: killable, and the writes are dropped.
        a, b = on_shard(0, "kx"), on_shard(1, "ky")
        self.assertReply(OK, "CONFIG", "SET", "busy-reply-threshold", "100")
        self.assertReply(OK, "SET", a, "orig")
        others = [self.conn(timeout=0.5) for _ in range(6)]
        for c in others:
            self.assertEqual(c.cmd("PING"), b"+PONG\r\n")
        runner = self.conn()
        runner.send(harness.encode_command(
            "EVAL", "redis.call('SET', KEYS[1], 'new')\nredis.call('SET', KEYS[2], 'new')\n"
            "while true do end", "2", a, b))
        time.sleep(1.0)  # past the threshold (the kill below is refused until then)
        killer = kill_from_another_reactor(self, others)
        assert_killed(self, runner.read_reply())
        self.assertEqual(killer.cmd("MGET", a, b), harness.array(bulk(b"orig"), harness.NIL))
        self.assertEqual(killer.cmd("CONFIG", "SET", "busy-reply-threshold", "5000"), OK)


class LuaBusyTest(harness.ServerTestCase):
    """A script past busy-reply-threshold: BUSY for the others, SCRIPT KILL stops it, its keys
    are free again. Connections spread over both reactors: the first that sees BUSY kills."""

    def test_busy_then_kill(self):
        key = "busy:{k}"
        self.assertReply(OK, "CONFIG", "SET", "busy-reply-threshold", "100")
        # Connections opened before the script starts are spread over both reactors (reactor 0
        # accepts new ones, and it may be the one running the script).
        others = [self.conn(timeout=0.5) for _ in range(8)]
        for c in others:
            self.assertEqual(c.cmd("PING"), b"+PONG\r\n")
        runner = self.conn()
        runner.send(harness.encode_command("EVAL", "redis.call('GET', KEYS[1])\n"
                                           "while true do end", "1", key))
        time.sleep(1.0)  # past the threshold (not asserted: the loop below waits for BUSY)
        busy = harness.error("BUSY Redis is busy running a script. You can only call "
                             "SCRIPT KILL or SHUTDOWN NOSAVE.")
        killer = None
        try:
            for _ in range(100):
                for c in list(others):
                    try:
                        got = c.cmd("GET", key)
                    except (socket.timeout, OSError):
                        others.remove(c)  # (LuaBusyServesEveryClientTest requires none)
                        continue
                    if got == busy:
                        killer = c
                        break
                if killer is not None or not others:
                    break
                time.sleep(0.05)
            self.assertIsNotNone(killer, "no connection saw BUSY")
            killer.settimeout(harness.IO_TIMEOUT)
            self.assertEqual(killer.cmd("SCRIPT", "KILL"), OK)
        finally:
            if killer is None:
                kill_quietly(others)
        assert_killed(self, runner.read_reply())
        # The key is free again.
        self.assertEqual(killer.cmd("SET", key, "v"), OK)
        self.assertEqual(runner.cmd("GET", key), bulk(b"v"))
        self.assertEqual(runner.cmd("CONFIG", "SET", "busy-reply-threshold", "5000"), OK)
        self.assertEqual(runner.cmd("SCRIPT", "KILL"),
                         harness.error("NOTBUSY No scripts in execution right now."))


BUSY = harness.error("BUSY Redis is busy running a script. You can only call "
                     "SCRIPT KILL or SHUTDOWN NOSAVE.")


def wait_busy(test, conn, key, busy=BUSY):
    """Polls GET key on conn until it answers BUSY (the script is past the threshold, 100 ms in
    these tests). Not before: a command sent to the script's shard from another reactor before
    then waits for the script to end, as every command waits in Redis before the threshold."""
    time.sleep(0.5)
    for _ in range(200):
        got = conn.cmd("GET", key)
        if got == busy:
            return
        time.sleep(0.02)
    test.fail("never BUSY: %r" % got)


class LuaBusyServesEveryClientTest(harness.ServerTestCase):
    """While a script is past busy-reply-threshold, every client is answered, also those of the
    reactor running it (as Redis, which serves its clients from the script's hook): BUSY, and
    SCRIPT KILL from any of them, or from a client that connects meanwhile (redis-cli)."""

    def test_every_client_answers_and_any_can_kill(self):
        key = "busy2:{k}"
        self.assertReply(OK, "CONFIG", "SET", "busy-reply-threshold", "100")
        # Opened before the script starts: spread over both reactors of a deadbolt.
        others = [self.conn() for _ in range(8)]
        for c in others:
            self.assertEqual(c.cmd("PING"), b"+PONG\r\n")
        runner = self.conn()
        runner.send(harness.encode_command("EVAL", "redis.call('GET', KEYS[1])\n"
                                           "while true do end", "1", key))
        killer = None
        try:
            wait_busy(self, others[0], key)
            for c in others:  # none hangs: a timeout here fails the test
                self.assertEqual(c.cmd("GET", key), BUSY)
            # Pipelined: each command gets its BUSY, in order.
            c = others[1]
            c.send(harness.encode_command("GET", key) + harness.encode_command("INCR", key))
            self.assertEqual(c.read_replies(2), [BUSY, BUSY])
            # Inside MULTI, as Redis: MULTI runs, the refused command makes EXEC abort. (EXEC
            # itself is refused on the script's reactor, "because of: BUSY ...", as in Redis;
            # another reactor runs it, and it aborts "because of previous errors".)
            for c in others[2:4]:
                self.assertEqual(c.cmd("MULTI"), OK)
                self.assertEqual(c.cmd("SET", key, "v"), BUSY)
                got = c.cmd("EXEC")
                self.assertTrue(got.startswith(b"-EXECABORT Transaction discarded because of"),
                                got)
            # SHUTDOWN without NOSAVE is refused while the script runs.
            self.assertEqual(others[4].cmd("SHUTDOWN"), BUSY)
            killer = self.conn()  # as `redis-cli SCRIPT KILL`: a new connection
            self.assertEqual(killer.cmd("SCRIPT", "KILL"), OK)
        finally:
            if killer is None:
                kill_quietly(others)
        assert_killed(self, runner.read_reply())
        for c in others:
            self.assertEqual(c.cmd("GET", key), harness.NIL)
        self.assertEqual(runner.cmd("CONFIG", "SET", "busy-reply-threshold", "5000"), OK)


class FunctionBusyTest(harness.ServerTestCase):
    """A busy function (FCALL): BUSY names FUNCTION KILL, SCRIPT KILL does not stop it."""

    def test_function_kill(self):
        key = "fbusy:{k}"
        busy_fn = harness.error("BUSY Redis is busy running a script. You can only call "
                                "FUNCTION KILL or SHUTDOWN NOSAVE.")
        self.assertReply(OK, "CONFIG", "SET", "busy-reply-threshold", "100")
        self.assertReply(bulk(b"busylib"), "FUNCTION", "LOAD", "REPLACE",
                         "#!lua name=busylib\n"
                         "redis.register_function('spin', function(keys, args)\n"
                         "  redis.call('GET', keys[1]) while true do end end)")
        runner, other = self.conn(), self.conn()
        runner.send(harness.encode_command("FCALL", "spin", "1", key))
        killed = False
        try:
            wait_busy(self, other, key, busy_fn)
            self.assertEqual(other.cmd("SCRIPT", "KILL"), busy_fn)
            self.assertEqual(other.cmd("FUNCTION", "KILL"), OK)
            killed = True
        finally:
            if not killed:
                for c in (other, self.c):
                    try:
                        c.cmd("FUNCTION", "KILL")
                    except (socket.timeout, OSError):
                        pass
        got = runner.read_reply()
        self.assertTrue(got.startswith(b"-ERR Script killed by user with"), got)
        self.assertReply(OK, "FUNCTION", "DELETE", "busylib")
        self.assertReply(OK, "CONFIG", "SET", "busy-reply-threshold", "5000")


class LuaBusyOneReactorTest(unittest.TestCase):
    """One reactor (deadbolt --threads 1), the journal written at every write: a script that
    wrote cannot be killed, and SHUTDOWN NOSAVE, sent while it runs, ends the server."""

    def test_unkillable_script_then_shutdown_nosave(self):
        args = ["--busy-reply-threshold", "100", "--appendonly", "yes", "--appendfsync", "always"]
        if not AGAINST_REDIS:
            args += ["--threads", "1"]
        server = harness.ServerProcess(args).start()
        try:
            runner = harness.RespConn(server.port)
            self.assertEqual(runner.cmd("SET", "before", "1"), OK)
            runner.send(harness.encode_command(
                "EVAL", "redis.call('SET', KEYS[1], 'x')\nwhile true do end", "1", "w"))
            other = harness.RespConn(server.port)
            wait_busy(self, other, "before")
            self.assertEqual(other.cmd("SCRIPT", "KILL"), harness.error(
                "UNKILLABLE Sorry the script already executed write commands against the "
                "dataset. You can either wait the script termination or kill the server in a "
                "hard way using the SHUTDOWN NOSAVE command."))
            self.assertEqual(other.cmd("PING"), BUSY)
            other.send(harness.encode_command("SHUTDOWN", "NOSAVE"))
            self.assertIsNotNone(server.wait_exit(), "the server did not exit")
        finally:
            if server.alive():
                server.kill()


@unittest.skipIf(AGAINST_REDIS, "lua-memory-limit is deadbolt's (Redis 7.0 has no limit)")
class LuaMemoryLimitTest(harness.ServerTestCase):
    def test_a_script_that_grows_without_end_fails_and_the_server_stays(self):
        self.assertReply(harness.array(bulk(b"lua-memory-limit"), bulk(b"536870912")),
                         "CONFIG", "GET", "lua-memory-limit")
        self.assertReply(OK, "CONFIG", "SET", "lua-memory-limit", "32mb")
        try:
            # Without the limit this reached 7 GB (and Redis 7.0 goes on until the OOM killer).
            self.assertReply(harness.error("ERR not enough memory"), "EVAL",
                             "local s = 'x' while true do s = s .. s end", "0")
            self.assertReply(integer(2), "EVAL", "return 1 + 1", "0")
        finally:
            self.assertReply(OK, "CONFIG", "SET", "lua-memory-limit", "512mb")


@unittest.skipIf(AGAINST_REDIS, "redis-server does not stop on SIGTERM while a script runs")
class LuaShutdownTest(unittest.TestCase):
    def test_sigterm_stops_a_running_script(self):
        server = harness.ServerProcess().start()
        try:
            runner = harness.RespConn(server.port)
            runner.send(harness.encode_command("EVAL", "while true do end", "0"))
            time.sleep(0.3)  # the script runs (not asserted: it runs until stopped anyway)
            self.assertIsNone(server.stop())  # exits 0 within STOP_TIMEOUT
            runner.close()
        finally:
            if server.alive():
                server.kill()


if __name__ == "__main__":
    unittest.main()
