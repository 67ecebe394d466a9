"""test_faults_nightly_set_incr.py: I/O faults and SIGKILL at every call of an
incremental nightly that publishes a table set ([cluster] shards > 1;
pipeline/nightly/nightly_incr_set.c), test_faults_nightly_incr.py's sweep for that path.

The state before each faulted run: a published night (the base built as a
3-shard set and cached, one day's increment of two new pages cached as a
table) and the next day's increment (two more pages) just arrived. The
faulted run reuses the cached base set and first increment, builds the new
increment through the cluster (its tasks write under [cluster] shared_dir,
outside [output] dir; their faults are test_faults_cluster.py's), reads
the increments to find the shards they touch, checks and links the others
from the cached base, merges the touched ones into a temporary set
directory, writes its tableset.json, renames it into place, verifies,
profiles and publishes. The fault shim lists every call under [output]
dir, then each run fails one of those only an incremental night of a set
makes (the checksum cache through the set's rename; test_faults_nightly.py
sweeps the others, the same code for any night), or kills the process just
before it:

- ENOSPC or EIO once: exit 1 with one "sstpipe: " line naming the file and
  the errno, `current` where it was; or a whole build published for the
  calls test_faults_nightly allows to fail (the same check). Either way
  `current` names a set that verifies and holds the records of the night
  it was published for, the cached base set and first increment are byte
  for byte as they were, no staging directory or temporary file (the set's
  <name>.tmp.<pid> included) is left anywhere, and the next run publishes
  the reference (the records a fault-free run of the same inputs gives).
- SIGKILL just before that call: the same, `current` naming the previous
  set or (killed after the swap) the new one; what a killed run leaves (its
  staging directory) the next run removes.

The state is restored from a snapshot before each run, so every run makes
the same calls.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import re
import shutil
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import sha, temp_leftovers  # noqa: E402
from sstpipe_e2e import SANITIZED, E2ETest, run, sstpipe_bin, wait_older, wikigen  # noqa: E402
from sstpipe_e2e import wikigen_bin  # noqa: E402
import test_faults_nightly  # noqa: E402  (its whole-build check; not its tests)

INCR = "enwiki-{}-pages-meta-hist-incr.xml.bz2"


class IncrementalNightlySetFaults(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-nightly-set-incr-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.full = os.path.join(cls.classtmp, "full")
        cls.made = os.path.join(cls.classtmp, "made")
        os.mkdir(cls.full)
        os.mkdir(cls.made)
        cls.base_dump = wikigen(
            os.path.join(cls.full, "enwiki-20261130-pages-articles-multistream.xml.bz2"), "1M",
            "8", "bz2-multistream")
        # Two new pages a day, no edits: each day touches at most two of
        # the three shards, so the run links some and merges others.
        r = run([wikigen_bin(), "--size", "1M", "--seed", "8", "--increment-of", "20261130",
                 "--days", "2", "--edits", "0", "--new-pages", "2", "--format", "bz2", "-o",
                 cls.made])
        assert r.code == 0, r.describe()

    def path(self, *parts):
        """Under the class's directory: the night every case starts from
        (setUp) is published once, and each run starts from its snapshot
        (restore())."""
        return os.path.join(type(self).classtmp, *parts)

    def setUp(self):
        super().setUp()
        cls = type(self)
        self.incr = self.path("incr")
        self.out = self.path("out")
        self.ini = self.config(self.out)
        self.cache = os.path.join(self.out, "cache")
        self.snapshot = self.path("snapshot")
        self.argv = [sstpipe_bin(), "nightly", "-c", self.ini]
        if not hasattr(cls, "ref"):
            self.first_night()

    def first_night(self):
        """The state before each faulted run, snapshot, and the reference
        records, made once for the class's cases."""
        cls = type(self)
        os.mkdir(self.incr)
        shutil.copy(os.path.join(self.made, INCR.format("20261201")), self.incr)
        wait_older(self.base_dump, os.path.join(self.incr, INCR.format("20261201")))
        self.publish("the first night")
        cls.first_records = self.records(os.path.join(self.out, "current", "t.sst"))
        # What the faulted runs must leave alone: every file of the cache
        # but the checksum cache (rewritten by the next run, atomically).
        cls.cached = self.cache_files()
        self.assertEqual(len([n for n in os.listdir(self.cache) if n.endswith(".set")]), 1)
        shutil.copy(os.path.join(self.made, INCR.format("20261202")), self.incr)
        wait_older(os.path.join(self.incr, INCR.format("20261202")))
        shutil.copytree(self.out, self.snapshot, symlinks=True)
        # The reference: what a fault-free run of the same inputs publishes.
        ref_out = self.path("ref-out")
        ref = faultlib.run([sstpipe_bin(), "nightly", "-c", self.config(ref_out)],
                           preload=False)
        self.assertEqual(ref.code, 0, ref.describe())
        cls.ref = self.records(os.path.join(ref_out, "current", "t.sst"))
        self.assertNotEqual(self.ref, self.first_records)

    def config(self, out):
        name = os.path.basename(out)
        return self.write_file(name + ".ini", (
            f"[input]\npath = {self.full}/enwiki-*-pages-articles-multistream.xml.bz2\n"
            f"incremental = {self.incr}/enwiki-*-pages-meta-hist-incr.xml.bz2\n"
            f"[output]\ndir = {out}\nname = t.sst\nkeep = 2\n[profile]\nlookups = 20\n"
            f"[cluster]\nshared_dir = {self.path('shared-' + name)}\n"
            # One map task in the sanitized build: the calls swept are the
            # nightly's own, the same for any number of tasks.
            f"tasks = {1 if SANITIZED else 2}\nshards = 3\nretries = 0\njobs = 2\n").encode())

    def cache_files(self):
        found = {}
        for root, _, files in os.walk(self.cache):
            for n in files:
                if n != "checksums.json":
                    p = os.path.join(root, n)
                    found[os.path.relpath(p, self.cache)] = sha(p)
        return found

    def records(self, table):
        r = faultlib.read_once("dump", "--jsonl", table, table=table)
        self.assertEqual(r.code, 0, r.describe())
        return r.stdout

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
        """current a sound set (the previous night's, or the reference's
        records), the cache's old entries intact."""
        table = os.path.join(self.out, "current", "t.sst")
        self.assertTrue(os.path.isfile(os.path.join(table, "tableset.json")),
                        what + ": current holds no table set")
        v = faultlib.read_once("verify", table, table=table)
        self.assertEqual(v.code, 0, what + ": current does not verify" + v.describe())
        want = self.first_records if self.current() == before else self.ref
        self.assertTrue(self.records(table) == want, what + ": current's records are wrong")
        got = self.cache_files()
        for name, digest in self.cached.items():
            self.assertEqual(got.get(name), digest, what + f": cache/{name} changed")

    def next_night(self, what):
        """The next run publishes the reference and leaves nothing over."""
        nxt = faultlib.run(self.argv, preload=False)
        self.assertEqual(nxt.code, 0, what + " the next run" + nxt.describe())
        self.assertEqual(temp_leftovers(self.out), [], what + nxt.describe())
        self.assertTrue(self.records(os.path.join(self.out, "current", "t.sst")) == self.ref,
                        what + ": the next run published other records")
        return nxt

    def whole_build(self, r, op, action, what):
        return test_faults_nightly.NightlyFaults.assertWholeBuild(self, r, op, action, what)

    # The calls only an incremental night of a set makes: from the first file
    # it creates in its staging directory to the new set's rename and the
    # staging directory's fsync and close after it (the checksum cache, the
    # increment moved into cache/, the set's directory with its linked and
    # merged shards and tableset.json), less the log's writes.
    # test_faults_nightly.py sweeps the rest of a night (the lock, the log,
    # the reports and manifest, the swap of `current`): the same code for any
    # night.
    MAKING = staticmethod(faultlib.window(
        lambda op, path: op == "open" and re.search(r"/\.staging-[^/]*$", path),
        lambda op, path: op == "rename" and re.search(r"/t\.sst\.tmp\.[^/]*$", path),
        after=2, leave=lambda op, path: path.endswith("/nightly.log")))

    def sweep(self, area, brief_limit, kill):
        self.restore()
        counts = faultlib.count_calls(self, self.argv, self.out, only=self.MAKING)
        self.assertGreater(len(counts["rename"]), 3, counts)
        # The shards no increment touches, linked from the cached base.
        self.assertGreater(len(counts["linkat"]), 0, counts)
        return faultlib.sweep_nightly(self, area, self.argv, self.out, counts, brief_limit,
                                      kill=kill, current=self.current, sound=self.sound,
                                      published=self.whole_build, publish=self.next_night,
                                      restore=self.restore)

    def test_errno_once_at_every_call(self):
        tally = self.sweep("nightly-set-incremental", 5, kill=False)
        self.assertGreater(tally.failed_cleanly, faultlib.brief(10))

    def test_sigkill_at_every_call(self):
        tally = self.sweep("nightly-set-incremental-kill", 3, kill=True)
        self.assertGreater(tally.killed, faultlib.brief(10))


if __name__ == "__main__":
    unittest.main()
