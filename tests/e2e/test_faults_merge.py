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
bytes (killed right at a rename, the temporary name holds the complete
new file, as for build). The output's title index, merged from the
inputs', is published just before the table, both or neither: every check
judges the two together (faultlib.output_sha), and a kill between the
publishes may leave the earlier index at its temporary name, or the new
index beside the old table (which readers ignore: test_titles' Pair). The inputs live outside the faulted directory and are never changed.

MergeSpillFaults does it again where the output's index spills: tables of
512-byte blocks and 299-byte keys (test_merge_memory.py) whose 1,000-block
index (301 KB) passes the 256 KiB merge holds in memory, so the merge
creates its scratch file beside the output (an "open"), writes the index
there in two writes and reads it back with preads after the data. Every
call is failed in turn (the preads of the read-back too: EIO), then again
with named temporaries (SSTPIPE_NO_O_TMPFILE=1: the scratch file has a
name until it is unlinked right after its creation), and SIGKILL at random
calls: nothing left in the directory, the old output intact, the next run
the reference bytes.
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
from faultlib import (OPS, TITLES, Tally, check_error_line, output_names, output_sha, sha,  # noqa: E402
                      temp_leftovers)
from sstpipe_e2e import E2ETest, corpora_dir, sstpipe, sstpipe_bin, wikigen  # noqa: E402
from test_merge import edited, split_dump  # noqa: E402
from test_merge_memory import long_key_tables  # noqa: E402


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
        # The earlier output: a built table and its title index.
        return faultlib.put_earlier(self.out, self.prev_dump)

    def check_after(self, what, r):
        self.assertEqual(temp_leftovers(self.out_dir), [], what + r.describe())
        self.assertEqual(sorted(os.listdir(self.out_dir)),
                         output_names(self.out, os.path.exists(self.out + TITLES)),
                         what + r.describe())
        self.assertEqual((sha(self.base), sha(self.incr)), self.inputs, what + ": inputs changed")

    def test_errors_at_every_call(self):
        self.reset_output()
        counts = faultlib.count_calls(self, self.argv, self.out_dir)
        self.assertEqual(output_sha(self.out), output_sha(self.ref))
        self.assertGreater(counts["clone"], 0, f"no block was copied: {counts}")
        # The coalesced writes: the ~2 MiB output in a handful of writes, not one a block.
        self.assertLess(counts["write"], 8, counts)
        tally = faultlib.sweep_one_output(
            self, "merge", self.argv, self.out_dir, counts, 24, out=self.out,
            ref=output_sha(self.ref), reset=self.reset_output, check_after=self.check_after,
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
        self.assertEqual(output_sha(self.out), prev)

    def kill_at(self, op, n, prev, tally):
        """SIGKILL at call n of op: nothing left, the old or the new table,
        the next run's bytes the reference's. Returns the output's digest
        after it is reset for the next kill."""
        what = f"merge {op}:{n}:SIGKILL"
        r = faultlib.run(self.argv, fault=f"{op}:{n}:SIGKILL", fault_dir=self.out_dir)
        self.assertEqual(r.code, -9, what + r.describe())
        ref = output_sha(self.ref)
        # Killed between naming a finished file (the title index, or then
        # the table) and its rename: only then is a file left, the complete
        # new one; and between the index's exchange and the table's rename,
        # the earlier index at the temporary name.
        left = temp_leftovers(self.out_dir)
        self.assertLessEqual(len(left), 2, what)
        for path in left:
            self.assertIn(sha(path), (ref[0], ref[1], prev[1]), what + ": a left file is partial")
            os.unlink(path)
        self.check_after(what, r)
        # Killed before the first rename: the old table and index; after the
        # last: the new ones; between them, the old table with the new
        # index; or, an output without an index, the new table before the
        # old index is removed: either index names another table than the
        # one beside it, which readers ignore.
        self.assertIn(output_sha(self.out),
                      {prev, ref, (prev[0], ref[1]), (ref[0], prev[1])}, what)
        r2 = faultlib.run(self.argv, fault_dir=self.out_dir)
        self.assertEqual(r2.code, 0, what + ": the next run failed" + r2.describe())
        self.assertEqual(output_sha(self.out), output_sha(self.ref), what + ": the next run's bytes")
        tally.killed += 1
        return self.reset_output()

    def test_kill_at_random_calls(self):
        prev = self.reset_output()
        counts = faultlib.count_calls(self, self.argv, self.out_dir)
        rng = random.Random(17)
        tally = Tally("merge-kill")
        kills = 40 if faultlib.LONG else faultlib.brief(8)
        ops = [op for op in OPS if counts[op]]
        for _ in range(kills):
            op = rng.choice(ops)
            prev = self.kill_at(op, rng.randint(1, counts[op]), prev, tally)
        print(tally.report())


class MergeSpillFaults(MergeFaults):
    """The same merge faults where the output's index goes through its
    scratch file (see the top of this file)."""

    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-merge-spill-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.base, cls.incr, _ = long_key_tables(cls.classtmp, 1000)
        cls.prev_dump = os.path.join(corpora_dir(), "enwiki-11pages.xml")

    def absorbable(self, op, path):
        """The directory's close after its fsync, and the scratch file's
        (unlinked, so named "... (deleted)") after its bytes were read back:
        their failure loses nothing."""
        return op == "close" and (path == self.out_dir or path.endswith(" (deleted)"))

    def sweep(self, env=None):
        self.reset_output()
        counts = faultlib.count_calls(self, self.argv, self.out_dir, env=env)
        self.assertEqual(output_sha(self.out), output_sha(self.ref))
        # The output and the scratch file; the index in two writes there
        # and read back; the data and the index region in the output's.
        self.assertEqual(counts["open"], 2, counts)
        self.assertGreaterEqual(counts["pread"], 2, counts)
        tally = faultlib.sweep_one_output(
            self, "merge-spill", self.argv, self.out_dir, counts, 24, out=self.out,
            ref=output_sha(self.ref), reset=self.reset_output, check_after=self.check_after,
            absorbable=self.absorbable, env=env)
        self.assertGreater(tally.failed_cleanly, 0)
        # The read-back: EIO at each pread of the scratch file.
        for n in range(1, counts["pread"] + 1):
            prev = self.reset_output()
            what = f"merge-spill pread:{n}:EIO"
            r = faultlib.run(self.argv, fault=f"pread:{n}:EIO", fault_dir=self.out_dir, env=env)
            self.assertEqual(r.code, 1, what + r.describe())
            check_error_line(self, r, "EIO", what)
            self.assertIn("index's scratch file", r.sstpipe_lines()[0], what + r.describe())
            self.check_after(what, r)
            self.assertEqual(output_sha(self.out), prev, what)

    def test_errors_at_every_call(self):
        self.sweep()

    def test_errors_at_every_call_named(self):
        self.sweep({"SSTPIPE_NO_O_TMPFILE": "1"})

    def test_kill_at_the_scratch_file(self):
        """SIGKILL at the scratch file's creation, at each write (the
        index's two spills among them) and at each pread of the read-back."""
        prev = self.reset_output()
        counts = faultlib.count_calls(self, self.argv, self.out_dir)
        tally = Tally("merge-spill-kill")
        calls = [("open", 2)] + [("write", n) for n in range(1, counts["write"] + 1)]
        calls += [("pread", n) for n in range(1, counts["pread"] + 1)]
        for op, n in calls:
            prev = self.kill_at(op, n, prev, tally)
        print(tally.report())

    def test_sticky_enospc_on_copies(self):
        """A disk that fills at the index's first spill and stays full."""
        super().test_sticky_enospc_on_copies()

if __name__ == "__main__":
    unittest.main()
