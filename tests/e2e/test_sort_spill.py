"""test_sort_spill.py: an external sort that really spills and merges in passes.

A 40 MB generated dump built under a 1 MiB memory budget with fan-in 2 must
form several runs and merge them in at least two passes, still produce
exactly the reference records (duplicate titles resolved the same way and
counted the same), stay within its memory budget, and leave nothing in --tmp.
A build of a few pages under a large budget takes a small part of it.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import shutil
import tempfile
import unittest

import reference
from sstpipe_e2e import (E2ETest, corpora_dir, leftover_temps, parse_stats, q, shell, sstpipe,
                         sstpipe_bin, wikigen)


class SortSpill(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-e2e-spill-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.dump_path = wikigen(os.path.join(cls.classtmp, "gen40.xml.zst"), "40M", "7", "zst")
        cls.ref = reference.read_dump(cls.dump_path, 1024)


    def test_build_spills_and_merges_in_passes(self):
        tmpdir = self.path("scratch")
        os.mkdir(tmpdir)
        out = self.path("out.sst")
        r = sstpipe("build", self.dump_path, "-o", out, "--memory", "1M", "--fan-in", "2",
                    "--tmp", tmpdir, "-v")
        self.assertOk(r)
        ref = self.ref
        ex = parse_stats(self, r.stderr, "extract")
        tr = parse_stats(self, r.stderr, "truncate")
        so = parse_stats(self, r.stderr, "sort")
        wr = parse_stats(self, r.stderr, "write")
        self.assertGreater(so["runs"], 2, "sort must spill several runs" + r.describe())
        self.assertGreaterEqual(so["merge_passes"], 2,
                                "fan-in 2 over >2 runs needs several merge passes" + r.describe())
        self.assertGreater(so["spilled_bytes"], 1 << 20, "spilled bytes exceed the budget")
        self.assertEqual(ex["pages"], ref.pages, "extract pages")
        self.assertEqual(ex["records"], ref.pages, "extract records")
        self.assertEqual(tr["records"], ref.pages, "truncate records")
        self.assertEqual(so["records_in"], ref.pages, "sort records_in")
        self.assertEqual(so["records_out"], len(ref.records), "sort records_out")
        self.assertEqual(so["duplicates_replaced"], ref.duplicates_replaced,
                         "sort duplicates_replaced vs the reference's replaced titles")
        self.assertEqual(wr["records"], len(ref.records), "write records")
        self.assertEqual(wr["file_size"], os.path.getsize(out), "write file_size")
        self.assertRecordsEqual(self.dump(out), ref.records, "40M dump sorted under 1M")
        self.assertEqual(leftover_temps(tmpdir), [], "files left in --tmp")
        self.assertEqual([p for p in leftover_temps(self.tmp) if ".tmp." in p], [],
                         "temp files left beside the output")

    def test_sort_stage_memory_budget(self):
        """`sort --memory 1M` on a stream 20x larger keeps its peak RSS near the
        budget (the issue: budget plus a small constant). The bound is on the
        growth above the same binary sorting a few records, since the process
        alone differs by build (~8 MiB plain, ~15 MiB under ASan): at most the
        budget plus 9 MiB."""
        stream = self.path("truncated.rs")
        s = q(sstpipe_bin())
        self.assertOk(shell(f"{s} extract {q(self.dump_path)} | {s} truncate --max-bytes 64K"
                            f" > {q(stream)}"))
        size = os.path.getsize(stream)
        self.assertGreater(size, 20 << 20, "the stream must dwarf the budget")
        tmpdir = self.path("scratch")
        os.mkdir(tmpdir)
        r = sstpipe("sort", stream, "--memory", "1M", "--tmp", tmpdir, "-o",
                    self.path("sorted.rs"), "-v", measure_rss=True)
        self.assertOk(r)
        so = parse_stats(self, r.stderr, "sort")
        self.assertGreater(so["runs"], 10, r.describe())
        peak = r.maxrss_kib * 1024
        small = self.path("small.rs")
        few = os.path.join(corpora_dir(), "enwiki-11pages.xml")
        self.assertOk(shell(f"{s} extract {q(few)} | {s} truncate > {q(small)}"))
        base = sstpipe("sort", small, "--memory", "1M", "--tmp", tmpdir, "-o",
                       self.path("small-sorted.rs"), measure_rss=True)
        base_peak = base.maxrss_kib * 1024
        self.assertLess(peak - base_peak, (1 << 20) + (9 << 20),
                        f"sort --memory 1M peaked at {peak / 2**20:.1f} MiB RSS on a "
                        f"{size / 2**20:.1f} MiB stream, {base_peak / 2**20:.1f} MiB on a few "
                        f"records")
        self.assertEqual(leftover_temps(tmpdir), [], "files left in --tmp")

    def test_small_build_takes_little_of_a_large_budget(self):
        """A build of a few pages under a 512 MiB sort budget peaks far
        below it (under a quarter, in every build): the sorter's memory is
        taken as records arrive, not all at its start."""
        budget = 512 << 20
        few = os.path.join(corpora_dir(), "enwiki-11pages.xml")
        r = sstpipe("build", few, "-o", self.path("few.sst"), "--memory", f"{budget >> 20}M",
                    measure_rss=True)
        self.assertOk(r)
        peak = r.maxrss_kib * 1024
        self.assertLess(peak, budget // 4,
                        f"a build of a few pages peaked at {peak / 2**20:.1f} MiB RSS under a "
                        f"{budget >> 20} MiB budget")

if __name__ == "__main__":
    unittest.main()
