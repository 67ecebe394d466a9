#!/usr/bin/env python3
"""End-to-end tests of data/wikigen, the synthetic MediaWiki dump generator.

Generates a dump of about 8 MB, parses it with xml.etree and checks the shape
the pipeline's tests and benchmarks rely on (redirect share, namespaces,
Unicode and entities in titles, duplicates, revisions, deleted text, size),
that a seed fixes the bytes, that every compressed format holds exactly the
XML of --format xml, and that data/sample.xml is a valid dump.

Environment: WIKIGEN = the generator binary; SSTPIPE_SOURCE = the source tree
(for data/sample.xml; defaults to this file's ../..).
"""
import bz2
import collections
import hashlib
import io
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET

WIKIGEN = os.environ.get("WIKIGEN", "")
SOURCE = os.environ.get(
    "SSTPIPE_SOURCE", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
NS = "{http://www.mediawiki.org/xml/export-0.11/}"
SIZE = 8 * 1024 * 1024
SEED = 20240607


def wikigen(*args, check=True):
    return subprocess.run([WIKIGEN, *args], capture_output=True, check=check)


def parse_dump(data):
    """Returns (namespaces {key: name}, pages [dict]) of a dump given as bytes."""
    namespaces, pages = {}, []
    for _, el in ET.iterparse(io.BytesIO(data)):
        if el.tag == NS + "namespace":
            namespaces[int(el.get("key"))] = el.text or ""
        elif el.tag == NS + "page":
            revisions = []
            for rev in el.findall(NS + "revision"):
                text = rev.find(NS + "text")
                revisions.append({
                    "id": int(rev.find(NS + "id").text),
                    "deleted": text.get("deleted") == "deleted",
                    "bytes": text.get("bytes"),
                    "text": text.text or "",
                    "model": rev.find(NS + "model").text,
                    "sha1": rev.find(NS + "sha1").text,
                })
            redirect = el.find(NS + "redirect")
            pages.append({
                "title": el.find(NS + "title").text,
                "ns": int(el.find(NS + "ns").text),
                "id": int(el.find(NS + "id").text),
                "redirect": redirect.get("title") if redirect is not None else None,
                "revisions": revisions,
            })
            el.clear()
    return namespaces, pages


def bz2_streams(data):
    """Decompresses concatenated bz2 streams one by one; returns their contents."""
    streams = []
    while data:
        d = bz2.BZ2Decompressor()
        streams.append(d.decompress(data))
        if not d.eof:
            raise AssertionError("truncated bz2 stream")
        data = d.unused_data
    return streams


@unittest.skipUnless(WIKIGEN and os.access(WIKIGEN, os.X_OK), "WIKIGEN is not set to the binary")
class WikigenTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test_wikigen.")
        res = wikigen("--size", str(SIZE), "--seed", str(SEED), "-v")
        cls.xml = res.stdout
        cls.stats = dict(kv.split("=") for kv in res.stderr.decode().split()[1:])
        cls.namespaces, cls.pages = parse_dump(cls.xml)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    # --- shape -----------------------------------------------------------

    def test_size_within_five_percent(self):
        self.assertLess(abs(len(self.xml) - SIZE), SIZE * 0.05)
        self.assertEqual(int(self.stats["xml_bytes"]), len(self.xml))

    def test_header_is_schema_0_11_with_namespaces(self):
        self.assertTrue(self.xml.startswith(
            b'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/"'))
        self.assertTrue(self.xml.endswith(b"</mediawiki>\n"))
        for key, name in {0: "", 1: "Talk", 2: "User", 4: "Wikipedia", 10: "Template",
                          14: "Category"}.items():
            self.assertEqual(self.namespaces.get(key), name)

    def test_redirect_fraction(self):
        redirects = [p for p in self.pages if p["redirect"] is not None]
        share = len(redirects) / len(self.pages)
        self.assertGreaterEqual(share, 0.45)
        self.assertLessEqual(share, 0.65)
        self.assertEqual(len(redirects), int(self.stats["redirects"]))
        for p in redirects:
            if p["revisions"][-1]["deleted"]:
                continue
            text = p["revisions"][-1]["text"]
            self.assertRegex(text, r"^#(REDIRECT|redirect) \[\[")
            # The link names the target of <redirect title=...> (maybe with a #section).
            target = re.match(r"#\w+ \[\[([^\]#]*)", text).group(1)
            self.assertEqual(target, p["redirect"])

    def test_namespaces_match_title_prefixes(self):
        seen = collections.Counter(p["ns"] for p in self.pages)
        self.assertGreaterEqual(len(seen), 5, seen)
        for ns in (0, 1, 2, 4, 10, 14):
            self.assertIn(ns, seen)
        for p in self.pages:
            name = self.namespaces[p["ns"]]
            if name:
                self.assertTrue(p["title"].startswith(name + ":"), p["title"])
            else:
                self.assertNotIn(":", p["title"])

    def test_titles_unicode_entities_and_random_order(self):
        titles = [p["title"] for p in self.pages]
        non_ascii = [t for t in titles if any(ord(c) > 127 for c in t)]
        four_byte = [t for t in titles if any(ord(c) > 0xFFFF for c in t)]
        self.assertGreater(len(non_ascii), len(titles) // 50)
        self.assertTrue(four_byte)
        self.assertTrue([t for t in titles if "&" in t])
        self.assertTrue([t for t in titles if '"' in t])
        self.assertIn(b"&amp;", self.xml)
        self.assertIn(b"&quot;", self.xml)
        # Random, not sorted: about half of neighbouring pairs are in order.
        ordered = sum(a < b for a, b in zip(titles, titles[1:]))
        self.assertLess(abs(ordered / (len(titles) - 1) - 0.5), 0.1)

    def test_titles_unique_except_the_duplicates(self):
        seen, repeats = set(), 0
        for p in self.pages:
            if p["title"] in seen:
                repeats += 1
            seen.add(p["title"])
        self.assertGreater(repeats, 0)
        self.assertEqual(repeats, int(self.stats["duplicates"]))
        # --duplicates 0.5 (the default): about 0.5% of the pages.
        self.assertLess(repeats, len(self.pages) * 0.015)

    def test_no_duplicates_when_asked_for_none(self):
        _, pages = parse_dump(wikigen("--size", "2M", "--seed", "5", "--duplicates", "0").stdout)
        titles = [p["title"] for p in pages]
        self.assertEqual(len(titles), len(set(titles)))
        _, pages = parse_dump(wikigen("--size", "2M", "--seed", "5", "--duplicates", "10").stdout)
        titles = [p["title"] for p in pages]
        self.assertGreater(len(titles) - len(set(titles)), len(titles) * 0.05)

    def test_revisions_deleted_and_text_sizes(self):
        multi = [p for p in self.pages if len(p["revisions"]) > 1]
        self.assertTrue(multi)
        for p in multi:
            ids = [r["id"] for r in p["revisions"]]
            self.assertEqual(ids, sorted(ids))
        self.assertTrue([p for p in self.pages if p["revisions"][-1]["deleted"]])
        for p in self.pages:
            for r in p["revisions"]:
                if r["deleted"]:
                    self.assertIsNone(r["bytes"])
                    self.assertEqual(r["text"], "")
                else:
                    self.assertEqual(int(r["bytes"]), len(r["text"].encode("utf-8")))
                    self.assertRegex(r["sha1"], r"^[0-9a-z]{31}$")
                self.assertIn(r["model"], ("wikitext", "Scribunto"))

    def test_text_lengths_heavy_tailed_with_markup(self):
        lengths = sorted(len(p["revisions"][-1]["text"].encode()) for p in self.pages
                         if p["redirect"] is None and not p["revisions"][-1]["deleted"])
        median = lengths[len(lengths) // 2]
        self.assertGreater(median, 500)
        self.assertLess(median, 8000)
        self.assertGreater(lengths[-1], 64 * 1024)
        self.assertGreater(lengths[-1], 20 * median)
        text = "".join(p["revisions"][-1]["text"] for p in self.pages[:500])
        for needle in ("\n== ", "[[", "{{", "'''", "{|", "<ref", "&nbsp;"):
            self.assertIn(needle, text)
        self.assertIn(b"&lt;ref&gt;", self.xml)

    def test_multibyte_characters_across_byte_1024(self):
        straddles = collections.Counter()
        for p in self.pages:
            raw = p["revisions"][-1]["text"].encode()
            if len(raw) > 1024 and (raw[1024] & 0xC0) == 0x80:
                lead = next(raw[i] for i in range(1024, 1020, -1) if raw[i] & 0xC0 != 0x80)
                straddles[4 if lead >= 0xF0 else 3 if lead >= 0xE0 else 2] += 1
        self.assertEqual(set(straddles), {2, 3, 4}, straddles)

    # --- determinism and formats -------------------------------------------

    def test_same_seed_same_bytes_other_seed_different(self):
        again = wikigen("--size", str(SIZE), "--seed", str(SEED)).stdout
        self.assertEqual(hashlib.sha256(again).digest(), hashlib.sha256(self.xml).digest())
        other = wikigen("--size", str(SIZE), "--seed", str(SEED + 1)).stdout
        self.assertNotEqual(other, self.xml)
        # Not just the header: the pages differ too.
        self.assertNotEqual(other[-100000:], self.xml[-100000:])

    def test_bz2_is_the_same_xml(self):
        data = wikigen("--size", str(SIZE), "--seed", str(SEED), "--format", "bz2").stdout
        self.assertEqual(data[:4], b"BZh9")
        self.assertEqual(len(bz2_streams(data)), 1)
        self.assertEqual(bz2.decompress(data), self.xml)

    def test_bz2_multistream_layout(self):
        data = wikigen("--size", str(SIZE), "--seed", str(SEED), "--format",
                       "bz2-multistream").stdout
        streams = bz2_streams(data)
        self.assertEqual(b"".join(streams), self.xml)
        pages = len(self.pages)
        self.assertEqual(len(streams), 2 + (pages + 99) // 100)
        self.assertTrue(streams[0].endswith(b"  </siteinfo>\n"))
        self.assertNotIn(b"<page>", streams[0])
        self.assertEqual(streams[-1], b"</mediawiki>\n")
        for s in streams[1:-2]:
            self.assertEqual(s.count(b"  <page>\n"), 100)
            self.assertTrue(s.startswith(b"  <page>\n") and s.endswith(b"  </page>\n"))
        # Each stream starts with a bz2 stream header and its first block magic.
        self.assertEqual(data.count(b"BZh91AY&SY"), len(streams))
        # Streams are compressed in parallel; the bytes do not depend on how.
        for threads in ("1", "3"):
            again = wikigen("--size", str(SIZE), "--seed", str(SEED), "--format",
                            "bz2-multistream", "--threads", threads).stdout
            self.assertEqual(again, data, threads)

    def test_bz2_multistream_index(self):
        """--index writes Wikimedia's -multistream-index.txt.bz2: a line
        "offset:page id:title" per page, in dump order, offset the byte where
        the page's stream starts; the dump itself is unchanged."""
        index = os.path.join(self.tmp, "x-multistream-index.txt.bz2")
        args = ("--size", "1M", "--seed", str(SEED), "--format", "bz2-multistream")
        data = wikigen(*args, "--index", index).stdout
        self.assertEqual(data, wikigen(*args).stdout)
        xml = b"".join(bz2_streams(data))
        with open(index, "rb") as f:
            lines = bz2.decompress(f.read()).decode("utf-8").splitlines()
        _, pages = parse_dump(xml)
        pids = [m.group(1).decode() for m in re.finditer(rb"<ns>\d+</ns>\n    <id>(\d+)</id>", xml)]
        self.assertEqual(len(lines), len(pages))
        streams = {}
        for line, page, pid in zip(lines, pages, pids):
            off, got_pid, got_title = line.split(":", 2)
            self.assertEqual((got_pid, got_title), (pid, page["title"]), line)
            if off not in streams:
                streams[off] = bz2.BZ2Decompressor().decompress(data[int(off):])
                self.assertTrue(streams[off].startswith(b"  <page>\n"), line)
            self.assertIn(b"<id>" + pid.encode() + b"</id>", streams[off], line)
        self.assertEqual(len(streams), (len(pages) + 99) // 100)
        r = wikigen("--size", "1M", "--format", "bz2", "--index", index, check=False)
        self.assertEqual(r.returncode, 2)

    def test_zst_is_the_same_xml(self):
        path = os.path.join(self.tmp, "dump.xml.zst")
        wikigen("--size", str(SIZE), "--seed", str(SEED), "--format", "zst", "-o", path)
        with open(path, "rb") as f:
            self.assertEqual(f.read(4), b"\x28\xb5\x2f\xfd")
        if shutil.which("zstd"):
            out = subprocess.run(["zstd", "-dc", path], capture_output=True, check=True).stdout
            self.assertEqual(out, self.xml)

    # --- command line ------------------------------------------------------

    def test_output_file_is_renamed_into_place(self):
        path = os.path.join(self.tmp, "out", "small.xml.bz2")
        os.makedirs(os.path.dirname(path))
        wikigen("--size", "300K", "--seed", "9", "--format", "bz2", "-o", path)
        self.assertEqual(os.listdir(os.path.dirname(path)), ["small.xml.bz2"])
        with open(path, "rb") as f:
            xml = bz2.decompress(f.read())
        self.assertEqual(xml, wikigen("--size", "300K", "--seed", "9").stdout)

    def test_help_and_usage_errors(self):
        res = wikigen("--help")
        self.assertEqual(res.returncode, 0)
        self.assertIn(b"Usage: wikigen", res.stdout)
        path = os.path.join(self.tmp, "never.xml")
        for args in (["--size", "12Q"], ["--size", "1M", "--format", "gz"],
                     ["--size", "1M", "--duplicates", "101"], ["--size", "1M", "--bogus"],
                     ["--seed", "1"], ["--size", "1M", "--seed", "-3"],
                     ["--size", "1M", "--threads", "0"], ["--size", "1M", "extra"]):
            res = wikigen(*args, "-o", path, check=False)
            self.assertEqual(res.returncode, 2, args)
            self.assertTrue(res.stderr.startswith(b"wikigen: "), res.stderr)
            self.assertEqual(res.stderr.count(b"\n"), 1, res.stderr)
            self.assertFalse(os.path.exists(path))

    def test_unwritable_output_fails_cleanly(self):
        res = wikigen("--size", "1M", "-o", os.path.join(self.tmp, "missing", "x.xml"),
                      check=False)
        self.assertEqual(res.returncode, 1)
        self.assertIn(b"missing/x.xml", res.stderr)

    # --- the hand-written sample ---------------------------------------------

    def test_sample_xml_parses_and_covers_the_cases(self):
        with open(os.path.join(SOURCE, "data", "sample.xml"), "rb") as f:
            namespaces, pages = parse_dump(f.read())
        self.assertGreaterEqual(len(pages), 5)
        self.assertLessEqual(len(pages), 8)
        self.assertTrue([p for p in pages if p["redirect"]])
        self.assertTrue([p for p in pages if p["ns"] == 1])
        self.assertTrue([p for p in pages if len(p["revisions"]) > 1])
        self.assertTrue([p for p in pages if p["revisions"][-1]["deleted"]])
        self.assertTrue([p for p in pages if any(ord(c) > 127 for c in p["title"])])
        self.assertTrue([p for p in pages if "&" in p["title"]])
        for p in pages:
            for r in p["revisions"]:
                if not r["deleted"]:
                    self.assertEqual(int(r["bytes"]), len(r["text"].encode("utf-8")))
        by_title = {p["title"]: p for p in pages}
        last = by_title["Alan Turing"]["revisions"][-1]["text"]
        self.assertIn("<ref>", last)
        self.assertIn('"Enigma"', last)


if __name__ == "__main__":
    unittest.main()
