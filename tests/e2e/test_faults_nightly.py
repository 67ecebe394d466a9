"""test_faults_nightly.py: I/O faults and SIGKILL at every call of a nightly run.

`sstpipe nightly` writes its lock, staging directory, table, reports and
manifest, then renames the build into builds/ and swaps `current`. The
fault shim counts every write, fsync, rename, ftruncate and close under
[output] dir, then each run fails one of them:

- ENOSPC or EIO once: exit 1 with one "sstpipe: " line naming the file
  and the errno, `current` still names the previous build and that build
  verifies clean, no staging directory or temporary file is left; or, for
  a call whose failure does not matter (a report of the non-fatal profile,
  a close after fsync), a published build identical to `sstpipe build`.
- ENOSPC from that call on (a disk that stays full): the same, except
  that the failed run may be unable to record itself; the next run must
  clean up after it and publish.
- SIGKILL just before that call: `current` names the previous build, or
  (killed after the swap) the new one, and verifies clean; the next run
  cleans up and publishes.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import shutil
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import ERRNOS, OPS, Tally, check_error_line, indices, sha, temp_leftovers  # noqa: E402
from sstpipe_e2e import E2ETest, sstpipe, sstpipe_bin, wikigen  # noqa: E402


class NightlyFaults(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-nightly-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.first = wikigen(os.path.join(cls.classtmp, "first.xml.zst"), "1M", "31", "zst")
        cls.dump = wikigen(os.path.join(cls.classtmp, "next.xml.zst"), "4M", "32", "zst")

    def setUp(self):
        super().setUp()
        self.out = self.path("out")
        self.ini = self.write_file("nightly.ini", (
            f"[output]\ndir = {self.out}\nkeep = 2\n[profile]\nlookups = 20\n"
            "[sort]\nmemory = 1M\n").encode())
        self.argv = [sstpipe_bin(), "nightly", "-c", self.ini, self.dump]
        self.ref = self.path("ref.sst")
        self.build(self.dump, self.ref, "--memory", "1M")
        self.publish(self.first)

    def publish(self, dump, what="a fault-free run"):
        r = faultlib.run([sstpipe_bin(), "nightly", "-c", self.ini, dump], preload=False)
        self.assertEqual(r.code, 0, what + " did not publish" + r.describe())
        self.assertEqual(temp_leftovers(self.out), [], what + r.describe())
        return r

    def current(self):
        return os.readlink(os.path.join(self.out, "current"))

    def assertCurrentSound(self, target, what):
        self.assertEqual(self.current(), target, what + ": current moved")
        r = sstpipe("verify", os.path.join(self.out, "current", "table.sst"))
        self.assertEqual(r.code, 0, what + ": current does not verify" + r.describe())

    def calls(self):
        counts = faultlib.count_calls(self, self.argv, self.out)
        self.assertGreater(counts["rename"], 3, counts)
        return counts

    def test_errno_once_at_every_call(self):
        counts = self.calls()
        tally = Tally("nightly-publish")
        for op in OPS:
            for i, n in enumerate(indices(counts[op], 24)):
                for action in ERRNOS if faultlib.LONG else (ERRNOS[i % 2],):
                    what = f"nightly {op}:{n}:{action}"
                    before = self.current()
                    r = faultlib.run(self.argv, fault=f"{op}:{n}:{action}", fault_dir=self.out)
                    self.assertEqual(temp_leftovers(self.out), [], what + r.describe())
                    if not r.fired:
                        tally.not_reached += 1
                        self.assertEqual(r.code, 0, what + r.describe())
                    elif r.code == 0:
                        self.assertNotEqual(self.current(), before, what + r.describe())
                        self.assertEqual(sha(os.path.join(self.out, "current", "table.sst")),
                                         sha(self.ref), what + ": published a different table")
                        self.assertCurrentSound(self.current(), what)
                        tally.absorbed += 1
                    else:
                        self.assertEqual(r.code, 1, what + r.describe())
                        check_error_line(self, r, action, what)
                        self.assertCurrentSound(before, what)
                        tally.failed_cleanly += 1
        print(tally.report())
        self.assertGreater(tally.failed_cleanly, 10)

    def test_disk_stays_full(self):
        counts = self.calls()
        tally = Tally("nightly-disk-full")
        for op in ("write", "pwrite", "fsync", "rename"):
            for n in indices(counts[op], 6, 30):
                what = f"nightly {op}:{n}:ENOSPC:sticky"
                before = self.current()
                r = faultlib.run(self.argv, fault=f"{op}:{n}:ENOSPC:sticky", fault_dir=self.out)
                if not r.fired:
                    tally.not_reached += 1
                    continue
                self.assertEqual(r.code, 1, what + r.describe())
                check_error_line(self, r, "ENOSPC", what)
                self.assertCurrentSound(before, what)
                # What a run that cannot write may leave, the next one clears.
                self.publish(self.dump, what + ", then")
                tally.failed_cleanly += 1
        print(tally.report())
        self.assertGreater(tally.failed_cleanly, 5)

    def test_sigkill_at_every_call(self):
        counts = self.calls()
        tally = Tally("nightly-kill-at-call")
        for op in OPS:
            for n in indices(counts[op], 8):
                what = f"nightly {op}:{n}:SIGKILL"
                before = self.current()
                r = faultlib.run(self.argv, fault=f"{op}:{n}:SIGKILL", fault_dir=self.out)
                if not r.fired:
                    tally.not_reached += 1
                    continue
                self.assertEqual(r.code, -9, what + r.describe())
                if self.current() != before:
                    # Killed after the swap: the new build is the published one.
                    self.assertEqual(sha(os.path.join(self.out, "current", "table.sst")),
                                     sha(self.ref), what + ": current names a different table")
                self.assertCurrentSound(self.current(), what)
                after = self.publish(self.dump, what + ", then")
                self.assertNotEqual(self.current(), before, what)
                if any(name.startswith(".staging-") for name in os.listdir(self.out)):
                    self.fail(what + ": staging left after the next run" + after.describe())
                tally.killed += 1
        print(tally.report())
        self.assertGreater(tally.killed, 10)


if __name__ == "__main__":
    unittest.main()
