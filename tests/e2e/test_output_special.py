"""test_output_special.py: an output path that is no regular file.

Every output is written as a new file renamed over the path on success
(fileio.h). A path naming a character device or a FIFO is written to
directly instead: renaming over it would put a regular file where the
device or pipe was (run as root, `-o /dev/null` replaced /dev/null itself).

- build and extract into a FIFO: a reader gets exactly the bytes the same
  command writes into a regular file, and the FIFO is still a FIFO.
- build, extract and write into a character device made like /dev/null
  (mknod 1:3, where the test may make one): exit 0, the device still a
  device, nothing left beside it.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import stat
import threading
import unittest

from sstpipe_e2e import E2ETest, corpora_dir, sstpipe

SRC = os.path.join(corpora_dir(), "enwiki-11pages.xml")


class OutputSpecial(E2ETest):
    def through_fifo(self, *argv):
        """Runs sstpipe argv with -o a FIFO; returns what a reader got."""
        fifo = self.path("out.fifo")
        os.mkfifo(fifo)
        got = {}

        def reader():
            with open(fifo, "rb") as f:
                got["bytes"] = f.read()

        t = threading.Thread(target=reader, daemon=True)  # a stuck reader must not hang the test
        t.start()
        r = sstpipe(*argv, "-o", fifo)
        if r.code != 0:
            with open(fifo, "wb"):  # let the reader go
                pass
        t.join(30)
        self.assertOk(r)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced")
        self.assertEqual(sorted(os.listdir(self.tmp)), ["out.fifo", "ref"])
        os.unlink(fifo)
        return got["bytes"]

    def test_fifo(self):
        os.mkdir(self.path("ref"))
        for cmd in (["build", SRC], ["extract", SRC]):
            ref = self.path("ref", cmd[0])
            self.assertOk(sstpipe(*cmd, "-o", ref))
            with open(ref, "rb") as f:
                want = f.read()
            self.assertGreater(len(want), 0)
            self.assertEqual(self.through_fifo(*cmd), want, f"{cmd[0]} into a FIFO")

    def test_null_device(self):
        dev = self.path("null")
        try:
            os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:
            self.skipTest("no permission to make a device node here")
        table = self.path("t.sst")
        self.build(SRC, table)
        records = self.path("r.rec")
        self.assertOk(sstpipe("extract", SRC, "-o", records))
        for argv in (["build", SRC], ["extract", SRC], ["sort", records]):
            r = sstpipe(*argv, "-o", dev)
            self.assertOk(r)
            self.assertTrue(stat.S_ISCHR(os.lstat(dev).st_mode), f"{argv[0]} replaced the device")
            self.assertEqual(sorted(os.listdir(self.tmp)), ["null", "r.rec", "t.sst", "t.sst.titles"])


if __name__ == "__main__":
    unittest.main()
