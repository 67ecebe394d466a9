"""test_report.py: the nightly's HTML pages, checked in a real browser.

Nightly runs over generated dumps and a real corpus (one of them made to
fail verify: a byte of its staged table flipped while the fault shim holds
verify's open of it), whose input names hold '<', '&', markup and
non-ASCII, leave report.html in every build directory and index.html in
[output] dir. Each page:

- is valid HTML5 by Debian's `tidy` (no error, no warning);
- loads from disk in headless Chromium, which takes a screenshot (kept under
  the build tree, test-artifacts/report/) and dumps the DOM; every figure the
  DOM shows (the elements tagged data-field) equals the manifest's, and the
  names render as text, never as elements;
- makes no request: Chromium runs with its proxy pointed at a listening
  socket of this test that records every request (direct DNS refused, so
  nothing goes around it). Chromium itself asks its own services (update,
  time, accounts) whatever the page; those hosts are learnt from a run on
  about:blank and set aside, and any other request fails the test. A
  control page with one remote image must reach the proxy, so the check is
  shown able to fail. The page text also names no http(s) URL other than
  the SVG namespace, and has no script, link, img, iframe, @import or
  url(), so no request to any host, Chromium's own included, can come from
  it.

`sstpipe serve NIGHTLY_DIR` serves index.html at /index.html (linked from
the search page at /) and every report its links name, byte for byte, and
answers 404 to everything else: the table, manifests and logs, "..",
encoded "..", a build that is a symlink to /, a report that is a symlink to
a file outside, a missing build.

Also: a failed build's report shows the failure (stage, error, verify's
problem); `sstpipe report DIR` rewrites the same bytes, sweeping the
temporary files of dead page writers (never a live one's); a bad manifest is
named with its line and column, its page skipped, the others written; an
index that cannot be written is a warning and the build is still published.

Skipped (exit 77 through tests/skip_status) only when chromium is absent;
pipeline/install-deps installs it (and tidy) on CI.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import contextlib
import glob
import html.parser
import json
import math
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import unittest
import urllib.parse
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import temp_leftovers  # noqa: E402
from serve_client import Server  # noqa: E402
from sstpipe_e2e import (E2ETest, assert_manifest_measures, corpora_dir, sstpipe,  # noqa: E402
                         parse_info, wikigen)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-headless-shell")
PATIENCE = 300  # seconds one browser run may take, however loaded the machine

# Input names people would not type, which a page must show as text.
NAMES = ["a<b>&amp;é.xml.zst", "Ünïcode & <i>x.xml.zst", "plain.xml.zst"]


class Dom(html.parser.HTMLParser):
    """The dumped DOM: every data-field's text, the elements seen, the title."""

    def __init__(self):
        super().__init__()
        self.fields = {}   # name -> [texts]
        self.shown = {}    # name -> [what the page shows of it]
        self.text = ""     # the page's whole text
        self.tags = {}     # tag -> count
        self.title = ""
        self.rows = {}     # data-build -> {field: text}
        self.stack = []    # open data-field spans: [name, text, empty]
        self.row = None
        self.in_title = False
        self.charts = []   # per <svg>: {"title": aria-label, class: [texts]}
        self.chart_text = None  # [class, text] of an open tick or legend <text>

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "svg":
            self.charts.append({"title": a.get("aria-label")})
        if tag == "text" and a.get("class") in ("tick-x", "tick-y", "legend"):
            self.chart_text = [a["class"], ""]
        if tag == "tspan" and self.chart_text and self.chart_text[1]:
            self.chart_text[1] += " "
        if tag == "title":
            self.in_title = True
        if tag == "tr" and "data-build" in a:
            self.row = self.rows.setdefault(a["data-build"], {})
        if "data-field" in a and tag == "span":
            self.stack.append([a["data-field"], "", "data-empty" in a, a.get("data-value")])
        if tag == "text" and a.get("class") == "mark":
            self.charts[-1].setdefault("mark_y", []).append(float(a["y"]))
        if tag == "rect" and "x" in a and "fill" not in a and self.charts:
            self.charts[-1].setdefault("bar_y", []).append(float(a["y"]))

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        if tag == "text" and self.chart_text:
            self.charts[-1].setdefault(self.chart_text[0], []).append(self.chart_text[1])
            self.chart_text = None
        if tag == "tr":
            self.row = None
        if tag == "span" and self.stack:
            name, text, empty, value = self.stack.pop()
            # The manifest's value: data-value where the text is the figure
            # as a person reads it (kept in shown).
            self.shown.setdefault(name, []).append(text)
            text = "" if empty else text if value is None else value
            self.fields.setdefault(name, []).append(text)
            if self.row is not None:
                self.row[name] = text

    def handle_data(self, data):
        self.text += data
        if self.in_title:
            self.title += data
        if self.chart_text:
            self.chart_text[1] += data
        for s in self.stack:
            s[1] += data


class RecordingProxy:
    """A listening socket on 127.0.0.1 that records each connection (its
    first line) and closes it: the proxy Chromium is given."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.seen = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            c.settimeout(5)
            try:
                self.seen.append(c.recv(4096).split(b"\r\n", 1)[0].decode("latin-1"))
            except OSError:
                self.seen.append("(connection, nothing read)")
            c.close()

    def hosts(self, since=0):
        """The hosts of the requests seen from index since: "GET http://h/..."
        or "CONNECT h:443 ..."."""
        out = []
        for line in self.seen[since:]:
            m = re.match(r"^[A-Z]+ (?:[a-z]+://)?([^/:\s]+)", line)
            out.append(m.group(1) if m else line)
        return out

    def close(self):
        self.stop.set()
        self.thread.join(10)
        self.sock.close()


def png_rows(path, max_rows=None):
    """The pixels of an 8-bit RGB or RGBA PNG (what Chromium writes), its
    first max_rows rows (unfiltering in Python is slow): its width, its
    channels and the rows, each a bytes of width * channels."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and not interlace, (depth, colour)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    ch = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * ch, [], bytearray(w * ch)
    for y in range(min(h, max_rows or h)):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b, c = prev[i], prev[i - ch] if i >= ch else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, ch, rows


def pixel_rows(path, *is_colour, max_rows=None):
    """Per colour test is_colour(r, g, b), per row of the screenshot, how
    many pixels it takes (the PNG decoded once for them all)."""
    w, ch, rows = png_rows(path, max_rows)
    return [[sum(1 for i in range(0, w * ch, ch) if test(r[i], r[i + 1], r[i + 2]))
             for r in rows] for test in is_colour]


def artifacts_dir():
    base = os.environ.get("SSTPIPE_BUILD_DIR") or tempfile.gettempdir()
    d = os.path.join(base, "test-artifacts", "report")
    os.makedirs(d, exist_ok=True)
    return d


def as_number(text):
    return float(text)


class ReportTest(E2ETest):
    @classmethod
    def setUpClass(cls):
        if not CHROMIUM:
            raise unittest.SkipTest("chromium is not installed (pipeline/install-deps installs it)")
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-report-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.proxy = RecordingProxy()
        cls.addClassCleanup(cls.proxy.close)
        cls.own_hosts = None  # Chromium's own, from a run on about:blank
        cls.out = os.path.join(cls.classtmp, "out")
        cls.ini = os.path.join(cls.classtmp, "nightly.ini")
        with open(cls.ini, "w") as f:
            f.write(f"[output]\ndir = {cls.out}\nkeep = 10\n[profile]\nlookups = 300\n"
                    "[sort]\nmemory = 1M\n")
        cls.runs = []
        cls.run_inputs = []  # (the dump's real path, whether it was made to fail), per run
        dumps = [wikigen(os.path.join(cls.classtmp, n), size, seed, "zst")
                 for n, size, seed in zip(NAMES, ["1M", "2M", "3M"], ["41", "42", "43"])]
        corpus = os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2")
        # Each dump's plain build, its peak measured from outside: the
        # least the nightly that builds it in its own process must record.
        cls.build_peaks = {}
        for dump in dumps + [corpus]:
            r = sstpipe("build", dump, "-o", os.path.join(cls.classtmp, "peak.sst"), "--memory",
                        "1M", measure_rss=True)
            assert r.code == 0, r.describe()
            cls.build_peaks[os.path.realpath(dump)] = r.maxrss_kib * 1024
        # Four published nights and one refused by verify, in run order.
        for dump, corrupt in [(dumps[0], None), (dumps[1], None), (corpus, None),
                              (dumps[1], 5000), (dumps[2], None)]:
            # Made to fail: verify's first open of the staged table (the
            # third open of an existing file under out, after the
            # directory's fsyncs for the title index and the table) is held
            # while one byte of the table is flipped.
            held = faultlib.Held("open_read:3", cls.out,
                                 lambda path, at=corrupt: faultlib.flip_byte(path, at)) \
                if corrupt else None
            saved = dict(os.environ)
            with held or contextlib.nullcontext():
                if held:
                    os.environ.update(held.env)
                try:
                    cls.runs.append(sstpipe("nightly", "-c", cls.ini, dump, measure_rss=True))
                    cls.run_inputs.append((os.path.realpath(dump), corrupt is not None))
                finally:
                    os.environ.clear()
                    os.environ.update(saved)
            if held:
                assert re.search(r"/\.staging-[^/]+/table\.sst$", held.path), held.path

    # ------------------------------------------------------------ helpers

    def builds(self):
        return sorted(glob.glob(os.path.join(self.out, "builds", "*")) +
                      glob.glob(os.path.join(self.out, "failed", "*")))

    def manifest(self, build):
        with open(os.path.join(build, "manifest.json")) as f:
            return json.load(f)

    def run_of(self, m):
        """The run (its outside measures) that made the build of manifest m."""
        key = (m["input"]["path"], m["status"] != "published")
        self.assertEqual(self.run_inputs.count(key), 1, key)
        return self.runs[self.run_inputs.index(key)]

    def pages(self):
        return [os.path.join(b, "report.html") for b in self.builds()] + \
               [os.path.join(self.out, "index.html")]

    def chromium_own_hosts(self):
        if ReportTest.own_hosts is None:
            since = len(self.proxy.seen)
            self.browse(None, "about-blank")
            ReportTest.own_hosts = set(self.proxy.hosts(since))
        return ReportTest.own_hosts

    def page_requests(self, since):
        """What reached the proxy from index since, less Chromium's own."""
        own = self.chromium_own_hosts()
        # A connection that sent no request line is Chromium opening a
        # spare connection to its proxy ahead of need: it names no host.
        return [line for line, h in zip(self.proxy.seen[since:], self.proxy.hosts(since))
                if h not in own and line not in ("", "(connection, nothing read)")]

    def browse(self, page, shot_name, window="1280,4000"):
        """Loads page (None: about:blank) from disk in Chromium; returns the
        dumped DOM (text). The screenshot is kept in the build tree."""
        shot = os.path.join(artifacts_dir(), shot_name + ".png")
        if os.path.exists(shot):
            os.unlink(shot)
        profile = tempfile.mkdtemp(prefix="chromium-", dir=self.tmp)
        url = "file://" + urllib.parse.quote(os.path.abspath(page)) if page else "about:blank"
        argv = [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox",
                f"--user-data-dir={profile}",
                f"--proxy-server=http://127.0.0.1:{self.proxy.port}",
                "--proxy-bypass-list=<-loopback>",
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-default-apps",
                # Chromium's own fetch of optimization hints, which came at
                # a page's load on a loaded machine, not at about:blank's.
                "--disable-features=OptimizationHints,OptimizationHintsFetching,"
                "OptimizationGuideModelDownloading,OptimizationTargetPrediction",
                f"--window-size={window}", f"--screenshot={shot}", "--dump-dom", url]
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=PATIENCE, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, f"chromium failed on {page}: {p.stderr[-2000:]!r}")
        self.assertTrue(os.path.getsize(shot) > 1000, f"no screenshot of {page}")
        return p.stdout.decode("utf-8")

    def parse(self, text):
        d = Dom()
        d.feed(text)
        d.close()
        return d

    def field(self, dom, name):
        self.assertIn(name, dom.fields, f"the page shows no {name}")
        return dom.fields[name][0]

    def assertShown(self, dom, name, value, what):
        """The DOM's figure for name equals the manifest's value."""
        text = self.field(dom, name)
        if isinstance(value, bool):
            self.assertEqual(text, "true" if value else "false", f"{what}: {name}")
        elif isinstance(value, int):
            self.assertEqual(text, str(value), f"{what}: {name}")
        elif isinstance(value, float):
            self.assertTrue(math.isclose(as_number(text), value, rel_tol=1e-5, abs_tol=1e-9),
                            f"{what}: {name} shows {text}, the manifest has {value}")
        elif value is None:
            self.assertEqual(text, "", f"{what}: {name}")
        else:
            self.assertEqual(text, value, f"{what}: {name}")

    def assertHistogramsDrawn(self, charts):
        """Each page's latency chart as Chromium draws it: bars and the
        percentiles' labels on the screenshot, every label row (a row of
        many red pixels; a dashed percentile line is one or two a row)
        above the topmost bar pixel, so no label is drawn over a bar.
        charts: (page, what) of each; the charts are drawn one under
        another in one page, each in a band of its own window's size."""
        band = 520
        svgs = []
        for page, _ in charts:
            with open(page, encoding="utf-8") as f:
                svg = re.findall(r"<svg.*?</svg>", f.read(), re.S)[1]
            svgs.append(f"<div style=\"height:{band}px;overflow:hidden\">{svg}</div>")
        alone = os.path.join(self.tmp, "histograms.html")
        with open(alone, "w", encoding="utf-8") as f:
            f.write("<!DOCTYPE html><html><body style=\"margin:0;overflow:hidden\">" +
                    "".join(svgs) + "</body></html>")
        self.browse(alone, "report-histograms", window=f"900,{band * len(charts)}")
        shot = os.path.join(artifacts_dir(), "report-histograms.png")
        bars, reds = pixel_rows(
            shot, lambda r, g, b: abs(r - 0x7a) + abs(g - 0xa6) + abs(b - 0xd6) < 12,
            lambda r, g, b: r > 150 and g < 110 and b < 100)
        for k, (_, what) in enumerate(charts):
            bar, red = bars[k * band:(k + 1) * band], reds[k * band:(k + 1) * band]
            bar_rows = [y for y, n in enumerate(bar) if n]
            label_rows = [y for y, n in enumerate(red) if n >= 6]
            self.assertTrue(bar_rows, f"{what}: no bar on the screenshot")
            self.assertTrue(label_rows, f"{what}: no percentile label on the screenshot")
            self.assertLess(max(label_rows), min(bar_rows), f"{what}: a label over the bars")

    def assertPeopleFigures(self, dom, m, what):
        """What report.html shows people: no exponent or long fraction, a
        stage's figures in units, a rate where bytes moved, a size key in
        MiB, the JSON names not as headers, the version once, and no
        [cluster] keys on a plain build."""
        body = dom.text
        self.assertIsNone(re.search(r"\de-\d|\d\.\d{5}", " ".join(
            t for name, ts in dom.shown.items() if name.startswith("stages.") for t in ts)), what)
        self.assertNotIn("p99_9", body, what)
        for s in m["stages"]:
            wall = dom.shown[f"stages.{s['name']}.wall_seconds"][0]
            self.assertRegex(wall, r"^\d{1,3}(\.\d{1,2})? (ns|us|ms|s)$", what)
            rate = dom.shown[f"stages.{s['name']}.mb_per_s"][0]
            if max(s["bytes_in"], s["bytes_out"]) > 0:
                self.assertRegex(rate, r"^\d", f"{what}: {s['name']} shows MB/s {rate}")
                self.assertGreater(float(rate), 0, f"{what}: {s['name']} shows MB/s {rate}")
            else:
                self.assertEqual(rate, "-", what)
            if s["bytes_in"] == 0:
                self.assertEqual(dom.shown[f"stages.{s['name']}.bytes_in"][0], "-", what)
        self.assertEqual(dom.shown["config.sort.memory"][0], "1 MiB", what)
        self.assertEqual(dom.shown["config.sst.block_size"][0], "8 KiB", what)
        self.assertFalse([f for f in dom.fields if f.startswith("config.cluster.")], what)
        self.assertEqual(body.count(m["sstpipe_version"]), 1, what)

    def assertRoundAxis(self, chart):
        """A trend chart's y ticks: 0, s, 2s, ... with s 1, 2 or 5 times a
        power of ten, every label distinct and in the one unit; its date
        labels distinct."""
        what = chart["title"]
        ticks = chart.get("tick-y", [])
        self.assertGreaterEqual(len(ticks), 2, what)
        self.assertEqual(len(set(ticks)), len(ticks), f"{what}: ticks alike: {ticks}")
        parsed = [re.fullmatch(r"(\d+(?:\.\d+)?)(\s?[A-Za-z]*)", t) for t in ticks]
        self.assertTrue(all(parsed), f"{what}: ticks not a number and a unit: {ticks}")
        self.assertEqual(len({m.group(2) for m in parsed}), 1, f"{what}: units: {ticks}")
        values = [float(m.group(1)) for m in parsed]
        step = values[1]
        mantissa = step / 10 ** math.floor(math.log10(step))
        self.assertTrue(any(math.isclose(mantissa, r) for r in (1, 2, 5)),
                        f"{what}: step {step} is not 1, 2 or 5 times a power of ten: {ticks}")
        for k, v in enumerate(values):
            self.assertTrue(math.isclose(v, k * step, abs_tol=step * 1e-9), f"{what}: {ticks}")
        dates = chart.get("tick-x", [])
        self.assertEqual(len(set(dates)), len(dates), f"{what}: date labels alike: {dates}")
        for d in dates:
            self.assertRegex(d, r"^\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d( \(\d+\))?)?$", what)

    def assertSelfContained(self, page):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        urls = set(re.findall(r"https?://[^\s\"'<>)]*", text))
        self.assertLessEqual(urls, {"http://www.w3.org/2000/svg"}, f"{page} names URLs")
        for bad in ["<script", "<link", "<img", "<iframe", "<object", "<embed", "@import",
                    "url("]:
            self.assertNotIn(bad, text.lower(), f"{page} loads something: {bad}")

    # ------------------------------------------------------------ tests

    def test_runs_published_and_failed(self):
        codes = [r.code for r in self.runs]
        self.assertEqual(codes, [0, 0, 0, 3, 0], "\n".join(r.describe() for r in self.runs))
        self.assertEqual(len(glob.glob(os.path.join(self.out, "builds", "*"))), 4)
        self.assertEqual(len(glob.glob(os.path.join(self.out, "failed", "*"))), 1)
        self.assertEqual(temp_leftovers(self.out), [])
        for r in self.runs:
            self.assertNotIn("report not written", r.stderr.decode(), r.describe())

    def test_pages_are_valid_html5(self):
        tidy = shutil.which("tidy")
        self.assertIsNotNone(tidy, "tidy is not installed (pipeline/install-deps installs it)")
        for page in self.pages():
            p = subprocess.run([tidy, "-q", "-e", "--show-warnings", "yes", page],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual((p.returncode, p.stderr.decode()), (0, ""), f"tidy on {page}")

    def test_reports_in_chromium(self):
        since = len(self.proxy.seen)
        charts = []  # (page, what) of each latency chart, drawn at the end
        for i, build in enumerate(self.builds()):
            m = self.manifest(build)
            page = os.path.join(build, "report.html")
            self.assertSelfContained(page)
            dom = self.parse(self.browse(page, f"report-{i}-{m['status']}"))
            what = m["build_dir"]
            # The name renders as text: the title is the manifest's name, and
            # the markup in the input names made no element.
            self.assertEqual(dom.title, f"sstpipe nightly: {m['build_dir']} ({m['status']})")
            self.assertNotIn("b", dom.tags, what)
            self.assertNotIn("i", dom.tags, what)
            self.assertShown(dom, "build_dir", m["build_dir"], what)
            for k in ["status", "exit_code", "started_at", "finished_at", "wall_seconds",
                      "host", "pid", "peak_rss_bytes", "sstpipe_version"]:
                self.assertShown(dom, k, m[k], what)
            for k in ["path", "size", "mtime", "xxh3_64", "compressed"]:
                self.assertShown(dom, "input." + k, m["input"][k], what)
            for s in m["stages"]:
                for k in ["wall_seconds", "cpu_seconds", "bytes_in", "bytes_out", "mb_per_s"]:
                    self.assertShown(dom, f"stages.{s['name']}.{k}", s[k], what)
                for k in ["records_in", "records_out"]:
                    if s[k] is not None:
                        self.assertShown(dom, f"stages.{s['name']}.{k}", s[k], what)
            # The page's own figures against the run's outside measures,
            # not against the manifest they were made from.
            shown = {"wall_seconds": as_number(self.field(dom, "wall_seconds")),
                     "peak_rss_bytes": int(self.field(dom, "peak_rss_bytes"))}
            stages = [{"name": n, "wall_seconds": as_number(
                self.field(dom, f"stages.{n}.wall_seconds"))} for n in
                [s["name"] for s in m["stages"]]]
            assert_manifest_measures(self, shown, self.run_of(m), stages,
                                     peak=self.build_peaks[m["input"]["path"]])
            self.assertEqual(int(self.field(dom, "input.size")),
                             os.path.getsize(m["input"]["path"]), what)
            for k in m["counts"]:
                if k not in ("input_bytes",):
                    self.assertShown(dom, "counts." + k, m["counts"][k], what)
            for section, keys in m["config"].items():
                for key, e in keys.items():
                    # A plain build's page leaves out [cluster], all defaults.
                    if section != "cluster":
                        self.assertShown(dom, f"config.{section}.{key}", e["value"], what)
            v = m["verify"]
            self.assertShown(dom, "verify.problem_count", v["problem_count"], what)
            self.assertShown(dom, "verify.records", v["records"], what)
            self.assertShown(dom, "verify.blocks", v["blocks"], what)
            self.assertPeopleFigures(dom, m, what)
            if m["status"] == "published":
                t = m["sstable"]
                for k in t:
                    self.assertShown(dom, "sstable." + k, t[k], what)
                self.assertEqual(int(self.field(dom, "sstable.file_size")),
                                 os.path.getsize(os.path.join(build, t["file"])), what)
                self.assertShown(dom, "compactness",
                                 (t["key_bytes"] + t["value_bytes"]) / t["file_size"], what)
                # Bytes per record and the compression ratio against info's
                # figures of the same table, not the manifest's.
                info = parse_info(self, os.path.join(build, t["file"]))
                for k in ("bytes_per_record", "compression_ratio"):
                    self.assertTrue(math.isclose(as_number(self.field(dom, "sstable." + k)),
                                                 info[k], rel_tol=1e-5), f"{what}: {k}")
                p = m["profile"]
                for k in ["lookups", "mode", "threads", "queue_depth"]:
                    self.assertShown(dom, "profile." + k, p[k], what)
                for k, ns in p["latency_ns"].items():
                    self.assertShown(dom, "profile.latency_ns." + k, ns, what)
                # The stage bars and the latency histogram + CDF, inline: the
                # histogram's count ticks round, the percentiles' labels
                # above every bar.
                self.assertEqual(dom.tags.get("svg"), 2, what)
                hist = dom.charts[1]
                self.assertRoundAxis(hist)
                self.assertEqual(len(hist["mark_y"]), 4, what)
                self.assertLess(max(hist["mark_y"]), min(hist["bar_y"]), what)
                charts.append((page, what))
                self.assertShown(dom, "verify.ok", "clean", what)
            else:
                self.assertShown(dom, "failed_stage", "verify", what)
                self.assertShown(dom, "error", m["error"], what)
                self.assertShown(dom, "verify.ok", "problems found", what)
                self.assertIn("block checksum mismatch", m["error"])
        self.assertHistogramsDrawn(charts)
        self.assertEqual(self.page_requests(since), [], "a page made a request")

    def test_index_in_chromium(self):
        since = len(self.proxy.seen)
        page = os.path.join(self.out, "index.html")
        self.assertSelfContained(page)
        dom = self.parse(self.browse(page, "index"))
        builds = self.builds()
        self.assertShown(dom, "builds", len(builds), "index")
        rel = [os.path.relpath(b, self.out) for b in builds]
        self.assertEqual(sorted(dom.rows), sorted(rel))
        # Newest first: the row order is the names' time order, reversed.
        order = [b for b in re.findall(r'data-build="([^"]*)"', open(page).read())]
        stamps = [html.unescape(b).split("/", 1)[1] for b in order]
        self.assertEqual(stamps, sorted(stamps, reverse=True))
        for b, r in zip(builds, rel):
            m = self.manifest(b)
            row = dom.rows[r]
            self.assertEqual(row["status"], m["status"], r)
            self.assertEqual(row["started_at"], m["started_at"], r)
            self.assertEqual(row["input"], os.path.basename(m["input"]["path"]), r)
            if m["status"] == "published":
                self.assertEqual(row["records"], str(m["sstable"]["records"]), r)
                self.assertEqual(row["file_size"], str(m["sstable"]["file_size"]), r)
                info = parse_info(self, os.path.join(b, m["sstable"]["file"]))
                for k in ("bytes_per_record", "compression_ratio"):
                    self.assertTrue(math.isclose(as_number(row[k]), info[k], rel_tol=1e-5),
                                    f"{r}: {k}")
                build_s = sum(s["wall_seconds"] for s in m["stages"]
                              if s["name"] in ("read", "write", "merge"))
                self.assertTrue(math.isclose(float(row["build_seconds"]), build_s,
                                             abs_tol=0.0015), r)
                mode = m["profile"]["mode"]
                self.assertEqual(row[f"p50_{mode}_ns"], str(m["profile"]["latency_ns"]["p50"]))
                self.assertEqual(row[f"p99_{mode}_ns"], str(m["profile"]["latency_ns"]["p99"]))
            else:
                # The table that failed verify, as the manifest has it.
                t = m["sstable"] or {}
                self.assertEqual(row.get("records"), str(t["records"]) if t else None, r)
        # Four trend charts: records, size, build time, latency; each with
        # round ticks in one unit, and a legend entry only for a series
        # that has a value (the profiles here are warm: no cold latency).
        self.assertEqual(dom.tags.get("svg"), 4)
        self.assertEqual([c["title"] for c in dom.charts],
                         ["records", "table size", "build time", "lookup latency"])
        for chart in dom.charts:
            self.assertRoundAxis(chart)
        self.assertEqual(dom.charts[3].get("legend"), ["p50 warm", "p99 warm"])
        self.assertRegex(dom.charts[1]["tick-y"][1], r" (bytes|KiB|MiB)$")
        # Each row links to its report, which exists beside it.
        for href in re.findall(r'href="([^"]*)"', open(page).read()):
            target = os.path.join(self.out, urllib.parse.unquote(html.unescape(href)))
            self.assertTrue(os.path.isfile(target), href)
        self.assertEqual(self.page_requests(since), [], "the index made a request")

    def test_request_check_can_fail(self):
        """The control: a page with one remote image reaches the proxy."""
        page = self.write_file("control.html", (
            "<!DOCTYPE html><html><head><title>c</title></head><body>"
            "<img src=\"http://example.invalid/x.png\" alt=\"x\"></body></html>").encode())
        since = len(self.proxy.seen)
        self.browse(page, "control")
        self.assertEqual(self.page_requests(since), ["GET http://example.invalid/x.png HTTP/1.1"])

    def test_report_command_rewrites_the_same_pages(self):
        copy = self.path("copy")
        shutil.copytree(self.out, copy, symlinks=True)
        before = {}
        for p in glob.glob(os.path.join(copy, "*", "*", "report.html")) + \
                [os.path.join(copy, "index.html")]:
            with open(p, "rb") as f:
                before[p] = f.read()
            os.unlink(p)
        r = sstpipe("report", copy)
        self.assertEqual(r.code, 0, r.describe())
        self.assertIn(f"wrote {copy}/index.html (5 builds) and 5 report.html", r.stdout.decode())
        for p, data in before.items():
            with open(p, "rb") as f:
                got = f.read()
            # The same bytes; only the index names the directory it is in.
            if p.endswith("index.html"):
                data = data.replace(self.out.encode(), copy.encode())
            self.assertEqual(got, data, p)
        self.assertEqual(temp_leftovers(copy), [])

    def test_report_command_sweeps_only_dead_writers_temporaries(self):
        """A page's temporary file is swept as every publish's: this host's
        whose writer is gone, never a live writer's."""
        copy = self.path("sweep")
        shutil.copytree(self.out, copy, symlinks=True)
        host = socket.gethostname().replace("/", "_").replace("-", "_")
        gone = subprocess.Popen(["true"])
        gone.wait()
        build = sorted(glob.glob(os.path.join(copy, "builds", "*")))[0]
        dead = [os.path.join(copy, f"index.html.tmp.{host}-{gone.pid}.a1b2c3"),
                os.path.join(build, f"report.html.tmp.{host}-{gone.pid}.d4e5f6")]
        live = os.path.join(copy, f"index.html.tmp.{host}-{os.getpid()}.g7h8i9")
        for p in dead + [live]:
            with open(p, "wb") as f:
                f.write(b"<html")
        r = sstpipe("report", copy)
        self.assertEqual(r.code, 0, r.describe())
        self.assertEqual([p for p in dead if os.path.exists(p)], [])
        self.assertTrue(os.path.exists(live), "a live writer's temporary file was removed")

    def test_report_command_errors(self):
        r = sstpipe("report", self.path("nothing"))
        self.assertEqual(r.code, 1, r.describe())
        self.assertEqual(r.stderr.decode().strip(),
                         f"sstpipe: {self.path('nothing')}: not a nightly output directory "
                         "(no builds/ or failed/)")
        r = sstpipe("report")
        self.assertEqual(r.code, 2, r.describe())
        copy = self.path("copy")
        shutil.copytree(self.out, copy, symlinks=True)
        bad = sorted(glob.glob(os.path.join(copy, "builds", "*")))[0]
        with open(os.path.join(bad, "manifest.json"), "r+b") as f:
            f.truncate(100)
        os.unlink(os.path.join(bad, "report.html"))
        r = sstpipe("report", copy)
        self.assertEqual(r.code, 1, r.describe())
        lines = r.stderr.decode().strip().splitlines()
        self.assertEqual(len(lines), 1, r.describe())
        self.assertRegex(lines[0], r"^sstpipe: " + re.escape(bad) +
                         r"/manifest\.json: line \d+, column \d+: ")
        self.assertFalse(os.path.exists(os.path.join(bad, "report.html")))
        self.assertIn("(5 builds) and 4 report.html", r.stdout.decode())
        with open(os.path.join(copy, "index.html"), encoding="utf-8") as f:
            self.assertIn("manifest unreadable: ", f.read())

    def test_page_failure_does_not_fail_the_build(self):
        out = self.path("out2")
        os.makedirs(os.path.join(out, "index.html"))  # the index cannot be written
        ini = self.write_file("n2.ini", f"[output]\ndir = {out}\n[profile]\nlookups = 20\n"
                              .encode())
        dump = glob.glob(os.path.join(self.classtmp, "plain.xml.zst"))[0]
        r = sstpipe("nightly", "-c", ini, dump)
        self.assertEqual(r.code, 0, r.describe())
        self.assertRegex(r.stderr.decode(), r"nightly: warning: report not written: " +
                         re.escape(out) + r"/index\.html: .*Is a directory")
        self.assertTrue(os.path.exists(os.path.join(out, "current", "table.sst")))
        self.assertTrue(os.path.exists(os.path.join(out, "current", "report.html")))
        self.assertEqual(temp_leftovers(out), [])

    def test_serve_pages(self):
        """`sstpipe serve NIGHTLY_DIR` serves index.html at /index.html, which
        the search page at / links, and each report beside it, read-only,
        and nothing else of the directory."""
        copy = self.path("served")
        shutil.copytree(self.out, copy, symlinks=True)
        one = sorted(glob.glob(os.path.join(copy, "builds", "*")))[0]
        name = os.path.basename(one)
        # Ways out of the directory a request might try: a build that is a
        # link to /, a report that is a link to a file outside.
        os.symlink("/", os.path.join(copy, "builds", "20990101T000000Z-evil"))
        os.makedirs(os.path.join(copy, "failed", "20990101T000000Z-link"))
        secret = self.write_file("secret.html", b"<p>CONTENT-OUTSIDE</p>")
        os.symlink(secret, os.path.join(copy, "failed", "20990101T000000Z-link", "report.html"))
        os.symlink(secret, os.path.join(copy, "failed", "20990101T000000Z-link", "nightly.log"))
        os.makedirs(os.path.join(copy, "builds", name, "sub"))
        shutil.copyfile(os.path.join(one, "nightly.log"),
                        os.path.join(copy, "builds", name, "sub", "nightly.log"))
        shutil.copyfile(os.path.join(one, "nightly.log"), os.path.join(copy, "nightly.log"))
        srv = Server(copy).start(self.path("serve.err"))
        self.addCleanup(srv.kill)
        c = srv.client()
        with open(os.path.join(copy, "index.html"), "rb") as f:
            index = f.read()
        status, headers, body = c.request("/index.html")
        self.assertEqual((status, headers["content-type"], body),
                         (200, "text/html; charset=utf-8", index))
        # / is the search page (test_search_page.py), which links the index.
        status, headers, body = c.request("/")
        self.assertEqual((status, headers["content-type"]), (200, "text/html; charset=utf-8"))
        self.assertIn(b'<a href="/index.html">Nightly reports</a>', body)
        # Every link of the index, as the index writes it, is its report.
        links = re.findall(r'href="([^"]*)"', index.decode())
        self.assertEqual(len(links), 5)
        for href in links:
            status, _, body = c.request("/" + html.unescape(href))
            with open(os.path.join(copy, urllib.parse.unquote(html.unescape(href))), "rb") as f:
                self.assertEqual((status, body), (200, f.read()), href)
        # Every link of every report is its log (text) or the index, and
        # a failed run's report links its log too.
        reports = [h for h in links if h.endswith("/report.html")]
        self.assertTrue(any(h.startswith("failed/") for h in reports), reports)
        for href in reports:
            build = os.path.dirname(urllib.parse.unquote(html.unescape(href)))
            with open(os.path.join(copy, build, "report.html"), encoding="utf-8") as f:
                inner = re.findall(r'href="([^"]*)"', f.read())
            self.assertEqual(sorted(inner), ["../../index.html", "nightly.log"], href)
            status, headers, body = c.request("/" + os.path.dirname(html.unescape(href)) +
                                              "/nightly.log")
            with open(os.path.join(copy, build, "nightly.log"), "rb") as f:
                self.assertEqual((status, headers["content-type"], body),
                                 (200, "text/plain; charset=utf-8", f.read()), href)
        status, headers, body = c.request("/", method="HEAD")
        self.assertEqual((status, body), (200, b""))
        status, headers, _ = c.request("/", method="POST", body=b"x")
        self.assertEqual((status, headers.get("allow")), (405, "GET, HEAD"))
        q = urllib.parse.quote(name)
        for path in [f"/builds/{q}/table.sst", f"/builds/{q}/manifest.json",
                     f"/builds/{q}/nightly.log/", f"/builds/{q}/nightly.logx",
                     f"/builds/{q}/sub/nightly.log", f"/builds/{q}/.nightly.log",
                     "/nightly.log", "/current/nightly.log", "/builds/.lock/nightly.log",
                     "/builds/%2E%2E/nightly.log", "/failed/20990101T000000Z-link/nightly.log",
                     f"/builds/{q}/", "/builds/", "/builds",
                     f"/builds/{q}", "/builds/../secret.html", "/builds/..%2F..%2Fsecret.html",
                     f"/builds/{q}/../../../secret.html", "/builds/../../report.html",
                     "/builds/%2E%2E/report.html", "/builds/.lock/report.html",
                     "/builds/20990101T000000Z-evil/report.html",
                     "/builds/20990101T000000Z-evil/etc/passwd",
                     "/failed/20990101T000000Z-link/report.html",
                     "/failed/no-such-build/report.html", "/current/report.html",
                     "/nightly.ini", "/.lock", "/index.html/", "//index.html"]:
            status, _, body = c.request(path)
            self.assertEqual(status, 404, f"{path}: {body[:200]!r}")
            self.assertNotIn(b"CONTENT-OUTSIDE", body, path)
        # The lookups are still there.
        status, _, body = c.request("/healthz")
        self.assertEqual((status, body), (200, b"ok\n"))
        m = c.metrics()
        self.assertGreaterEqual(m['sstpipe_serve_requests_total{endpoint="page",status="200"}'], 8)
        self.assertGreaterEqual(m['sstpipe_serve_requests_total{endpoint="page",status="404"}'], 10)
        c.close()
        self.assertEqual(srv.stop(), 0, srv.stderr())
        # Serving a table file, there are no pages, and the search page
        # links none.
        srv = Server(os.path.join(one, "table.sst")).start(self.path("serve2.err"))
        self.addCleanup(srv.kill)
        c = srv.client()
        status, _, _ = c.request("/index.html")
        self.assertEqual(status, 404)
        status, _, body = c.request("/")
        self.assertEqual(status, 200)
        self.assertNotIn(b"/index.html", body)
        c.close()
        self.assertEqual(srv.stop(), 0, srv.stderr())


if __name__ == "__main__":
    unittest.main()
