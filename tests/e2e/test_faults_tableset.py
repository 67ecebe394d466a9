"""test_faults_tableset.py: ENOSPC and EIO at every I/O call of writing a table set.

tests/make_tableset.c writes a set's shard tables and then its manifest through
table_set_write_manifest, the writer the cluster build's finishing step calls. The fault
shim counts the calls on files in the set's directory, then each run fails one of them,
starting from a directory holding an earlier, valid set of the same shards (made from a
copy of the table, so its manifest differs in its inputs only). After every run: no
temporary file is left, the directory holds the same files, and it is still a whole set
that reads as the table (`dump --jsonl` byte for byte); a run that failed exits 1 with one
error line naming the file and the errno, and its manifest is the earlier one, byte for
byte, except after the one call that cannot be undone (the directory fsync after the
manifest's rename: the new manifest is then complete and in place, and the error says so).
Each sweep runs again with SSTPIPE_NO_O_TMPFILE=1 (named temporary files).
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import shutil
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import sha, temp_leftovers  # noqa: E402
from sstpipe_e2e import E2ETest, corpora_dir, env_path, run, sstpipe  # noqa: E402


class TableSetFaults(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-tableset-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.one = os.path.join(cls.classtmp, "one.sst")
        src = os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2")
        r = sstpipe("build", src, "-o", cls.one, "--block-size", "1K", "--max-bytes", "300")
        assert r.code == 0, r.describe()
        cls.dump = sstpipe("dump", cls.one, "--jsonl").stdout
        keys = [json.loads(line)["key"].encode() for line in cls.dump.decode().splitlines()]
        cls.splits = [keys[len(keys) * i // 4].hex() for i in (1, 2, 3)]
        # The earlier set: the same shards, from a copy of the table (its inputs differ).
        copy = os.path.join(cls.classtmp, "copy.sst")
        shutil.copy(cls.one, copy)
        cls.prev = os.path.join(cls.classtmp, "prev")
        r = run([env_path("MAKE_TABLESET"), copy, cls.prev] + cls.splits)
        assert r.code == 0, r.describe()

    def sweep(self, area, env=None):
        out = self.path("set")
        argv = [env_path("MAKE_TABLESET"), self.one, out] + self.splits
        prev_manifest = sha(os.path.join(self.prev, "tableset.json"))
        shutil.copytree(self.prev, out)
        counts = faultlib.count_calls(self, argv, out, env=env)
        new_manifest = sha(os.path.join(out, "tableset.json"))
        self.assertNotEqual(new_manifest, prev_manifest)
        self.assertGreater(counts["rename"], 4, counts)  # four shards and the manifest
        names = sorted(os.listdir(self.prev))
        manifest = os.path.join(out, "tableset.json")

        def reset():
            shutil.rmtree(out)
            shutil.copytree(self.prev, out)
            return (prev_manifest, None)  # faultlib.output_sha: a manifest has no title index

        def check_after(what, r):
            self.assertEqual(temp_leftovers(out), [], what + r.describe())
            self.assertEqual(sorted(os.listdir(out)), names, what)
            d = faultlib.read_once("dump", "--jsonl", out, table=out)
            self.assertEqual((d.code, d.stdout), (0, self.dump),
                             what + ": the set no longer reads whole" + d.describe())

        # The manifest is the set's one output: closing the directory after
        # its fsync, and the write-back hint, change nothing.
        tally = faultlib.sweep_one_output(
            self, area, argv, out, counts, 40, out=manifest, ref=(new_manifest, None), reset=reset,
            check_after=check_after,
            absorbable=lambda op, path: (op, path) == ("close", out) or op == "sync_file_range",
            env=env)
        self.assertGreater(tally.failed_cleanly, 0)

    def test_write_set(self):
        self.sweep("tableset")

    def test_write_set_named_temps(self):
        self.sweep("tableset-named", faultlib.NAMED_TEMPS)


if __name__ == "__main__":
    unittest.main()
