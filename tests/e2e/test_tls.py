"""TLS on --tls-port: redis-cli --tls, redis-py (ssl=True) and ioredis (tls) take a lock, release
it, read a 1 MB value and get a pipeline of 1000 replies back intact; --tls-auth-clients yes
refuses a client without a certificate; plain RESP sent to the TLS port closes that connection
and the server stays up; CONFIG SET of a second certificate reaches new connections while an
established one keeps working, and a key that does not match is refused with Redis's error while
TLS keeps working. The same against redis-server started with TLS
(DEADBOLT_AGAINST_REDIS=1).

A throwaway CA, a server certificate (for localhost and 127.0.0.1) and a client certificate are
made with the `openssl` command into a temporary folder.
"""

import importlib.util
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import unittest

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
JS_DIR = os.path.join(os.path.dirname(HERE), "js")
REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
RELEASE_SCRIPT = ("if redis.call('get', KEYS[1]) == ARGV[1] then "
                  "return redis.call('del', KEYS[1]) else return 0 end")
BIG = bytes((i * 7 + 3) % 251 for i in range(1 << 20))  # 1 MB, every byte value but a few

_CERTS = None


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=60)


def make_certs():
    """The CA, server and client files in a fresh temporary folder: {name: path}."""
    d = tempfile.mkdtemp(prefix="deadbolt-tls-")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", "-new", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
            "-subj", "/CN=deadbolt test CA", cwd=d)
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for who, ext in (("server", ["-extfile", "server.ext"]), ("client", [])):
        openssl("req", "-new", *ec, "-keyout", who + ".key", "-out", who + ".csr",
                "-subj", "/CN=deadbolt test " + who, cwd=d)
        openssl("x509", "-req", "-in", who + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", who + ".crt", "-days", "2", *ext, cwd=d)
    return {n: os.path.join(d, n) for n in
            ("ca.crt", "server.crt", "server.key", "client.crt", "client.key")} | {"dir": d}


def setUpModule():
    global _CERTS
    if not shutil.which("openssl"):
        raise unittest.SkipTest("the openssl command is missing")
    _CERTS = make_certs()


def tearDownModule():
    if _CERTS:
        shutil.rmtree(_CERTS["dir"], ignore_errors=True)


class TlsServer(unittest.TestCase):
    """Starts one server per class with a TLS port beside the plain one."""
    AUTH_CLIENTS = "no"

    @classmethod
    def setUpClass(cls):
        cls.tls_port = harness.free_port()
        cls.server = harness.ServerProcess([
            "--tls-port", str(cls.tls_port), "--tls-cert-file", _CERTS["server.crt"],
            "--tls-key-file", _CERTS["server.key"], "--tls-ca-cert-file", _CERTS["ca.crt"],
            "--tls-auth-clients", cls.AUTH_CLIENTS]).start()

    @classmethod
    def tearDownClass(cls):
        problem = cls.server.stop()
        if problem:
            raise AssertionError("%s\n--- server output ---\n%s"
                                 % (problem, cls.server.log_tail()))

    def tearDown(self):
        self.assertTrue(self.server.alive(), "the server died:\n" + self.server.log_tail())

    def redis_py(self, cert=False, **kw):
        import redis
        extra = {}
        if cert:
            extra = {"ssl_certfile": _CERTS["client.crt"], "ssl_keyfile": _CERTS["client.key"]}
        return redis.Redis(host="127.0.0.1", port=self.tls_port, ssl=True,
                           ssl_ca_certs=_CERTS["ca.crt"], socket_timeout=harness.IO_TIMEOUT,
                           **extra, **kw)

    def cli(self, *args, stdin=None, cert=False):
        """redis-cli --tls against the TLS port: (exit code, stdout bytes, stderr text)."""
        argv = [REDIS_CLI, "-h", "127.0.0.1", "-p", str(self.tls_port), "--tls",
                "--cacert", _CERTS["ca.crt"]]
        if cert:
            argv += ["--cert", _CERTS["client.crt"], "--key", _CERTS["client.key"]]
        p = subprocess.run(argv + list(args), input=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


class TlsClients(TlsServer):
    AUTH_CLIENTS = "no"

    def test_redis_cli(self):
        code, out, err = self.cli("SET", "lock:cli", "tok1", "NX", "PX", "30000")
        self.assertEqual((code, out), (0, b"OK\n"), err)
        code, out, err = self.cli("SET", "lock:cli", "tok2", "NX", "PX", "30000")
        self.assertEqual((code, out), (0, b"\n"), err)  # nil: held
        code, out, err = self.cli("EVAL", RELEASE_SCRIPT, "1", "lock:cli", "tok2")
        self.assertEqual(out, b"0\n", err)
        code, out, err = self.cli("EVAL", RELEASE_SCRIPT, "1", "lock:cli", "tok1")
        self.assertEqual(out, b"1\n", err)
        # 1 MB in (-x: the last argument from stdin) and out.
        big = BIG.replace(b"\n", b"x").replace(b"\r", b"y")
        code, out, err = self.cli("-x", "SET", "big:cli", stdin=big)
        self.assertEqual((code, out), (0, b"OK\n"), err)
        code, out, err = self.cli("--no-raw", "STRLEN", "big:cli")
        self.assertEqual(out, b"(integer) %d\n" % len(big), err)
        code, out, err = self.cli("GET", "big:cli")
        self.assertEqual(out, big + b"\n", err)
        # A pipeline of 1000 commands (--pipe sends them all, then reads every reply).
        cmds = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\npipe:%d\r\n$1\r\nv\r\n"
                        % (len(b"pipe:%d" % i), i) for i in range(1000))
        code, out, err = self.cli("--pipe", stdin=cmds)
        self.assertEqual(code, 0, out + err.encode())
        self.assertIn(b"errors: 0, replies: 1000", out)

    def test_redis_py(self):
        r = self.redis_py()
        self.assertTrue(r.set("lock:py", "tok1", nx=True, px=30000))
        self.assertIsNone(r.set("lock:py", "tok2", nx=True, px=30000))
        release = r.register_script(RELEASE_SCRIPT)
        self.assertEqual(release(keys=["lock:py"], args=["tok2"]), 0)
        self.assertEqual(release(keys=["lock:py"], args=["tok1"]), 1)
        self.assertIsNone(r.get("lock:py"))
        self.assertTrue(r.set("big:py", BIG))
        self.assertEqual(r.get("big:py"), BIG)
        p = r.pipeline(transaction=False)
        for i in range(500):
            p.set("p:%d" % i, "v%d" % i)
            p.get("p:%d" % i)
        replies = p.execute()
        self.assertEqual(len(replies), 1000)
        self.assertEqual(replies[0::2], [True] * 500)
        self.assertEqual(replies[1::2], [b"v%d" % i for i in range(500)])
        # Many big replies in one pipeline: records across many reads and sends.
        p = r.pipeline(transaction=False)
        for _ in range(8):
            p.get("big:py")
        self.assertEqual(p.execute(), [BIG] * 8)
        r.close()

    def test_ioredis(self):
        node = shutil.which("node")
        npm = shutil.which("npm")
        if not node or not npm:
            self.skipTest("node and npm are not on PATH (scripts/deps.sh --test)")
        spec = importlib.util.spec_from_file_location("js_run", os.path.join(JS_DIR, "run.py"))
        js_run = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(js_run)
        js_run.ensure_packages(npm)  # npm ci in tests/js when needed, as tests/js/run.py does
        script = r"""
const fs = require('fs');
const Redis = require('ioredis');
const assert = require('assert');
(async () => {
  const r = new Redis({host: '127.0.0.1', port: Number(process.env.PORT), maxRetriesPerRequest: 0,
                       tls: {ca: fs.readFileSync(process.env.CA), servername: 'localhost'}});
  assert.strictEqual(await r.set('lock:js', 'tok1', 'PX', 30000, 'NX'), 'OK');
  assert.strictEqual(await r.set('lock:js', 'tok2', 'PX', 30000, 'NX'), null);
  const release = process.env.RELEASE;
  assert.strictEqual(await r.eval(release, 1, 'lock:js', 'tok2'), 0);
  assert.strictEqual(await r.eval(release, 1, 'lock:js', 'tok1'), 1);
  const big = Buffer.alloc(1 << 20);
  for (let i = 0; i < big.length; i++) big[i] = (i * 7 + 3) % 251;
  assert.strictEqual(await r.set('big:js', big), 'OK');
  assert.ok(big.equals(await r.getBuffer('big:js')));
  const p = r.pipeline();
  for (let i = 0; i < 500; i++) { p.set('js:' + i, 'v' + i); p.get('js:' + i); }
  const res = await p.exec();
  assert.strictEqual(res.length, 1000);
  for (let i = 0; i < 500; i++) {
    assert.deepStrictEqual(res[2 * i], [null, 'OK']);
    assert.deepStrictEqual(res[2 * i + 1], [null, 'v' + i]);
  }
  await r.quit();
  console.log('ioredis ok');
})().catch((e) => { console.error(e); process.exit(1); });
"""
        env = dict(os.environ, NODE_PATH=os.path.join(JS_DIR, "node_modules"),
                   PORT=str(self.tls_port), CA=_CERTS["ca.crt"], RELEASE=RELEASE_SCRIPT)
        p = subprocess.run([node, "-e", script], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout.decode("utf-8", "replace"))
        self.assertIn(b"ioredis ok", p.stdout)

    def test_plain_resp_to_the_tls_port_closes_that_connection(self):
        with socket.create_connection(("127.0.0.1", self.tls_port), timeout=harness.IO_TIMEOUT) as s:
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            got = b""
            try:
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    got += chunk
            except ConnectionResetError:
                pass
            self.assertNotIn(b"PONG", got)
        # The server is up, on both ports.
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=5) as s:
            s.sendall(b"PING\r\n")
            self.assertEqual(harness.read_one_reply_from_socket(s), b"+PONG\r\n")
        self.assertTrue(self.redis_py().ping())

    def test_handshake_bytes_that_stop_halfway_close_only_that_client(self):
        # A ClientHello cut short, then the client goes: the server drops it and serves others.
        ctx = ssl.create_default_context(cafile=_CERTS["ca.crt"])
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        hello = outgoing.read()
        with socket.create_connection(("127.0.0.1", self.tls_port), timeout=5) as s:
            s.sendall(hello[: len(hello) // 2])
        self.assertTrue(self.redis_py().ping())

    def test_config_get_names(self):
        r = self.redis_py()
        got = r.config_get("tls-*")
        self.assertEqual(got["tls-port"], str(self.tls_port))
        self.assertEqual(got["tls-cert-file"], _CERTS["server.crt"])
        self.assertEqual(got["tls-key-file"], _CERTS["server.key"])
        self.assertEqual(got["tls-ca-cert-file"], _CERTS["ca.crt"])
        self.assertEqual(got["tls-auth-clients"], "no")
        for name in ("tls-protocols", "tls-ciphersuites", "tls-ciphers"):
            self.assertIn(name, got)


class TlsAuthClients(TlsServer):
    AUTH_CLIENTS = "yes"

    def test_client_without_certificate_is_refused(self):
        import redis
        r = self.redis_py()
        with self.assertRaises((redis.exceptions.ConnectionError, ssl.SSLError, OSError)):
            r.ping()
        code, out, err = self.cli("PING")
        self.assertNotEqual(out, b"PONG\n")

    def test_client_with_certificate_takes_a_lock(self):
        r = self.redis_py(cert=True)
        self.assertTrue(r.set("lock:cert", "tok", nx=True, px=30000))
        self.assertEqual(r.eval(RELEASE_SCRIPT, 1, "lock:cert", "tok"), 1)
        code, out, err = self.cli("PING", cert=True)
        self.assertEqual((code, out), (0, b"PONG\n"), err)


def make_second_server_cert():
    """Another server certificate and key, signed by the same CA, named "deadbolt test server2"."""
    d = _CERTS["dir"]
    if not os.path.exists(os.path.join(d, "server2.crt")):
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-nodes", "-keyout", "server2.key", "-out", "server2.csr",
                "-subj", "/CN=deadbolt test server2", cwd=d)
        openssl("x509", "-req", "-in", "server2.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", "server2.crt", "-days", "2", "-extfile", "server.ext",
                cwd=d)
    return os.path.join(d, "server2.crt"), os.path.join(d, "server2.key")


class TlsReload(TlsServer):
    """CONFIG SET tls-*: a new context for new connections; established ones keep theirs; a bad
    file is refused with Redis's error and the old context stays in use."""
    AUTH_CLIENTS = "no"

    def peer_cn(self):
        """The common name of the certificate a fresh TLS connection is shown."""
        ctx = ssl.create_default_context(cafile=_CERTS["ca.crt"])
        with socket.create_connection(("127.0.0.1", self.tls_port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                subject = dict(x[0] for x in s.getpeercert()["subject"])
                s.sendall(b"PING\r\n")
                self.assertEqual(s.recv(16), b"+PONG\r\n")
        return subject["commonName"]

    def test_config_set_new_cert_for_new_connections_old_ones_kept(self):
        import redis
        crt2, key2 = make_second_server_cert()
        old = self.redis_py()
        old_id = old.client_id()
        self.assertEqual(self.peer_cn(), "deadbolt test server")
        self.assertEqual(old.execute_command("CONFIG", "SET", "tls-cert-file", crt2,
                                             "tls-key-file", key2), b"OK")
        self.assertEqual(self.peer_cn(), "deadbolt test server2")
        code, out, err = self.cli("PING")  # redis-cli --tls checks the new one against the CA
        self.assertEqual((code, out), (0, b"PONG\n"), err)
        # The connection made before the change goes on, on the old context.
        self.assertEqual(old.client_id(), old_id)
        self.assertTrue(old.set("lock:reload", "tok", nx=True, px=30000))
        self.assertEqual(old.eval(RELEASE_SCRIPT, 1, "lock:reload", "tok"), 1)

        # A key that does not match the certificate: Redis's error; nothing changes.
        with self.assertRaises(redis.exceptions.ResponseError) as e:
            old.execute_command("CONFIG", "SET", "tls-key-file", _CERTS["server.key"])
        self.assertEqual(str(e.exception),
                         "CONFIG SET failed (possibly related to argument 'tls-key-file') - "
                         "Unable to update TLS configuration. Check server logs.")
        with self.assertRaises(redis.exceptions.ResponseError) as e:
            old.execute_command("CONFIG", "SET", "tls-cert-file", "/nonexistent/deadbolt.crt")
        self.assertIn("possibly related to argument 'tls-cert-file') - Unable to update TLS",
                      str(e.exception))
        self.assertEqual(old.config_get("tls-key-file")["tls-key-file"], key2)
        self.assertEqual(old.config_get("tls-cert-file")["tls-cert-file"], crt2)
        self.assertEqual(self.peer_cn(), "deadbolt test server2")
        self.assertTrue(self.redis_py().ping())

        # Back to the first certificate, so the order of the tests does not matter.
        self.assertEqual(old.execute_command(
            "CONFIG", "SET", "tls-cert-file", _CERTS["server.crt"],
            "tls-key-file", _CERTS["server.key"]), b"OK")
        self.assertEqual(self.peer_cn(), "deadbolt test server")

    def test_tls_port_is_fixed_at_start(self):
        if harness.AGAINST_REDIS:
            self.skipTest("Redis moves its TLS listener; deadbolt's tls-port is fixed at start")
        import redis
        with self.assertRaises(redis.exceptions.ResponseError) as e:
            self.redis_py().execute_command("CONFIG", "SET", "tls-port", str(harness.free_port()))
        self.assertIn("can't set immutable config", str(e.exception))
        self.assertTrue(self.redis_py().ping())


if __name__ == "__main__":
    unittest.main()
