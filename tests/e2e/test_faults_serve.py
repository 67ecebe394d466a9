"""test_faults_serve.py: `sstpipe serve` meeting a failing disk and kill -9.

The server writes nothing, so the faults that matter are on its reads
(faultshim.c's "pread" and "open_read", only for files under the table's
own directory):
- EIO at a block read of a --cold lookup: that request alone is a 500 with
  one line naming the table and the error; every other request answers the
  table's value, /metrics counts the 500, and SIGTERM still exits 0. A
  disk that keeps failing (sticky): every lookup a 500, /healthz and
  /v1/info still answer, no crash.
- EIO at a block read of a /v1/prefix scan (the iterator reads blocks with
  pread, mapped or not): a 500 with one line, the next scan answers.
- EIO at each read of the open (footer, index, the O_DIRECT probe; each
  one seen failed by the shim): serve refuses to start, one line naming the
  table, exit 1 (not a signal or a sanitizer's exit).
- EIO opening a table that was just published: the old table keeps being
  served, the refusal is logged, and the next publish is followed.
- SIGKILL at a block read: the server held every file of the table's
  directory open read-only and mapped none shared and writable (so a kill
  can leave none of them half-written), the kill leaves no file behind, and
  a restart answers every key.
Which read to hit is counted first by a fault-free run under the shim, as
the write sweeps do.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import shutil
import subprocess
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import errno_text, indices  # noqa: E402
from serve_client import BOUND, Server, wait_for  # noqa: E402
from sstpipe_e2e import E2ETest, corpora_dir, parse_dump, sstpipe, sstpipe_bin  # noqa: E402

LOOKUPS = 40  # keys asked per run


class ServeFaults(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-serve-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        corpus = os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2")
        # Two tables with the same keys and different values, each in a
        # directory of its own so a fault can be aimed at one.
        cls.tables = {}
        cls.values = {}
        for name, cut in (("a", "100"), ("b", "1024")):
            d = os.path.join(cls.classtmp, name)
            os.mkdir(d)
            path = os.path.join(d, "table.sst")
            r = sstpipe("build", corpus, "-o", path, "--max-bytes", cut)
            assert r.code == 0, r.describe()
            r = sstpipe("dump", path)
            assert r.code == 0, r.describe()
            cls.tables[name] = path
            cls.values[name] = dict(parse_dump(unittest.TestCase(), r.stdout))
        cls.keys = sorted(cls.values["b"])[:: max(1, len(cls.values["b"]) // LOOKUPS)][:LOOKUPS]
        cls.differing = [k for k in cls.values["a"] if cls.values["a"][k] != cls.values["b"][k]]

    def serve(self, target, *args, fault=None, fault_dir=None, log=None):
        env = None
        if fault_dir:
            env = faultlib.shim_env({"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "")},
                                    fault, fault_dir, log)
        s = Server(target, *args, env=env).start(self.path(f"serve-{time.monotonic_ns()}.err"))
        self.addCleanup(s.kill)
        return s

    def client(self, s):
        c = s.client()
        self.addCleanup(c.close)
        return c

    def preads(self, asked, *args):
        """The preads a fault-free run of `serve TABLE_B args` makes while
        asked(client) runs (nothing: those of the open alone)."""
        log = self.path(f"count-{time.monotonic_ns()}.log")
        s = self.serve(self.tables["b"], *args, fault_dir=os.path.dirname(self.tables["b"]),
                       log=log)
        asked(self.client(s))
        self.assertEqual(s.stop(), 0)
        with open(log) as f:
            return [int(l.split()[2]) for l in f if l.startswith("count pread ")][0]

    def lookups(self, c):
        for key in self.keys:
            status, _, body = c.get(key)
            self.assertEqual((status, body), (200, self.values["b"][key]))

    def cold_reads(self):
        """(reads of the open, reads in all) of `serve --cold` answering
        self.keys: one read per lookup after the open's."""
        at_open = self.preads(lambda c: None, "--cold", "--threads", "1")
        total = self.preads(self.lookups, "--cold", "--threads", "1")
        self.assertEqual(total - at_open, len(self.keys), "one read per lookup")
        return at_open, total

    def check_one_line(self, body, what):
        text = body.decode()
        self.assertEqual(text.count("\n"), 1, f"{what}: one line: {text!r}")
        self.assertTrue(text.startswith("table.sst: "), f"{what}: names the table: {text!r}")
        self.assertNotIn(os.path.dirname(self.tables["b"]), text, f"{what}: not where it is")
        self.assertIn(errno_text("EIO"), text, f"{what}: says why")

    def test_cold_read_error_fails_that_request_alone(self):
        at_open, total = self.cold_reads()
        # The lookups' reads alone (the open's: test_open_read_error_refuses_to_start).
        for n in [at_open + i for i in indices(total - at_open, 4, 12)]:
            with self.subTest(read=n):
                s = self.serve(self.tables["b"], "--cold", "--threads", "1",
                               fault=f"pread:{n}:EIO", fault_dir=os.path.dirname(self.tables["b"]))
                c = self.client(s)
                failed = []
                for i, key in enumerate(self.keys):
                    status, _, body = c.get(key)
                    if status == 200:
                        self.assertEqual(body, self.values["b"][key])
                    else:
                        self.assertEqual(status, 500, body)
                        self.check_one_line(body, f"lookup {i}")
                        failed.append(i)
                self.assertEqual(failed, [n - at_open - 1])
                m = c.metrics()
                errors = sum(v for k, v in m.items()
                             if k.startswith("sstpipe_serve_requests_total") and 'status="500"' in k)
                self.assertEqual(errors, 1, m)
                self.assertEqual(s.stop(), 0, s.stderr())

    def test_disk_that_keeps_failing(self):
        at_open, _ = self.cold_reads()
        s = self.serve(self.tables["b"], "--cold", "--threads", "2",
                       fault=f"pread:{at_open + 1}:EIO:sticky",
                       fault_dir=os.path.dirname(self.tables["b"]))
        c = self.client(s)
        for key in self.keys[:10]:
            status, _, body = c.get(key)
            self.assertEqual(status, 500, body)
            self.check_one_line(body, "sticky")
        self.assertEqual(c.request("/healthz")[0], 200)
        self.assertEqual(c.request("/v1/info")[0], 200)
        self.assertEqual(s.stop(), 0, s.stderr())

    def test_prefix_scan_read_error(self):
        # Warm: lookups go through the map; the scan's blocks are preads.
        d = os.path.dirname(self.tables["b"])
        pages = []
        at_open = self.preads(lambda c: None, "--threads", "1")
        total = self.preads(lambda c: pages.append(c.prefix("", limit=50)), "--threads", "1")
        self.assertEqual(pages[0][0], 200)
        self.assertGreater(total, at_open, "a scan reads its blocks with pread")
        s = self.serve(self.tables["b"], "--threads", "1", fault=f"pread:{at_open + 1}:EIO",
                       fault_dir=d)
        c = self.client(s)
        status, _, body = c.prefix("", limit=50)
        self.assertEqual(status, 500, body)
        self.check_one_line(body, "prefix")
        status, _, again = c.prefix("", limit=50)
        self.assertEqual((status, again), (200, pages[0][2]))
        self.assertEqual(s.stop(), 0, s.stderr())

    def test_open_read_error_refuses_to_start(self):
        at_open, _ = self.cold_reads()
        # At least the footer's read, the index's and the O_DIRECT probe's:
        # fewer, and the open reads the table some way the shim does not see.
        self.assertGreaterEqual(at_open, 3, "the open's reads were not counted")
        refused = 0
        for n in range(1, at_open + 1):
            with self.subTest(read=n):
                log = self.path(f"open-{n}.log")
                env = faultlib.shim_env(dict(os.environ), f"pread:{n}:EIO",
                                        os.path.dirname(self.tables["b"]), log)
                p = subprocess.run([sstpipe_bin(), "serve", self.tables["b"], "--cold",
                                    "--listen", "127.0.0.1:0"], capture_output=True, env=env,
                                   timeout=BOUND)
                with open(log) as f:
                    fired = [l.split() for l in f if l.startswith("fired ")]
                # The table's reads, or its title index's, opened with it.
                self.assertIn(fired, [[["fired", "pread", str(n), self.tables["b"] + name]]
                                      for name in ("", ".titles")],
                              "the fault was not injected at that read")
                # An I/O error is exit 1 (README, exit codes): not a crash
                # after the line (a signal, a sanitizer's exit).
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertEqual(p.stdout, b"", "never said it listens")
                lines = [l for l in p.stderr.decode().splitlines() if l.startswith("sstpipe")]
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertIn(self.tables["b"], lines[0])
                self.assertIn(errno_text("EIO"), lines[0])
                refused += 1
        self.assertEqual(refused, at_open, "not every read of the open was failed")

    def test_publish_that_cannot_be_opened_keeps_old_table(self):
        out = self.path("out")
        # c: a copy of b, another file (a table that failed to open is not
        # tried again until another file is published: serve_holder.c).
        for name in ("a", "b", "c"):
            os.makedirs(os.path.join(out, "builds", name))
            shutil.copyfile(self.tables["b" if name == "c" else name],
                            os.path.join(out, "builds", name, "table.sst"))
        os.symlink("builds/a", os.path.join(out, "current"))
        # Only opens under builds/b are counted: the first is b's table.
        # The check without an event off: the publishes are seen by theirs.
        s = self.serve(out, "--threads", "2", "--set", "serve.poll_seconds=0",
                       fault="open_read:1:EIO",
                       fault_dir=os.path.join(out, "builds", "b"))
        c = self.client(s)
        key = self.differing[0]
        self.assertEqual(c.get(key)[2], self.values["a"][key])

        def swap(target):
            tmp = os.path.join(out, ".current.tmp")
            os.symlink(target, tmp)
            os.rename(tmp, os.path.join(out, "current"))

        swap("builds/b")
        wait_for("the refusal", lambda: "not swapping" in s.stderr())
        self.assertIn(errno_text("EIO"), s.stderr())
        for k in self.keys:
            self.assertEqual(c.get(k)[2], self.values["a"][k], "still the old table")
        swap("builds/c")
        wait_for("the swap to c", lambda: c.get(key)[2] == self.values["b"][key])
        self.assertEqual(s.stop(), 0, s.stderr())

    def assertHoldsReadOnly(self, s, d):
        """Every file under d that server s has open, it has open for
        reading, and it maps none of them shared and writable: nothing it
        holds can be left half-written (the kernel's view, /proc)."""
        pid = s.proc.pid
        held = {}
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                path = os.readlink(f"/proc/{pid}/fd/{fd}")
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    flags = int(next(l for l in f if l.startswith("flags:")).split()[1], 8)
            except FileNotFoundError:
                continue  # closed meanwhile
            if path.startswith(d + "/"):
                held[f"fd {fd}: {path}"] = flags & os.O_ACCMODE
        self.assertTrue(held, "the server holds no file of the table open")
        self.assertEqual(set(held.values()), {os.O_RDONLY}, f"opened for writing: {held}")
        with open(f"/proc/{pid}/maps") as f:
            maps = [l.split() for l in f]
        self.assertEqual([m for m in maps if len(m) > 5 and m[5].startswith(d + "/")
                          and m[1][1] == "w" and m[1][3] == "s"], [],
                         "a file of the table mapped shared and writable")

    def test_kill9_at_a_read(self):
        d = os.path.dirname(self.tables["b"])
        listing = sorted(os.listdir(d))
        at_open, total = self.cold_reads()
        for n in [at_open + i for i in indices(total - at_open, 3, 8)]:
            with self.subTest(read=n):
                s = self.serve(self.tables["b"], "--cold", "--threads", "1",
                               fault=f"pread:{n}:SIGKILL", fault_dir=d)
                self.assertHoldsReadOnly(s, d)
                c = self.client(s)
                answered = 0
                try:
                    for key in self.keys:
                        status, _, body = c.get(key)
                        self.assertEqual((status, body), (200, self.values["b"][key]))
                        answered += 1
                except (ConnectionError, OSError):
                    pass
                self.assertEqual(s.proc.wait(BOUND), -9)
                self.assertEqual(answered, n - at_open - 1)
                s.close_files()
                self.assertEqual(sorted(os.listdir(d)), listing, "the kill left a file behind")
                s2 = self.serve(self.tables["b"], "--cold")
                c2 = self.client(s2)
                for key in self.keys:
                    self.assertEqual(c2.get(key)[2], self.values["b"][key])
                self.assertEqual(s2.stop(), 0)


if __name__ == "__main__":
    unittest.main()
