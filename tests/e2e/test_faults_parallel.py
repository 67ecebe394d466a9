"""test_faults_parallel.py: faults, kills and bad pages in a build whose parse
runs on the parse pool (`build.threads=2`, `build.chunk_size=4K`: a few
short pages a chunk, so the pool's hand-off, its read-ahead slots and its
workers are all busy when the fault strikes).

- ENOSPC and EIO at the calls the build makes on its output directory and
  its --tmp (of each kind the first and last few, where files are created
  and committed, and a spread between; brief: fewer), under a 1 MiB sort
  budget, so the sort spills while the workers parse: exit 1, one error line naming the file and
  the errno, the previous -o file byte-identical, no temporary file beside it
  and nothing in --tmp; once more with named temporary files
  (SSTPIPE_NO_O_TMPFILE=1), which every failure must remove.
- SIGKILL at writes (the first and last few and a spread; brief: fewer) and
  at random points of the run, chosen by the CPU time the build has used: the old table or the complete
  new one in place, nothing in --tmp, and the next run gives the reference.
- A bad page after many chunks (a tag mismatch in plain XML and .bz2, a
  damaged block of a multistream .bz2): the same exit code and message as one
  thread, naming the line of the original document (XML errors) or the
  compressed byte offset (damaged data), the previous output untouched.

The reference of every comparison is the table `build.threads=1` makes.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import random
import shutil
import signal
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import Tally, indices, output_sha, sha, temp_leftovers  # noqa: E402
from sstpipe_e2e import (E2ETest, corpora_dir, parse_stats, sstpipe, sstpipe_bin,  # noqa: E402
                         to_bz2, to_bz2_multistream, wikigen)
from test_signals import cpu_run, interrupt  # noqa: E402

POOL = ["--set", "build.threads=2", "--set", "build.chunk_size=4K"]
ONE = ["--set", "build.threads=1"]
KILLS = 40 if faultlib.LONG else faultlib.brief(8)


class ParallelFaults(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-parallel-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        size = "24M" if faultlib.LONG else "3M"
        cls.dump = wikigen(os.path.join(cls.classtmp, "p.xml.bz2"), size, "31",
                           "bz2-multistream", "wiktionary")
        cls.prev_dump = os.path.join(corpora_dir(), "enwiki-11pages.xml")
        # The one-thread reference every case compares with, built once.
        cls.ref = os.path.join(cls.classtmp, "ref.sst")
        cls.ref_build = sstpipe("build", cls.dump, "-o", cls.ref, "--memory", "1M", *ONE)

    def setUp(self):
        super().setUp()
        self.assertOk(self.ref_build)
        self.out_dir, self.spill = self.path("out"), self.path("spill")
        os.mkdir(self.out_dir)
        os.mkdir(self.spill)
        self.out = os.path.join(self.out_dir, "table.sst")
        self.argv = [sstpipe_bin(), "build", self.dump, "-o", self.out, "--tmp", self.spill,
                     "--memory", "1M", *POOL]

    def reset_output(self):
        return faultlib.put_earlier(self.out, self.prev_dump)

    def assertClean(self, what, r):
        self.assertEqual(temp_leftovers(self.out_dir), [], what + r.describe())
        self.assertEqual(os.listdir(self.spill), [], what + ": --tmp not empty" + r.describe())

    def sweep(self, area, brief_limit, env=None):
        self.reset_output()
        counts = faultlib.count_calls(self, self.argv, self.path(), env=env)
        self.assertEqual(output_sha(self.out), output_sha(self.ref),
                         "2 threads built another table than 1")
        self.assertGreater(counts["pwrite"], 10, f"the sort did not spill: {counts}")
        # As for one thread: a scratch file's close, the output directory's
        # close after its fsync and the write-back hint change nothing.
        tally = faultlib.sweep_one_output(
            self, area, self.argv, self.path(), counts, brief_limit, out=self.out,
            ref=output_sha(self.ref), reset=self.reset_output, check_after=self.assertClean,
            absorbable=lambda op, path: op == "sync_file_range" or op == "close" and (
                path == self.out_dir or path.startswith(self.spill)),
            env=env, alternate=True)
        self.assertGreater(tally.failed_cleanly, faultlib.brief(10))

    def test_enospc_eio_every_call(self):
        self.sweep("parallel-build", 24)

    def test_enospc_eio_named_temps(self):
        self.sweep("parallel-build-named", 10, faultlib.NAMED_TEMPS)

    def after_kill(self, what, r, prev):
        ref = output_sha(self.ref)
        left = temp_leftovers(self.out_dir)
        # Killed between naming a finished file (the title index, or then
        # the table) and its rename: only then is a file left, the
        # complete new one; and between the index's exchange and the
        # table's rename, the earlier index at the temporary name.
        self.assertLessEqual(len(left), 2, what)
        for path in left:
            self.assertIn(sha(path), (ref[0], ref[1], prev[1]), what + ": a left file is partial")
            os.unlink(path)
        # The spill is an anonymous file: a kill leaves nothing in --tmp.
        self.assertEqual(os.listdir(self.spill), [], what + ": --tmp not empty")
        # The earlier table and index, or the new ones; or, killed between
        # the index's rename and the table's, the earlier table with the
        # new index, which names another table and is ignored by readers
        # (test_titles' Pair).
        self.assertIn(output_sha(self.out), {prev, ref, (prev[0], ref[1])},
                      what + ": a partial table")
        r2 = faultlib.run(self.argv, fault_dir=self.path())
        self.assertEqual(r2.code, 0, what + ": the next run failed" + r2.describe())
        self.assertEqual(output_sha(self.out), ref, what + ": the next run's bytes")

    def test_sigkill_at_writes(self):
        prev = self.reset_output()
        counts = faultlib.count_calls(self, self.argv, self.path())
        tally = Tally("parallel-build-kill-writes")
        for op in ("write", "pwrite", "rename", "linkat"):
            for n in indices(counts[op], 8 if op in ("write", "pwrite") else 2):
                what = f"{op}:{n}:SIGKILL"
                r = faultlib.run(self.argv, fault=f"{op}:{n}:SIGKILL", fault_dir=self.path())
                self.assertEqual(r.code, -signal.SIGKILL, what + r.describe())
                self.after_kill(what, r, prev)
                prev = self.reset_output()
                tally.killed += 1
        print(tally.report())
        self.assertGreater(tally.killed, faultlib.brief(10))

    def test_sigkill_random_points(self):
        prev = self.reset_output()
        full = cpu_run(self.argv)
        self.assertEqual(output_sha(self.out), output_sha(self.ref))
        rng = random.Random(16)
        tally = Tally("parallel-build-kill-random")
        for i in range(KILLS):
            prev = self.reset_output()
            delay = rng.uniform(0.05, 0.95) * full
            what = f"kill {i}: SIGKILL after {delay:.2f} of {full:.2f} CPU-s"
            done, err = interrupt(self, self.argv, signal.SIGKILL, delay, what)
            r = faultlib.Run(self.argv, 0 if done else -signal.SIGKILL, b"", err.encode(), [], {},
                             {}, {}, [])
            if done:
                self.assertEqual(output_sha(self.out), output_sha(self.ref),
                                 what + ": finished first")
                self.assertClean(what + ": finished first", r)
                tally.completed += 1
                continue
            self.after_kill(what, r, prev)
            tally.killed += 1
        print(tally.report())
        self.assertGreater(tally.killed, KILLS // 2)


def line_of(data, at):
    return data.count(b"\n", 0, at) + 1


class ParallelBadPage(E2ETest):
    """A bad page after many 4K chunks fails as with one thread."""

    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-parallel-bad-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        path = wikigen(os.path.join(cls.classtmp, "b.xml"), "2M", "33", "xml", "wiktionary")
        with open(path, "rb") as f:
            cls.xml = f.read()

    def same_failure(self, src, what):
        out = self.path("t.sst")
        self.build(os.path.join(corpora_dir(), "enwiki-11pages.xml"), out)
        prev = output_sha(out)
        one = sstpipe("build", src, "-o", out, *ONE)
        pool = sstpipe("build", src, "-o", out, *POOL)
        self.assertNotEqual(one.code, 0, what + one.describe())
        self.assertEqual((pool.code, pool.err_text), (one.code, one.err_text),
                         what + ": 2 threads fail otherwise than 1" + pool.describe())
        self.assertEqual(output_sha(out), prev, what + ": the previous output changed")
        self.assertEqual(temp_leftovers(self.path()), [], what)
        return one.err_text

    def test_chunks_before_the_bad_page(self):
        # The fault-free dump is cut into hundreds of chunks at these settings.
        src = self.write_file("good.xml", self.xml)
        r = sstpipe("build", src, "-o", self.path("g.sst"), "-v", *POOL)
        self.assertOk(r)
        self.assertGreater(parse_stats(self, r.stderr, "build")["parse_chunks"], 200)

    def test_tag_mismatch_after_many_chunks(self):
        at = self.xml.find(b"</title>", self.xml.find(b"<page>", len(self.xml) * 4 // 5))
        bad = self.xml[:at] + b"</titel>" + self.xml[at + 8:]
        line = line_of(self.xml, at)
        for form, blob in (("plain", bad), ("bz2", to_bz2(bad)),
                           ("bz2_multistream", to_bz2_multistream(bad))):
            msg = self.same_failure(self.write_file(f"bad-{form}.xml", blob), form)
            self.assertIn(f"XML error at line {line}:", msg, form)
            self.assertIn(f"title line {line} and titel", msg, form)

    def test_damaged_stream_after_many_chunks(self):
        blob = bytearray(to_bz2_multistream(self.xml))
        at = len(blob) * 4 // 5
        blob[at] ^= 0x55
        msg = self.same_failure(self.write_file("dmg.xml.bz2", bytes(blob)), "damaged bz2")
        self.assertRegex(msg, r"compressed byte \d+", "the error must name the compressed offset")


if __name__ == "__main__":
    unittest.main()
