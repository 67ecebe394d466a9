"""test_background_write.py: the table writer's background thread. A build on
more than one thread hands each full 4 MiB batch of blocks to a thread of the
writer's own, which writes it while the merge fills the next batch
(table_options.background, table_writer.h); with one thread nothing more is
started.

- The table is byte-identical at 1, 2 and 8 threads, from a short-page dump
  whose table is several batches (the `-v` line counts the batches the
  thread wrote: some at 2 and 8 threads, none at 1), under a small sort
  budget, so the sort spills and each part spills its last run on its own
  thread (sorter.h).
- ENOSPC and EIO at every write to the output (the thread's, and the
  caller's last one), once and from then on (sticky): exit 1, exactly one
  error line naming the file and the errno, the previous table
  byte-identical and no temporary file beside it; once more with named
  temporary files (SSTPIPE_NO_O_TMPFILE=1), which every failure must remove.
- SIGKILL at every write: the previous table in place, nothing left beside
  it or in --tmp, and the next run gives the reference.
- `-v`'s write_commit_seconds is the wait for the disk at the end of the
  write phase: a build held still for HOLD seconds at the table's fsync (the
  fault shim's SIGSTOP) reports at least that, and no more than the write
  phase.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import (PATIENCE, Tally, check_error_line, output_names, output_sha, sha,  # noqa: E402
                      temp_leftovers, wait_stopped)
from sstpipe_e2e import E2ETest, corpora_dir, parse_stats, sstpipe, sstpipe_bin, wikigen  # noqa: E402

BATCH = 4 << 20  # table_writer.c's BATCH_BYTES
HOLD = 0.5  # seconds the commit test holds the build at its fsync


def threads(n):
    return ["--set", f"build.threads={n}"]


class BackgroundWrite(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-background-write-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        # About 13 MiB of table: three batches for the thread, the rest for
        # the caller's last write.
        cls.dump = wikigen(os.path.join(cls.classtmp, "b.xml"), "28M", "41", "xml", "wiktionary")
        cls.prev_dump = os.path.join(corpora_dir(), "enwiki-11pages.xml")
        # The one-thread reference every case compares with, built once.
        cls.ref = os.path.join(cls.classtmp, "ref.sst")
        cls.ref_build = sstpipe("build", cls.dump, "-o", cls.ref, "--memory", "4M", "-v",
                                *threads(1))

    def setUp(self):
        super().setUp()
        self.assertOk(self.ref_build)
        self.assertEqual(parse_stats(self, self.ref_build.stderr, "build")
                         ["write_background_batches"], 0,
                         "one thread wrote batches on a thread of its own")
        self.out_dir, self.spill = self.path("out"), self.path("spill")
        os.mkdir(self.out_dir)
        os.mkdir(self.spill)
        self.out = os.path.join(self.out_dir, "table.sst")
        self.argv = [sstpipe_bin(), "build", self.dump, "-o", self.out, "--tmp", self.spill,
                     "--memory", "4M", *threads(2)]

    def reset_output(self):
        return faultlib.put_earlier(self.out, self.prev_dump)

    def test_same_table_at_1_2_and_8_threads(self):
        size = os.path.getsize(self.ref)
        self.assertGreater(size, 3 * BATCH, "the table must be several batches")
        for n in (2, 8):
            out = self.path(f"t{n}.sst")
            r = self.build(self.dump, out, "--memory", "4M", "--tmp", self.spill, "-v",
                           *threads(n))
            self.assertEqual(sha(out), sha(self.ref), f"{n} threads built another table than 1")
            stats = parse_stats(self, r.stderr, "build")
            self.assertEqual(stats["write_background_batches"], (size - 1) // BATCH,
                             f"{n} threads: every full batch but the last is the thread's")
            self.assertGreater(parse_stats(self, r.stderr, "sort")["runs"], 2 * n,
                               f"{n} threads: the sort did not spill")

    def sweep_writes(self, area, env=None):
        counts = faultlib.count_calls(self, self.argv, self.out_dir, env=env)
        self.assertEqual(output_sha(self.out), output_sha(self.ref), "2 threads built another table than 1")
        writes = counts["write"]
        self.assertGreater(writes, 3, f"the table must take several writes: {counts}")
        tally = Tally(area)
        for n in range(1, writes + 1):
            for action in ("ENOSPC", "EIO", "ENOSPC:sticky"):
                prev = self.reset_output()
                what = f"{area} write:{n}:{action}"
                r = faultlib.run(self.argv, fault=f"write:{n}:{action}", fault_dir=self.out_dir,
                                 env=env)
                self.assertTrue(r.fired, what + ": not reached" + r.describe())
                self.assertEqual(r.code, 1, what + r.describe())
                check_error_line(self, r, action.split(":")[0], what)
                self.assertIn(self.out_dir, r.sstpipe_lines()[0], what + r.describe())
                self.assertEqual(output_sha(self.out), prev, what + ": output changed" + r.describe())
                self.assertEqual(temp_leftovers(self.out_dir), [], what + r.describe())
                self.assertEqual(sorted(os.listdir(self.out_dir)), output_names(self.out), what)
                self.assertEqual(os.listdir(self.spill), [], what + ": --tmp not empty")
                tally.failed_cleanly += 1
        print(tally.report())

    def test_write_errors(self):
        self.sweep_writes("background-write")

    def test_write_errors_named_temps(self):
        self.sweep_writes("background-write-named", faultlib.NAMED_TEMPS)

    def test_commit_wait_reported(self):
        # The table's fsync: its title index's, and the directory's after
        # the index's rename, come first.
        env = faultlib.shim_env(os.environ, "fsync:3:SIGSTOP", self.out_dir)
        proc = subprocess.Popen(self.argv + ["-v"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env=env)
        try:
            wait_stopped(self, proc)
            time.sleep(HOLD)
            proc.send_signal(signal.SIGCONT)
            _, err = proc.communicate(timeout=PATIENCE)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 0, err.decode(errors="replace"))
        self.assertEqual(output_sha(self.out), output_sha(self.ref), "2 threads built another table than 1")
        stats = parse_stats(self, err, "build")
        self.assertGreaterEqual(stats["write_commit_seconds"], HOLD, "the fsync's wait")
        self.assertLessEqual(stats["write_commit_seconds"], stats["write_seconds"],
                             "the commit is part of the write phase")

    def test_sigkill_at_writes(self):
        counts = faultlib.count_calls(self, self.argv, self.out_dir)
        tally = Tally("background-write-kill")
        for n in range(1, counts["write"] + 1):
            prev = self.reset_output()
            what = f"write:{n}:SIGKILL"
            r = faultlib.run(self.argv, fault=f"write:{n}:SIGKILL", fault_dir=self.out_dir)
            self.assertEqual(r.code, -signal.SIGKILL, what + r.describe())
            # Killed before the renames (the table's writes, then its title
            # index's): the old table and index, and the new ones'
            # anonymous files gone with the process.
            self.assertEqual(output_sha(self.out), prev, what + ": a partial table" + r.describe())
            self.assertEqual(sorted(os.listdir(self.out_dir)), output_names(self.out), what)
            self.assertEqual(os.listdir(self.spill), [], what + ": --tmp not empty")
            r2 = faultlib.run(self.argv, fault_dir=self.out_dir)
            self.assertEqual(r2.code, 0, what + ": the next run failed" + r2.describe())
            self.assertEqual(output_sha(self.out), output_sha(self.ref),
                             what + ": the next run's bytes")
            tally.killed += 1
        print(tally.report())


if __name__ == "__main__":
    unittest.main()
