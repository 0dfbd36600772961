"""ACL (issue 15), against deadbolt and redis-server alike: users with passwords, key patterns
(app1 limited to lock:app1:* cannot touch lock:app2:*), command categories (-@dangerous),
channel patterns, scripts refused on keys their user may not touch, AUTH user pass, HELLO ...
AUTH, ACL WHOAMI/LIST/GETUSER/LOG/DRYRUN/CAT/GENPASS/DELUSER, and an aclfile loaded at start,
saved and loaded again. Replies are compared byte for byte where Redis's are deterministic."""

import hashlib
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, bulk, error, integer, array, NIL  # noqa: E402

# SHA-256 of "pw1" and of "pw2", as ACL LIST shows them.
PW1 = "c592df4a86933b92addc9842402ddf198c638ea9be58916ee6e3734e1e3152f8"
PW2 = "93915a0a4bf8f634cb1856494dd4304472ad46b9827f541f76b6761c49cc55b0"

NOPERM_KEY = error("NOPERM this user has no permissions to access one of the keys used as "
                   "arguments")
NOPERM_CHANNEL = error("NOPERM this user has no permissions to access one of the channels used "
                       "as arguments")
WRONGPASS = error("WRONGPASS invalid username-password pair or user is disabled.")
# A compare-and-delete release (deadbolt runs it from its catalogue, without Lua).
RELEASE = ('if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) '
           'else return 0 end')


# A queued command its user's rules no longer allow at EXEC (Redis 7.0's execCommand).
AT_EXEC = ("NOPERM ACLs rules changed between the moment the transaction was accumulated and the "
           "EXEC call. This command is no longer allowed for the following reason: ")


def noperm_cmd(name):
    return error("NOPERM this user has no permissions to run the '%s' command" % name)


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


class AclTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "ACL", "SETUSER", "app1", "on", ">pw1", "~lock:app1:*", "&news*",
                         "+@all", "-@dangerous")
        self.assertReply(OK, "ACL", "LOG", "RESET")

    def tearDown(self):
        c = self.conn()
        c.cmd("ACL", "DELUSER", "app1", "app2", "ro", "gone")
        c.cmd("ACL", "LOG", "RESET")
        c.cmd("FLUSHALL")
        super().tearDown()

    def app1(self):
        c = self.conn()
        self.assertEqual(c.cmd("AUTH", "app1", "pw1"), OK)
        return c

    def test_app1_cannot_touch_app2_locks(self):
        c = self.app1()
        self.assertReplies([
            (("SET", "lock:app1:a", "tok", "NX", "PX", "30000"), OK),
            (("SET", "lock:app2:a", "tok", "NX", "PX", "30000"), NOPERM_KEY),
            (("GET", "lock:app2:a"), NOPERM_KEY),
            (("DEL", "lock:app2:a"), NOPERM_KEY),
            (("MGET", "lock:app1:a", "lock:app2:a"), NOPERM_KEY),
            (("GET", "lock:app1:a"), bulk("tok")),
            (("PEXPIRE", "lock:app2:a", "100"), NOPERM_KEY),
        ], c=c)
        self.assertReply(integer(0), "EXISTS", "lock:app2:a")  # the default user sees nothing

    def test_native_lock_commands_are_checked(self):
        if harness.AGAINST_REDIS:
            self.skipTest("DELIFEQ and LOCK.* are deadbolt's")
        c = self.app1()
        self.assertReplies([
            (("LOCK.ACQUIRE", "lock:app2:a", "tok", "30000"), NOPERM_KEY),
            (("DELIFEQ", "lock:app2:a", "tok"), NOPERM_KEY),
            (("DELIFEQ", "lock:app1:a", "tok"), integer(0)),
        ], c=c)
        self.assertReply(OK, "ACL", "SETUSER", "ro", "on", ">pw2", "allkeys", "-@all", "+@read")
        self.assertReply(b"$%d\r\nThis user has no permissions to run the 'delifeq' command\r\n"
                         % len("This user has no permissions to run the 'delifeq' command"),
                         "ACL", "DRYRUN", "ro", "DELIFEQ", "k", "t")

    def test_command_restrictions(self):
        c = self.app1()
        self.assertReplies([
            (("FLUSHALL",), noperm_cmd("flushall")),
            (("KEYS", "*"), noperm_cmd("keys")),
            (("CONFIG", "GET", "maxmemory"), noperm_cmd("config|get")),
            (("CLIENT", "KILL", "ID", "12345"), noperm_cmd("client|kill")),
            (("FLUSHDB",), noperm_cmd("flushdb")),
            (("CLIENT", "SETNAME", "x"), OK),
            (("PING",), harness.PONG),
        ], c=c)
        self.assertReply(OK, "ACL", "SETUSER", "app1", "-set")
        self.assertReply(noperm_cmd("set"), "SET", "lock:app1:a", "v", c=c)  # at once
        self.assertReply(OK, "ACL", "SETUSER", "app1", "+set")
        self.assertReply(OK, "SET", "lock:app1:a", "v", c=c)

    def test_read_only_pattern(self):
        self.assertReply(OK, "ACL", "SETUSER", "ro", "on", ">pw2", "%R~r:*", "+@all")
        c = self.conn()
        self.assertEqual(c.cmd("AUTH", "ro", "pw2"), OK)
        self.assertReplies([
            (("GET", "r:1"), NIL),
            (("SET", "r:1", "v"), NOPERM_KEY),
            (("GET", "w:1"), NOPERM_KEY),
        ], c=c)

    def test_multi_with_a_refused_command_aborts(self):
        c = self.app1()
        self.assertReplies([
            (("MULTI",), OK),
            (("SET", "lock:app1:a", "v"), b"+QUEUED\r\n"),
            (("SET", "lock:app2:a", "v"), NOPERM_KEY),
            (("EXEC",), error("EXECABORT Transaction discarded because of previous errors.")),
        ], c=c)
        self.assertReply(integer(0), "EXISTS", "lock:app1:a")

    def test_exec_checks_queued_commands_again(self):
        # Rules changed by another connection between MULTI and EXEC take effect at EXEC: each
        # queued command is checked again, a refused one replies NOPERM in EXEC's array.
        c = self.app1()
        self.assertReplies([
            (("MULTI",), OK),
            (("SET", "lock:app1:a", "v"), b"+QUEUED\r\n"),
            (("GET", "lock:app1:b"), b"+QUEUED\r\n"),
            (("PUBLISH", "news1", "m"), b"+QUEUED\r\n"),
            (("PING",), b"+QUEUED\r\n"),
            (("CLIENT", "SETNAME", "x"), b"+QUEUED\r\n"),
            (("SET", "lock:app1:z", "v"), b"+QUEUED\r\n"),
        ], c=c)
        self.assertReply(OK, "ACL", "SETUSER", "app1", "resetkeys", "~lock:app1:z", "~other:*",
                         "resetchannels", "-ping", "-client|setname")
        self.assertReply(array(
            error(AT_EXEC + "no permission to touch the specified keys"),
            error(AT_EXEC + "no permission to touch the specified keys"),
            error(AT_EXEC + "no permission to access one of the channels used as arguments"),
            error(AT_EXEC + "no permission to execute the command or subcommand"),
            error(AT_EXEC + "no permission to execute the command or subcommand"),
            OK), "EXEC", c=c)
        self.assertReply(integer(0), "EXISTS", "lock:app1:a")
        self.assertReply(integer(1), "EXISTS", "lock:app1:z")
        entries = [dict(zip(e[0::2], e[1::2])) for e in self.c.call("ACL", "LOG")]
        self.assertEqual([(e[b"reason"], e[b"context"], e[b"object"]) for e in entries], [
            (b"command", b"multi", b"client|setname"),
            (b"command", b"multi", b"ping"),
            (b"channel", b"multi", b"news1"),
            (b"key", b"multi", b"lock:app1:b"),
            (b"key", b"multi", b"lock:app1:a"),
        ])
        self.assertIn(b"cmd=exec", entries[0][b"client-info"])

    def test_exec_refused_after_multi_discards(self):
        c = self.app1()
        self.assertReplies([(("MULTI",), OK), (("SET", "lock:app1:a", "v"), b"+QUEUED\r\n")],
                           c=c)
        self.assertReply(OK, "ACL", "SETUSER", "app1", "-exec")
        self.assertReplies([
            (("EXEC",), error("EXECABORT Transaction discarded because of: NOPERM this user has "
                              "no permissions to run the 'exec' command")),
            (("DISCARD",), error("ERR DISCARD without MULTI")),
        ], c=c)
        self.assertReply(integer(0), "EXISTS", "lock:app1:a")
        entry = dict(zip(*[iter(self.c.call("ACL", "LOG", "1")[0])] * 2))
        self.assertEqual((entry[b"reason"], entry[b"context"], entry[b"object"]),
                         (b"command", b"multi", b"exec"))

    def test_user_turned_off_keeps_its_connections(self):
        # As Redis 7.0: "off" refuses new AUTHs; a connection already in keeps its rights, and
        # its EXEC runs.
        c = self.app1()
        self.assertReplies([(("MULTI",), OK), (("SET", "lock:app1:a", "v"), b"+QUEUED\r\n")],
                           c=c)
        self.assertReply(OK, "ACL", "SETUSER", "app1", "off")
        self.assertReply(array(OK), "EXEC", c=c)
        self.assertReply(bulk("v"), "GET", "lock:app1:a", c=c)

    def test_scripts_check_their_keys(self):
        c = self.app1()
        self.assertReply(OK, "SET", "lock:app2:a", "tok")
        self.assertReplies([
            (("EVAL", RELEASE, "1", "lock:app2:a", "tok"), NOPERM_KEY),
            (("SET", "lock:app1:a", "tok"), OK),
            (("EVAL", RELEASE, "1", "lock:app1:a", "tok"), integer(1)),
        ], c=c)
        self.assertReply(bulk("tok"), "GET", "lock:app2:a")

    def test_lua_calls_are_checked(self):
        # A script this user may run calls a command it may not (Redis's scriptVerifyACL).
        self.assertReply(OK, "ACL", "SETUSER", "app1", "-del")
        c = self.app1()
        self.assertReply(OK, "SET", "lock:app1:a", "tok", c=c)
        got = c.cmd("EVAL", "return redis.call('del', KEYS[1])", "1", "lock:app1:a")
        self.assertTrue(got.startswith(
            b"-ERR The user executing the script can't run this command or subcommand"), got)
        self.assertReply(integer(1), "EXISTS", "lock:app1:a")
        # The catalogued release too (deadbolt runs it without Lua): Redis's exact error.
        self.assertReply(OK, "SET", "lock:app1:b", "tok", c=c)
        sha = hashlib.sha1(RELEASE.encode()).hexdigest()
        self.assertReply(error("ERR The user executing the script can't run this command or "
                               "subcommand script: %s, on @user_script:1." % sha),
                         "EVAL", RELEASE, "1", "lock:app1:b", "tok", c=c)
        self.assertReply(integer(1), "EXISTS", "lock:app1:b")
        entry = dict(zip(*[iter(self.c.call("ACL", "LOG", "1")[0])] * 2))
        self.assertEqual((entry[b"reason"], entry[b"context"], entry[b"object"]),
                         (b"command", b"lua", b"del"))
        got = c.cmd("EVAL", "return redis.call('publish', 'other', 'm')", "0")
        self.assertTrue(got.startswith(
            b"-ERR The user executing the script can't publish to the channel mentioned in the "
            b"command"), got)

    def test_channels(self):
        c = self.app1()
        self.assertReplies([
            (("PUBLISH", "news1", "m"), integer(0)),
            (("PUBLISH", "other", "m"), NOPERM_CHANNEL),
            (("SUBSCRIBE", "other"), NOPERM_CHANNEL),
            (("PSUBSCRIBE", "news1*"), NOPERM_CHANNEL),  # only the pattern given
        ], c=c)

    def test_auth(self):
        c = self.conn()
        self.assertReplies([
            (("AUTH", "app1", "wrong"), WRONGPASS),
            (("AUTH", "nobody", "pw1"), WRONGPASS),
            (("ACL", "WHOAMI"), bulk("default")),
            (("AUTH", "app1", "pw1"), OK),
            (("ACL", "WHOAMI"), bulk("app1")),
        ], c=c)
        self.assertReply(OK, "ACL", "SETUSER", "app1", "off")
        self.assertReply(WRONGPASS, "AUTH", "app1", "pw1", c=self.conn())
        self.assertReply(OK, "ACL", "SETUSER", "app1", "on")
        # RESET goes back to the default user.
        self.assertReply(b"+RESET\r\n", "RESET", c=c)
        self.assertReply(bulk("default"), "ACL", "WHOAMI", c=c)

    def test_hello_auth(self):
        c = self.conn()
        self.assertEqual(c.cmd("HELLO", "3", "AUTH", "app1", "wrong"), WRONGPASS)
        got = c.cmd("HELLO", "3", "AUTH", "app1", "pw1")
        self.assertTrue(got.startswith(b"%7\r\n"), got)
        self.assertReply(b"$4\r\napp1\r\n", "ACL", "WHOAMI", c=c)
        self.assertReply(NOPERM_KEY, "GET", "lock:app2:a", c=c)

    def test_list_and_getuser(self):
        self.assertReply(OK, "ACL", "SETUSER", "app2", "on", ">pw2", "%R~r:*", "%W~w:*",
                         "&chan*", "+get", "-@all", "+@read", "-get", "+get")
        self.assertReply(array(
            bulk("user app1 on #%s ~lock:app1:* resetchannels &news* +@all -@dangerous" % PW1),
            bulk("user app2 on #%s %%R~r:* %%W~w:* resetchannels &chan* -@all +@read" % PW2),
            bulk("user default on nopass ~* &* +@all")), "ACL", "LIST")
        self.assertReply(array(bulk("app1"), bulk("app2"), bulk("default")), "ACL", "USERS")
        self.assertReply(array(
            bulk("flags"), array(bulk("on")),
            bulk("passwords"), array(bulk(PW2)),
            bulk("commands"), bulk("-@all +@read"),
            bulk("keys"), bulk("%R~r:* %W~w:*"),
            bulk("channels"), bulk("&chan*"),
            bulk("selectors"), array()), "ACL", "GETUSER", "app2")
        self.assertReply(NIL, "ACL", "GETUSER", "nobody")

    def test_selectors(self):
        # Redis 7's selectors: the call is allowed when the root rules or one "(...)" allows it.
        self.assertReply(OK, "ACL", "SETUSER", "app2", "on", ">pw2", "~root:*", "+@all",
                         "-@dangerous", "(~sel:* +get %R~ro:* &ch*)", "(+set", "~w:*)")
        listed = [x for x in self.c.call("ACL", "LIST") if x.startswith(b"user app2 ")]
        self.assertEqual(listed, [(
            "user app2 on #%s ~root:* resetchannels +@all -@dangerous (~sel:* %%R~ro:* "
            "resetchannels &ch* -@all +get) (~w:* resetchannels -@all +set)" % PW2).encode()])
        self.assertReply(array(
            bulk("flags"), array(bulk("on")),
            bulk("passwords"), array(bulk(PW2)),
            bulk("commands"), bulk("+@all -@dangerous"),
            bulk("keys"), bulk("~root:*"),
            bulk("channels"), bulk(""),
            bulk("selectors"), array(
                array(bulk("commands"), bulk("-@all +get"), bulk("keys"),
                      bulk("~sel:* %R~ro:*"), bulk("channels"), bulk("&ch*")),
                array(bulk("commands"), bulk("-@all +set"), bulk("keys"), bulk("~w:*"),
                      bulk("channels"), bulk("")))), "ACL", "GETUSER", "app2")
        c = self.conn()
        self.assertEqual(c.cmd("AUTH", "app2", "pw2"), OK)
        self.assertReplies([
            (("GET", "sel:1"), NIL),
            (("GET", "ro:1"), NIL),
            (("SET", "ro:1", "v"), NOPERM_KEY),
            (("SET", "w:1", "v"), OK),
            (("GET", "w:1"), NOPERM_KEY),
            (("SET", "root:1", "v"), OK),
            (("MGET", "root:1", "sel:1"), NOPERM_KEY),
            (("PUBLISH", "ch1", "m"), NOPERM_CHANNEL),  # the selector has &ch* but not PUBLISH
            (("FLUSHALL",), noperm_cmd("flushall")),
        ], c=c)
        entries = [dict(zip(e[0::2], e[1::2])) for e in self.c.call("ACL", "LOG")]
        self.assertEqual([(e[b"reason"], e[b"object"]) for e in entries], [
            (b"command", b"flushall"), (b"channel", b"ch1"), (b"key", b"sel:1"),
            (b"key", b"w:1"), (b"key", b"ro:1")])

        def dry(*args):
            return self.c.cmd("ACL", "DRYRUN", "app2", *args)
        self.assertEqual(dry("GET", "sel:1"), OK)
        self.assertEqual(dry("SET", "sel:1", "v"),
                         bulk("This user has no permissions to access the 'sel:1' key"))
        self.assertEqual(dry("MGET", "zz", "sel:1"),
                         bulk("This user has no permissions to access the 'zz' key"))
        self.assertEqual(dry("MGET", "root:1", "sel:1"),
                         bulk("This user has no permissions to access the 'sel:1' key"))
        self.assertEqual(dry("SUBSCRIBE", "ch1", "zz"),
                         bulk("This user has no permissions to access the 'ch1' channel"))
        self.assertEqual(dry("FLUSHALL"),
                         bulk("This user has no permissions to run the 'flushall' command"))
        # A script's redis.call is checked against every selector too: GET only a selector
        # allows, DEL none.
        self.assertReply(OK, "ACL", "SETUSER", "app2", "reset", "on", ">pw2", "~k*", "+@all",
                         "-get", "-del", "(+get ~k*)")
        self.assertReply(OK, "SET", "k1", "v", c=c)
        self.assertReply(bulk("v"), "EVAL", "return redis.call('get', KEYS[1])", "1", "k1", c=c)
        got = c.cmd("EVAL", "return redis.call('del', KEYS[1])", "1", "k1")
        self.assertTrue(got.startswith(
            b"-ERR The user executing the script can't run this command or subcommand"), got)
        # clearselectors takes them away at once.
        self.assertReply(OK, "ACL", "SETUSER", "app2", "clearselectors")
        self.assertReply(noperm_cmd("get"), "GET", "k1", c=c)
        self.assertEqual(self.c.call("ACL", "GETUSER", "app2")[-1], [])

    def test_getuser_resp3(self):
        # RESP3: flags a set, each selector a map, as Redis 7.0.
        self.assertReply(OK, "ACL", "SETUSER", "app2", "(~a* +get)")
        c = self.conn()
        c.cmd("HELLO", "3")
        self.assertReply(
            b"%6\r\n$5\r\nflags\r\n~1\r\n$3\r\noff\r\n$9\r\npasswords\r\n*0\r\n"
            b"$8\r\ncommands\r\n$5\r\n-@all\r\n$4\r\nkeys\r\n$0\r\n\r\n"
            b"$8\r\nchannels\r\n$0\r\n\r\n$9\r\nselectors\r\n*1\r\n%3\r\n"
            b"$8\r\ncommands\r\n$10\r\n-@all +get\r\n$4\r\nkeys\r\n$3\r\n~a*\r\n"
            b"$8\r\nchannels\r\n$0\r\n\r\n", "ACL", "GETUSER", "app2", c=c)

    def test_selector_errors(self):
        self.assertReplies([
            (("ACL", "SETUSER", "app1", "(~a*", "+get"),
             error("ERR Unmatched parenthesis in acl selector starting at '(~a*'.")),
            (("ACL", "SETUSER", "app1", "(~a*)x"),
             error("ERR Unmatched parenthesis in acl selector starting at '(~a*)x'.")),
            (("ACL", "SETUSER", "app1", "(on)"),
             error("ERR Error in ACL SETUSER modifier '(on)': Syntax error")),
            (("ACL", "SETUSER", "app1", "(~a*", "reset)"),
             error("ERR Error in ACL SETUSER modifier '(~a* reset)': Syntax error")),
            (("ACL", "SETUSER", "app1", "(+nocmd)"),
             error("ERR Error in ACL SETUSER modifier '(+nocmd)': Unknown command or category "
                   "name in ACL")),
            (("ACL", "SETUSER", "app1", "x)"),
             error("ERR Error in ACL SETUSER modifier 'x)': Syntax error")),
            (("ACL", "SETUSER", "app1", "(~* ~a*)"),
             error("ERR Error in ACL SETUSER modifier '(~* ~a*)': Adding a pattern after the * "
                   "pattern (or the 'allkeys' flag) is not valid and does not have any effect. "
                   "Try 'resetkeys' to start with an empty list of patterns")),
        ])
        self.assertEqual(self.c.call("ACL", "GETUSER", "app1")[-1], [])
        self.assertReply(OK, "ACL", "SETUSER", "app1", "()", "(  ~b*   +get  )", "(~x*)",
                         "reset")
        listed = [x for x in self.c.call("ACL", "LIST") if x.startswith(b"user app1 ")]
        self.assertEqual(listed, [b"user app1 off sanitize-payload resetchannels -@all"])

    def test_first_argument_rules(self):
        # "+select|0": a command without subcommands allowed with that first argument only.
        self.assertReply(OK, "ACL", "SETUSER", "app2", "on", "nopass", "~*", "-@all",
                         "+select|0", "+select|SIX", "(+select|7 ~x)")
        listed = [x for x in self.c.call("ACL", "LIST") if x.startswith(b"user app2 ")]
        self.assertEqual(listed, [b"user app2 on nopass ~* resetchannels -@all +select|0 "
                                  b"+select|SIX (~x resetchannels -@all +select|7)"])
        c = self.conn()
        self.assertReplies([
            (("AUTH", "app2", "x"), OK),
            (("SELECT", "0"), OK),
            (("SELECT", "7"), OK),
            (("SELECT", "1"), noperm_cmd("select")),
            (("SELECT", "six"), error("ERR value is not an integer or out of range")),
            (("PING",), noperm_cmd("ping")),
            (("AUTH", "app2", "x"), OK),  # AUTH is never refused
        ], c=c)
        self.assertEqual(self.c.cmd("ACL", "DRYRUN", "app2", "SELECT", "1"),
                         bulk("This user has no permissions to run the 'select' command"))
        # Allowed whole (here by category), the command forgets its first arguments.
        self.assertReply(OK, "ACL", "SETUSER", "app2", "clearselectors", "+@connection",
                         "-select")
        listed = [x for x in self.c.call("ACL", "LIST") if x.startswith(b"user app2 ")]
        self.assertEqual(listed, [b"user app2 on nopass ~* resetchannels -@all +@connection "
                                  b"-select"])
        self.assertReply(noperm_cmd("select"), "SELECT", "0", c=c)
        self.assertReplies([
            (("ACL", "SETUSER", "app2", "-select|0"),
             error("ERR Error in ACL SETUSER modifier '-select|0': Unknown command or category "
                   "name in ACL")),
            (("ACL", "SETUSER", "app2", "+select|"),
             error("ERR Error in ACL SETUSER modifier '+select|': Syntax error")),
            (("ACL", "SETUSER", "app2", "+client|setname|x"),
             error("ERR Error in ACL SETUSER modifier '+client|setname|x': Allowing first-arg "
                   "of a subcommand is not supported")),
        ])

    def test_setuser_errors(self):
        self.assertReplies([
            (("ACL", "SETUSER", "app1", "badrule"),
             error("ERR Error in ACL SETUSER modifier 'badrule': Syntax error")),
            (("ACL", "SETUSER", "app1", "+nocmd"),
             error("ERR Error in ACL SETUSER modifier '+nocmd': Unknown command or category "
                   "name in ACL")),
            (("ACL", "SETUSER", "app1", "<nope"),
             error("ERR Error in ACL SETUSER modifier '<nope': The password you are trying to "
                   "remove from the user does not exist")),
            (("ACL", "SETUSER", "app1", "#abc"),
             error("ERR Error in ACL SETUSER modifier '#abc': The password hash must be exactly "
                   "64 characters and contain only lowercase hexadecimal characters")),
            (("ACL", "DELUSER", "default"), error("ERR The 'default' user cannot be removed")),
            (("ACL", "CAT", "nope"), error("ERR Unknown category 'nope'")),
            (("ACL", "GENPASS", "0"),
             error("ERR ACL GENPASS argument must be the number of bits for the output "
                   "password, a positive number up to 4096")),
        ])
        # A bad rule changes nothing, even after good ones.
        self.assertReply(error("ERR Error in ACL SETUSER modifier 'bad': Syntax error"),
                         "ACL", "SETUSER", "app1", "off", "bad")
        self.assertReply(OK, "AUTH", "app1", "pw1", c=self.conn())

    def test_cat_and_genpass(self):
        cats = ["keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
                "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
                "blocking", "dangerous", "connection", "transaction", "scripting"]
        self.assertReply(array(*[bulk(x) for x in cats]), "ACL", "CAT")
        self.assertIn(b"$3\r\nget\r\n", self.c.cmd("ACL", "CAT", "read"))
        self.assertNotIn(b"$3\r\nset\r\n", self.c.cmd("ACL", "CAT", "read"))
        self.assertEqual(len(self.c.call("ACL", "GENPASS")), 64)
        self.assertEqual(len(self.c.call("ACL", "GENPASS", "32")), 8)

    def test_dryrun(self):
        def text(s):
            return bulk(s)
        self.assertReplies([
            (("ACL", "DRYRUN", "app1", "GET", "lock:app2:x"),
             text("This user has no permissions to access the 'lock:app2:x' key")),
            (("ACL", "DRYRUN", "app1", "GET", "lock:app1:x"), OK),
            (("ACL", "DRYRUN", "app1", "FLUSHALL"),
             text("This user has no permissions to run the 'flushall' command")),
            (("ACL", "DRYRUN", "app1", "PUBLISH", "zz", "1"),
             text("This user has no permissions to access the 'zz' channel")),
            (("ACL", "DRYRUN", "nobody", "GET", "x"), error("ERR User 'nobody' not found")),
            (("ACL", "DRYRUN", "app1", "NOCMD", "x"), error("ERR Command 'NOCMD' not found")),
            (("ACL", "DRYRUN", "app1", "GET"), harness.wrong_args("get")),
        ])

    def test_log(self):
        c = self.app1()
        c.cmd("GET", "lock:app2:a")
        c.cmd("GET", "lock:app2:a")
        c.cmd("FLUSHALL")
        self.conn().cmd("AUTH", "app1", "wrong")
        entries = self.c.call("ACL", "LOG")
        self.assertEqual(len(entries), 3)

        def fields(e):
            d = dict(zip(e[0::2], e[1::2]))
            self.assertIn(b"age-seconds", d)
            self.assertIn(b"id=", d[b"client-info"])
            return (d[b"count"], d[b"reason"], d[b"context"], d[b"object"], d[b"username"])
        self.assertEqual([fields(e) for e in entries], [
            (1, b"auth", b"toplevel", b"AUTH", b"app1"),
            (1, b"command", b"toplevel", b"flushall", b"app1"),
            (2, b"key", b"toplevel", b"lock:app2:a", b"app1"),
        ])
        self.assertEqual(len(self.c.call("ACL", "LOG", "1")), 1)
        self.assertReply(OK, "ACL", "LOG", "RESET")
        self.assertReply(array(), "ACL", "LOG")

    def test_deluser_closes_its_clients(self):
        c = self.app1()
        self.assertReply(integer(1), "ACL", "DELUSER", "app1", "nobody")
        c.settimeout(5)
        try:
            got = c.cmd("PING")
        except (ConnectionError, OSError, harness.IncompleteReply, EOFError):
            got = b""
        self.assertEqual(got, b"")
        self.assertReply(WRONGPASS, "AUTH", "app1", "pw1", c=self.conn())

    def test_default_user_password(self):
        # Giving the default user a password makes new clients authenticate (requirepass).
        self.assertReply(OK, "ACL", "SETUSER", "default", ">pw1")
        try:
            c = self.conn()
            self.assertReply(error("NOAUTH Authentication required."), "GET", "k", c=c)
            self.assertReply(WRONGPASS, "AUTH", "nope", c=c)
            self.assertReply(OK, "AUTH", "pw1", c=c)
            self.assertReply(NIL, "GET", "k", c=c)
        finally:
            self.assertReply(OK, "ACL", "SETUSER", "default", "nopass")


class AclFileTest(unittest.TestCase):
    """--aclfile: loaded at start, written by ACL SAVE, read again by ACL LOAD."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="deadbolt-acl-")
        self.path = os.path.join(self.dir, "users.acl")
        with open(self.path, "w") as f:
            f.write("user app1 on #%s ~lock:app1:* resetchannels -@all +@read +@write\n" % PW1)
            f.write("user default on nopass ~* &* +@all\n")
        self.server = harness.ServerProcess(["--aclfile", self.path]).start()

    def tearDown(self):
        self.server.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_round_trip(self):
        with harness.RespConn(self.server.port) as c:
            self.assertEqual(c.cmd("CONFIG", "GET", "aclfile"),
                             array(bulk("aclfile"), bulk(self.path)))
            self.assertEqual(c.cmd("ACL", "LIST"), array(
                bulk("user app1 on #%s ~lock:app1:* resetchannels -@all +@write +@read" % PW1),
                bulk("user default on nopass ~* &* +@all")))
            with harness.RespConn(self.server.port) as a:
                self.assertEqual(a.cmd("AUTH", "app1", "pw1"), OK)
                self.assertEqual(a.cmd("SET", "lock:app1:x", "v"), OK)
                self.assertEqual(a.cmd("SET", "lock:app2:x", "v"), NOPERM_KEY)
            self.assertEqual(c.cmd("ACL", "SETUSER", "app2", "on", ">pw2", "~lock:app2:*",
                                   "+@all"), OK)
            self.assertEqual(c.cmd("ACL", "SAVE"), OK)
            with open(self.path) as f:
                saved = f.read()
            self.assertEqual(saved, (
                "user app1 on #%s ~lock:app1:* resetchannels -@all +@write +@read\n"
                "user app2 on #%s ~lock:app2:* resetchannels +@all\n"
                "user default on nopass ~* &* +@all\n") % (PW1, PW2))
            # Edited by hand, then loaded: app2 goes, app1 changes.
            with open(self.path, "w") as f:
                f.write("user app1 on #%s ~lock:app1:* resetchannels -@all +get\n" % PW1)
                f.write("user default on nopass ~* &* +@all\n")
            self.assertEqual(c.cmd("ACL", "LOAD"), OK)
            self.assertEqual(c.cmd("ACL", "LIST"), array(
                bulk("user app1 on #%s ~lock:app1:* resetchannels -@all +get" % PW1),
                bulk("user default on nopass ~* &* +@all")))
            # A bad file changes nothing.
            with open(self.path, "w") as f:
                f.write("user app1 on badrule\n")
            self.assertTrue(c.cmd("ACL", "LOAD").startswith(b"-ERR "))
            self.assertEqual(len(c.call("ACL", "LIST")), 2)

    def test_selectors_round_trip(self):
        with open(self.path, "w") as f:
            f.write("user default on nopass ~* &* +@all\n")
            f.write("user s on nopass ~root:* (~a* +get) (  ~b*   +set  )\n")
        line = ("user s on nopass ~root:* resetchannels -@all (~a* resetchannels -@all +get) "
                "(~b* resetchannels -@all +set)")
        with harness.RespConn(self.server.port) as c:
            self.assertEqual(c.cmd("ACL", "LOAD"), OK)
            self.assertEqual(c.cmd("ACL", "LIST"), array(
                bulk("user default on nopass ~* &* +@all"), bulk(line)))
            with harness.RespConn(self.server.port) as a:
                self.assertEqual(a.cmd("AUTH", "s", "x"), OK)
                self.assertEqual(a.cmd("SET", "b:1", "v"), OK)
                self.assertEqual(a.cmd("GET", "a:1"), NIL)
                self.assertEqual(a.cmd("GET", "b:1"), NOPERM_KEY)
            self.assertEqual(c.cmd("ACL", "SAVE"), OK)
            with open(self.path) as f:
                self.assertEqual(f.read(), "user default on nopass ~* &* +@all\n" + line + "\n")
            self.assertEqual(c.cmd("ACL", "LOAD"), OK)
            self.assertEqual(c.cmd("ACL", "LIST"), array(
                bulk("user default on nopass ~* &* +@all"), bulk(line)))

    def test_a_bad_file_names_every_bad_line_in_redis_words(self):
        with open(self.path, "w") as f:
            f.write("user default on nopass ~* &* +@all\n"
                    "user bob on bogus\n"
                    "user x on\n"
                    "user x off\n"
                    "foo\n")
        p = self.path
        with harness.RespConn(self.server.port) as c:
            self.assertEqual(c.cmd("ACL", "LOAD"), error(
                f"ERR {p}:2: Syntax error. WARNING: Duplicate user 'x' found on line 4. "
                f"{p}:5 should start with user keyword followed by the username. WARNING: ACL "
                "errors detected, no change to the previously active ACL rules was performed"))
            self.assertEqual(len(c.call("ACL", "LIST")), 2)  # app1 and default, as loaded

    def test_without_aclfile_load_and_save_refuse(self):
        server = harness.ServerProcess().start()
        try:
            msg = error("ERR This Redis instance is not configured to use an ACL file. You may "
                        "want to specify users via the ACL SETUSER command and then issue a "
                        "CONFIG REWRITE (assuming you have a Redis configuration file set) in "
                        "order to store users in the Redis configuration.")
            with harness.RespConn(server.port) as c:
                self.assertEqual(c.cmd("ACL", "LOAD"), msg)
                self.assertEqual(c.cmd("ACL", "SAVE"), msg)
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main()
