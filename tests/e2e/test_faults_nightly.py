"""test_faults_nightly.py: I/O faults and SIGKILL at every call of a nightly run.

`sstpipe nightly` creates its directories and lock, the staging directory,
its log (stdio), table, reports and manifest, then renames the build into
builds/ and swaps `current` (a new symlink renamed over it). The fault shim
counts every call of faultlib.OPS under [output] dir (creating a file or
directory, write, sync_file_range, fsync, linkat, symlink, rename,
ftruncate, close, the log's stdio writes), then each run fails one of them:

- ENOSPC or EIO once: exit 1 with one "sstpipe: " line naming the file
  and the errno, `current` still names the previous build and that build
  verifies clean, no staging directory or temporary file is left. A run
  may succeed only when the failed call is one of these, and then its
  build must be whole (the reference table, a published manifest whose
  outputs match the files, a clean verify.json, the profile):
  - closing a directory after its fsync, a sort scratch file (nameless:
    "(deleted)") after its last read, or the lock file at exit;
  - sync_file_range, the table writer's write-back hint (fsync follows);
  - a call writing profile.json: profiling is not fatal, so the manifest
    must record the profile's error, naming profile.json and the errno,
    and profile.json must be absent;
  - a write (or the close) of nightly.log after the `current` swap: the
    run must say so in a warning naming nightly.log and the errno;
  - a call writing the HTML pages (report.html, index.html), which are
    written after the swap and never fail a build: the run must log a
    warning naming the page and the errno, and leave no partial page.
- ENOSPC from that call on (a disk that stays full): the same, except
  that the failed run may be unable to record itself; the next run must
  clean up after it and publish. A disk that fills only after the publish
  (while the pages are written) leaves the build published with a warning.
- SIGKILL just before that call: `current` names the previous build, or
  (killed after the swap) the new one, and verifies clean; the next run
  cleans up and publishes.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import re
import shutil
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import (Tally, check_error_line, errno_text, indices, sha,  # noqa: E402
                      temp_leftovers)
from sstpipe_e2e import SANITIZED, E2ETest, sstpipe_bin, wikigen  # noqa: E402
from test_nightly import xxh3_64  # noqa: E402


class NightlyFaults(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-nightly-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.first = wikigen(os.path.join(cls.classtmp, "first.xml.zst"), "1M", "31", "zst")
        # The sanitized build's nights are a quarter the size: the same
        # calls under the output directory, each run a fraction of the work.
        cls.dump = wikigen(os.path.join(cls.classtmp, "next.xml.zst"), "1M" if SANITIZED else "4M",
                           "32", "zst")

    def setUp(self):
        super().setUp()
        self.out = self.path("out")
        self.ini = self.write_file("nightly.ini", (
            f"[output]\ndir = {self.out}\nkeep = 2\n[profile]\nlookups = 20\n"
            "[sort]\nmemory = 1M\n").encode())
        # Forced: every run is a whole build, the dump current was
        # published from included (else "up to date", which builds nothing).
        self.argv = [sstpipe_bin(), "nightly", "-c", self.ini, "--force", self.dump]
        self.ref = self.path("ref.sst")
        self.build(self.dump, self.ref, "--memory", "1M")
        self.publish(self.first)

    def publish(self, dump, what="a fault-free run"):
        r = faultlib.run([sstpipe_bin(), "nightly", "-c", self.ini, "--force", dump],
                         preload=False)
        self.assertEqual(r.code, 0, what + " did not publish" + r.describe())
        self.assertEqual(temp_leftovers(self.out), [], what + r.describe())
        return r

    def current(self):
        return os.readlink(os.path.join(self.out, "current"))

    def assertCurrentSound(self, target, what):
        self.assertEqual(self.current(), target, what + ": current moved")
        table = os.path.join(self.out, "current", "table.sst")
        r = faultlib.read_once("verify", table, table=table)
        self.assertEqual(r.code, 0, what + ": current does not verify" + r.describe())

    def calls(self, env=None):
        counts = faultlib.count_calls(self, self.argv, self.out, env=env)
        self.assertGreater(counts["rename"], 3, counts)
        # linkat names an O_TMPFILE file; named temporary files need none.
        for op in ["open", "mkdir", "symlink", "stdio"] + ([] if env else ["linkat"]):
            self.assertGreater(counts[op], 0, f"no {op} counted: {counts}")
        return counts

    def assertWholeBuild(self, r, op, action, what):
        """A run that exited 0 although a call failed: only the calls the
        docstring names may, and the build it published must be whole."""
        path = r.fired[0][2]
        build = os.path.join(self.out, "current")
        mpath = os.path.join(build, "manifest.json")
        self.assertTrue(os.path.exists(mpath), what + ": published without its manifest" +
                        r.describe())
        with open(mpath) as f:
            m = json.load(f)
        self.assertEqual((m["status"], m["exit_code"], m["failed_stage"], m["error"]),
                         ("published", 0, None, None), what + r.describe())
        self.assertEqual(m["build_dir"], self.current(), what)
        for o in m["outputs"]:
            p = os.path.join(build, o["file"])
            self.assertEqual((os.path.getsize(p), xxh3_64(p)), (o["bytes"], o["xxh3_64"]),
                             what + f": {o['file']} is not what the manifest says")
        with open(os.path.join(build, "verify.json")) as f:
            v = json.load(f)
        self.assertEqual((v["problems"], v["files"][0]["ok"]), (0, True), what)
        self.assertEqual(m["verify"]["problem_count"], 0, what)
        err = errno_text(action)
        profile_error = (m["profile"] or {}).get("error") or ""
        if profile_error:
            # Profiling is not fatal: its report could not be written.
            self.assertIn("profile.json", profile_error, what + r.describe())
            self.assertIn(err, profile_error, what + r.describe())
            # Absent, unless only the directory fsync after its rename failed.
            self.assertEqual(os.path.exists(os.path.join(build, "profile.json")),
                             "complete and in place" in profile_error, what + r.describe())
            return "profile-report"
        self.assertEqual(m["profile"]["lookups"], 20, what)
        with open(os.path.join(build, "profile.json")) as f:
            self.assertEqual(json.load(f)["lookups"], 20, what)
        name = os.path.basename(path)
        # A set's temporary directory (NAME.tmp.PID) is a directory renamed
        # since its close, as the staging directory is.
        if op == "close" and (os.path.isdir(path) or name.startswith(".staging-")
                              or re.fullmatch(r".+\.tmp\.[0-9]+", name)
                              or name == ".lock" or path.endswith(" (deleted)")):
            return "close-" + ("scratch" if path.endswith(" (deleted)") else
                               "lock" if name == ".lock" else "dir")
        if op == "sync_file_range":
            return "write-back-hint"  # the fsync before the rename syncs it all
        if op in ("stdio", "close") and name == "nightly.log":
            self.assertIn(f"warning: {self.out}/{self.current()}/nightly.log", r.stderr,
                          what + r.describe())
            self.assertIn(err, r.stderr, what + r.describe())
            # ... and after the swap only: every line before it is in the log.
            lines = r.stderr.splitlines()
            swap = next(i for i, l in enumerate(lines) if " nightly: published " in l)
            with open(os.path.join(build, "nightly.log")) as f:
                logged = f.read().splitlines()
            self.assertEqual(logged[:swap], lines[:swap],
                             what + ": the log lost lines from before the swap" + r.describe())
            return "log-after-publish"
        m = re.search(r"nightly: warning: report not written: (\S.*?/(report|index)\.html): (.*)",
                      r.stderr)
        if m:
            self.assertIn(err, m.group(3), what + r.describe())
            # Atomic: the page is whole or absent, never torn.
            page = m.group(1)
            if os.path.exists(page):
                with open(page, encoding="utf-8") as f:
                    self.assertTrue(f.read().endswith("</html>\n"), what + ": a torn page")
            return "html-page"
        self.fail(what + ": a failed call went unnoticed" + r.describe())

    def sound(self, before, what):
        """current verifies, and when it moved it names the new table."""
        if self.current() != before:
            self.assertEqual(sha(os.path.join(self.out, "current", "table.sst")),
                             sha(self.ref), what + ": current names a different table")
        self.assertCurrentSound(self.current(), what)

    def test_errno_once_at_every_call(self):
        counts = self.calls()
        if SANITIZED:
            # The first two and last two calls of each op (where files are
            # created, committed and renamed, the lock's close among them)
            # and its middle one, and the closes faultlib.brief samples
            # (the directories' after their fsync among them): the paths
            # the plain suite's every call takes, for the sanitizers.
            counts = {op: indices(n, 24) if op == "close" else
                      sorted({1, 2, (n + 1) // 2, n - 1, n} & set(range(1, n + 1)))
                      for op, n in counts.items()}
        tally = faultlib.sweep_nightly(self, "nightly-publish", self.argv, self.out, counts,
                                       24, kill=False, current=self.current, sound=self.sound,
                                       published=self.assertWholeBuild)
        self.assertGreater(tally.failed_cleanly, faultlib.brief(10))

    def test_disk_stays_full(self):
        counts = self.calls()
        tally = Tally("nightly-disk-full")
        for op in ("write", "pwrite", "fsync", "rename", "open"):
            for n in indices(counts[op], 6, 30):
                what = f"nightly {op}:{n}:ENOSPC:sticky"
                before = self.current()
                r = faultlib.run(self.argv, fault=f"{op}:{n}:ENOSPC:sticky", fault_dir=self.out)
                if not r.fired:
                    # It never reached the call: a whole run like any other.
                    tally.not_reached += 1
                    self.assertEqual(r.code, 0, what + ": the fault never fired" + r.describe())
                    self.assertEqual(temp_leftovers(self.out), [], what + r.describe())
                    self.sound(before, what)
                    continue
                if r.code == 0:
                    # The disk filled only once the build was published:
                    # the pages, written last, could not be; a warning.
                    self.assertRegex(r.stderr, r"nightly: warning: report not written: \S+"
                                     r"\.html: .*No space left on device", what + r.describe())
                    self.assertNotEqual(self.current(), before, what + r.describe())
                    self.assertCurrentSound(self.current(), what)
                    self.publish(self.dump, what + ", then")
                    tally.absorbed += 1
                    continue
                self.assertEqual(r.code, 1, what + r.describe())
                check_error_line(self, r, "ENOSPC", what)
                self.assertCurrentSound(before, what)
                # What a run that cannot write may leave, the next one clears.
                self.publish(self.dump, what + ", then")
                tally.failed_cleanly += 1
        print(tally.report())
        self.assertGreater(tally.failed_cleanly, faultlib.brief(5))

    def test_sigkill_at_every_call(self):
        tally = faultlib.sweep_nightly(self, "nightly-kill-at-call", self.argv, self.out,
                                       self.calls(), 8, kill=True, current=self.current,
                                       sound=self.sound,
                                       publish=lambda what: self.publish(self.dump, what))
        self.assertGreater(tally.killed, faultlib.brief(10))

if __name__ == "__main__":
    unittest.main()
