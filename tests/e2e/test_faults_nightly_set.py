"""test_faults_nightly_set.py: I/O faults and SIGKILL at the calls of a
nightly that publishes a table set (test_faults_nightly.py's sweep, for the
path of [cluster] shards > 1).

The map and reduce tasks write under [cluster] shared_dir (their faults are
test_faults_cluster.py's); under [output] dir the nightly process itself
creates the staging directory, links the reduced shards into a temporary
set directory, writes its tableset.json, renames it to the set's name,
verifies the shards, writes the reports and manifest, renames the staging
directory into builds/ and swaps `current`. The fault shim lists the calls
under [output] dir, and each run fails one of those that only a set's
publish makes, in and on the set's temporary directory
(test_faults_nightly.py sweeps the others, the same code for any night):

- ENOSPC or EIO once: the run exits 1 with one "sstpipe: " line naming the
  errno, or (the calls test_faults_nightly.py lists as absorbable: closes,
  write-back hints, the profile's report, the log or pages after the swap)
  exits 0 with a whole set published; either way `current` names a set that
  verifies and holds build's records, and no temporary file is left.
- SIGKILL just before that call: `current` names the previous set or (killed
  after the swap) the new one, sound either way; the next run cleans up
  and publishes the new set.
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
from faultlib import temp_leftovers  # noqa: E402
from sstpipe_e2e import SANITIZED, E2ETest, sstpipe, sstpipe_bin, wikigen  # noqa: E402


class NightlySetFaults(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-nightly-set-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.first = wikigen(os.path.join(cls.classtmp, "first.xml.bz2"), "1M", "51",
                            "bz2-multistream")
        # The sanitized build's next night is half the size, and its
        # cluster one map task: the calls swept are the set's publish, the
        # same for any input and any number of tasks.
        cls.dump = wikigen(os.path.join(cls.classtmp, "next.xml.bz2"), "1M" if SANITIZED else "2M",
                           "52", "bz2-multistream")
        cls.refs = {}
        for d in (cls.first, cls.dump):
            ref = d + ".sst"
            r = sstpipe("build", d, "-o", ref)
            assert r.code == 0, r.describe()
            r = sstpipe("dump", "--jsonl", ref)
            assert r.code == 0, r.describe()
            cls.refs[d] = r.stdout

    def setUp(self):
        super().setUp()
        self.out = self.path("out")
        self.shared = self.path("shared")
        self.ini = self.write_file("nightly.ini", (
            f"[output]\ndir = {self.out}\nname = t.sst\nkeep = 2\n[profile]\nlookups = 20\n"
            f"[cluster]\nshared_dir = {self.shared}\ntasks = {1 if SANITIZED else 2}\nshards = 2\n"
            "retries = 0\njobs = 2\n").encode())
        # Forced: every run is a whole build, the dump current was
        # published from included (else "up to date", which builds nothing).
        self.argv = [sstpipe_bin(), "nightly", "-c", self.ini, "--force", self.dump]
        self.publish(self.first)
        self.first_target = self.current()

    def publish(self, dump, what="a fault-free run"):
        r = faultlib.run([sstpipe_bin(), "nightly", "-c", self.ini, "--force", dump],
                         preload=False)
        self.assertEqual(r.code, 0, what + " did not publish" + r.describe())
        self.assertEqual(temp_leftovers(self.out), [], what + r.describe())
        self.assertSet(self.current(), dump, what)
        return r

    def current(self):
        return os.readlink(os.path.join(self.out, "current"))

    def assertCurrentSound(self, what):
        """current names the first night's set, or a set of the next dump."""
        target = self.current()
        self.assertSet(target, self.first if target == self.first_target else self.dump, what)

    def assertSet(self, target, dump, what):
        """target (builds/...) holds a set that verifies and is dump's records."""
        table = os.path.join(self.out, target, "t.sst")
        self.assertTrue(os.path.isfile(os.path.join(table, "tableset.json")),
                        what + f": {target} holds no table set")
        r = faultlib.read_once("verify", table, table=table)
        self.assertEqual(r.code, 0, what + ": the set does not verify" + r.describe())
        r = faultlib.read_once("dump", "--jsonl", table, table=table)
        self.assertEqual(r.code, 0, what + r.describe())
        self.assertTrue(r.stdout == self.refs[dump], what + ": not build's records")

    # The calls only a set's publish makes: in and on its temporary
    # directory, made, filled with the shards' links (and their title
    # indexes') and tableset.json,
    # fsynced and renamed to the set's name. test_faults_nightly.py sweeps
    # the rest of a night (the lock, the log, the pages and the manifest,
    # the staging directory's rename, the swap of `current`): the same code
    # whatever the night publishes.
    IN_SET = re.compile(r"/t\.sst(\.tmp\.[^/]*)?(/|$)")

    def calls(self):
        calls = faultlib.count_calls(self, self.argv, self.out,
                                     only=lambda calls: [c for c in calls if self.IN_SET.search(c[2])])
        self.assertEqual(len(calls["linkat"]), 5,
                         f"the two shards', their title indexes' and tableset.json's links: {calls}")
        for op in ["mkdir", "open", "write", "fsync", "rename", "close"]:
            self.assertTrue(calls[op], f"no {op} in the set's directory: {calls}")
        return calls

    def sound(self, before, what):
        self.assertCurrentSound(what)

    @staticmethod
    def published(r, op, action, what):
        """Absorbed (test_faults_nightly.py judges which calls may be): that
        it published the whole new set, sound() has checked."""
        return op

    def test_errno_once_at_every_call(self):
        tally = faultlib.sweep_nightly(self, "nightly-set-publish", self.argv, self.out,
                                       self.calls(), 6, kill=False, current=self.current,
                                       sound=self.sound, published=self.published)
        self.assertGreater(tally.failed_cleanly, faultlib.brief(10))

    def test_sigkill_at_every_call(self):
        tally = faultlib.sweep_nightly(self, "nightly-set-kill-at-call", self.argv, self.out,
                                       self.calls(), 4, kill=True, current=self.current,
                                       sound=self.sound,
                                       publish=lambda what: self.publish(self.dump, what))
        self.assertGreater(tally.killed, faultlib.brief(10))

if __name__ == "__main__":
    unittest.main()
