"""test_report_incr.py: the HTML pages of a week of incremental nightlies.

A full dump and a week of its generated daily increments (wikigen
--increment-of; one day missing), arriving one a night; one night's
increment is corrupt, so that night fails, and the good file arrives the
night after. Then:

- every page (each build's report.html, index.html) is valid HTML5 by tidy;
- each published report shows, in its incremental section, the base's file
  name and checksum, every increment applied with its file name, date and
  XXH3-64, and the missing day among the gaps, as its manifest has them;
- the failed night's report shows the failure: status, stage and the error,
  naming the corrupt increment;
- the index has one row per kept build, in which the increments applied
  are counted as the manifest has them; Chromium (headless, from disk)
  renders the index and the newest report with the same figures in the DOM.

test_report.py checks every other figure of the pages, their being
self-contained and that no request leaves the machine; this test adds what
only an incremental nightly puts on them. Skipped (exit 77) only when
chromium is absent; pipeline/install-deps installs it.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import html
import html.parser
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import urllib.parse

from sstpipe_e2e import E2ETest, run, sstpipe_bin, wikigen, wikigen_bin
import test_report  # the Dom parser and the Chromium binary (module import: no tests run twice)

BASE_DATE = "20261130"
DAYS = ["20261201", "20261202", "20261203", "20261205", "20261206", "20261207"]  # 1204 missing
BAD_DAY = "20261205"  # arrives cut in half first, whole the night after
INCR = "enwiki-{}-pages-meta-hist-incr.xml.bz2"


class Cells(html.parser.HTMLParser):
    """The text of every element with a data-field (td and span alike)."""

    def __init__(self):
        super().__init__()
        self.fields = {}
        self.stack = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.stack.append((tag, a.get("data-field"), []))

    def handle_endtag(self, tag):
        while self.stack:
            t, name, text = self.stack.pop()
            if name:
                self.fields.setdefault(name, []).append("".join(text))
            if self.stack and text:
                self.stack[-1][2].append("".join(text))
            if t == tag:
                break

    def handle_data(self, data):
        if self.stack:
            self.stack[-1][2].append(data)


def cells(text):
    c = Cells()
    c.feed(text)
    c.close()
    return c.fields


class IncrementalReports(E2ETest):
    @classmethod
    def setUpClass(cls):
        if not test_report.CHROMIUM:
            raise unittest.SkipTest("chromium is not installed (pipeline/install-deps installs it)")
        cls.data = tempfile.mkdtemp(prefix="sstpipe-report-incr-")
        cls.addClassCleanup(shutil.rmtree, cls.data, True)
        full, incr, made = (os.path.join(cls.data, d) for d in ("full", "incr", "made"))
        for d in (full, incr, made):
            os.mkdir(d)
        wikigen(os.path.join(full, f"enwiki-{BASE_DATE}-pages-articles.xml.bz2"), "2M", "8",
                "bz2")
        r = run([wikigen_bin(), "--size", "2M", "--seed", "8", "--increment-of", BASE_DATE,
                 "--days", "7", "--edits", "5", "--format", "bz2", "-o", made])
        assert r.code == 0, r.describe()
        cls.out = os.path.join(cls.data, "out")
        ini = os.path.join(cls.data, "nightly.ini")
        with open(ini, "w") as f:
            f.write(f"[input]\npath = {full}/enwiki-*-pages-articles.xml.bz2\n"
                    f"incremental = {incr}/enwiki-*-pages-meta-hist-incr.xml.bz2\n"
                    f"[sort]\nmemory = 4M\n[output]\ndir = {cls.out}\nkeep = 10\n"
                    "[profile]\nlookups = 50\n")
        # Night by night, what arrives: the corrupt file of BAD_DAY fails
        # its night; the whole one arrives with the next day's.
        nights = [["20261201"], ["20261202"], ["20261203"], ["cut"], [BAD_DAY, "20261206"],
                  ["20261207"]]
        cls.codes = []
        for arrivals in nights:
            for day in arrivals:
                name = INCR.format(BAD_DAY if day == "cut" else day)
                src, dst = os.path.join(made, name), os.path.join(incr, name)
                if day == "cut":
                    with open(src, "rb") as f:
                        whole = f.read()
                    with open(dst, "wb") as f:
                        f.write(whole[: len(whole) // 2])  # cut mid-stream
                else:
                    shutil.copy(src, dst)
            p = subprocess.run([sstpipe_bin(), "nightly", "-c", ini], capture_output=True,
                               timeout=600)
            cls.codes.append(p)

    def builds(self):
        found = []
        for kind in ("builds", "failed"):
            d = os.path.join(self.out, kind)
            found += [os.path.join(d, n) for n in sorted(os.listdir(d))] if os.path.isdir(d) else []
        return found

    def manifest(self, build):
        with open(os.path.join(build, "manifest.json")) as f:
            return json.load(f)

    def page(self, path):
        with open(path, encoding="utf-8") as f:
            return f.read()

    def chromium_dom(self, page):
        profile = tempfile.mkdtemp(prefix="chromium-", dir=self.tmp)
        p = subprocess.run([test_report.CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox",
                            f"--user-data-dir={profile}", "--no-first-run",
                            "--disable-background-networking", "--dump-dom",
                            "file://" + urllib.parse.quote(os.path.abspath(page))],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=test_report.PATIENCE, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, f"chromium on {page}: {p.stderr[-2000:]!r}")
        return p.stdout.decode("utf-8")

    def test_nights(self):
        self.assertEqual([p.returncode for p in self.codes], [0, 0, 0, 1, 0, 0],
                         "\n".join(p.stderr.decode(errors="replace")[-800:] for p in self.codes))

    def test_pages_are_valid_html5(self):
        tidy = shutil.which("tidy")
        self.assertIsNotNone(tidy, "tidy is not installed (pipeline/install-deps installs it)")
        pages = [os.path.join(b, "report.html") for b in self.builds()]
        for page in pages + [os.path.join(self.out, "index.html")]:
            p = subprocess.run([tidy, "-q", "-e", "--show-warnings", "yes", page],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual((p.returncode, p.stderr.decode()), (0, ""), f"tidy on {page}")

    def test_reports_show_base_increments_and_gaps(self):
        published = 0
        for b in self.builds():
            m = self.manifest(b)
            if m["status"] != "published":
                continue
            published += 1
            inc = m["incremental"]
            f = cells(self.page(os.path.join(b, "report.html")))
            base = f["incremental.base"][0]
            self.assertIn(os.path.basename(inc["base"]["path"]), base, b)
            self.assertIn(inc["base"]["xxh3_64"], base, b)
            shown = f["incremental.increments"][0]
            for i in inc["increments"]:
                for part in (os.path.basename(i["path"]), i["date"], i["xxh3_64"]):
                    self.assertIn(part, shown, f"{b}: increment {i['path']}")
            gaps = f["incremental.gaps"][0]
            for g in inc["gaps"]:
                self.assertIn(g if isinstance(g, str) else json.dumps(g), gaps, b)
            if len(inc["increments"]) > 3:
                self.assertTrue(inc["gaps"], f"{b}: the missing day is a gap")
                self.assertIn("2026-12-04", gaps, b)
        self.assertEqual(published, 5)

    def test_failed_night_shows_the_failure(self):
        failed = [b for b in self.builds() if self.manifest(b)["status"] != "published"]
        self.assertEqual(len(failed), 1)
        m = self.manifest(failed[0])
        f = cells(self.page(os.path.join(failed[0], "report.html")))
        self.assertEqual(f["status"][0], m["status"])
        text = self.page(os.path.join(failed[0], "report.html"))
        self.assertIn(INCR.format(BAD_DAY), text, "the page names the corrupt increment")
        self.assertIn(m["failed_stage"], text)
        self.assertTrue(m["error"])
        self.assertIn(html.escape(m["error"], quote=False), text)

    def test_index_counts_increments_in_chromium(self):
        index = os.path.join(self.out, "index.html")
        dom = test_report.Dom()
        dom.feed(self.chromium_dom(index))
        dom.close()
        builds = self.builds()
        self.assertEqual(len(dom.rows), len(builds))
        for b in builds:
            m = self.manifest(b)
            row = dom.rows[os.path.relpath(b, self.out)]
            self.assertEqual(row["status"], m["status"], b)
            n = len(m["incremental"]["increments"]) if m.get("incremental") else 0
            self.assertEqual(row.get("increments"), str(n) if n else None, b)
        newest = max((b for b in builds if self.manifest(b)["status"] == "published"),
                     key=lambda b: self.manifest(b)["started_at"])
        shown = cells(self.chromium_dom(os.path.join(newest, "report.html")))
        for i in self.manifest(newest)["incremental"]["increments"]:
            self.assertIn(i["xxh3_64"], shown["incremental.increments"][0], newest)


if __name__ == "__main__":
    unittest.main()
