"""test_nightly_set.py: `sstpipe nightly` through the cluster with shards > 1.

The night's table is then a table set (a directory at [output] name: the
shards and tableset.json), built by the cluster's map and reduce tasks,
verified shard by shard against the set's manifest, profiled and published
as any build is: the staging directory renamed into builds/, then
`current` swapped. Checked here: the published set's `dump --jsonl` is a
single `sstpipe build`'s of the same dump, byte for byte; the nightly's
manifest lists the set's manifest and every shard with their sizes and
checksums, and verify.json one report per shard; a second night moves
`current` and leaves the first night's set whole; a damaged shard (a byte
flipped while the fault shim holds verify's open of it) fails the night in
verify (exit 3) with nothing published and `current` where it
was; `sstpipe serve` on the nightly directory follows the publish of a set.
The incremental night with shards > 1 is test_nightly_set_incr.py's.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import shutil
import subprocess
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from serve_client import Server, wait_for  # noqa: E402
from sstpipe_e2e import (E2ETest, assert_manifest_measures, sstpipe, sstpipe_bin,  # noqa: E402
                         wikigen)
from test_nightly import xxh3_64  # noqa: E402


class NightlySet(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-nightly-set-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.first = wikigen(os.path.join(cls.classtmp, "first.xml.bz2"), "2M", "41",
                            "bz2-multistream")
        cls.second = wikigen(os.path.join(cls.classtmp, "second.xml.bz2"), "3M", "42",
                             "bz2-multistream")

    def setUp(self):
        super().setUp()
        self.out = self.path("out")
        self.shared = self.path("shared")
        self.ini = self.write_file("nightly.ini", (
            f"[output]\ndir = {self.out}\nname = t.sst\nkeep = 3\n[profile]\nlookups = 20\n"
            f"[cluster]\nshared_dir = {self.shared}\ntasks = 3\nshards = 3\nretries = 0\n"
            "jobs = 2\n").encode())

    def nightly(self, dump, *extra):
        return sstpipe("nightly", "-c", self.ini, *extra, dump)

    def current(self):
        return os.readlink(os.path.join(self.out, "current"))

    def jsonl(self, table):
        r = sstpipe("dump", "--jsonl", table)
        self.assertOk(r)
        return r.stdout

    def reference(self, dump):
        ref = self.path(os.path.basename(dump) + ".sst")
        if not os.path.exists(ref):
            self.build(dump, ref)
        return self.jsonl(ref)

    def assertPublishedSet(self, dump, what):
        build = os.path.join(self.out, "current")
        table = os.path.join(build, "t.sst")
        self.assertTrue(os.path.isdir(table), what + ": not a table set")
        with open(os.path.join(table, "tableset.json")) as f:
            shards = json.load(f)["shards"]
        self.assertEqual(len(shards), 3, what)
        self.assertTrue(self.jsonl(table) == self.reference(dump),
                        what + ": the set's records are not build's")
        r = sstpipe("verify", table)
        self.assertOk(r)
        with open(os.path.join(build, "manifest.json")) as f:
            m = json.load(f)
        self.assertEqual((m["status"], m["exit_code"]), ("published", 0), what)
        files = {o["file"]: o for o in m["outputs"]}
        want = ["t.sst/tableset.json"] + [f"t.sst/{s['file']}" for s in shards]
        for name in want:
            self.assertIn(name, files, what + f": {name} not in the manifest's outputs")
            p = os.path.join(build, name)
            self.assertEqual((os.path.getsize(p), xxh3_64(p)),
                             (files[name]["bytes"], files[name]["xxh3_64"]), what + ": " + name)
        self.assertEqual(m["verify"]["records"], sum(s["records"] for s in shards), what)
        self.assertEqual(m["verify"]["problem_count"], 0, what)
        with open(os.path.join(build, "verify.json")) as f:
            v = json.load(f)
        self.assertEqual(len(v["files"]), 3, what + ": one report per shard")
        self.assertTrue(all(x["ok"] for x in v["files"]), what)
        self.assertEqual(m["profile"]["lookups"], 20, what)
        self.assertEqual(os.listdir(self.shared), [], what + ": the cluster's directory is left")

    def test_nightly_publishes_a_set(self):
        r = self.nightly(self.first)
        self.assertOk(r)
        self.assertPublishedSet(self.first, "first night")
        first = self.current()
        r = sstpipe("nightly", "-c", self.ini, self.second, measure_rss=True)
        self.assertOk(r)
        self.assertNotEqual(self.current(), first)
        self.assertPublishedSet(self.second, "second night")
        with open(os.path.join(self.out, "current", "manifest.json")) as f:
            assert_manifest_measures(self, json.load(f), r)
        # The first night's set is untouched by the second's publish.
        old = os.path.join(self.out, first, "t.sst")
        self.assertOk(sstpipe("verify", old))
        self.assertTrue(self.jsonl(old) == self.reference(self.first), "first night's set")

    def test_damaged_shard_is_not_published(self):
        self.assertOk(self.nightly(self.first))
        before = self.current()
        # Verify's first open of the last shard (the 15th open of an existing
        # file under out, as a run counts them: the set's finishing, then
        # verify's of the manifest, the shards and their title indexes) is
        # held while one byte of it is flipped.
        with faultlib.Held("open_read:15", self.out,
                           lambda path: faultlib.flip_byte(path, 5000)) as held:
            r = subprocess.run([sstpipe_bin(), "nightly", "-c", self.ini, self.second],
                               capture_output=True, text=True, timeout=600, env=held.env)
        self.assertRegex(held.path, r"/\.staging-[^/]+/t\.sst/shard-0002\.sst$", "the call held")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("verify found", r.stderr)
        self.assertIn("shard-0002.sst", r.stderr)
        self.assertEqual(self.current(), before)
        self.assertPublishedSet(self.first, "after the failed night")
        (failed,) = os.listdir(os.path.join(self.out, "failed"))
        with open(os.path.join(self.out, "failed", failed, "manifest.json")) as f:
            m = json.load(f)
        self.assertEqual((m["status"], m["failed_stage"]), ("failed", "verify"))
        self.assertGreater(m["verify"]["problem_count"], 0)

    def test_serve_follows_the_publish_of_a_set(self):
        self.assertOk(self.nightly(self.first))
        # The check without an event off: the publish is seen by its event.
        srv = Server(self.out, "-c", self.ini, "--set", "serve.poll_seconds=0").start(
            self.path("serve.err"))
        self.addCleanup(srv.kill)
        c = srv.client()
        self.addCleanup(c.close)
        # A title only the second night's dump holds.
        first = {json.loads(x)["key"] for x in self.reference(self.first).splitlines()}
        new = [json.loads(x) for x in self.reference(self.second).splitlines()]
        rec = next(x for x in new if x["key"] not in first)
        self.assertEqual(c.get(rec["key"])[0], 404)
        self.assertOk(self.nightly(self.second))
        wait_for("the set's publish", lambda: c.get(rec["key"])[0] == 200)
        self.assertEqual(c.get(rec["key"])[2], rec["value"].encode())
        self.assertEqual(srv.stop(), 0)

if __name__ == "__main__":
    unittest.main()
