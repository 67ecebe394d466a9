"""test_faults_merge.py: ENOSPC, EIO and SIGKILL at `sstpipe merge`'s I/O.

merge writes its output like build (an anonymous file beside -o, fsynced,
renamed into place, the directory fsynced): the unchanged blocks of the
base table and the rebuilt ones go out together in the writer's 4 MiB
writes, after one attempt to share the first run of unchanged blocks with
the base (FICLONERANGE, the "clone" fault point), which a file system
without reflinks refuses, so that run is read back from the base and
written (the fallback) and sharing is not tried again. The fault shim
counts the calls a merge of a base and a 1% delta makes on the output
directory (writes, the clone, syncs, renames), then each run fails one:
exit 1, one error line naming the file and the errno (a clone failing with
ENOSPC or EIO is a failure, not "unsupported"), the previous output
byte-identical, no temporary file. test_merge_reflink.py does the same on a
file system with reflinks. Then SIGKILL at call indices spread over the run: nothing
left behind, the old output intact, and the next merge gives the reference
bytes (killed right at the rename, the temporary name holds the complete
new table, the one file a kill can leave, as for build). The inputs live outside the faulted directory and are never changed.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import random
import shutil
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import OPS, Tally, check_error_line, sha, temp_leftovers  # noqa: E402
from sstpipe_e2e import E2ETest, corpora_dir, sstpipe, sstpipe_bin, wikigen  # noqa: E402
from test_merge import edited, split_dump  # noqa: E402


class MergeFaults(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-merge-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        size = "64M" if faultlib.LONG else "12M"
        base_xml = wikigen(os.path.join(cls.classtmp, "base.xml"), size, "31", "xml")
        with open(base_xml, "rb") as f:
            head, pages, tail = split_dump(f.read())
        rng = random.Random(31)
        chosen = sorted(rng.sample(range(len(pages)), len(pages) // 100))
        incr_xml = os.path.join(cls.classtmp, "incr.xml")
        with open(incr_xml, "wb") as f:
            f.write(head + b"".join(edited(pages[i], i) for i in chosen) + tail)
        cls.base = os.path.join(cls.classtmp, "base.sst")
        cls.incr = os.path.join(cls.classtmp, "incr.sst")
        for src, dst in ((base_xml, cls.base), (incr_xml, cls.incr)):
            r = sstpipe("build", src, "-o", dst)
            assert r.code == 0, r.describe()
        cls.prev_dump = os.path.join(corpora_dir(), "enwiki-11pages.xml")

    def setUp(self):
        super().setUp()
        self.out_dir = self.path("out")
        os.mkdir(self.out_dir)
        self.out = os.path.join(self.out_dir, "table.sst")
        self.ref = self.path("ref.sst")
        self.assertOk(sstpipe("merge", "-o", self.ref, self.base, self.incr))
        self.argv = [sstpipe_bin(), "merge", "-o", self.out, self.base, self.incr]
        self.inputs = (sha(self.base), sha(self.incr))

    def reset_output(self):
        self.build(self.prev_dump, self.out)
        return sha(self.out)

    def check_after(self, what, r):
        self.assertEqual(temp_leftovers(self.out_dir), [], what + r.describe())
        self.assertEqual(sorted(os.listdir(self.out_dir)), ["table.sst"], what + r.describe())
        self.assertEqual((sha(self.base), sha(self.incr)), self.inputs, what + ": inputs changed")

    def test_errors_at_every_call(self):
        self.reset_output()
        counts = faultlib.count_calls(self, self.argv, self.out_dir)
        self.assertEqual(sha(self.out), sha(self.ref))
        self.assertGreater(counts["clone"], 0, f"no block was copied: {counts}")
        # The coalesced writes: the ~2 MiB output in a handful of writes, not one a block.
        self.assertLess(counts["write"], 8, counts)
        tally = faultlib.sweep_one_output(
            self, "merge", self.argv, self.out_dir, counts, 24, out=self.out,
            ref=sha(self.ref), reset=self.reset_output, check_after=self.check_after,
            absorbable=lambda op, path: (op, path) == ("close", self.out_dir))
        self.assertGreater(tally.failed_cleanly, 0)

    def test_sticky_enospc_on_copies(self):
        """A disk that fills at the block copies and stays full: from the
        refused clone's fallback (the first write) on."""
        prev = self.reset_output()
        r = faultlib.run(self.argv, fault="write:1:ENOSPC:sticky", fault_dir=self.out_dir)
        self.assertEqual(r.code, 1, r.describe())
        check_error_line(self, r, "ENOSPC", "sticky ENOSPC")
        self.check_after("sticky ENOSPC", r)
        self.assertEqual(sha(self.out), prev)

    def test_kill_at_random_calls(self):
        prev = self.reset_output()
        counts = faultlib.count_calls(self, self.argv, self.out_dir)
        rng = random.Random(17)
        tally = Tally("merge-kill")
        kills = 40 if faultlib.LONG else 8
        ops = [op for op in OPS if counts[op]]
        for _ in range(kills):
            op = rng.choice(ops)
            n = rng.randint(1, counts[op])
            what = f"merge {op}:{n}:SIGKILL"
            r = faultlib.run(self.argv, fault=f"{op}:{n}:SIGKILL", fault_dir=self.out_dir)
            self.assertEqual(r.code, -9, what + r.describe())
            if op == "rename":
                # Killed between linking the finished file under its
                # temporary name and the rename (no call replaces a file
                # atomically from an anonymous one): that name holds the
                # complete new table, as with build; only then is a file left.
                left = temp_leftovers(self.out_dir)
                self.assertEqual(len(left), 1, what)
                self.assertEqual(sha(left[0]), sha(self.ref), what + ": the left file is partial")
                os.unlink(left[0])
            self.check_after(what, r)
            # Killed before the rename: the old table; at or after it: the new one.
            self.assertIn(sha(self.out), {prev, sha(self.ref)}, what)
            r2 = faultlib.run(self.argv, fault_dir=self.out_dir)
            self.assertEqual(r2.code, 0, what + ": the next run failed" + r2.describe())
            self.assertEqual(sha(self.out), sha(self.ref), what + ": the next run's bytes")
            prev = self.reset_output()
            tally.killed += 1
        print(tally.report())


if __name__ == "__main__":
    unittest.main()
