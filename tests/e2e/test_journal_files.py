"""Which files make up the journal's data, and what a damaged file does (issue 17, items 2 and 8).

- The manifest (<dir>/deadbolt-journal.manifest) lists the files of the data set: a listed file
  that is missing, emptied, cut inside its base or taken from another --dir refuses the start,
  naming it (exit non-zero), also when --threads changes at that start; so a native lock's
  fencing token is never handed out twice. A --dir written by a90e732 (journals, no manifest)
  still loads, and gets a manifest.
- The tail rule: a bit flip in the last *whole* frame is damage (refused, file and offset named),
  not a torn tail; --aof-load-damaged yes keeps the damaged file's bytes beside it.
- tools/deadbolt-check-journal reports OK / TRUNCATED / DAMAGED with the offset, and --fix cuts
  a file at its first bad frame after keeping a copy.

The journal is deadbolt's: every test skips with DEADBOLT_AGAINST_REDIS=1."""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_journal as tj  # noqa: E402  (its JournalCase; imported as a module: no tests run twice)
from slots import on_shard  # noqa: E402
from harness import NIL, OK, bulk, decode, integer  # noqa: E402

MANIFEST = "deadbolt-journal.manifest"
LEGACY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "journal-a90e732")
TTL = 600000


def setUpModule():
    harness.server_command(0)


def check_journal_tool():
    """The path of tools/deadbolt-check-journal next to the server being tested."""
    explicit = os.environ.get("DEADBOLT_CHECK_JOURNAL")
    if explicit:
        return explicit
    server = os.environ.get("DEADBOLT_SERVER", "")
    build = os.path.dirname(os.path.dirname(os.path.abspath(server)))
    return os.path.join(build, "tools", "deadbolt-check-journal")


class FilesCase(tj.JournalCase):
    def populate(self, c, per_shard=20):
        """Keys and a native lock on both shards of a 2-thread server: returns the lock tokens."""
        for s in (0, 1):
            for i in range(per_shard):
                k = on_shard(s, "k%d-%d" % (s, i))
                self.assertEqual(c.cmd("SET", k, "v-" + k), OK)
        return [tj.token(c.cmd("LOCK.ACQUIRE", on_shard(s, "lock%d" % s), "owner-%d" % s, TTL))
                for s in (0, 1)]

    def check(self, c, tokens, per_shard=20):
        """Every key of populate() is back, and both locks with their owners and tokens."""
        for s in (0, 1):
            keys = [on_shard(s, "k%d-%d" % (s, i)) for i in range(per_shard)]
            self.assertEqual(decode(c.cmd("MGET", *keys)), [("v-" + k).encode() for k in keys])
            info = tj.lock_info(c, on_shard(s, "lock%d" % s))
            self.assertEqual(info[b"owner"], ("owner-%d" % s).encode())
            self.assertEqual(info[b"token"], tokens[s])

    def path(self, shard, n=2):
        return tj.journal_path(self.dir, shard, n)

    def read(self, path):
        with open(path, "rb") as f:
            return f.read()

    def write(self, path, data):
        with open(path, "wb") as f:
            f.write(data)

    def snapshot(self):
        """Every file in --dir and its bytes."""
        return {n: self.read(os.path.join(self.dir, n)) for n in tj.list_dir(self.dir)}


# ---------------------------------------------------------------------------------------------
# The manifest: a missing, emptied, cut or foreign file refuses the start
# ---------------------------------------------------------------------------------------------

class JournalManifestTest(FilesCase):
    def test_manifest_names_the_layout_and_follows_threads_changes(self):
        self.populate(self.start(threads=2))
        self.shutdown()
        text = self.read(os.path.join(self.dir, MANIFEST)).decode()
        lines = text.splitlines()
        self.assertEqual(lines[0], "deadbolt-journal-manifest 1")
        self.assertRegex(lines[1], r"^set [0-9a-f]{16}$")
        self.assertEqual(lines[2:5], ["layout 2", "file 0 deadbolt-journal-0-of-2.aof",
                                      "file 1 deadbolt-journal-1-of-2.aof"])
        self.assertRegex(lines[5], r"^check [0-9a-f]{16}$")
        self.start(threads=3)
        self.stop()
        lines3 = self.read(os.path.join(self.dir, MANIFEST)).decode().splitlines()
        self.assertEqual(lines3[1], lines[1], "the data set keeps its id")
        self.assertEqual(lines3[2:6], ["layout 3"] + ["file %d deadbolt-journal-%d-of-3.aof"
                                                      % (i, i) for i in range(3)])
        self.assert_layout(3)

    def refused_for(self, out, path, what):
        self.assertIn(path, out)
        self.assertIn(what, out)
        self.assertIn("--aof-load-damaged yes", out)

    def test_a_missing_file_refuses_the_start_with_any_threads(self):
        tokens = self.populate(self.start(threads=2))
        self.shutdown()
        lost = self.path(1)
        data = self.read(lost)
        os.unlink(lost)
        before = self.snapshot()
        for threads in (2, 3, 1):
            with self.subTest(threads=threads):
                out = self.refuse(threads=threads)
                self.refused_for(out, lost, "is missing")
                self.assertEqual(self.snapshot(), before, "a refused start changed --dir")
        # Put back, everything is there, with the same tokens.
        self.write(lost, data)
        c = self.start(threads=2)
        self.check(c, tokens)
        self.stop()

    def test_an_emptied_file_refuses_the_start_with_any_threads(self):
        tokens = self.populate(self.start(threads=2))
        self.shutdown()
        emptied = self.path(1)
        data = self.read(emptied)
        self.write(emptied, b"")
        before = self.snapshot()
        for threads in (2, 3):
            with self.subTest(threads=threads):
                out = self.refuse(threads=threads)
                self.refused_for(out, emptied, "is empty")
                self.assertEqual(self.snapshot(), before, "a refused start changed --dir")
        self.write(emptied, data)
        self.check(self.start(threads=2), tokens)
        self.stop()

    def test_a_file_cut_inside_its_base_refuses_the_start(self):
        # A cut at a frame boundary is a whole journal by itself: only the base's end marker
        # tells that the keys after it are gone.
        tokens = self.populate(self.start(threads=2))
        self.stop()
        self.start(threads=2)  # the keys are now in the fresh file's base
        self.stop()
        path = self.path(1)
        data = self.read(path)
        fr = tj.frames(data)
        self.assertGreater(len(fr), 2)
        for cut_after in (1, 2, len(fr) - 1):  # the header; the fencing counters; all but the end
            with self.subTest(frames_kept=cut_after):
                off = fr[cut_after][0]
                self.write(path, data[:off])
                out = self.refuse(threads=2)
                self.refused_for(out, path, "cut short inside its base")
        self.write(path, data)
        self.check(self.start(threads=2), tokens)
        self.stop()

    def test_a_file_from_another_directory_refuses_the_start(self):
        self.populate(self.start(threads=2))
        self.shutdown()
        other = tempfile.mkdtemp(prefix="deadbolt-journal-other-")
        self.addCleanup(shutil.rmtree, other, True)
        mine = self.dir
        self.dir = other
        self.populate(self.start(threads=2), per_shard=3)
        self.shutdown()
        self.dir = mine
        shutil.copyfile(tj.journal_path(other, 1, 2), self.path(1))
        out = self.refuse(threads=2)
        self.refused_for(out, self.path(1), "belongs to data set")

    def test_a_damaged_manifest_refuses_the_start(self):
        tokens = self.populate(self.start(threads=2))
        self.shutdown()
        mpath = os.path.join(self.dir, MANIFEST)
        text = self.read(mpath)
        self.write(mpath, text.replace(b"layout 2", b"layout 1"))
        out = self.refuse(threads=2)
        self.assertIn(mpath, out)
        self.assertIn("cannot be read", out)
        # Without it, the files found are read (they name their data set) and it is rewritten.
        os.unlink(mpath)
        c = self.start(threads=2)
        self.check(c, tokens)
        self.assertIn("no %s" % MANIFEST, self.log())
        self.stop()
        self.assertEqual(self.read(mpath), text)

    def test_fencing_tokens_never_repeat_across_a_lost_or_damaged_file(self):
        c = self.start(threads=2)
        key = on_shard(1, "fenced")
        first = tj.token(c.cmd("LOCK.ACQUIRE", key, "owner-a", TTL))
        self.shutdown()
        path = self.path(1)
        data = self.read(path)
        start, length = tj.frame_with(data, key.encode())
        self.assertEqual(start + length, len(data), "the lock's frame is the file's last")
        os.unlink(path)
        for threads in (2, 3):
            with self.subTest(lost=True, threads=threads):
                self.refused_for(self.refuse(threads=threads), path, "is missing")
        bad = bytearray(data)
        bad[start + tj.FRAME_HEADER + (length - tj.FRAME_HEADER) // 2] ^= 0x04
        self.write(path, bytes(bad))
        for threads in (2, 3):
            with self.subTest(damaged=True, threads=threads):
                out = self.refuse(threads=threads)
                self.assertRegex(out, r"journal %s at offset %d is damaged"
                                 % (re.escape(path), start))
        self.write(path, data)
        c = self.start(threads=2)
        self.assertEqual(c.cmd("LOCK.ACQUIRE", key, "owner-b", TTL), NIL)  # still held
        self.assertEqual(tj.lock_info(c, key)[b"token"], first)
        again = tj.token(c.cmd("LOCK.ACQUIRE", on_shard(1, "fenced2"), "owner-b", TTL))
        self.assertGreater(again, first)
        self.stop()


# ---------------------------------------------------------------------------------------------
# A --dir written before manifests existed (a90e732)
# ---------------------------------------------------------------------------------------------

class JournalLegacyDirTest(FilesCase):
    """tests/e2e/data/journal-a90e732: written by a90e732 with --threads 2: per shard, keys
    legacy<s>-<i>:<n> = "v-" + key (i < 5), and native locks that took tokens 1 and 2."""

    def legacy_keys(self):
        return [on_shard(s, "legacy%d-%d" % (s, i)) for s in (0, 1) for i in range(5)]

    def install(self, only=None):
        for name in sorted(os.listdir(LEGACY)):
            if only is None or name in only:
                shutil.copyfile(os.path.join(LEGACY, name), os.path.join(self.dir, name))

    def test_a90e732_dir_loads_and_gets_a_manifest(self):
        for threads in (2, 3):
            with self.subTest(threads=threads):
                for name in tj.list_dir(self.dir):
                    os.unlink(os.path.join(self.dir, name))
                self.install()
                c = self.start(threads=threads)
                keys = self.legacy_keys()
                self.assertEqual(decode(c.cmd("MGET", *keys)), [("v-" + k).encode() for k in keys])
                self.assertIn("no %s" % MANIFEST, self.log())
                # The fencing counters came through: no token is handed out twice.
                for s in (0, 1):
                    self.assertGreater(tj.token(c.cmd("LOCK.ACQUIRE", on_shard(s, "new%d" % s),
                                                      "o", TTL)), 2)
                self.stop()
                self.assertTrue(os.path.exists(os.path.join(self.dir, MANIFEST)))
                self.assert_layout(threads)
                # From now on a lost file is noticed.
                lost = tj.journal_path(self.dir, 0, threads)
                os.unlink(lost)
                self.assertIn(lost, self.refuse(threads=threads))

    def test_a90e732_dir_with_a_missing_file_refuses_the_start(self):
        self.install(only={"deadbolt-journal-0-of-2.aof"})
        for threads in (2, 3):
            with self.subTest(threads=threads):
                out = self.refuse(threads=threads)
                self.assertIn(self.path(1), out)
                self.assertIn("is missing", out)


# ---------------------------------------------------------------------------------------------
# The tail rule: a whole frame that fails its checksum is damage
# ---------------------------------------------------------------------------------------------

class JournalLastFrameDamageTest(FilesCase):
    def test_a_bit_flip_in_the_last_whole_frame_is_refused_and_a_copy_kept(self):
        c = self.start(threads=1)
        for i in range(10):
            self.assertEqual(c.cmd("SET", "k%d" % i, "v%d" % i), OK)
        first = tj.token(c.cmd("LOCK.ACQUIRE", "the-lock", "owner-a", TTL))
        self.shutdown()
        path = tj.journal_path(self.dir, 0, 1)
        data = self.read(path)
        start, length = tj.frame_with(data, b"the-lock")
        self.assertEqual(start + length, len(data), "the lock's frame is the file's last")
        keys = ["k%d" % i for i in range(10)]
        for what, pos in (("checksum", 9), ("payload", tj.FRAME_HEADER + 3),
                          ("last byte", length - 1)):
            with self.subTest(flipped=what):
                for name in tj.list_dir(self.dir):
                    if ".damaged-" in name:
                        os.unlink(os.path.join(self.dir, name))
                bad = bytearray(data)
                bad[start + pos] ^= 0x10
                self.write(path, bytes(bad))
                out = self.refuse(threads=1)
                self.assertRegex(out, r"journal %s at offset %d is damaged \(frame checksum "
                                 r"mismatch\)" % (re.escape(path), start))
                self.assertNotIn("incomplete", out)
                self.assertEqual(self.read(path), bytes(bad), "the refused file was changed")
                # Asked to, it loads what precedes the damage and keeps the file's bytes.
                c = self.start(threads=1, extra=["--aof-load-damaged", "yes"])
                self.assertEqual(decode(c.cmd("MGET", *keys)),
                                 [("v%d" % i).encode() for i in range(10)])
                copies = glob.glob(path + ".damaged-*")
                self.assertEqual(len(copies), 1, tj.list_dir(self.dir))
                self.assertEqual(self.read(copies[0]), bytes(bad))
                self.assertIn(copies[0], self.log())
                self.stop()
                self.write(path, data)  # the next case starts from the good file
        c = self.start(threads=1)
        self.assertEqual(tj.lock_info(c, "the-lock")[b"token"], first)
        self.stop()

    def test_damage_in_the_middle_loaded_on_request_keeps_a_copy(self):
        c = self.start(threads=2)
        for i in range(20):
            self.assertEqual(c.cmd("SET", on_shard(0, "m%d" % i), "x"), OK)
        self.shutdown()
        path = self.path(0)
        data = self.read(path)
        start, length = tj.frame_with(data, on_shard(0, "m10").encode())
        bad = bytearray(data)
        bad[start + tj.FRAME_HEADER + 2] ^= 0x01
        self.write(path, bytes(bad))
        c = self.start(threads=2, extra=["--aof-load-damaged", "yes"])
        self.assertEqual(c.cmd("DBSIZE"), integer(10))
        self.stop()
        copies = glob.glob(path + ".damaged-*")
        self.assertEqual(len(copies), 1, tj.list_dir(self.dir))
        self.assertEqual(self.read(copies[0]), bytes(bad))
        # The copy is not the journal's: the next start neither reads nor removes it.
        c = self.start(threads=2)
        self.assertEqual(c.cmd("DBSIZE"), integer(10))
        self.stop()
        self.assertEqual(glob.glob(path + ".damaged-*"), copies)


# ---------------------------------------------------------------------------------------------
# tools/deadbolt-check-journal
# ---------------------------------------------------------------------------------------------

class CheckJournalToolTest(FilesCase):
    def tool(self, *args):
        path = check_journal_tool()
        self.assertTrue(os.access(path, os.X_OK), "%s is not built" % path)
        return harness.run_tool(self, [path] + list(args), 60)

    def test_reports_and_fixes(self):
        c = self.start(threads=1)
        for i in range(20):
            self.assertEqual(c.cmd("SET", "key:%02d" % i, "value-%d" % i), OK)
        self.shutdown()
        path = tj.journal_path(self.dir, 0, 1)
        data = self.read(path)
        code, out = self.tool(path)
        self.assertEqual(code, 0, out)
        self.assertIn("%s: OK" % path, out)
        self.assertIn("base complete", out)
        code, out = self.tool(self.dir)
        self.assertEqual(code, 0, out)
        self.assertIn("%s: OK" % os.path.join(self.dir, MANIFEST), out)

        # Cut inside the last frame: TRUNCATED, with the offset.
        last, _ = tj.frames(data)[-1]
        self.write(path, data[:-3])
        code, out = self.tool(path)
        self.assertEqual(code, 1, out)
        self.assertIn("%s: TRUNCATED at offset %d" % (path, last), out)
        # --fix answered "y" on the terminal: cut at the torn frame, the original kept.
        p = subprocess.run([check_journal_tool(), "--fix", path], input=b"y\n",
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn(b"[y/N]", p.stdout)
        self.assertEqual(self.read(path), data[:last])
        copies = glob.glob(path + ".bak-*")
        self.assertEqual(len(copies), 1)
        self.assertEqual(self.read(copies[0]), data[:-3])
        os.unlink(copies[0])

        # A byte changed in the middle: DAMAGED, with the offset.
        start, length = tj.frame_with(data, b"key:10")
        bad = bytearray(data)
        bad[start + length // 2] ^= 0x08
        self.write(path, bytes(bad))
        code, out = self.tool(path)
        self.assertEqual(code, 1, out)
        self.assertIn("%s: DAMAGED at offset %d" % (path, start), out)

        # --fix asks first; with no answer (stdin closed) nothing changes.
        code, out = self.tool("--fix", path)
        self.assertEqual(code, 1, out)
        self.assertIn("not changed", out)
        self.assertEqual(self.read(path), bytes(bad))
        self.assertEqual(glob.glob(path + ".bak-*"), [])

        # --fix --yes: cut at the bad frame, the original kept.
        code, out = self.tool("--fix", "--yes", path)
        self.assertEqual(code, 0, out)
        self.assertEqual(self.read(path), data[:start])
        copies = glob.glob(path + ".bak-*")
        self.assertEqual(len(copies), 1)
        self.assertEqual(self.read(copies[0]), bytes(bad))
        code, out = self.tool(path)
        self.assertEqual(code, 0, out)
        # The server takes the repaired file without any flag.
        c = self.start(threads=1)
        keys = ["key:%02d" % i for i in range(20)]
        self.assertEqual(c.cmd("MGET", *keys),
                         b"*20\r\n" + b"".join(bulk("value-%d" % i) for i in range(10)) + NIL * 10)
        self.stop()

        # Emptied, then missing: said so.
        self.write(path, b"")
        code, out = self.tool(path)
        self.assertEqual(code, 1, out)
        self.assertIn("%s: EMPTY" % path, out)
        os.unlink(path)
        code, out = self.tool(self.dir)
        self.assertEqual(code, 1, out)
        self.assertIn("%s: MISSING" % path, out)


if __name__ == "__main__":
    unittest.main()
