"""test_signals_named.py: test_signals.py's SIGINT and SIGTERM cases again
with the named temporary files of a file system without O_TMPFILE.

With SSTPIPE_NO_O_TMPFILE=1 (stages/common/fileio.h) every output is a
named *.tmp.* file from the moment it is created and every scratch file has
a name until it is unlinked, so a signal mostly lands while such a name
exists and only the cleanup handler (stages/common/cleanup.c) can remove
it: the same checks (exit 130/143, nothing left beside the output or in
--tmp, the previous output intact, the next nightly run succeeds) then test
that handler. SIGKILL is left out: no handler runs, and a named temporary
file it leaves is the documented cost of such a file system (a nightly's
next run still removes its staging directory, tested with O_TMPFILE).
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
import test_signals  # noqa: E402


class SignalsNamedTemps(test_signals.Signals):
    test_sigkill_random_points_of_nightly = None  # see the docstring

    def setUp(self):
        super().setUp()
        patch = mock.patch.dict(os.environ, faultlib.NAMED_TEMPS)
        patch.start()
        self.addCleanup(patch.stop)


if __name__ == "__main__":
    unittest.main()
