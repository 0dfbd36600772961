"""Redis 7 functions (issue 14): FUNCTION LOAD/LIST/DELETE/FLUSH/STATS and FCALL/FCALL_RO,
run by the embedded Lua. Replies and error texts byte-exact with redis-server 7.0 where its
are deterministic (FUNCTION LIST orders functions by its hash table: compared as sets), a
function over keys on two shards, and redis-py's function_load/fcall as a client would use them.
Checked against redis-server too (DEADBOLT_AGAINST_REDIS=1)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, bulk, error, integer  # noqa: E402
from slots import on_shard  # noqa: E402

LOCKS = """#!lua name=locks
local function acquire(keys, args)
  return redis.call('set', keys[1], args[1], 'NX', 'PX', args[2])
end
local function release(keys, args)
  if redis.call('get', keys[1]) == args[1] then return redis.call('del', keys[1]) end
  return 0
end
redis.register_function('lock_acquire', acquire)
redis.register_function('lock_release', release)
redis.register_function{function_name = 'lock_owner', callback = function(keys)
  return redis.call('get', keys[1]) end, flags = {'no-writes'}, description = 'who holds it'}
return 'ignored'
"""

MOVE = """#!lua name=move
redis.register_function('move_token', function(keys, args)
  local v = redis.call('get', keys[1])
  if not v then return 0 end
  redis.call('del', keys[1])
  redis.call('set', keys[2], v)
  return 1
end)
"""


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


class FunctionTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertEqual(self.c.cmd("FUNCTION", "FLUSH"), OK)
        self.addCleanup(lambda: harness.RespConn(self.port).cmd("FUNCTION", "FLUSH"))

    def test_lock_library(self):
        c = self.c
        self.assertEqual(c.cmd("FUNCTION", "LOAD", LOCKS), bulk("locks"))
        self.assertEqual(c.cmd("FCALL", "lock_acquire", 1, "fn:lock", "me", 60000), OK)
        self.assertEqual(c.cmd("FCALL", "lock_acquire", 1, "fn:lock", "you", 60000), harness.NIL)
        self.assertEqual(c.cmd("FCALL_RO", "lock_owner", 1, "fn:lock"), bulk("me"))
        self.assertEqual(c.cmd("FCALL", "lock_release", 1, "fn:lock", "you"), integer(0))
        self.assertEqual(c.cmd("FCALL", "lock_release", 1, "fn:lock", "me"), integer(1))
        self.assertEqual(c.cmd("EXISTS", "fn:lock"), integer(0))
        # A write from FCALL_RO, or from a no-writes function, is refused.
        self.assertEqual(c.cmd("FCALL_RO", "lock_acquire", 1, "fn:lock", "me", 1000),
                         error("ERR Can not execute a script with write flag using *_ro command."))
        # Loading again needs REPLACE; a function name is unique across libraries.
        self.assertEqual(c.cmd("FUNCTION", "LOAD", LOCKS),
                         error("ERR Library 'locks' already exists"))
        self.assertEqual(c.cmd("FUNCTION", "LOAD", "REPLACE", LOCKS), bulk("locks"))
        other = ("#!lua name=locks2\n"
                 "redis.register_function('lock_acquire', function() return 1 end)")
        self.assertEqual(c.cmd("FUNCTION", "LOAD", other),
                         error("ERR Function lock_acquire already exists"))

    def test_list_delete_stats(self):
        c = self.c
        self.assertEqual(c.cmd("FUNCTION", "LOAD", LOCKS), bulk("locks"))
        self.assertEqual(c.cmd("FUNCTION", "LOAD", MOVE), bulk("move"))
        libs = harness.decode(c.cmd("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "lo*"))
        self.assertEqual(len(libs), 1)
        lib = libs[0]
        self.assertEqual(lib[:6:2], [b"library_name", b"engine", b"functions"])
        self.assertEqual(lib[1], b"locks")
        self.assertEqual(lib[3], b"LUA")
        self.assertEqual(lib[6:], [b"library_code", LOCKS.encode()])
        fns = lib[5]  # in Redis's hash table order: looked at by name
        self.assertEqual(sorted(f[1] for f in fns), [b"lock_acquire", b"lock_owner",
                                                      b"lock_release"])
        owner = [f for f in fns if f[1] == b"lock_owner"][0]
        self.assertEqual(owner, [b"name", b"lock_owner", b"description", b"who holds it",
                                 b"flags", [b"no-writes"]])
        acquire = [f for f in fns if f[1] == b"lock_acquire"][0]
        self.assertEqual(acquire, [b"name", b"lock_acquire", b"description", None, b"flags", []])
        self.assertEqual(len(harness.decode(c.cmd("FUNCTION", "LIST"))), 2)
        stats = harness.decode(c.cmd("FUNCTION", "STATS"))
        self.assertEqual(stats, [b"running_script", None, b"engines",
                                 [b"LUA", [b"libraries_count", 2, b"functions_count", 4]]])
        self.assertEqual(c.cmd("FUNCTION", "DELETE", "locks"), OK)
        self.assertEqual(c.cmd("FUNCTION", "DELETE", "locks"), error("ERR Library not found"))
        self.assertEqual(c.cmd("FCALL", "lock_acquire", 1, "k", "v", 1000),
                         error("ERR Function not found"))
        self.assertEqual(c.cmd("FUNCTION", "FLUSH"), OK)
        self.assertEqual(c.cmd("FUNCTION", "LIST"), b"*0\r\n")

    def test_subcommands_named_as_redis(self):
        # COMMAND, ACL rules and CLIENT LIST name them function|<sub>, as Redis does.
        info = harness.decode(self.c.cmd("COMMAND", "INFO", "FUNCTION"))[0]
        names = {sub[0].decode() for sub in info[9]}
        self.assertTrue(names, info)
        self.assertTrue(all(n.startswith("function|") for n in names), names)
        self.assertTrue({"function|load", "function|flush", "function|list"} <= names, names)
        self.assertEqual(self.c.cmd("FUNCTION", "NOPE"),
                         error("ERR unknown subcommand 'NOPE'. Try FUNCTION HELP."))
        self.assertEqual(self.c.cmd("FUNCTION", "LOAD"),
                         error("ERR wrong number of arguments for 'function|load' command"))

    def test_load_errors_as_redis(self):
        c = self.c
        cases = [
            ("nothing", "ERR Missing library metadata"),
            ("#!js name=x\n", "ERR Engine 'js' not found"),
            ("#!lua\n", "ERR Library name was not given"),
            ("#!lua name=a foo=bar\n", "ERR Invalid metadata value given: foo=bar"),
            ("#!lua name=a-b\n", "ERR Library names can only contain letters, numbers, or "
                                 "underscores(_) and must be at least one character long"),
            ("#!lua name=e\n", "ERR No functions registered"),
            ("#!lua name=e\nreturn 1", "ERR No functions registered"),
            ("#!lua name=e\nlocal x = \n",
             "ERR Error compiling function: user_function:3: unexpected symbol near '<eof>'"),
            ("#!lua name=e\nredis.register_function('a-b', function() end)",
             "ERR Error registering functions: ERR Library names can only contain letters, "
             "numbers, or underscores(_) and must be at least one character long"),
            ("#!lua name=e\nredis.register_function{function_name='x', "
             "callback=function() end, flags={'bad'}}",
             "ERR Error registering functions: ERR unknown flag given"),
            ("#!lua name=e\nredis.register_function{function_name='x', "
             "callback=function() end, foo=1}",
             "ERR Error registering functions: ERR unknown argument given to "
             "redis.register_function"),
            ("#!lua name=e\nredis.register_function('x', 5)",
             "ERR Error registering functions: ERR second argument to "
             "redis.register_function must be a function"),
            ("#!lua name=e\nx = 1",
             "ERR Error registering functions: ERR user_function:2: Attempt to modify a "
             "readonly table"),
        ]
        for code, want in cases:
            self.assertEqual(c.cmd("FUNCTION", "LOAD", code), error(want), code)
        self.assertEqual(c.cmd("FUNCTION", "LIST"), b"*0\r\n")

    def test_fcall_errors_as_redis(self):
        c = self.c
        self.assertEqual(c.cmd("FUNCTION", "LOAD", LOCKS), bulk("locks"))
        self.assertEqual(c.cmd("FCALL", "nope", 0), error("ERR Function not found"))
        self.assertEqual(c.cmd("FCALL", "lock_owner", "x"),
                         error("ERR Bad number of keys provided"))
        self.assertEqual(c.cmd("FCALL", "lock_owner", 5, "k"),
                         error("ERR Number of keys can't be greater than number of args"))
        self.assertEqual(c.cmd("FCALL", "lock_owner", -1),
                         error("ERR Number of keys can't be negative"))
        self.assertEqual(c.cmd("FCALL"), harness.wrong_args("fcall"))
        boom = "#!lua name=boom\nredis.register_function('boom', function() error('bad') end)"
        self.assertEqual(c.cmd("FUNCTION", "LOAD", boom), bulk("boom"))
        self.assertEqual(c.cmd("FCALL", "boom", 0),
                         error("ERR user_function:2: bad script: boom, on @user_function:2."))

    def test_keys_on_two_shards(self):
        # The function's keys live on different reactors' shards: it still runs atomically and
        # both keys change.
        c = self.c
        a, b = on_shard(0, "fnmove"), on_shard(1, "fnmove")
        self.assertEqual(c.cmd("FUNCTION", "LOAD", MOVE), bulk("move"))
        self.assertEqual(c.cmd("SET", a, "tok"), OK)
        self.assertEqual(c.cmd("FCALL", "move_token", 2, a, b), integer(1))
        self.assertEqual(c.cmd("GET", a), harness.NIL)
        self.assertEqual(c.cmd("GET", b), bulk("tok"))
        self.assertEqual(c.cmd("FCALL", "move_token", 2, a, b), integer(0))

    def test_redis_py(self):
        import redis
        r = redis.Redis(port=self.port)
        try:
            self.assertEqual(r.function_load(LOCKS), b"locks")
            self.assertTrue(r.fcall("lock_acquire", 1, "fn:py", "me", 60000))
            self.assertEqual(r.fcall_ro("lock_owner", 1, "fn:py"), b"me")
            self.assertEqual(r.fcall("lock_release", 1, "fn:py", "me"), 1)
            names = sorted(f[b"name"] if isinstance(f, dict) else f[1]
                           for lib in r.function_list() for f in
                           (lib[b"functions"] if isinstance(lib, dict) else lib[5]))
            self.assertEqual(names, [b"lock_acquire", b"lock_owner", b"lock_release"])
            with self.assertRaises(redis.ResponseError):
                r.fcall("nope", 0)
        finally:
            r.close()
