"""test_nightly_set_incr.py: the incremental nightly through the cluster with
[cluster] shards > 1 (pipeline/nightly/nightly_incr_set.c).

The base is built once as a table set and cached (cache/base-...-3shards.set),
each daily increment as one small table, and each night publishes a set
with the base's shards and key ranges, each shard the base's merged with the
increments' keys in its range. Checked night by night (a missing day among
them) against an incremental nightly of one table (no [cluster]) on the
same inputs: `dump --jsonl` byte for byte, the manifest's base, increments,
skipped dumps and gaps the same; the set verifies, its shards keep the
base's ranges, the base set is built on the first night only and reused;
a night with nothing new is "up to date". A night whose increments touch
one shard links the others from the cached base (the same inode) and
rewrites only that one. A damaged cached base shard that no increment
(nor deletion) touches is found by its checksum and the base built again,
not linked into the night's set. With [cluster] shards = 1 the base and the
increments are cluster builds of one table each, and the night publishes
the one-table night's table byte for byte.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from sstpipe_e2e import E2ETest, run, sstpipe, sstpipe_bin, wikigen, wikigen_bin  # noqa: E402

BASE = "enwiki-20261130-pages-articles-multistream.xml.bz2"
INCR = "enwiki-{}-pages-meta-hist-incr.xml.bz2"
DAYS = ["20261201", "20261202", "20261204"]  # no 20261203: a gap


class IncrementalNightlySet(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.data = tempfile.mkdtemp(prefix="sstpipe-nightly-set-incr-")
        cls.addClassCleanup(shutil.rmtree, cls.data, True)
        cls.base = wikigen(os.path.join(cls.data, BASE), "2M", "8", "bz2-multistream")
        cls.made = os.path.join(cls.data, "made")
        os.mkdir(cls.made)
        r = run([wikigen_bin(), "--size", "2M", "--seed", "8", "--increment-of", "20261130",
                 "--days", "4", "--edits", "2", "--new-pages", "5", "--format", "bz2", "-o",
                 cls.made])
        assert r.code == 0, r.describe()
        os.unlink(os.path.join(cls.made, INCR.format("20261203")))
        # Two new pages and nothing else: a template ([extract] leaves it
        # out) and an article, which falls into one shard of three.
        cls.tiny = os.path.join(cls.data, "tiny")
        os.mkdir(cls.tiny)
        r = run([wikigen_bin(), "--size", "2M", "--seed", "8", "--increment-of", "20261130",
                 "--days", "1", "--edits", "0", "--new-pages", "2", "--format", "bz2", "-o",
                 cls.tiny])
        assert r.code == 0, r.describe()

    def setUp(self):
        super().setUp()
        self.full = self.path("full")
        self.incr = self.path("incr")
        os.mkdir(self.full)
        os.mkdir(self.incr)
        shutil.copy(self.base, self.full)
        self.shared = self.path("shared")
        self.out = self.path("out")
        self.one = self.path("one")
        common = (f"[input]\npath = {self.full}/enwiki-*-pages-articles-multistream.xml.bz2\n"
                  f"incremental = {self.incr}/enwiki-*-pages-meta-hist-incr.xml.bz2\n"
                  "[extract]\nnamespaces = 0,1,4\nredirects = skip\n"
                  "[profile]\nlookups = 20\n")
        self.ini = self.write_file("set.ini", (
            common + f"[output]\ndir = {self.out}\nname = t.sst\nkeep = 2\n"
            f"[cluster]\nshared_dir = {self.shared}\ntasks = 3\nshards = 3\nretries = 0\n"
            "jobs = 2\n").encode())
        self.one_ini = self.write_file("one.ini", (
            common + f"[output]\ndir = {self.one}\nname = t.sst\nkeep = 2\n").encode())

    def nightly(self, ini):
        return subprocess.run([sstpipe_bin(), "nightly", "-c", ini], capture_output=True,
                              timeout=600)

    def assertExit(self, p, code, what=""):
        self.assertEqual(p.returncode, code,
                         f"{what}: exit {p.returncode}, stderr:\n"
                         f"{p.stderr.decode(errors='replace')}")

    def jsonl(self, table):
        r = sstpipe("dump", "--jsonl", table)
        self.assertOk(r)
        return r.stdout

    def manifest(self, out):
        with open(os.path.join(out, "current", "manifest.json")) as f:
            return json.load(f)

    def set_manifest(self, d):
        with open(os.path.join(d, "tableset.json")) as f:
            return json.load(f)

    def cached_base(self):
        (name,) = [n for n in os.listdir(os.path.join(self.out, "cache")) if n.endswith(".set")]
        self.assertRegex(name, r"^base-20261130-[0-9a-f]{16}-[0-9a-f]{16}-3shards\.set$")
        return os.path.join(self.out, "cache", name)

    def same_inputs(self, a, b, what):
        """The manifests' incremental records: the same dumps, skips and gaps."""
        def strip(inc):
            keep = ("path", "size", "date", "xxh3_64")
            return ({k: inc["base"][k] for k in keep},
                    [{k: i[k] for k in keep} for i in inc["increments"]],
                    inc["skipped"], inc["gaps"])
        self.assertEqual(strip(a["incremental"]), strip(b["incremental"]), what)

    def assertNight(self, what, applied):
        """current is a set of the base's ranges with the one-table night's records."""
        table = os.path.join(self.out, "current", "t.sst")
        self.assertTrue(os.path.isdir(table), what + ": not a table set")
        self.assertTrue(self.jsonl(table) == self.jsonl(os.path.join(self.one, "current",
                                                                     "t.sst")),
                        what + ": the set's records are not the one-table night's")
        self.assertOk(sstpipe("verify", table))
        base = self.set_manifest(self.cached_base())["shards"]
        got = self.set_manifest(table)["shards"]
        self.assertEqual([(s["file"], s["lo"], s["hi"]) for s in got],
                         [(s["file"], s["lo"], s["hi"]) for s in base],
                         what + ": the shards are not the base's ranges")
        m, one = self.manifest(self.out), self.manifest(self.one)
        self.assertEqual((m["status"], m["exit_code"]), ("published", 0), what)
        self.same_inputs(m, one, what)
        inc = m["incremental"]
        self.assertEqual([i["date"].replace("-", "") for i in inc["increments"]], applied, what)
        self.assertEqual(inc["merge"]["records"], one["incremental"]["merge"]["records"], what)
        self.assertEqual(inc["merge"]["replaced"], one["incremental"]["merge"]["replaced"], what)
        self.assertEqual(inc["merge"]["shards"], 3, what)
        self.assertEqual(m["verify"]["records"], sum(s["records"] for s in got), what)
        files = {o["file"] for o in m["outputs"]}
        for s in got:
            self.assertIn("t.sst/" + s["file"], files, what)
        self.assertEqual(os.listdir(self.shared), [], what + ": the cluster's directory is left")
        return m, base, got

    def reused(self, got):
        """The published shards that are the cached base's files (hard links)."""
        base = self.cached_base()
        cur = os.path.join(self.out, "current", "t.sst")
        return [s["file"] for s in got if os.stat(os.path.join(cur, s["file"])).st_ino ==
                os.stat(os.path.join(base, s["file"])).st_ino]

    def test_night_by_night(self):
        applied = []
        for night, day in enumerate(DAYS):
            shutil.copy(os.path.join(self.made, INCR.format(day)), self.incr)
            applied.append(day)
            what = f"night {night} (increments {applied})"
            p = self.nightly(self.ini)
            self.assertExit(p, 0, what)
            self.assertExit(self.nightly(self.one_ini), 0, what + ", one table")
            err = p.stderr.decode()
            m, _, got = self.assertNight(what, applied)
            inc = m["incremental"]
            self.assertEqual(inc["base"]["cached"], night > 0, what)
            self.assertTrue(inc["base"]["table"].endswith("-3shards.set"), what)
            if night:
                self.assertIn("base: cached table reused: cache/base-20261130-", err, what)
            self.assertEqual(inc["gaps"], ["2026-12-03"] if "20261204" in applied else [], what)
            self.assertEqual(len(self.reused(got)), inc["merge"]["shards_reused"], what)
        self.assertGreater(inc["merge"]["replaced"], 0, "no increment replaced a record")
        # Nothing new: nothing built, nothing published.
        before = os.readlink(os.path.join(self.out, "current"))
        p = self.nightly(self.ini)
        self.assertExit(p, 0, "up to date")
        self.assertIn("up to date: current (", p.stderr.decode())
        self.assertEqual(os.readlink(os.path.join(self.out, "current")), before)
        # Only the base set and the increments this build used stay in the
        # cache (beside them checksums.json, once a dump is old enough for
        # its checksum to be kept: not a matter of this test).
        self.assertEqual(sorted(n for n in os.listdir(os.path.join(self.out, "cache"))
                                if n != "checksums.json"),
                         sorted([inc["base"]["table"][6:]] +
                                [i["table"][6:] for i in inc["increments"]]))

    def test_one_shard_through_the_cluster(self):
        """[cluster] shards = 1: the base and each increment are cluster
        builds of one shard (tables, not sets), and the night publishes the
        one-table night's table byte for byte."""
        with open(self.ini, "rb") as f:
            cfg = self.write_file("one-shard.ini", f.read().replace(b"shards = 3\n",
                                                                    b"shards = 1\n"))
        shutil.copy(os.path.join(self.made, INCR.format(DAYS[0])), self.incr)
        p = self.nightly(cfg)
        self.assertExit(p, 0, "shards = 1")
        self.assertExit(self.nightly(self.one_ini), 0, "one table")
        err = p.stderr.decode()
        for dump in (os.path.join(self.full, BASE), os.path.join(self.incr, INCR.format(DAYS[0]))):
            self.assertRegex(err, r"build \(cluster, local runner\): " + re.escape(dump) + " -> ",
                             "not built through the cluster")
        self.assertIn("cluster: 3 map tasks (0 already done), 1 shard, plan ", err)
        table = os.path.join(self.out, "current", "t.sst")
        self.assertTrue(os.path.isfile(table), "shards = 1 published a set")
        with open(table, "rb") as a, open(os.path.join(self.one, "current", "t.sst"), "rb") as b:
            self.assertTrue(a.read() == b.read(), "not the one-table night's bytes")
        m = self.manifest(self.out)
        self.same_inputs(m, self.manifest(self.one), "shards = 1")
        self.assertRegex(m["incremental"]["base"]["table"], r"^cache/base-20261130-.*\.sst$")
        self.assertEqual(os.listdir(self.shared), [], "the cluster's directory is left")

    def test_untouched_shards_are_linked(self):
        shutil.copy(os.path.join(self.tiny, INCR.format("20261201")), self.incr)
        self.assertExit(self.nightly(self.ini), 0)
        self.assertExit(self.nightly(self.one_ini), 0)
        m, base, got = self.assertNight("one new page", ["20261201"])
        reused = self.reused(got)
        self.assertEqual(len(reused), 2, "the two shards the page misses are not the base's")
        self.assertEqual(m["incremental"]["merge"]["shards_reused"], 2)
        (changed,) = [s for s in got if s["file"] not in reused]
        (was,) = [s for s in base if s["file"] == changed["file"]]
        self.assertEqual(changed["records"], was["records"] + 1)

    def test_damaged_untouched_base_shard_is_rebuilt(self):
        shutil.copy(os.path.join(self.tiny, INCR.format("20261201")), self.incr)
        self.assertExit(self.nightly(self.ini), 0)
        self.assertExit(self.nightly(self.one_ini), 0)
        _, _, got = self.assertNight("first night", ["20261201"])
        # Damage a cached base shard the page does not touch: published
        # builds share it, so copy it first (current's stays sound).
        shard = os.path.join(self.cached_base(), self.reused(got)[0])
        with open(shard, "rb") as f:
            data = bytearray(f.read())
        data[100] ^= 0xFF
        os.unlink(shard)
        with open(shard, "wb") as f:
            f.write(data)
        # The next night deletes the new page: the same shard changes, the
        # damaged one is still untouched (linked, were it not checked).
        listing = self.write_file("deleted.txt", b"Nofewil Station\n")
        for ini in (self.ini, self.one_ini):
            with open(ini, "a") as f:
                f.write(f"[input]\ndeletions = {listing}\n")
        p = self.nightly(self.ini)
        self.assertExit(p, 0, "the night after the damage")
        self.assertIn("is damaged, building it again", p.stderr.decode())
        self.assertExit(self.nightly(self.one_ini), 0)
        m, _, _ = self.assertNight("after the rebuild", ["20261201"])
        self.assertEqual(m["incremental"]["merge"]["dropped"], 1)
        self.assertIn("checksum", m["incremental"]["base"]["damaged"])
        self.assertEqual(m["incremental"]["base"]["cached"], False)


if __name__ == "__main__":
    unittest.main()
