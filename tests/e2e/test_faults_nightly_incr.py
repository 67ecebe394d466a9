"""test_faults_nightly_incr.py: I/O faults and SIGKILL at every call of an incremental nightly.

The state before each faulted run: a published incremental nightly (a full
dump and one day's increment, their tables and checksums in cache/) and the
next day's increment just arrived. The faulted run takes the base's and the
first increment's checksums from cache/checksums.json, hashes the new
increment and writes the checksum cache anew (in its staging directory,
renamed into cache/), reuses the cached base and first increment, builds
the new increment's table in its
staging directory and renames it into cache/ (fsyncing cache/), merges the
three tables, verifies, profiles and publishes. The fault shim lists every
call under [output] dir, then each run fails one of those only an
incremental night makes (the checksum cache through the merged table's
rename; test_faults_nightly.py sweeps the others, the same code for any
night), or kills the process just before it:

- ENOSPC or EIO once: exit 1 with one "sstpipe: " line naming the file and
  the errno, or a whole build published for the calls test_faults_nightly
  allows to fail (the same check); either way `current` names a build that
  verifies clean, the cached tables of the base and the first increment are
  byte for byte as they were, no staging directory or temporary file is left
  anywhere (cache/ included), and the next run publishes the reference
  table (the bytes a fault-free run gives).
- SIGKILL just before that call: the same, `current` naming the previous
  build or (killed after the swap) the new one.
- SIGKILL at random points of the CPU time of a first night (a 24M base,
  between calls too: hashing, parsing, the merge, verify), as
  test_signals.py kills a plain nightly: nothing partial in cache/ or
  published, nothing left over, the next run publishes the reference. A
  night that finishes before its kill must be a whole one: exit 0, the
  reference published, nothing left over.

The state is restored from a snapshot before each run, so every run makes
the same calls.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import random
import re
import shutil
import signal
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import Tally, sha, temp_leftovers  # noqa: E402
from sstpipe_e2e import (SANITIZED, E2ETest, run, sstpipe, sstpipe_bin, wait_older,  # noqa: E402
                         wikigen, wikigen_bin)
import test_faults_nightly  # noqa: E402  (its whole-build check; not its tests)
from test_signals import cpu_run, interrupt  # noqa: E402  (its kill helpers; not its tests)

INCR = "enwiki-{}-pages-meta-hist-incr.xml.zst"


class IncrementalNightlyFaults(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-nightly-incr-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.full = os.path.join(cls.classtmp, "full")
        cls.made = os.path.join(cls.classtmp, "made")
        os.mkdir(cls.full)
        os.mkdir(cls.made)
        # The sanitized build's base is half the size: the same calls in
        # the window swept, each run a fraction of the work.
        size = "1M" if SANITIZED else "2M"
        cls.base_dump = wikigen(os.path.join(cls.full, "enwiki-20261130-pages-articles.xml.zst"),
                                size, "33", "zst")
        r = run([wikigen_bin(), "--size", size, "--seed", "33", "--increment-of", "20261130",
                 "--days", "2", "--edits", "5", "--format", "zst", "-o", cls.made])
        assert r.code == 0, r.describe()

    def path(self, *parts):
        """Under the class's directory: the night every case starts from
        (setUp) is published once, and each run starts from its snapshot
        (restore())."""
        return os.path.join(type(self).classtmp, *parts)

    def setUp(self):
        super().setUp()
        self.incr = self.path("incr")
        self.out = self.path("out")
        self.ini = self.config(self.out)
        self.snapshot = self.path("snapshot")
        self.argv = [sstpipe_bin(), "nightly", "-c", self.ini]
        self.ref = os.path.join(self.path("ref-out"), "current", "table.sst")
        if not hasattr(type(self), "cached"):
            self.first_night()

    def first_night(self):
        """The state before each faulted run, snapshot, and the reference
        table, made once for the class's cases."""
        os.mkdir(self.incr)
        shutil.copy(os.path.join(self.made, INCR.format("20261201")), self.incr)
        # Old enough for their checksums to be recorded (cache/checksums.json),
        # so that every run below makes the same calls.
        wait_older(self.base_dump, os.path.join(self.incr, INCR.format("20261201")))
        self.publish("the first night")
        # The cached tables the faulted runs must leave alone (the checksum
        # cache beside them is rewritten by the next run, atomically).
        cache = os.path.join(self.out, "cache")
        cached = {n: sha(os.path.join(cache, n)) for n in os.listdir(cache) if n.endswith(".sst")}
        self.assertEqual(len(cached), 2, cached)
        shutil.copy(os.path.join(self.made, INCR.format("20261202")), self.incr)
        wait_older(os.path.join(self.incr, INCR.format("20261202")))
        shutil.copytree(self.out, self.snapshot, symlinks=True)
        # The reference: what a fault-free run of the same inputs publishes.
        ref = faultlib.run(self.argv[:-1] + [self.config(self.path("ref-out"))], preload=False)
        self.assertEqual(ref.code, 0, ref.describe())
        type(self).cached = cached

    def config(self, out):
        return self.write_file(os.path.basename(out) + ".ini", (
            f"[input]\npath = {self.full}/enwiki-*-pages-articles.xml.zst\n"
            f"incremental = {self.incr}/enwiki-*-pages-meta-hist-incr.xml.zst\n"
            f"[output]\ndir = {out}\nkeep = 2\n[profile]\nlookups = 20\n"
            "[sort]\nmemory = 1M\n").encode())

    def publish(self, what):
        r = faultlib.run([sstpipe_bin(), "nightly", "-c", self.ini], preload=False)
        self.assertEqual(r.code, 0, what + " did not publish" + r.describe())
        self.assertNotIn("up to date", r.stderr, what + r.describe())
        self.assertEqual(temp_leftovers(self.out), [], what + r.describe())
        return r

    def restore(self):
        shutil.rmtree(self.out)
        shutil.copytree(self.snapshot, self.out, symlinks=True)

    def current(self):
        return os.readlink(os.path.join(self.out, "current"))

    def sound(self, before, what):
        """current sound (the previous build, or the reference table), the
        cache's old tables intact."""
        if self.current() != before:
            self.assertEqual(sha(os.path.join(self.out, "current", "table.sst")), sha(self.ref),
                             what + ": current names a different table")
        table = os.path.join(self.out, "current", "table.sst")
        v = faultlib.read_once("verify", table, table=table)
        self.assertEqual(v.code, 0, what + ": current does not verify" + v.describe())
        cache = os.path.join(self.out, "cache")
        for name, digest in self.cached.items():
            self.assertEqual(sha(os.path.join(cache, name)), digest,
                             what + f": cache/{name} changed")

    def next_night(self, what):
        """The next run ends with the reference table published and nothing
        left over."""
        nxt = faultlib.run(self.argv, preload=False)
        self.assertEqual(nxt.code, 0, what + " the next run" + nxt.describe())
        self.assertEqual(temp_leftovers(self.out), [], what + nxt.describe())
        self.assertEqual(sha(os.path.join(self.out, "current", "table.sst")), sha(self.ref),
                         what + ": the next run published a different table")
        return nxt

    def whole_build(self, r, op, action, what):
        return test_faults_nightly.NightlyFaults.assertWholeBuild(self, r, op, action, what)

    # The calls only an incremental night makes: from the first file it
    # creates in its staging directory to the merged table's rename and the
    # staging directory's fsync and close after it (the checksum cache, the
    # new increment's table and its move into cache/, the merge), less the
    # log's writes. test_faults_nightly.py sweeps the rest of a night (the
    # lock, the log, the reports and manifest, the swap of `current`): the
    # same code for any night.
    MAKING = staticmethod(faultlib.window(
        lambda op, path: op == "open" and re.search(r"/\.staging-[^/]*$", path),
        lambda op, path: op == "rename" and re.search(r"/table\.sst\.tmp\.[^/]*$", path),
        after=2, leave=lambda op, path: path.endswith("/nightly.log")))

    def sweep(self, area, brief_limit, kill):
        self.restore()
        counts = faultlib.count_calls(self, self.argv, self.out, only=self.MAKING)
        # The increment's table, its move into cache/, the merged table.
        self.assertGreaterEqual(len(counts["rename"]), 3, counts)
        self.assertGreater(len(counts["fsync"]), 3, counts)
        return faultlib.sweep_nightly(self, area, self.argv, self.out, counts, brief_limit,
                                      kill=kill, current=self.current, sound=self.sound,
                                      published=self.whole_build, publish=self.next_night,
                                      restore=self.restore)

    def test_errno_once_at_every_call(self):
        tally = self.sweep("nightly-incremental", 16, kill=False)
        self.assertGreater(tally.failed_cleanly, faultlib.brief(10))

    def test_sigkill_at_every_call(self):
        tally = self.sweep("nightly-incremental-kill", 6, kill=True)
        self.assertGreater(tally.killed, faultlib.brief(10))


class IncrementalNightlyRandomKills(E2ETest):
    """SIGKILL at random points of the CPU time of a first incremental night
    (a 24M base, a quarter of it under the sanitizers, and two increments
    built, cached, merged, verified, profiled, published), as
    test_signals.py kills a plain nightly:
    between I/O calls too (hashing, parsing, the merge, verify)."""

    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-kills-nightly-incr-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.full = os.path.join(cls.classtmp, "full")
        cls.incr = os.path.join(cls.classtmp, "incr")
        os.mkdir(cls.full)
        os.mkdir(cls.incr)
        # Under the sanitizers every stage runs several times slower, so a
        # quarter of the base still gives the kills time inside each stage.
        size = "6M" if SANITIZED else "24M"
        wikigen(os.path.join(cls.full, "enwiki-20261130-pages-articles.xml.zst"), size, "34",
                "zst")
        r = run([wikigen_bin(), "--size", size, "--seed", "34", "--increment-of", "20261130",
                 "--days", "2", "--edits", "2", "--format", "zst", "-o", cls.incr])
        assert r.code == 0, r.describe()

    def config(self, out):
        return self.write_file(os.path.basename(out) + ".ini", (
            f"[input]\npath = {self.full}/enwiki-*-pages-articles.xml.zst\n"
            f"incremental = {self.incr}/enwiki-*-pages-meta-hist-incr.xml.zst\n"
            f"[output]\ndir = {out}\nkeep = 2\n[profile]\nlookups = 200\n"
            "[sort]\nmemory = 4M\n").encode())

    def test_sigkill_random_points(self):
        ref_out = self.path("ref-out")
        argv = [sstpipe_bin(), "nightly", "-c", self.config(ref_out)]
        full = cpu_run(argv)
        ref = sha(os.path.join(ref_out, "current", "table.sst"))
        out = self.path("out")
        argv = [sstpipe_bin(), "nightly", "-c", self.config(out)]
        rng = random.Random(int(os.environ.get("SSTPIPE_FAULTS_SEED", "15")))
        tally = Tally("nightly-incremental-random-kill")
        for _ in range(30 if faultlib.LONG else faultlib.brief(6)):
            shutil.rmtree(out, ignore_errors=True)
            delay = rng.uniform(0.02, full * 1.05)
            what = f"first incremental night: SIGKILL after {delay:.2f} of {full:.2f} CPU-s"
            done, err = interrupt(self, argv, signal.SIGKILL, delay, what)
            if done:
                # It finished first: a whole night, judged as one.
                self.assertEqual(sha(os.path.join(out, "current", "table.sst")), ref,
                                 what + ": finished, not the reference published")
                self.assertEqual(temp_leftovers(out), [], what + ": finished, left")
                tally.completed += 1
            else:
                tally.killed += 1
            if os.path.lexists(os.path.join(out, "current")):
                self.assertEqual(sha(os.path.join(out, "current", "table.sst")), ref, what)
            # A cache entry is whole or absent: every table there verifies.
            cache = os.path.join(out, "cache")
            for name in os.listdir(cache) if os.path.isdir(cache) else []:
                if name.endswith(".sst"):
                    v = sstpipe("verify", os.path.join(cache, name))
                    self.assertEqual(v.code, 0, what + f": cache/{name}" + v.describe())
            kept = faultlib.NIGHTLY_KILL_LEFTOVERS
            self.assertEqual([p for p in temp_leftovers(out)
                              if not any(k in p for k in kept)], [], what)
            nxt = faultlib.run(argv, preload=False)
            self.assertEqual(nxt.code, 0, what + ", then the next run" + nxt.describe())
            self.assertEqual(temp_leftovers(out), [], what + ", then" + nxt.describe())
            self.assertEqual(sha(os.path.join(out, "current", "table.sst")), ref,
                             what + ": the next run published a different table")
        print(tally.report())
        self.assertGreater(tally.killed, 0)

if __name__ == "__main__":
    unittest.main()
