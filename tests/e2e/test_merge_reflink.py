"""test_merge_reflink.py: `sstpipe merge` on a file system with reflinks.

On XFS (an image made with mkfs.xfs -m reflink=1 and loop-mounted here; the
test runs as root) each run of unchanged base blocks is shared with the
base by one FICLONERANGE instead of being written: -v counts every copied
block as cloned, the extents are shared (fiemap's shared flag), and the
output has the same bytes as the merge on a file system without reflinks
(where the first clone is refused and every block is written). Blocks
smaller than the file system's block are never shared. ENOSPC and EIO at
each clone and each write are clean failures (exit 1, one error line naming
the file and the errno, the old output intact, nothing left), and SIGKILL
at them leaves the old output or the new one. Skipped, saying why, where
mkfs.xfs or a loop mount is not available.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import random
import shutil
import subprocess
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import ERRNOS, Tally, check_error_line, indices, sha, temp_leftovers  # noqa: E402
from sstpipe_e2e import E2ETest, corpora_dir, sstpipe, sstpipe_bin, wikigen  # noqa: E402
from test_merge import edited, split_dump  # noqa: E402


def merge_stats(stderr):
    if isinstance(stderr, bytes):
        stderr = stderr.decode()
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("merge: ")]
    return {k: int(v) for k, v in (f.split("=") for f in line.split()[1:])}


class MergeReflink(E2ETest):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("mkfs.xfs"):
            raise unittest.SkipTest("no mkfs.xfs (Debian's xfsprogs, pipeline/install-deps)")
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-merge-reflink-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        image = os.path.join(cls.classtmp, "xfs.img")
        with open(image, "wb") as f:
            f.truncate(512 << 20)
        subprocess.run(["mkfs.xfs", "-q", "-m", "reflink=1", image], check=True)
        cls.mnt = os.path.join(cls.classtmp, "mnt")
        os.mkdir(cls.mnt)
        p = subprocess.run(["mount", "-o", "loop", image, cls.mnt], capture_output=True,
                           text=True)
        if p.returncode != 0:
            raise unittest.SkipTest("cannot loop-mount an XFS image here (needs root): " +
                                    p.stderr.strip())
        cls.addClassCleanup(subprocess.run, ["umount", "-l", cls.mnt])
        base_xml = wikigen(os.path.join(cls.classtmp, "base.xml"), "12M", "35", "xml")
        with open(base_xml, "rb") as f:
            head, pages, tail = split_dump(f.read())
        rng = random.Random(35)
        chosen = sorted(rng.sample(range(len(pages)), len(pages) // 100))
        incr_xml = os.path.join(cls.classtmp, "incr.xml")
        with open(incr_xml, "wb") as f:
            f.write(head + b"".join(edited(pages[i], i) for i in chosen) + tail)
        cls.inputs = os.path.join(cls.mnt, "in")
        os.mkdir(cls.inputs)
        cls.base = os.path.join(cls.inputs, "base.sst")
        cls.incr = os.path.join(cls.inputs, "incr.sst")
        cls.base2k = os.path.join(cls.inputs, "base-2k.sst")
        for src, dst, opts in ((base_xml, cls.base, []), (incr_xml, cls.incr, []),
                               (base_xml, cls.base2k, ["--block-size", "2K"])):
            r = sstpipe("build", src, "-o", dst, *opts)
            assert r.code == 0, r.describe()
        # The same merge where nothing can be shared (ext4, tmpfs: the test's tmp).
        cls.ref = os.path.join(cls.classtmp, "ref.sst")
        r = sstpipe("merge", "-v", "-o", cls.ref, cls.base, cls.incr)
        assert r.code == 0, r.describe()
        cls.ref_stats = merge_stats(r.stderr)
        cls.prev_dump = os.path.join(corpora_dir(), "enwiki-11pages.xml")

    def setUp(self):
        super().setUp()
        self.out_dir = os.path.join(self.mnt, "out")
        shutil.rmtree(self.out_dir, ignore_errors=True)
        os.mkdir(self.out_dir)
        self.addCleanup(shutil.rmtree, self.out_dir, True)
        self.out = os.path.join(self.out_dir, "table.sst")
        self.argv = [sstpipe_bin(), "merge", "-o", self.out, self.base, self.incr]

    def test_blocks_shared(self):
        r = sstpipe("merge", "-v", "-o", self.out, self.base, self.incr)
        self.assertOk(r)
        st = merge_stats(r.stderr)
        self.assertGreater(st["blocks_copied"], 0, st)
        self.assertEqual(st["blocks_cloned"], st["blocks_copied"], st)
        self.assertEqual(self.ref_stats["blocks_cloned"], 0, "the reference shared blocks")
        self.assertEqual(sha(self.out), sha(self.ref), "other bytes than the unshared merge")
        self.assertOk(sstpipe("verify", self.out))
        fiemap = subprocess.run(["xfs_io", "-r", "-c", "fiemap -v", self.out],
                                capture_output=True, text=True, check=True).stdout
        # FIEMAP_EXTENT_SHARED is 0x2000 in the flags column.
        shared = [ln for ln in fiemap.splitlines()[2:] if int(ln.split()[-1], 16) & 0x2000]
        self.assertGreater(len(shared), 0, fiemap)

    def test_small_blocks_not_shared(self):
        """2K blocks on a 4K-block file system: never shared, all written."""
        r = sstpipe("merge", "-v", "-o", self.out, self.base2k, self.incr)
        self.assertOk(r)
        st = merge_stats(r.stderr)
        self.assertGreater(st["blocks_copied"], 0, st)
        self.assertEqual(st["blocks_cloned"], 0, st)
        self.assertOk(sstpipe("verify", self.out))
        self.assertRecordsEqual(self.dump(self.out), self.dump(self.ref), "2K blocks")

    def reset_output(self):
        self.build(self.prev_dump, self.out)
        return sha(self.out)

    def test_faults_at_clones_and_writes(self):
        prev = self.reset_output()
        counts = faultlib.count_calls(self, self.argv, self.out_dir)
        self.assertEqual(sha(self.out), sha(self.ref))
        self.assertGreater(counts["clone"], 1, counts)
        tally = Tally("merge-reflink")
        for op in ("clone", "write"):
            for n in indices(counts[op], 12):
                for action in ERRNOS + ("SIGKILL",):
                    prev = self.reset_output()
                    what = f"merge on XFS {op}:{n}:{action}"
                    r = faultlib.run(self.argv, fault=f"{op}:{n}:{action}",
                                     fault_dir=self.out_dir)
                    self.assertEqual(temp_leftovers(self.out_dir), [], what + r.describe())
                    self.assertEqual(sorted(os.listdir(self.out_dir)), ["table.sst"], what)
                    self.assertEqual(sha(self.out), prev, what + ": output changed")
                    if action == "SIGKILL":
                        self.assertEqual(r.code, -9, what + r.describe())
                        tally.killed += 1
                        continue
                    self.assertEqual(r.code, 1, what + r.describe())
                    check_error_line(self, r, action, what)
                    tally.failed_cleanly += 1
        print(tally.report())
        r = faultlib.run(self.argv, fault_dir=self.out_dir)
        self.assertEqual(r.code, 0, r.describe())
        self.assertEqual(sha(self.out), sha(self.ref))


if __name__ == "__main__":
    unittest.main()
