"""test_faults_writer.py: ENOSPC and EIO at the SSTable writer's I/O.

`sstpipe build` and `sstpipe write` (from a sorted record stream) write the
table under a temporary name beside -o, fsync it, rename it into place and
fsync the directory. The fault shim counts those calls (on files in the
output directory), then each run fails one: the run must exit 1 with one
error line naming the file and the errno, the previous -o file must stay
byte-identical and no *.tmp.* may be left beside it. Each call index fails
with one errno, ENOSPC and EIO taking turns along the sweep (an errno changes
the message, not the path the failure takes); tests/faults/run fails every
index with both.

One case cannot be undone: the directory fsync after the rename. The new
file is then in place (complete: it was fsynced before the rename), and
the command still fails because the rename may not survive a power cut,
and its error says the new file is in place; the test accepts the new file
there, and only there, when it is byte-identical to the reference.

A build publishes two files, its title index and then its table, both or
neither: every check covers both (faultlib.output_sha). The index replaces
the earlier one undoably (an exchange), so a table that fails puts the
earlier index back, and a failed directory fsync after the index's exchange
is undone.

Two calls may fail and the run still succeed, with the reference's bytes:
closing the directory after its fsync, and sync_file_range, the writer's
early write-back hint (the fsync before the rename still syncs it all).

The calls include creating the file (open with O_TMPFILE) and naming it
(linkat); each sweep runs again with SSTPIPE_NO_O_TMPFILE=1, where the
table is a named *.tmp.* file from the start (mkstemp, counted as an open)
that every failure must remove.

A compressed build on two threads (`sst.compression = zstd`) hands its
records to the writer's packing thread, past the dictionary's sample (a
hundred times `sst.dictionary_size`, small here), and the packing thread
hands each full 4 MiB batch of blocks to the background write. Its sweep
fails the writes and creations made before the seal (the packing thread
has stopped by then; the calls after it are the plain build's): a batch
written while the packing thread runs, whose failure the packing thread
meets at its next batch and hands on to the caller's next hand-off, and
the filter's hashes spilled on the caller's thread meanwhile. Whether a
run asks for early write-back follows from its table's size (a compressed
table is a few times smaller than its records).
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import shutil
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import TITLES, output_names, output_sha, temp_leftovers  # noqa: E402
from sstpipe_e2e import (E2ETest, corpora_dir, parse_stats, sstpipe, sstpipe_bin,  # noqa: E402
                         wikigen)

BATCH = 4 << 20  # table_writer.c's BATCH_BYTES
WRITEBACK = 8 << 20  # table_writer.c's WRITEBACK_BYTES


class WriterFaults(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-writer-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        size = "96M" if faultlib.LONG else "20M"
        cls.dump = wikigen(os.path.join(cls.classtmp, "w.xml.zst"), size, "21", "zst")
        cls.prev_dump = os.path.join(corpora_dir(), "enwiki-11pages.xml")

    def sweep(self, argv, out, ref, area, brief_limit, env=None, scratch=0, hit=None):
        """Fails the calls of argv writing out, as the reference ref: each
        one, or those hit picks from the counting run's calls in order,
        [(op, n, path)]; scratch: the scratch files the run creates beside
        out (a compressed table's filter hashes past a buffer of them)."""
        out_dir = os.path.dirname(out)
        # A build publishes its table and title index; `write` the table
        # alone, over an earlier output that is a table alone too.
        titles = argv[1] == "build"

        def reset():
            return faultlib.put_earlier(out, self.prev_dump, titles)

        reset()
        calls = []  # every call of the counting run, for the counts

        def pick(traced):
            calls.extend(traced)
            return hit(traced) if hit else traced

        picked = faultlib.count_calls(self, argv, out_dir, env=env, only=pick)
        counts = {op: sum(1 for c in calls if c[0] == op) for op in picked}
        self.assertEqual(output_sha(out), output_sha(ref),
                         "the counting run's output differs from the reference")
        self.assertGreater(counts["write"], 0, counts)
        # The writer asks for early write-back each 8 MiB it has written,
        # so a table smaller than that asks for none.
        size = os.path.getsize(ref)
        self.assertEqual(counts["sync_file_range"] > 0, size >= WRITEBACK, (size, counts))
        if size > BATCH:
            # Its 4 MiB writes are several: a write fails after others
            # succeeded.
            self.assertGreater(counts["write"], 2, counts)
        files = len(output_names(out, titles))
        self.assertEqual(counts["open"], files + scratch, counts)
        self.assertEqual(counts["linkat"], 0 if env else files, counts)

        def check_after(what, r):
            self.assertEqual(temp_leftovers(out_dir), [], what + r.describe())
            self.assertEqual(sorted(os.listdir(out_dir)),
                             output_names(out, titles and os.path.exists(out + TITLES)), what)

        def absorbable(op, path):
            # Closing the directory after its fsync, and the write-back
            # hint, are the calls whose failure changes nothing.
            return (op, path) == ("close", out_dir) or op == "sync_file_range"

        tally = faultlib.sweep_one_output(self, area, argv, out_dir, picked, brief_limit,
                                          out=out, ref=output_sha(ref), reset=reset,
                                          check_after=check_after, absorbable=absorbable,
                                          env=env, alternate=True)
        self.assertGreater(tally.failed_cleanly, 0)

    def test_build_writer(self):
        self.build_writer("sstable-build")

    def test_build_writer_named_temps(self):
        self.build_writer("sstable-build-named", faultlib.NAMED_TEMPS)

    def build_writer(self, area, env=None):
        os.mkdir(self.path("out"))
        out, ref = self.path("out", "table.sst"), self.path("ref.sst")
        # Values up to 16 KiB make a table past the writer's write-back
        # hint, in several of its writes.
        opts = ["--max-bytes", "16384", "--block-size", "128K"]
        self.build(self.dump, ref, *opts)
        self.assertGreaterEqual(os.path.getsize(ref), WRITEBACK)
        argv = [sstpipe_bin(), "build", self.dump, "-o", out, *opts]
        self.sweep(argv, out, ref, area, 30, env)

    def test_build_writer_compressed(self):
        # test_faults_tmpfs's dump: generated once for both.
        dump = wikigen(self.path("c.xml.zst"), "40M", "51", "zst")
        os.mkdir(self.path("out"))
        out, ref = self.path("out", "table.sst"), self.path("ref.sst")
        # Values up to 64 KiB make a table of more than two batches at
        # zstd's fastest level; a dictionary of 4K is trained on 400 KB of
        # records, so the packing thread packs nearly all of them.
        opts = ["--max-bytes", "65536", "--block-size", "128K", "--set", "build.threads=2",
                "--set", "sst.compression=zstd", "--set", "sst.compression_level=1",
                "--set", "sst.dictionary_size=4K"]
        r = self.build(dump, ref, "-v", *opts)
        # The first full batch is the packing thread's: the caller packs
        # only the sample, less than a batch, before it.
        self.assertGreaterEqual(parse_stats(self, r.stderr, "build")["write_background_batches"],
                                2, "the background thread wrote fewer than two batches")

        def while_packing(calls):
            # The writes and creations before the seal, which comes once
            # the packing thread has stopped: its first pread reads the
            # filter's hashes back, just after it spilled the last of them.
            read = next(i for i, c in enumerate(calls) if c[0] == "pread")
            seal = max(i for i in range(read) if calls[i][0] == "write"
                       and calls[i][2] == calls[read][2])
            return [c for c in calls[:seal] if c[0] in ("write", "pwrite", "open")]

        argv = [sstpipe_bin(), "build", dump, "-o", out, *opts]
        # The table's and its title index's filter hashes spill.
        self.sweep(argv, out, ref, "sstable-build-compressed", 4, scratch=2, hit=while_packing)

    def test_write_stage(self):
        # A sorted record stream, then `write` alone, with a 4K block size.
        rs = self.path("sorted.rs")
        r = sstpipe("extract", self.dump, "-o", self.path("x.rs"))
        self.assertOk(r)
        self.assertOk(sstpipe("truncate", self.path("x.rs"), "-o", self.path("t.rs")))
        self.assertOk(sstpipe("sort", self.path("t.rs"), "-o", rs))
        ref = self.path("ref.sst")
        self.assertOk(sstpipe("write", rs, "-o", ref, "--block-size", "4K"))
        os.mkdir(self.path("out"))
        out = self.path("out", "table.sst")
        argv = [sstpipe_bin(), "write", rs, "-o", out, "--block-size", "4K"]
        self.sweep(argv, out, ref, "sstable-write", 30)


if __name__ == "__main__":
    unittest.main()
