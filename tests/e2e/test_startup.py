"""test_startup.py: what a command loads before it works.

libxml2, libarchive and libmicrohttpd (with ICU and GnuTLS behind them) are
loaded by the code that calls them, the first time it does
(stages/common/dynlib.h), not by every process at its start: the commands
that read tables (get, dump, info, verify, profile, merge) never load them,
the ones that parse a dump load them and work, and a library that cannot be
loaded is a one-line error naming it, with a non-zero exit. What the
dynamic loader opens is read from its own account (LD_DEBUG=files).
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import re
import subprocess
import unittest

from sstpipe_e2e import E2ETest, corpora_dir, sstpipe_bin, to_bz2, to_zst

HEAVY = ("libxml2.so", "libarchive.so", "libmicrohttpd.so", "libgnutls.so", "libicuuc.so")


def loaded(args, env_extra=None):
    """Runs sstpipe ARGS; returns (exit code, stderr without the loader's
    lines, the names of the shared objects the loader opened)."""
    env = dict(os.environ, LD_DEBUG="files", **(env_extra or {}))
    p = subprocess.run([sstpipe_bin()] + [str(a) for a in args], env=env, capture_output=True,
                       timeout=300)
    err = p.stderr.decode(errors="replace")
    files = set(re.findall(r"(?m)^\s*\d+:\s+file=(\S+)\s+\[", err))
    own = "\n".join(l for l in err.splitlines() if not re.match(r"^\s*\d+:", l))
    return p.returncode, own, {os.path.basename(f) for f in files}


class StartupTest(E2ETest):

    def setUp(self):
        super().setUp()
        with open(os.path.join(corpora_dir(), "enwiki-11pages.xml"), "rb") as f:
            self.xml = f.read()
        self.zst = self.write_file("in.xml.zst", to_zst(self.xml))
        self.sst = self.path("t.sst")

    def heavy(self, files):
        return sorted(f for f in files if f.startswith(HEAVY))

    def test_reading_commands_load_no_parser_or_server(self):
        code, err, files = loaded(["build", self.zst, "-o", self.sst])
        self.assertEqual(code, 0, err)
        # The parse needs both: .zst is read through libarchive.
        self.assertIn("libxml2.so.2", files)
        self.assertTrue(any(f.startswith("libarchive.so") for f in files), files)
        out = self.path("m.sst")
        for args in (["get", self.sst, "Anarchism"], ["dump", self.sst], ["info", self.sst],
                     ["verify", self.sst], ["profile", self.sst, "100"],
                     ["merge", "-o", out, self.sst, self.sst], ["--version"]):
            with self.subTest(args=args[0]):
                code, err, files = loaded(args)
                self.assertIn(code, (0, 3), err)  # get exits 3 for an absent key
                self.assertIn("libsstpipe.so.1", files, "the loader's account was not read")
                self.assertEqual(self.heavy(files), [], f"{args[0]} loaded them")

    def test_a_library_that_cannot_load_is_a_clear_error(self):
        # A library the loader finds first and cannot use: libxml2 for a
        # .bz2 dump (decoded by sstpipe itself), libarchive for a .zst one.
        bz2 = self.write_file("in.xml.bz2", to_bz2(self.xml))
        for src, soname in ((bz2, "libxml2.so.2"), (self.zst, "libarchive.so.13")):
            with self.subTest(soname=soname):
                lib = self.path("lib")
                os.makedirs(lib, exist_ok=True)
                with open(os.path.join(lib, soname), "wb") as f:
                    f.write(b"not a shared object\n")
                code, err, _ = loaded(["build", src, "-o", self.sst], {"LD_LIBRARY_PATH": lib})
                self.assertEqual(code, 1, err)
                self.assertRegex(err, r"^sstpipe: " + re.escape(src) + r": cannot load " +
                                 re.escape(soname) + r": [^\n]*file too short\Z")
                self.assertFalse(os.path.exists(self.sst), "a table was left behind")
                os.remove(os.path.join(lib, soname))
        self.assertEqual(sorted(os.listdir(self.tmp)), ["in.xml.bz2", "in.xml.zst", "lib"])
        # And libmicrohttpd for a server, which then never listens.
        self.assertEqual(loaded(["build", bz2, "-o", self.sst])[0], 0)
        soname = "libmicrohttpd.so.12"
        with open(os.path.join(lib, soname), "wb") as f:
            f.write(b"not a shared object\n")
        code, err, _ = loaded(["serve", self.sst, "--listen", "127.0.0.1:0"],
                              {"LD_LIBRARY_PATH": lib})
        self.assertEqual(code, 1, err)
        # Its last line: serve names the table it opened before it starts.
        self.assertRegex(err, r"(?m)^sstpipe: serve: cannot load " + re.escape(soname) +
                         r": [^\n]*file too short\Z")

if __name__ == "__main__":
    unittest.main()
