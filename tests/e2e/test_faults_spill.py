"""test_faults_spill.py: ENOSPC and EIO at the sort's spill I/O.

A build under a 1 MiB sort budget spills sorted runs to an anonymous
scratch file in --tmp and merges them back (with --fan-in 2, in several
passes, so the scratch files are also truncated between passes). The fault
shim first counts the spill's calls (pwrite, ftruncate, close, ... on files
in --tmp), then each run fails one of them: every run must end with exit 1
and one error line naming the scratch file and the errno, leave the
previous -o file byte-identical, no *.tmp.* beside it and nothing in --tmp.
The calls include creating the scratch file (open with O_TMPFILE); the
single-merge sweep runs again with SSTPIPE_NO_O_TMPFILE=1, where the scratch
file is named (mkstemp, counted as an open) until it is unlinked.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import shutil
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import output_sha, temp_leftovers  # noqa: E402
from sstpipe_e2e import E2ETest, sstpipe_bin, wikigen  # noqa: E402


class SpillFaults(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-spill-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        size = "40M" if faultlib.LONG else "24M"
        cls.dump = wikigen(os.path.join(cls.classtmp, "spill.xml.zst"), size, "11", "zst")
        cls.prev_dump = wikigen(os.path.join(cls.classtmp, "prev.xml.zst"), "1M", "12", "zst")

    def sweep(self, extra, area, brief_limit, env=None):
        out_dir, tmp = self.path("out"), self.path("spill")
        os.mkdir(out_dir)
        os.mkdir(tmp)
        out = os.path.join(out_dir, "table.sst")
        ref = self.path("ref.sst")
        self.build(self.dump, ref, *extra)
        faultlib.put_earlier(out, self.prev_dump)
        argv = [sstpipe_bin(), "build", self.dump, "-o", out, "--tmp", tmp, *extra]
        counts = faultlib.count_calls(self, argv, tmp, env=env)
        self.assertEqual(output_sha(out), output_sha(ref),
                         "the counting run's output differs from the reference")
        self.assertGreater(counts["pwrite"], 10, f"the build did not spill: {counts}")
        def reset():
            return faultlib.put_earlier(out, self.prev_dump)

        def check_after(what, r):
            self.assertEqual(temp_leftovers(out_dir), [], what + r.describe())
            self.assertEqual(os.listdir(tmp), [], what + ": --tmp not empty" + r.describe())

        # Only a failed close of a scratch file may pass unnoticed: every
        # byte was already written and read back. (The shim counts calls
        # under --tmp only, so the output's own calls are never hit.)
        tally = faultlib.sweep_one_output(self, area, argv, tmp, counts, brief_limit, out=out,
                                          ref=output_sha(ref), reset=reset, check_after=check_after,
                                          absorbable=lambda op, path: op == "close", env=env,
                                          alternate=True)
        self.assertGreater(tally.failed_cleanly, 0)

    def test_spill_single_merge(self):
        self.sweep(["--memory", "1M"], "sort-spill", 24)

    def test_spill_single_merge_named_temps(self):
        self.sweep(["--memory", "1M"], "sort-spill-named", 24, faultlib.NAMED_TEMPS)

    def test_spill_multi_pass(self):
        self.sweep(["--memory", "1M", "--fan-in", "2"], "sort-spill-multipass", 24)


if __name__ == "__main__":
    unittest.main()
