"""test_bad_input_named.py: every case of test_bad_input.py again with the
named temporary files of a file system without O_TMPFILE.

With SSTPIPE_NO_O_TMPFILE=1 (stages/common/fileio.h) the output is a named
*.tmp.* file beside -o from the start and a scratch file in --tmp has a name
until it is unlinked, so "nothing left beside the output or in --tmp" has
something to find: every error path must remove the named file.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
import test_bad_input  # noqa: E402


class BadInputNamedTemps(test_bad_input.BadInput):
    def setUp(self):
        super().setUp()
        patch = mock.patch.dict(os.environ, faultlib.NAMED_TEMPS)
        patch.start()
        self.addCleanup(patch.stop)


if __name__ == "__main__":
    unittest.main()
