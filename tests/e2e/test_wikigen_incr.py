"""test_wikigen_incr.py: `wikigen --increment-of` writes daily increments of a dump it made.

One file a day after the base's date, named like Wikimedia's adds/changes
dumps (WIKI-YYYYMMDD-pages-meta-hist-incr.xml[.bz2|.zst]); each edits pages
of the base (titles it has, with new text) and adds new pages, several
revisions a page, and is the same bytes on every run. Merged into the
base's table (sstpipe merge) the edits replace records and the new pages
add keys: exactly what a build of the base and increments concatenated
gives.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import bz2
import os
import re
import unittest

from sstpipe_e2e import E2ETest, parse_stats, run, sstpipe, wikigen, wikigen_bin
from test_merge import split_dump

TITLE_RE = re.compile(rb"<title>(.*?)</title>")


class IncrementTest(E2ETest):
    def increments(self, outdir, *extra):
        os.makedirs(outdir, exist_ok=True)
        r = run([wikigen_bin(), "--size", "2M", "--seed", "8", "--increment-of", "20261130",
                 "--days", "3", "-o", outdir] + list(extra))
        self.assertEqual(r.code, 0, r.describe())
        return sorted(os.listdir(outdir))

    def test_files_dates_and_content(self):
        base = wikigen(self.path("base.xml"), "2M", "8", "xml")
        names = self.increments(self.path("a"), "--format", "bz2", "--edits", "5")
        self.assertEqual(names, [f"enwiki-{d}-pages-meta-hist-incr.xml.bz2"
                                 for d in ("20261201", "20261202", "20261203")])
        self.assertEqual(self.increments(self.path("b"), "--format", "bz2", "--edits", "5"),
                         names)
        with open(base, "rb") as f:
            head, pages, tail = split_dump(f.read())
        base_titles = set(TITLE_RE.findall(b"".join(pages)))
        incr_pages = []
        for n in names:
            with open(self.path("a", n), "rb") as f, open(self.path("b", n), "rb") as g:
                data = f.read()
                self.assertTrue(data == g.read(), f"{n}: not the same bytes twice")
            _, ps, _ = split_dump(bz2.decompress(data))
            titles = [TITLE_RE.search(p).group(1) for p in ps]
            self.assertTrue(any(t in base_titles for t in titles), f"{n}: edits no base page")
            self.assertTrue(any(t not in base_titles for t in titles), f"{n}: adds no page")
            self.assertTrue(any(p.count(b"<revision>") > 1 for p in ps),
                            f"{n}: no page with several revisions")
            self.assertIn(b"<timestamp>2026-1", ps[0])
            incr_pages += ps
        # Merged into the base's table: the records of the concatenation.
        tables = [self.path("base.sst")]
        self.build(base, tables[0])
        for n in names:
            tables.append(self.path(n + ".sst"))
            self.build(self.path("a", n), tables[-1])
        out = self.path("merged.sst")
        r = sstpipe("merge", "-v", "-o", out, *tables)
        self.assertOk(r)
        self.assertGreater(parse_stats(self, r.stderr, "merge")["replaced"], 0)
        ref = self.path("ref.sst")
        self.build(self.write_file("whole.xml", head + b"".join(pages + incr_pages) + tail), ref)
        self.assertRecordsEqual(self.dump(out), self.dump(ref), "base + 3 increments")

    def test_formats_and_errors(self):
        self.assertEqual(self.increments(self.path("x"), "--days", "1", "--wiki", "frwiki"),
                         ["frwiki-20261201-pages-meta-hist-incr.xml"])
        self.assertEqual(self.increments(self.path("z"), "--days", "1", "--format", "zst"),
                         ["enwiki-20261201-pages-meta-hist-incr.xml.zst"])
        for args in (["--increment-of", "20261131"], ["--increment-of", "2026-11-01"],
                     ["--increment-of", "20261101"]):  # the last one: no -o DIR
            r = run([wikigen_bin(), "--size", "1M"] + args +
                    (["-o", self.tmp] if args[1] != "20261101" else []))
            self.assertEqual(r.code, 2, r.describe())


if __name__ == "__main__":
    unittest.main()
