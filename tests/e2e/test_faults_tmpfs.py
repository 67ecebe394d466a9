"""test_faults_tmpfs.py: a real file system that fills up during a run.

A 2 MiB tmpfs (mounted here; the test runs as root) receives, in turn: the
output of a build whose table is larger than that; the sort's spill files
(--tmp) of a build under a 1 MiB budget; and a nightly's [output] dir.
Each must end with exit 1 (nightly: 5, refused by its free-space check
before any work) and one error line naming the file and "No space left on
device", with the tmpfs left as it was: the previous output byte-identical,
no temporary file, no bytes used. Skipped, saying why, where mounting is
not permitted.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import shutil
import subprocess
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

from faultlib import check_error_line, output_names, output_sha, sstpipe_run, temp_leftovers  # noqa: E402
from sstpipe_e2e import E2ETest, corpora_dir, wikigen  # noqa: E402


class TinyTmpfs(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-tmpfs-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        probe = os.path.join(cls.classtmp, "probe")
        os.mkdir(probe)
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe],
                           capture_output=True)
        if p.returncode != 0:
            raise unittest.SkipTest("cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): " +
                                    p.stderr.decode(errors="replace").strip())
        subprocess.run(["umount", probe], check=True)
        # About 4 MB of records: larger than the tmpfs, and than the sort budget.
        cls.dump = wikigen(os.path.join(cls.classtmp, "fill.xml.zst"), "40M", "51", "zst")

    def setUp(self):
        super().setUp()
        self.mnt = self.path("mnt")
        os.mkdir(self.mnt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", self.mnt], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", self.mnt])

    def used_bytes(self):
        st = os.statvfs(self.mnt)
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    def assertFull(self, r, what):
        self.assertEqual(r.code, 1, what + r.describe())
        check_error_line(self, r, "ENOSPC", what)

    def test_output_fills_the_disk(self):
        out = os.path.join(self.mnt, "table.sst")
        self.build(os.path.join(corpora_dir(), "enwiki-11pages.xml"), out)
        prev, used = output_sha(out), self.used_bytes()
        r = sstpipe_run("build", self.dump, "-o", out, preload=False)
        self.assertFull(r, "build onto a full disk")
        # The earlier table and its title index, both intact.
        self.assertEqual(sorted(os.listdir(self.mnt)), output_names(out))
        self.assertEqual(output_sha(out), prev)
        self.assertEqual(self.used_bytes(), used, "space not given back")

    def test_spill_fills_the_disk(self):
        out_dir = self.path("out")
        os.mkdir(out_dir)
        r = sstpipe_run("build", self.dump, "-o", os.path.join(out_dir, "t.sst"), "--memory",
                        "1M", "--tmp", self.mnt, preload=False)
        self.assertFull(r, "spill onto a full disk")
        self.assertIn(self.mnt, r.sstpipe_lines()[0])
        self.assertEqual(os.listdir(self.mnt), [])
        self.assertEqual(os.listdir(out_dir), [])
        self.assertEqual(self.used_bytes(), 0)

    def test_nightly_refuses_a_full_disk(self):
        ini = self.write_file("n.ini", f"[output]\ndir = {self.mnt}/nightly\n".encode())
        r = sstpipe_run("nightly", "-c", ini, self.dump, preload=False)
        self.assertEqual(r.code, 5, r.describe())
        line = r.sstpipe_lines()
        self.assertEqual(len(line), 1, r.describe())
        self.assertIn("not enough free space", line[0])
        self.assertFalse(os.path.lexists(os.path.join(self.mnt, "nightly", "current")))
        self.assertEqual(temp_leftovers(self.mnt), [])


if __name__ == "__main__":
    unittest.main()
