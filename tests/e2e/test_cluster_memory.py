"""test_cluster_memory.py: a local cluster build sorts in one [sort] memory, not one a task.

The local runner runs `jobs` map tasks at once on this machine, so each one
sorts in its share of [sort] memory (`task map --memory`), as each parses on
its share of the cores: together they hold one budget, as one `sstpipe
build` does. A multistream dump of 32 MiB of XML (values kept up to 64 KiB:
about 12 MiB of records a task) cut into two map tasks run at once
(jobs = 2), with a budget of 12 MiB: a task given the whole budget (as every
task was before) holds all its records, more than its share. What a task
holds for the budget is its peak resident memory (VmHWM, from the build's
-v line) less that of the same tasks run with the least budget (a 2 MiB
[sort] memory: 1 MiB each), which is what a map task holds whatever the
budget (its parser, decoders, buffers and code); summed over the tasks run
at once it stays within the budget (and a quarter, for the allocator's
rounding). With the whole budget each, the sum was about 1.5 budgets. The
table is build's, byte for byte.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import re
import shutil
import tempfile
import unittest

from sstpipe_e2e import E2ETest, sstpipe, wikigen

MIB = 1 << 20
BUDGET = 12 * MIB
OPTIONS = "[truncate]\nmax_bytes = 64K\n[sst]\nblock_size = 128K\n"


class LocalClusterMemory(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-cluster-memory-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.src = wikigen(os.path.join(cls.classtmp, "d.xml.bz2"), "32M", "70",
                          "bz2-multistream")

    def cluster_build(self, memory, out):
        """The cluster line's fields of a local build with [sort] memory."""
        cfg = self.write_file(f"c{memory}.ini", (
            f"{OPTIONS}[sort]\nmemory = {memory}\n[cluster]\n"
            f"shared_dir = {self.path('shared')}\ntasks = 2\nshards = 1\njobs = 2\n"
            "retries = 0\n").encode())
        r = sstpipe("build", "-c", cfg, self.src, "-o", out, "-v")
        self.assertOk(r)
        m = re.search(r"^cluster: .*$", r.err_text, re.M)
        self.assertTrue(m, r.describe())
        fields = dict(kv.split("=", 1) for kv in m.group(0).split()[1:])
        self.assertEqual((fields["maps"], fields["map_at_once"]), ("2", "2"), m.group(0))
        self.assertEqual(int(fields["map_memory"]), memory // 2, m.group(0))
        self.assertGreater(int(fields["map_peak_rss_kib"]), 0, m.group(0))
        return fields

    def test_tasks_share_the_sort_budget(self):
        out = self.path("out.sst")
        full = int(self.cluster_build(BUDGET, out)["map_peak_rss_kib"]) * 1024
        least = int(self.cluster_build(2 * MIB, self.path("least.sst"))["map_peak_rss_kib"]) * 1024
        together = 2 * (full - least)
        what = (f"2 map tasks at once, each peaking at {full / MIB:.1f} MiB ({least / MIB:.1f} "
                f"MiB with the least budget), hold {together / MIB:.1f} MiB for a "
                f"{BUDGET // MIB} MiB budget")
        print(what)
        self.assertLessEqual(together, BUDGET * 5 // 4, what)
        # The same table as build's with the same options.
        ini = self.write_file("build.ini", f"{OPTIONS}[sort]\nmemory = {BUDGET}\n".encode())
        ref = self.path("ref.sst")
        self.assertOk(sstpipe("build", "-c", ini, self.src, "-o", ref))
        with open(ref, "rb") as f1, open(out, "rb") as f2:
            self.assertTrue(f1.read() == f2.read(), "the cluster build's table is not build's")


if __name__ == "__main__":
    unittest.main()
