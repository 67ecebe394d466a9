"""test_merge.py: `sstpipe merge` holds its defining property and fails cleanly.

The property: for dumps D1 ... Dn, merging the tables built from each holds
exactly the records (`dump --jsonl`) of one build of D1 ... Dn concatenated
as one dump, and with --canonical it is that build byte for byte. Checked on
every corpus and the edge-case dump, each split into parts (consecutive
pages, plus a part that edits pages of the first and adds new ones), and on
generated dumps. The parts are plain XML: a table's bytes do not depend on
the form its dump came in (test_roundtrip.py builds every corpus in every
form, test_decompressor.py compares the tables), so merge reads the same
tables whatever the form.
Compressed (format version 2) inputs, alone or mixed with version 1 ones,
merge into the same records, in the base's format unless [sst]
compression says otherwise: a compressed base's blocks are copied and its
dictionary kept, and --canonical gives the bytes of the build in the first
input's format.
Also: unchanged base blocks are copied (the -v line counts them, and as
many output blocks hold a base block's bytes), inputs of
other block sizes are re-encoded, one input gives back its own bytes, the
output is deterministic and verify-clean, and a missing, truncated or
corrupt input fails naming the file (and the byte
offset), leaving the old output and no temporary file.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import random
import re
import unittest

from sstpipe_e2e import (FORMS, E2ETest, check_error_line, leftover_temps, parse_info,
                         parse_stats, sources, sstpipe, wikigen)

def same_blocks(test, base, out):
    """How many of out's data blocks hold the bytes of one of base's."""
    bi, oi = parse_info(test, base), parse_info(test, out)
    bs = bi["block_size"]
    test.assertEqual(oi["block_size"], bs)
    with open(base, "rb") as f:
        blocks = {f.read(bs) for _ in range(bi["data_blocks"])}
    with open(out, "rb") as f:
        return sum(f.read(bs) in blocks for _ in range(oi["data_blocks"]))


PAGE_RE = re.compile(rb"[ \t]*<page>.*?</page>[ \t]*\n?", re.S)
TITLE_RE = re.compile(rb"<title>(.*?)</title>", re.S)
TEXT_RE = re.compile(rb"(<text[^>]*>)(.*?)(</text>)", re.S)


def split_dump(xml):
    """(head, pages, tail) of an export: pages as their exact bytes."""
    pages = PAGE_RE.findall(xml)
    first = xml.index(pages[0]) if pages else xml.rindex(b"</mediawiki>")
    last = xml.rindex(pages[-1]) + len(pages[-1]) if pages else first
    return xml[:first], pages, xml[last:]


def edited(page, n):
    """The page with its last revision's text changed (or a text added)."""
    texts = list(TEXT_RE.finditer(page))
    mark = b"edited %d " % n
    if not texts:
        return page
    m = texts[-1]
    return page[:m.start(2)] + mark + m.group(2) + page[m.end(2):]


def new_page(head_title, n):
    return (b"  <page>\n    <title>%s new %d</title>\n    <ns>0</ns>\n    <id>%d</id>\n"
            b"    <revision>\n      <id>1</id>\n      <timestamp>2026-11-02T00:00:00Z</timestamp>\n"
            b"      <text bytes=\"3\" xml:space=\"preserve\">new page %d</text>\n"
            b"    </revision>\n  </page>\n" % (head_title, n, 900000 + n, n))


def parts_of(xml, seed, edit_pct=20):
    """Splits a dump into three dumps: the first half of its pages, the rest,
    and an increment editing edit_pct% of the first half's pages and adding
    new ones. Returns (list of part XML, the parts concatenated as one dump)."""
    head, pages, tail = split_dump(xml)
    rng = random.Random(seed)
    half = len(pages) // 2
    chosen = sorted(rng.sample(range(half), max(1, half * edit_pct // 100))) if half else []
    incr = [edited(pages[i], i) for i in chosen]
    incr += [new_page(b"Zz" if i % 2 else b"Aa", i) for i in range(3)]
    groups = [pages[:half], pages[half:], incr]
    parts = [head + b"".join(g) + tail for g in groups]
    return parts, head + b"".join(p for g in groups for p in g) + tail


class MergeTest(E2ETest):
    def build_parts(self, parts, form, *opts):
        suffix, enc = FORMS[form]
        tables = []
        for i, xml in enumerate(parts):
            src = self.write_file(f"part{i}-{form}{suffix}", enc(xml))
            tables.append(self.path(f"part{i}-{form}.sst"))
            self.build(src, tables[-1], *opts)
        return tables

    def assertVerifies(self, *tables):
        r = sstpipe("verify", *tables)
        self.assertEqual(r.code, 0, "verify:" + r.describe())

    def check_property(self, name, parts, whole, form, *opts):
        tables = self.build_parts(parts, form, *opts)
        ref = self.path(f"whole-{name}-{form}.sst")
        self.build(self.write_file(f"whole-{name}.xml", whole), ref, *opts)
        out = self.path(f"merged-{name}-{form}.sst")
        self.assertOk(sstpipe("merge", "-o", out, *tables))
        self.assertRecordsEqual(self.dump(out), self.dump(ref), f"{name} {form}: merge")
        canon = self.path(f"canon-{name}-{form}.sst")
        self.assertOk(sstpipe("merge", "--canonical", "-o", canon, *tables))
        with open(canon, "rb") as a, open(ref, "rb") as b:
            self.assertTrue(a.read() == b.read(),
                            f"{name} {form}: --canonical differs from the build of the whole")
        self.assertVerifies(out, canon)

    def test_property_every_source(self):
        for name, xml_fn, _ in sources():
            parts, whole = parts_of(xml_fn(), seed=len(name))
            with self.subTest(source=name):
                self.check_property(name, parts, whole, "plain")

    def test_property_generated(self):
        """Generated dumps of three seeds, values cut short so that a block
        holds many records."""
        for seed in (3, 4, 5):
            with self.subTest(seed=seed):
                plain = wikigen(self.path(f"gen{seed}.xml"), "3M", str(seed), "xml")
                with open(plain, "rb") as f:
                    parts, whole = parts_of(f.read(), seed)
                self.check_property(f"gen{seed}", parts, whole, "plain", "--max-bytes", "300")

    def test_small_delta_copies_blocks(self):
        """A 1% increment into a base: nearly every base block is copied, and
        the records are still those of the concatenated build."""
        plain = wikigen(self.path("base.xml"), "4M", "7", "xml")
        with open(plain, "rb") as f:
            head, pages, tail = split_dump(f.read())
        rng = random.Random(7)
        chosen = sorted(rng.sample(range(len(pages)), len(pages) // 100))
        incr = head + b"".join(edited(pages[i], i) for i in chosen) + tail
        base_sst, incr_sst = self.path("base.sst"), self.path("incr.sst")
        self.build(plain, base_sst)
        self.build(self.write_file("incr.xml", incr), incr_sst)
        out = self.path("out.sst")
        r = sstpipe("merge", "-v", "-o", out, base_sst, incr_sst)
        self.assertOk(r)
        st = parse_stats(self, r.stderr, "merge")
        blocks = parse_info(self, base_sst)["data_blocks"]
        self.assertEqual(st["replaced"], len(chosen))
        self.assertGreaterEqual(st["blocks_copied"], blocks - 2 * len(chosen),
                                f"expected nearly all of {blocks} base blocks copied: {st}")
        self.assertEqual(st["blocks_copied"] + st["blocks_rebuilt"], blocks)
        # From outside: the output's data blocks that hold a base block's
        # bytes are as many as -v counts copied.
        self.assertEqual(same_blocks(self, base_sst, out), st["blocks_copied"], st)
        ref = self.path("ref.sst")
        self.build(self.write_file("whole.xml", head + b"".join(pages) +
                                   b"".join(edited(pages[i], i) for i in chosen) + tail), ref)
        self.assertRecordsEqual(self.dump(out), self.dump(ref), "1% delta")
        self.assertVerifies(out)
        # Deterministic: the same inputs give the same bytes.
        again = self.path("again.sst")
        self.assertOk(sstpipe("merge", "-o", again, base_sst, incr_sst))
        with open(out, "rb") as a, open(again, "rb") as b:
            self.assertTrue(a.read() == b.read(), "two merges of the same inputs differ")

    def test_one_input_gives_its_bytes(self):
        plain = wikigen(self.path("d.xml"), "1M", "9", "xml")
        t = self.path("d.sst")
        self.build(plain, t)
        out = self.path("out.sst")
        self.assertOk(sstpipe("merge", "-o", out, t))
        with open(out, "rb") as a, open(t, "rb") as b:
            self.assertTrue(a.read() == b.read(), "merge of one table is not that table")

    def test_other_options_reencoded(self):
        plain = wikigen(self.path("d.xml"), "2M", "11", "xml")
        with open(plain, "rb") as f:
            parts, whole = parts_of(f.read(), 11)
        srcs = [self.write_file(f"p{i}.xml", p) for i, p in enumerate(parts)]
        tables = []
        for i, (src, bs) in enumerate(zip(srcs, ("4K", "16K", "8K"))):
            tables.append(self.path(f"p{i}.sst"))
            self.build(src, tables[-1], "--block-size", bs, "--cluster-size", "512")
        whole_src = self.write_file("whole.xml", whole)
        out = self.path("out.sst")
        self.assertOk(sstpipe("merge", "-o", out, *tables))
        info = parse_info(self, out)
        self.assertEqual((info["block_size"], info["cluster_size"]), (4096, 512))
        ref = self.path("ref.sst")
        self.build(whole_src, ref, "--block-size", "4K", "--cluster-size", "512")
        self.assertRecordsEqual(self.dump(out), self.dump(ref), "mixed block sizes")
        canon = self.path("canon.sst")
        self.assertOk(sstpipe("merge", "--canonical", "--block-size", "2K", "--cluster-size",
                              "8K", "-o", canon, *tables))
        ref2 = self.path("ref2.sst")
        self.build(whole_src, ref2, "--block-size", "2K", "--cluster-size", "8K")
        with open(canon, "rb") as a, open(ref2, "rb") as b:
            self.assertTrue(a.read() == b.read(), "--canonical with other sizes")
        self.assertVerifies(out, canon)

    def test_compressed_merges(self):
        """Version 2 (compressed) tables merged with version 1 and 2 deltas:
        the output keeps the base's format, copies its unchanged blocks as
        they are (counted from the file) and compresses its rebuilt ones
        with the base's dictionary, which it takes; every key reads back and
        passes the filter (verify asks it of every key). A version 1 base
        keeps version 1, and [sst] compression, when set, decides."""
        plain = wikigen(self.path("z.xml"), "2M", "13", "xml")
        with open(plain, "rb") as f:
            head, pages, tail = split_dump(f.read())
        chosen = sorted(random.Random(13).sample(range(len(pages)), len(pages) // 100))
        edits = b"".join(edited(pages[i], i) for i in chosen)
        zstd = ("--set", "sst.compression=zstd")
        base, base1 = self.path("zbase.sst"), self.path("base1.sst")
        incr1, incr2 = self.path("zincr1.sst"), self.path("zincr2.sst")
        incr_src = self.write_file("zincr.xml", head + edits + tail)
        self.build(plain, base, *zstd)
        self.build(plain, base1)
        self.build(incr_src, incr1)
        self.build(incr_src, incr2, *zstd)
        whole = self.write_file("zwhole.xml", head + b"".join(pages) + edits + tail)
        ref, zref = self.path("zref.sst"), self.path("zref2.sst")
        self.build(whole, ref)
        self.build(whole, zref, *zstd)
        zi = parse_info(self, base)
        for name, b, incr, version in (("v2+v1", base, incr1, 2), ("v2+v2", base, incr2, 2),
                                       ("v1+v2", base1, incr2, 1)):
            with self.subTest(merge=name):
                out = self.path(f"zout-{name}.sst")
                r = sstpipe("merge", "-v", "-o", out, b, incr)
                self.assertOk(r)
                st = parse_stats(self, r.stderr, "merge")
                blocks = parse_info(self, b)["data_blocks"]
                oi = parse_info(self, out)
                self.assertEqual(oi["format_version"], version)
                self.assertGreater(st["blocks_copied"], 0, st)
                self.assertGreaterEqual(st["blocks_copied"], blocks - 2 * len(chosen), st)
                self.assertEqual(same_blocks(self, b, out), st["blocks_copied"], st)
                if version == 2:
                    self.assertEqual(oi["dictionary_bytes"], zi["dictionary_bytes"])
                    self.assertEqual(oi["filter_bytes"], 64 * -(-10 * oi["records"] // 512))
                self.assertRecordsEqual(self.dump(out), self.dump(ref), name)
                self.assertVerifies(out)
        # info names the compression of a version 2 table, and nothing new of version 1.
        self.assertNotIn("compression", parse_info(self, base1))
        self.assertEqual(zi["compression"], "zstd")
        # The ratio: stored value bytes over the data blocks' bytes, for both versions.
        for i in (zi, oi):
            self.assertAlmostEqual(i["compression_ratio"],
                                   i["value_bytes"] / (i["data_blocks"] * i["block_size"]))
            self.assertAlmostEqual(i["bytes_per_record"], i["file_size"] / i["records"])
        self.assertGreater(zi["compression_ratio"], 1.2)
        self.assertLess(oi["compression_ratio"], 1)
        self.assertGreater(zi["plain_bytes"], zi["value_bytes"])
        self.assertGreater(zi["dictionary_bytes"], 0)
        # The filter: whole 64-byte lines at 10 bits a key (FORMAT.md).
        self.assertEqual(zi["filter_bytes"], 64 * -(-10 * zi["records"] // 512))
        self.assertAlmostEqual(zi["filter_bits_per_key"], 8 * zi["filter_bytes"] / zi["records"])
        text = sstpipe("info", base).stdout.decode()
        self.assertIn("compression:      zstd, ", text)
        self.assertIn(f"compression ratio: {zi['compression_ratio']:.4f} (value bytes", text)
        self.assertIn(f"dictionary:       {zi['dictionary_bytes']} bytes", text)
        self.assertIn(f"filter:           {zi['filter_bytes']} bytes, "
                      f"{zi['filter_bits_per_key']:.2f} bits a key", text)
        # --canonical keeps the first input's format: build's bytes of it.
        for name, inputs, want in (("v2", (base, incr1), zref), ("v1", (base1, incr2), ref)):
            canon = self.path(f"zcanon-{name}.sst")
            self.assertOk(sstpipe("merge", "--canonical", "-o", canon, *inputs))
            with open(canon, "rb") as a, open(want, "rb") as b:
                self.assertTrue(a.read() == b.read(), f"--canonical of a {name} base")
        # Told: none writes version 1 from a compressed base, every block rebuilt.
        out = self.path("znone.sst")
        r = sstpipe("merge", "-v", "--canonical", "--set", "sst.compression=none", "-o", out,
                    base, incr2)
        self.assertOk(r)
        self.assertEqual(parse_stats(self, r.stderr, "merge")["blocks_copied"], 0)
        with open(out, "rb") as a, open(ref, "rb") as b:
            self.assertTrue(a.read() == b.read(), "compression=none of a compressed base")

    def test_empty_table(self):
        head, _, tail = split_dump(wikigen(self.path("d.xml"), "1M", "12", "xml") and
                                   open(self.path("d.xml"), "rb").read())
        empty, full = self.path("empty.sst"), self.path("full.sst")
        self.build(self.write_file("empty.xml", head + tail), empty)
        self.build(self.path("d.xml"), full)
        out = self.path("out.sst")
        self.assertOk(sstpipe("merge", "-o", out, empty, full, empty))
        self.assertRecordsEqual(self.dump(out), self.dump(full), "with empty tables")
        self.assertOk(sstpipe("merge", "-o", out, empty))
        self.assertEqual(parse_info(self, out)["records"], 0)

    def test_bad_inputs(self):
        plain = wikigen(self.path("d.xml"), "2M", "13", "xml")
        with open(plain, "rb") as f:
            head, pages, tail = split_dump(f.read())
        base, small = self.path("base.sst"), self.path("small.sst")
        self.build(plain, base)
        self.build(self.write_file("s.xml", head + edited(pages[0], 0) + tail), small)
        outdir = os.path.join(self.tmp, "out")
        os.mkdir(outdir)
        out = os.path.join(outdir, "t.sst")
        self.assertOk(sstpipe("merge", "-o", out, base, small))
        with open(out, "rb") as f:
            good = f.read()
        with open(base, "rb") as f:
            data = f.read()
        bs = parse_info(self, base)["block_size"]
        cases = {}
        cases["missing"] = (self.path("nope.sst"), False)
        cases["truncated"] = (self.write_file("trunc.sst", data[:len(data) - 1000]), True)
        # A byte in block 5's entries: a block copied whole, found by its checksum.
        flipped = bytearray(data)
        flipped[5 * bs + 40] ^= 0x20
        cases["corrupt block"] = (self.write_file("flip.sst", bytes(flipped)), True)
        cases["not a table"] = (self.write_file("junk.sst", b"x" * 8192), True)
        for what, (bad, location) in cases.items():
            with self.subTest(what):
                r = sstpipe("merge", "-o", out, bad, small)
                # A missing input is refused before any work.
                self.assertEqual(r.code, 2 if what == "missing" else 1, what + r.describe())
                check_error_line(self, r, names=[bad], location=location, what=what)
                if what == "corrupt block":
                    self.assertIn(f"block 5 at byte {5 * bs}", r.err_text)
                with open(out, "rb") as f:
                    self.assertTrue(f.read() == good, f"{what}: the old output changed")
                # The earlier output, with the title index merged from its
                # inputs' (test_titles_tables.py), and nothing else.
                self.assertEqual(sorted(leftover_temps(outdir)), sorted([out, out + ".titles"]),
                                 f"{what}: temporary files left")

    def test_usage(self):
        for args, what in (([], "no -o"), (["-o", self.path("x.sst")], "no input"),
                           (["-o", self.path("x.sst"), "--block-size", "3K", "a"], "block size"),
                           (["-o", "-", "a"], "stdout"), (["--bogus"], "unknown flag")):
            with self.subTest(what):
                r = sstpipe("merge", *args)
                self.assertEqual(r.code, 2, what + r.describe())
        self.assertEqual(sstpipe("merge", "--help").code, 0)


if __name__ == "__main__":
    unittest.main()
