"""test_nightly_incr.py: the incremental nightly ([input] incremental) end to end.

A full dump and a week of generated adds/changes dumps (wikigen
--increment-of, several revisions a page, one day missing), arriving one a
night: each night's published table holds exactly the records of one
`build` of the base and the increments so far concatenated in date order,
with the config's [extract] settings applied to the increments too; the
base's table is built on the first night only and reused from cache/
afterwards (the manifest and log say so); a day missing is a warning and a
gap in the manifest; an increment dated on or before the base is skipped;
increments are applied by the date in their names, not the order the glob
lists them in; a night with nothing new builds and publishes nothing ("up
to date"); the same inputs give the same bytes in a fresh output
directory; a corrupt
increment fails the run and leaves current and the cached base as they
were; a file without a date in its name is refused, naming it; the
titles of [input] deletions are left out of the table; a cached table with
a damaged block (the base's, then an increment's) is noticed by the merge,
logged, and built again from its dump, and the night publishes the right
table; the base's checksum is taken from cache/checksums.json on a night
it is unchanged, and hashed again when it was touched, rewritten in place
with its old size and mtime, or replaced by a rename.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import bz2
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from sstpipe_e2e import (LOCATION_RE, E2ETest, run, sstpipe, sstpipe_bin, wait_older, wikigen,
                         wikigen_bin)
from test_merge import edited, split_dump
from test_nightly import xxh3_64

BASE_DATE = "20261130"
DAYS = ["20261201", "20261202", "20261203", "20261205", "20261206", "20261207"]  # no 1204
INCR = "enwiki-{}-pages-meta-hist-incr.xml.bz2"
TITLE_RE = re.compile(rb"<title>(.*?)</title>", re.S)


class IncrementalNightly(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.data = tempfile.mkdtemp(prefix="sstpipe-nightly-incr-")
        cls.addClassCleanup(shutil.rmtree, cls.data, True)
        cls.base = wikigen(os.path.join(cls.data, f"enwiki-{BASE_DATE}-pages-articles.xml.bz2"),
                           "2M", "8", "bz2")
        cls.made = os.path.join(cls.data, "made")
        os.mkdir(cls.made)
        r = run([wikigen_bin(), "--size", "2M", "--seed", "8", "--increment-of", BASE_DATE,
                 "--days", "7", "--edits", "5", "--format", "bz2", "-o", cls.made])
        assert r.code == 0, r.describe()
        os.unlink(os.path.join(cls.made, INCR.format("20261204")))
        # Dated on the base's day: its edits are in the full dump already.
        r = run([wikigen_bin(), "--size", "2M", "--seed", "9", "--increment-of", "20261129",
                 "--days", "1", "--new-pages", "40", "--format", "bz2", "-o", cls.made])
        assert r.code == 0, r.describe()
        assert sorted(os.listdir(cls.made)) == sorted(
            [INCR.format(d) for d in ["20261130"] + DAYS]), os.listdir(cls.made)

    def setUp(self):
        super().setUp()
        self.full = self.path("full")
        self.incr = self.path("incr")
        os.mkdir(self.full)
        os.mkdir(self.incr)
        shutil.copy(self.base, self.full)
        self.out = self.path("out")
        self.ini = self.config(self.out)

    def config(self, out, incremental=None):
        incremental = incremental or f"{self.incr}/enwiki-*-pages-meta-hist-incr.xml.bz2"
        return self.write_file(os.path.basename(out) + ".ini", (
            f"[input]\npath = {self.full}/enwiki-*-pages-articles.xml.bz2\n"
            f"incremental = {incremental}\n"
            "[extract]\nnamespaces = 0,1,4\nredirects = skip\n"
            "[sort]\nmemory = 4M\n"
            f"[output]\ndir = {out}\nkeep = 3\n[profile]\nlookups = 50\n").encode())

    def arrive(self, day):
        shutil.copy(os.path.join(self.made, INCR.format(day)), self.incr)

    def nightly(self, ini=None):
        return subprocess.run([sstpipe_bin(), "nightly", "-c", ini or self.ini],
                              capture_output=True, timeout=600)

    def assertExit(self, p, code):
        self.assertEqual(p.returncode, code,
                         f"exit {p.returncode}, stderr:\n{p.stderr.decode(errors='replace')}")

    def current(self):
        return os.readlink(os.path.join(self.out, "current"))

    def cache_tables(self):
        """The tables in cache/ (beside them: checksums.json)."""
        return sorted(n for n in os.listdir(os.path.join(self.out, "cache")) if n.endswith(".sst"))

    def manifest(self, rel="current"):
        with open(os.path.join(self.out, rel, "manifest.json")) as f:
            return json.load(f)

    def reference(self, days, files=None):
        """The records of one build of the base and days' increments (or
        those files) concatenated."""
        with open(self.base, "rb") as f:
            head, pages, tail = split_dump(bz2.decompress(f.read()))
        for path in files or [os.path.join(self.made, INCR.format(d)) for d in days]:
            with open(path, "rb") as f:
                pages += split_dump(bz2.decompress(f.read()))[1]
        xml = self.write_file("concat.xml", head + b"".join(pages) + tail)
        ref = self.path("ref.sst")
        self.build(xml, ref, "-c", self.ini)
        return self.dump(ref)

    def test_a_week_night_by_night(self):
        shutil.copy(os.path.join(self.made, INCR.format("20261130")), self.incr)
        applied, published = [], set()
        for night, day in enumerate(DAYS + [None]):
            if day:
                self.arrive(day)
                applied.append(day)
            p = self.nightly()
            self.assertExit(p, 0)
            err = p.stderr.decode()
            what = f"night {night} (increments {applied})"
            if day is None:
                # Nothing arrived: nothing built, nothing published.
                self.assertIn("up to date: current (", err, what)
                self.assertNotIn("build: ", err, what)
                self.assertEqual(len(published), len(DAYS), what)
                self.assertEqual(sorted(os.listdir(os.path.join(self.out, "builds"))),
                                 sorted(published)[-3:], what)
                break
            self.assertNotIn("up to date", err, what)
            published.add(self.current()[len("builds/"):])
            self.assertTrue(self.current().endswith(INCR.format(day)), self.current())
            m = self.manifest()
            self.assertEqual(m["status"], "published")
            inc = m["incremental"]
            self.assertEqual(inc["base"]["path"], os.path.realpath(
                os.path.join(self.full, os.path.basename(self.base))))
            self.assertEqual(inc["base"]["date"], "2026-11-30")
            self.assertEqual(inc["base"]["size"], os.path.getsize(self.base))
            self.assertEqual(inc["base"]["xxh3_64"], xxh3_64(self.base))
            self.assertEqual(m["input"]["xxh3_64"], xxh3_64(self.base))
            self.assertEqual([i["date"].replace("-", "") for i in inc["increments"]], applied)
            for i, d in zip(inc["increments"], applied):
                src = os.path.join(self.incr, INCR.format(d))
                self.assertEqual(i["path"], os.path.realpath(src))
                self.assertEqual((i["size"], i["xxh3_64"]), (os.path.getsize(src), xxh3_64(src)))
                self.assertTrue(os.path.exists(os.path.join(self.out, i["table"])), i)
            self.assertEqual([s["date"] for s in inc["skipped"]], ["2026-11-30"])
            self.assertEqual(inc["gaps"], ["2026-12-04"] if "20261205" in applied else [], what)
            if "20261205" in applied:
                self.assertIn("warning: no increment dated 20261204", err, what)
            # The base is built on the first night only; each increment once.
            self.assertEqual(inc["base"]["cached"], night > 0, what)
            self.assertEqual([i["cached"] for i in inc["increments"]],
                             [True] * (len(applied) - 1) + [False], what)
            built = [s["input"] for s in m["stages"] if s["name"] == "read"]
            self.assertEqual(built, ([os.path.join(self.full, os.path.basename(self.base))]
                                     if night == 0 else []) +
                             [os.path.join(self.incr, INCR.format(day))], what)
            if night:
                self.assertIn("base: cached table reused: cache/base-20261130-", err, what)
                self.assertIsNone(inc["base"]["counts"], what)
            else:
                self.assertGreater(inc["base"]["counts"]["skipped_redirects"], 0)
            self.assertEqual(inc["merge"]["inputs"], len(applied) + 1)
            # Only the tables this build used stay in the cache.
            self.assertEqual(self.cache_tables(),
                             sorted([inc["base"]["table"][6:]] +
                                    [i["table"][6:] for i in inc["increments"]]))
            table = os.path.join(self.out, "current", "table.sst")
            got = self.dump(table)
            self.assertRecordsEqual(got, self.reference(applied), what)
            self.assertEqual(m["sstable"]["records"], len(got))
            self.assertEqual(m["verify"]["problem_count"], 0)
        self.assertGreater(inc["merge"]["replaced"], 0, "no increment replaced a record")
        # [extract] applies to the increments: their pages it leaves out (a
        # redirect, a namespace other than 0, 1 and 4) whose titles no kept
        # page has are not in the table.
        kept, left_out = set(k for k, _ in got), set()
        for d in applied:
            with open(os.path.join(self.made, INCR.format(d)), "rb") as f:
                for page in split_dump(bz2.decompress(f.read()))[1]:
                    title = html.unescape(TITLE_RE.search(page).group(1).decode()).encode()
                    ns = int(re.search(rb"<ns>(\d+)</ns>", page).group(1))
                    if ns not in (0, 1, 4) or b"<redirect" in page:
                        left_out.add(title)
        reference_keys = set(k for k, _ in self.reference(applied))
        left_out -= reference_keys
        self.assertTrue(left_out, "the increments hold no page [extract] leaves out: nothing tested")
        self.assertEqual(left_out & kept, set(), "pages [extract] leaves out are in the table")

        # The same inputs, a fresh output directory: the same bytes.
        fresh = self.path("fresh")
        self.assertExit(self.nightly(self.config(fresh)), 0)
        with open(os.path.join(fresh, "current", "table.sst"), "rb") as a, \
                open(os.path.join(self.out, "current", "table.sst"), "rb") as b:
            self.assertTrue(a.read() == b.read(), "same inputs, different bytes")

    def test_date_order_not_name_order(self):
        """Increments are applied in the order of the dates in their names,
        not in the order the glob lists them: the 1st's file is under b/ and
        the 2nd's under a/, so the glob lists the 2nd first. The 2nd edits
        every page of the 1st, so the order shows in every such record."""
        first = os.path.join(self.incr, "b", INCR.format("20261201"))
        second = os.path.join(self.incr, "a", INCR.format("20261202"))
        os.mkdir(os.path.dirname(first))
        os.mkdir(os.path.dirname(second))
        shutil.copy(os.path.join(self.made, INCR.format("20261201")), first)
        with open(first, "rb") as f:
            head, pages, tail = split_dump(bz2.decompress(f.read()))
        with open(second, "wb") as f:
            f.write(bz2.compress(head + b"".join(edited(p, i) for i, p in enumerate(pages)) +
                                 tail))
        self.ini = self.config(self.out, f"{self.incr}/*/enwiki-*-pages-meta-hist-incr.xml.bz2")
        want = self.reference(None, [first, second])
        self.assertNotEqual(self.reference(None, [second, first]), want,
                            "the order of the two days changes no record: nothing tested")
        self.assertExit(self.nightly(), 0)
        inc = self.manifest()["incremental"]
        self.assertEqual([i["path"] for i in inc["increments"]], [first, second])
        self.assertRecordsEqual(self.dump(os.path.join(self.out, "current", "table.sst")), want,
                                "increments in date order")

    def test_deletions(self):
        """[input] deletions: the titles listed are left out of the table,
        those in blocks merge would copy too; a changed list is new input."""
        ref = self.reference([])
        keys = [k for k, _ in ref]
        gone = {keys[0], keys[len(keys) // 2], keys[-1]}
        listing = self.path("deleted.txt")
        with open(listing, "wb") as f:
            f.write(keys[0] + b"\r\n\n" + keys[len(keys) // 2] + b"\nNo such page\n" +
                    keys[-1] + b"\n" + keys[0] + b"\n")
        with open(self.ini, "a") as f:
            f.write(f"[input]\ndeletions = {listing}\n")
        p = self.nightly()
        self.assertExit(p, 0)
        got = self.dump(os.path.join(self.out, "current", "table.sst"))
        self.assertRecordsEqual(got, [r for r in ref if r[0] not in gone], "base - deletions")
        inc = self.manifest()["incremental"]
        self.assertEqual((inc["deletions"]["titles"], inc["deletions"]["dropped"]), (4, 3))
        self.assertEqual(inc["deletions"]["xxh3_64"], xxh3_64(listing))
        self.assertEqual(inc["merge"]["dropped"], 3)
        self.assertGreater(inc["merge"]["blocks_copied"], 0)
        # An increment on top; the list shrinks: the title is back, from the base.
        self.arrive("20261201")
        with open(listing, "wb") as f:
            f.write(keys[0] + b"\n")
        p = self.nightly()
        self.assertExit(p, 0)
        self.assertIn("base: cached table reused", p.stderr.decode())
        ref = self.reference(["20261201"])
        self.assertRecordsEqual(self.dump(os.path.join(self.out, "current", "table.sst")),
                                [r for r in ref if r[0] != keys[0]], "with an increment")
        self.assertIn("up to date", self.nightly().stderr.decode())
        # Editing the list alone is new input.
        with open(listing, "wb") as f:
            f.write(b"")
        p = self.nightly()
        self.assertExit(p, 0)
        self.assertNotIn("up to date", p.stderr.decode())
        self.assertRecordsEqual(self.dump(os.path.join(self.out, "current", "table.sst")), ref,
                                "an empty list")

    def test_new_full_dump_becomes_the_base(self):
        self.arrive("20261201")
        self.arrive("20261202")
        self.assertExit(self.nightly(), 0)
        newer = wikigen(os.path.join(self.full, "enwiki-20261202-pages-articles.xml.bz2"), "1M",
                        "12", "bz2")
        p = self.nightly()
        self.assertExit(p, 0)
        inc = self.manifest()["incremental"]
        self.assertEqual(inc["base"]["path"], os.path.realpath(newer))
        self.assertEqual((inc["base"]["cached"], inc["increments"]), (False, []))
        self.assertEqual([s["date"] for s in inc["skipped"]], ["2026-12-01", "2026-12-02"])
        # The old base's and increments' tables are gone from the cache.
        self.assertEqual(self.cache_tables(), [inc["base"]["table"][6:]])
        ref = self.path("newer.sst")
        self.build(newer, ref, "-c", self.ini)
        self.assertRecordsEqual(self.dump(os.path.join(self.out, "current", "table.sst")),
                                self.dump(ref), "the new base alone")

    def test_deletions_need_incremental(self):
        ini = self.write_file("plain.ini", (
            f"[input]\npath = {self.full}/enwiki-*-pages-articles.xml.bz2\n"
            f"deletions = {self.path('deleted.txt')}\n[output]\ndir = {self.out}\n").encode())
        p = self.nightly(ini)
        self.assertExit(p, 2)
        self.assertIn("[input] deletions applies to an incremental nightly", p.stderr.decode())
        self.assertFalse(os.path.exists(self.out))

    def test_corrupt_increment_leaves_current(self):
        self.arrive("20261201")
        self.assertExit(self.nightly(), 0)
        before = self.current()
        table_sum = xxh3_64(os.path.join(self.out, "current", "table.sst"))
        cache = os.path.join(self.out, "cache")
        cached = {n: xxh3_64(os.path.join(cache, n)) for n in self.cache_tables()}
        with open(os.path.join(self.made, INCR.format("20261202")), "rb") as f:
            data = f.read()
        bad = os.path.join(self.incr, INCR.format("20261202"))
        with open(bad, "wb") as f:
            f.write(data[: len(data) // 2])  # cut mid-stream, as a failed download
        p = self.nightly()
        self.assertExit(p, 1)
        # The file and where in it (README: "naming the file and offset").
        self.assertRegex(p.stderr.decode(), re.escape(bad) + r": .*" + LOCATION_RE.pattern)
        self.assertEqual(self.current(), before)
        self.assertEqual(xxh3_64(os.path.join(self.out, "current", "table.sst")), table_sum)
        self.assertEqual({n: xxh3_64(os.path.join(cache, n)) for n in self.cache_tables()}, cached)
        self.assertEqual([n for n in os.listdir(self.out) if n.startswith(".staging-")], [])
        (failed,) = os.listdir(os.path.join(self.out, "failed"))
        m = self.manifest("failed/" + failed)
        self.assertEqual((m["status"], m["failed_stage"]), ("failed", "build"))
        self.assertRegex(m["error"], re.escape(bad) + r": .*" + LOCATION_RE.pattern)
        self.assertEqual(m["incremental"]["base"]["cached"], True)
        # The whole file arrives: the next night applies it, the base still cached.
        with open(bad, "wb") as f:
            f.write(data)
        p = self.nightly()
        self.assertExit(p, 0)
        self.assertIn("base: cached table reused", p.stderr.decode())
        self.assertRecordsEqual(self.dump(os.path.join(self.out, "current", "table.sst")),
                                self.reference(["20261201", "20261202"]), "after the repair")

    def test_damaged_cache_rebuilt(self):
        """A damaged block in a cached table: the merge's block check finds
        it, the night logs it, builds that table again from its dump and
        publishes the table a build of the dumps gives; the cache is whole
        again. (Before: the night failed at the merge, exit 1, every night
        until the cache was emptied by hand.)"""
        self.arrive("20261201")
        self.assertExit(self.nightly(), 0)
        cache = os.path.join(self.out, "cache")
        (base_t,) = [n for n in os.listdir(cache) if n.startswith("base-")]
        (incr_t,) = [n for n in os.listdir(cache) if n.startswith("incr-")]
        applied = ["20261201"]
        for name, day, kind in ((base_t, "20261202", "base"), (incr_t, "20261203", "increment")):
            damaged = os.path.join(cache, name)
            with open(damaged, "r+b") as f:  # a byte of block 0 flipped, as by a bad disk
                f.seek(100)
                b = f.read(1)
                f.seek(100)
                f.write(bytes([b[0] ^ 0x55]))
            self.assertEqual(sstpipe("verify", damaged).code, 3)
            self.arrive(day)
            applied.append(day)
            p = self.nightly()
            self.assertExit(p, 0)
            err = p.stderr.decode()
            self.assertIn(f"cached table cache/{name} is damaged, building it again from ", err)
            self.assertIn("block 0 at byte 0: block checksum mismatch", err)
            self.assertOk(sstpipe("verify", damaged))
            m = self.manifest()
            inc = m["incremental"]
            entry = inc["base"] if kind == "base" else inc["increments"][0]
            self.assertEqual(entry["cached"], False, kind)
            self.assertIn("block checksum mismatch", entry["damaged"], kind)
            others = [inc["base"]] + inc["increments"]
            self.assertEqual([e for e in others if e["damaged"]], [entry], kind)
            self.assertRecordsEqual(self.dump(os.path.join(self.out, "current", "table.sst")),
                                    self.reference(applied), f"damaged {kind}")
            self.assertEqual([n for n in os.listdir(self.out) if n.startswith(".staging-")], [])
            self.assertEqual(os.listdir(os.path.join(self.out, "failed")), [])
            self.assertEqual(self.cache_tables(),
                             sorted([inc["base"]["table"][6:]] +
                                    [i["table"][6:] for i in inc["increments"]]))

    def test_checksum_shortcut(self):
        """The base is hashed once; later nights take its checksum from
        cache/checksums.json while size, mtime, ctime, inode and device are
        unchanged. Touched, rewritten in place with its old size and mtime
        restored (only ctime tells), or replaced by a rename: hashed again,
        and the table follows the new content."""
        base = os.path.join(self.full, os.path.basename(self.base))
        with open(self.base, "rb") as f:
            xml = bz2.decompress(f.read())
        with open(base, "wb") as f:  # a plain-XML base: editable in place, same size
            f.write(xml)
        self.arrive("20261201")
        wait_older(base, os.path.join(self.incr, INCR.format("20261201")))

        def night(day=None):
            if day:
                self.arrive(day)
            p = self.nightly()
            self.assertExit(p, 0)
            return p.stderr.decode()

        def base_line(err):
            (line,) = [ln for ln in err.splitlines() if f"{base}: xxh3_64 " in ln]
            self.assertIn(f"{base}: xxh3_64 {xxh3_64(base)}", line)
            return line

        def stage_bytes():
            return next(s for s in self.manifest()["stages"] if s["name"] == "checksum")[
                "bytes_in"]

        reused = "(reused from cache/checksums.json"
        err = night()
        self.assertNotIn(reused, base_line(err))
        with open(os.path.join(self.out, "cache", "checksums.json")) as f:
            sums = {e["path"]: e for e in json.load(f)["files"]}
        self.assertEqual(sums[base]["xxh3_64"], xxh3_64(base))
        self.assertEqual(sums[base]["size"], os.path.getsize(base))

        err = night("20261202")  # unchanged: not read again
        self.assertIn(reused, base_line(err))
        self.assertTrue(self.manifest()["incremental"]["base"]["checksum_reused"])
        fresh = os.path.join(self.incr, INCR.format("20261202"))
        self.assertEqual(stage_bytes(), os.path.getsize(fresh), "only the new increment read")

        def edit(data, old, new):
            self.assertEqual(len(old), len(new))
            self.assertIn(b"<title>" + old + b"</title>", data)
            return data.replace(b"<title>" + old + b"</title>", b"<title>" + new + b"</title>", 1)

        title = self.dump(os.path.join(self.out, "current", "table.sst"))[5][0]
        st = os.stat(base)
        with open(base, "rb") as f:
            data = f.read()
        # Rewritten in place: same inode, size and (restored) mtime.
        data = edit(data, title, b"Q" * len(title))
        with open(base, "r+b") as f:
            f.write(data)
        os.utime(base, ns=(st.st_atime_ns, st.st_mtime_ns))
        after = os.stat(base)
        self.assertEqual((after.st_ino, after.st_size, after.st_mtime_ns),
                         (st.st_ino, st.st_size, st.st_mtime_ns))
        err = night()
        self.assertNotIn("up to date", err, "the rewritten base was taken as unchanged")
        self.assertNotIn(reused, base_line(err))
        keys = [k for k, _ in self.dump(os.path.join(self.out, "current", "table.sst"))]
        self.assertIn(b"Q" * len(title), keys)

        # Replaced by a rename: another inode, the same size and mtime.
        data = edit(data, b"Q" * len(title), b"R" * len(title))
        tmp = os.path.join(self.full, "incoming.part")
        with open(tmp, "wb") as f:
            f.write(data)
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(tmp, base)
        err = night()
        self.assertNotIn(reused, base_line(err))
        keys = [k for k, _ in self.dump(os.path.join(self.out, "current", "table.sst"))]
        self.assertIn(b"R" * len(title), keys)
        self.assertNotIn(b"Q" * len(title), keys)

        # Touched, the content the same: hashed again (and recorded, being
        # old enough by then), up to date; the next night reuses it.
        os.utime(base)
        wait_older(base)
        err = night()
        self.assertNotIn(reused, base_line(err))
        self.assertIn("up to date", err)
        err = night()
        self.assertIn(reused, base_line(err))
        self.assertIn("up to date", err)

    def test_file_without_date_refused(self):
        self.arrive("20261201")
        self.assertExit(self.nightly(), 0)
        before = self.current()
        undated = os.path.join(self.incr, "enwiki-latest-pages-meta-hist-incr.xml.bz2")
        shutil.copy(os.path.join(self.made, INCR.format("20261202")), undated)
        p = self.nightly()
        self.assertExit(p, 1)
        self.assertIn(f"{undated}: no date (YYYYMMDD) in the file name", p.stderr.decode())
        self.assertEqual(self.current(), before)
        (failed,) = os.listdir(os.path.join(self.out, "failed"))
        self.assertEqual(self.manifest("failed/" + failed)["failed_stage"], "input")
        # A base without a date is refused the same way.
        os.unlink(undated)
        undated = os.path.join(self.full, "enwiki-latest-pages-articles.xml.bz2")
        shutil.copy(self.base, undated)
        p = self.nightly()
        self.assertExit(p, 1)
        self.assertIn(f"{undated}: no date (YYYYMMDD) in the file name", p.stderr.decode())
        self.assertEqual(self.current(), before)

    def test_two_files_one_day_refused(self):
        self.arrive("20261201")
        shutil.copy(os.path.join(self.made, INCR.format("20261201")),
                    os.path.join(self.incr, INCR.format("mirror-20261201")))
        p = self.nightly()
        self.assertExit(p, 1)
        self.assertIn("are both dated 20261201", p.stderr.decode())
        self.assertFalse(os.path.lexists(os.path.join(self.out, "current")))


if __name__ == "__main__":
    unittest.main()
