"""test_merge_reflink.py: `sstpipe merge` on a file system with reflinks.

On XFS (an image made with mkfs.xfs -m reflink=1 and loop-mounted here; the
test runs as root) each run of unchanged base blocks is shared with the
base by one FICLONERANGE instead of being written: -v counts every copied
block as cloned, and, seen from outside, every data block of the output
that has the bytes of a base block lies on the very disk blocks of that
base block (fiemap's physical addresses; their extents flagged shared), as
many as -v counts copied; the output has the same bytes as the merge on a
file system without reflinks (where the first clone is refused and every
block is written). Blocks smaller than the file system's block are never
shared (no extent of the output is). ENOSPC and EIO at each clone and each
write are clean failures (exit 1, one error line naming the file and the
errno, the old output intact, nothing left), and SIGKILL at them leaves the
old output or the new one. Skipped, saying why, where mkfs.xfs or a loop
mount is not available.
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
from sstpipe_e2e import (E2ETest, corpora_dir, parse_info, sstpipe, sstpipe_bin,  # noqa: E402
                         wikigen)
from test_merge import edited, split_dump  # noqa: E402


def extents(path):
    """path's extents as (offset, physical, length, flags), bytes, from
    xfs_io's fiemap (512-byte units); holes left out."""
    out = subprocess.run(["xfs_io", "-r", "-c", "fiemap -v", path], capture_output=True,
                         text=True, check=True).stdout
    found = []
    for ln in out.splitlines()[2:]:
        f = ln.split()
        if f[2] == "hole":
            continue
        lo, hi = (int(x) for x in f[1].strip("[]:").split(".."))
        found.append((lo * 512, int(f[2].split("..")[0]) * 512, (hi - lo + 1) * 512,
                      int(f[-1], 16)))
    return found


def physical(exts, offset):
    """The disk address of byte offset of a file with these extents (None: a hole)."""
    for lo, phys, n, _ in exts:
        if lo <= offset < lo + n:
            return phys + offset - lo
    return None


# FIEMAP_EXTENT_SHARED, in fiemap's flags column.
SHARED = 0x2000


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
        # From outside: each data block of the output that holds the bytes
        # of a base block is on that base block's disk blocks, every 4K of
        # it, in extents flagged shared; as many as -v counts copied.
        base_info, out_info = parse_info(self, self.base), parse_info(self, self.out)
        bs = base_info["block_size"]
        self.assertEqual(out_info["block_size"], bs)
        with open(self.base, "rb") as f:
            base_blocks = {f.read(bs): j for j in range(base_info["data_blocks"])}
        base_ext, out_ext = extents(self.base), extents(self.out)
        copies, unshared = 0, []
        with open(self.out, "rb") as f:
            for k in range(out_info["data_blocks"]):
                j = base_blocks.get(f.read(bs))
                if j is None:
                    continue
                copies += 1
                for x in range(0, bs, 4096):
                    at = physical(out_ext, k * bs + x)
                    if at is None or at != physical(base_ext, j * bs + x):
                        unshared.append((k, j, x))
        self.assertEqual(len(unshared), 0, f"(output block, base block, byte) not shared: "
                         f"{unshared[:10]}")
        self.assertEqual(copies, st["blocks_copied"], st)
        shared = sum(n for _, _, n, flags in out_ext if flags & SHARED)
        self.assertGreaterEqual(shared, copies * bs, out_ext)

    def test_small_blocks_not_shared(self):
        """2K blocks on a 4K-block file system: never shared, all written."""
        r = sstpipe("merge", "-v", "-o", self.out, self.base2k, self.incr)
        self.assertOk(r)
        st = merge_stats(r.stderr)
        self.assertGreater(st["blocks_copied"], 0, st)
        self.assertEqual(st["blocks_cloned"], 0, st)
        self.assertEqual([e for e in extents(self.out) if e[3] & SHARED], [], "an extent shared")
        self.assertOk(sstpipe("verify", self.out))
        self.assertRecordsEqual(self.dump(self.out), self.dump(self.ref), "2K blocks")

    def reset_output(self):
        # merge writes no title index (yet): the earlier output is a table
        # alone, as a merge leaves it.
        return faultlib.put_earlier(self.out, self.prev_dump, titles=False)[0]

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
