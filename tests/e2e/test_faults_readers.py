"""test_faults_readers.py: readers of a table while it is being replaced.

Readers loop `sstpipe get` (several keys) and `sstpipe verify` on
DIR/current/table.sst while `sstpipe nightly` publishes again and again,
and on an -o file while `sstpipe build` replaces it again and again. The
builds alternate between 8K and 16K blocks, so every replacement changes
every byte of the file but no record: each read must find its key with the
same value, and each verify must pass. A reader that ever opened a half-
written file would fail one of them.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import shutil
import subprocess
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import temp_leftovers  # noqa: E402
from sstpipe_e2e import E2ETest, sstpipe, sstpipe_bin, wikigen  # noqa: E402

REPLACEMENTS = 60 if faultlib.LONG else faultlib.brief(12)


class Readers:
    """Threads looping reads of path until stopped; failures are collected."""

    def __init__(self, path, expected):
        self.path, self.expected = path, expected
        self.stop = threading.Event()
        self.failures, self.reads, self.verifies = [], 0, 0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.get_loop, args=(i,)) for i in range(2)]
        self.threads.append(threading.Thread(target=self.verify_loop))

    def get_loop(self, which):
        keys = list(self.expected)
        i = which
        while not self.stop.is_set():
            key = keys[i % len(keys)]
            i += 1
            p = subprocess.run([sstpipe_bin(), "get", "--raw", self.path, "--", key],
                               capture_output=True)
            with self.lock:
                self.reads += 1
                if p.returncode != 0 or p.stdout != self.expected[key]:
                    self.failures.append(f"get {key!r}: exit {p.returncode}, "
                                         f"{p.stderr.decode(errors='replace')!r}")

    def verify_loop(self):
        while not self.stop.is_set():
            p = subprocess.run([sstpipe_bin(), "verify", self.path], capture_output=True)
            with self.lock:
                self.verifies += 1
                if p.returncode != 0:
                    self.failures.append(f"verify: exit {p.returncode}, "
                                         f"{p.stdout[-300:]!r} {p.stderr[-300:]!r}")

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join()


class ReadersDuringReplace(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-readers-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.dump = wikigen(os.path.join(cls.classtmp, "r.xml.zst"), "8M", "61", "zst")

    def expected(self, table):
        """Five keys spread over the table, with `get`'s output for each."""
        r = sstpipe("dump", table, "--jsonl")
        self.assertOk(r)
        lines = r.stdout.decode().splitlines()
        out = {}
        for line in lines[:: max(1, len(lines) // 5)][:5]:
            rec = json.loads(line)
            out[rec["key"]] = rec["value"].encode() + b"\n"
        return out

    def test_readers_during_nightly_publish(self):
        out = self.path("out")
        ini = self.write_file("n.ini", (f"[output]\ndir = {out}\nkeep = 3\n"
                                        "[profile]\nlookups = 100\n").encode())
        argv = [sstpipe_bin(), "nightly", "-c", ini, self.dump, "--set"]
        self.assertEqual(subprocess.run(argv + ["sst.block_size=8K"], capture_output=True).returncode, 0)
        table = os.path.join(out, "current", "table.sst")
        with Readers(table, self.expected(table)) as readers:
            for i in range(REPLACEMENTS):
                p = subprocess.run(argv + [f"sst.block_size={16 if i % 2 == 0 else 8}K"],
                                   capture_output=True)
                self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(readers.failures, [])
        self.assertEqual(temp_leftovers(out), [])
        print(f"READERS nightly: publishes={REPLACEMENTS} gets={readers.reads} "
              f"verifies={readers.verifies}")
        self.assertGreater(readers.reads, REPLACEMENTS)

    def test_readers_during_build_replace(self):
        os.mkdir(self.path("out"))
        table = self.path("out", "table.sst")
        self.build(self.dump, table, "--block-size", "8K")
        with Readers(table, self.expected(table)) as readers:
            for i in range(REPLACEMENTS * 2):
                self.build(self.dump, table, "--block-size", "16K" if i % 2 == 0 else "8K")
        self.assertEqual(readers.failures, [])
        self.assertEqual(sorted(os.listdir(self.path("out"))), ["table.sst", "table.sst.titles"])
        print(f"READERS build: replacements={REPLACEMENTS * 2} gets={readers.reads} "
              f"verifies={readers.verifies}")
        self.assertGreater(readers.reads, REPLACEMENTS)


if __name__ == "__main__":
    unittest.main()
