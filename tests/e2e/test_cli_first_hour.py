"""test_cli_first_hour.py: what a new user trips on at the command line
(issue 33, "Command line").

- build ends with one summary line on stdout (output, records, bytes,
  seconds), and with -q with nothing.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import re
import unittest

from sstpipe_e2e import E2ETest, corpora_dir, sstpipe

SRC = os.path.join(corpora_dir(), "enwiki-11pages.xml")


class BuildSummary(E2ETest):
    def test_one_line_on_success(self):
        out = self.path("out.sst")
        r = sstpipe("build", SRC, "-o", out)
        self.assertOk(r)
        size = os.path.getsize(out)
        self.assertRegex(r.stdout.decode(),
                         r"\Awrote " + re.escape(out) + r": 11 records, " + str(size) +
                         r" bytes \([0-9.]+[KM]?\) in [0-9.]+ (s|ms)\n\Z")
        self.assertEqual(r.stderr, b"", r.describe())

    def test_quiet(self):
        r = sstpipe("build", SRC, "-o", self.path("q.sst"), "-q")
        self.assertOk(r)
        self.assertEqual((r.stdout, r.stderr), (b"", b""), r.describe())


if __name__ == "__main__":
    unittest.main()
