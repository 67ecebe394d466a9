"""test_bad_input.py: bad input and bad options fail cleanly.

Every case must exit non-zero (1 for bad input, 2 for usage), print exactly
one stderr line starting "sstpipe" that names the input file (data errors:
with a byte offset or line number), leave no file at the -o path, leave a
good file already at the -o path byte-identical, and leave no temp files
beside the output or in --tmp. Both `build` and `extract -o` are run on every
bad input. XML is parsed safely: a billion-laughs document and an external
entity neither blow up nor leak a file into a record.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import bz2
import os
import random
import re
import shutil
import tempfile
import unittest

from sstpipe_e2e import (E2ETest, check_error_line, corpus_files, leftover_temps, load_xml,
                         parse_dump, sstpipe, to_gz, to_xz, to_zst)

SMALL_GOOD = (b'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10">\n'
              b"<page><title>Good</title><ns>0</ns><id>1</id><revision><id>1</id>"
              b"<text>good text</text></revision></page>\n</mediawiki>\n")


def mediawiki(body, doctype=""):
    return (f'<?xml version="1.0"?>\n{doctype}<mediawiki '
            f'xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10">\n'
            f"{body}</mediawiki>\n").encode()


def page(title, text):
    return (f"<page><title>{title}</title><ns>0</ns><id>1</id><revision><id>1</id>"
            f'<text xml:space="preserve">{text}</text></revision></page>\n')


BILLION_LAUGHS = mediawiki(
    page("Laughs", "&lol9;"),
    '<!DOCTYPE mediawiki [\n <!ENTITY lol "lol">\n' +
    "".join(f' <!ENTITY lol{i} "' + f"&lol{i - 1 if i > 1 else ''};" * 10 + '">\n'
            for i in range(1, 10)) + "]>\n")

QUADRATIC_BLOWUP = mediawiki(
    page("Quadratic", "&a;" * 20000),
    '<!DOCTYPE mediawiki [\n <!ENTITY a "' + "x" * 50000 + '">\n]>\n')

XXE_TEXT = mediawiki(page("XXE &xxe;", "before &xxe; after"),
                     '<!DOCTYPE mediawiki [\n <!ENTITY xxe SYSTEM "file:///etc/passwd">\n]>\n')
XXE_PARAM = mediawiki(page("XXE param", "text"),
                      '<!DOCTYPE mediawiki [\n <!ENTITY % p SYSTEM "file:///etc/passwd">\n'
                      " %p;\n]>\n")
XXE_DTD = mediawiki(page("XXE dtd", "text &ent;"),
                    '<!DOCTYPE mediawiki SYSTEM "file:///etc/passwd">\n')


def _png():
    return (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06"
            b"\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01"
            b"\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")


def _passwd_markers():
    """Lines of /etc/passwd long enough to be unmistakable in a record."""
    try:
        with open("/etc/passwd", "rb") as f:
            return [l for l in f.read().splitlines() if len(l) > 12][:5] or [b"root:x:0:0"]
    except OSError:
        return [b"root:x:0:0"]


class BadInput(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-e2e-bad-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        files = corpus_files()
        bz2s = [p for p in files if p.endswith(".bz2")]
        cls.corpus_bz2 = max(bz2s, key=os.path.getsize)
        cls.corpus_xml = load_xml(min(files, key=os.path.getsize))
        good_src = os.path.join(cls.classtmp, "good.xml")
        with open(good_src, "wb") as f:
            f.write(SMALL_GOOD)
        cls.good_sst = os.path.join(cls.classtmp, "good.sst")
        r = sstpipe("build", good_src, "-o", cls.good_sst)
        if r.code != 0:
            raise AssertionError("cannot build the good table the cases start from" +
                                 r.describe())
        cls.good_rs = os.path.join(cls.classtmp, "good.rs")
        r = sstpipe("extract", good_src, "-o", cls.good_rs)
        if r.code != 0:
            raise AssertionError("cannot extract the good stream" + r.describe())


    # ---- the checks every case repeats

    def fresh_dirs(self, tag):
        self.runs = getattr(self, "runs", 0) + 1
        base = self.path(f"run{self.runs}-{tag}")
        outdir, tmpdir = os.path.join(base, "out"), os.path.join(base, "scratch")
        os.makedirs(outdir)
        os.makedirs(tmpdir)
        return outdir, tmpdir

    def expect_failure(self, cmd, args, input_path, code=1, names=None, location=True,
                       what="", good=None, out_name="out.sst"):
        """Runs `sstpipe cmd args... -o OUT [--tmp DIR]` twice: with no file at
        OUT, and with a good file there; both must fail cleanly (with exit
        code `code`, or any non-zero one when code is None)."""
        good = good or self.good_sst
        names = names if names is not None else [input_path, os.path.basename(input_path)]
        with open(good, "rb") as f:
            good_bytes = f.read()
        for preexisting in (False, True):
            tag = f"{cmd}-{'pre' if preexisting else 'new'}"
            outdir, tmpdir = self.fresh_dirs(tag)
            out = os.path.join(outdir, out_name)
            if preexisting:
                shutil.copyfile(good, out)
            tmp_flag = ["--tmp", tmpdir] if cmd in ("build", "extract", "sort") else []
            r = sstpipe(cmd, *args, "-o", out, *tmp_flag)
            w = f"{what} [{cmd}, {'good file at -o' if preexisting else 'no file at -o'}]"
            self.assertNotEqual(r.code, 0, f"{w}: must fail" + r.describe())
            if code is not None:
                self.assertEqual(r.code, code, f"{w}: exit code" + r.describe())
            check_error_line(self, r, names, location, w)
            if preexisting:
                with open(out, "rb") as f:
                    self.assertTrue(f.read() == good_bytes,
                                    f"{w}: the good file at -o was changed")
            else:
                self.assertFalse(os.path.exists(out), f"{w}: -o path exists after failure")
            left = [p for p in leftover_temps(outdir) if p != out]
            self.assertEqual(left, [], f"{w}: files left beside the output")
            self.assertEqual(leftover_temps(tmpdir), [], f"{w}: files left in --tmp")
        return r

    def bad_data(self, name, data, location=True, code=1):
        """A bad input file: both build and extract must refuse it."""
        src = self.write_file(name, data)
        self.expect_failure("build", [src], src, code, location=location, what=name)
        self.expect_failure("extract", [src], src, code, location=location, what=name,
                            good=self.good_rs, out_name="out.rs")

    # ---- compressed data

    def test_truncated_bz2(self):
        with open(self.corpus_bz2, "rb") as f:
            data = f.read()
        self.bad_data("truncated.xml.bz2", data[: len(data) // 2])

    def test_corrupt_bz2(self):
        with open(self.corpus_bz2, "rb") as f:
            data = bytearray(f.read())
        mid = len(data) // 2
        for i in range(mid, mid + 64):
            data[i] ^= 0x5A
        self.bad_data("corrupt.xml.bz2", bytes(data))

    def test_truncated_gz(self):
        data = to_gz(self.corpus_xml)
        self.bad_data("truncated.xml.gz", data[: len(data) // 2])

    def test_truncated_xz(self):
        data = to_xz(self.corpus_xml)
        self.bad_data("truncated.xml.xz", data[: len(data) // 2])

    def test_truncated_zst(self):
        data = to_zst(self.corpus_xml)
        self.bad_data("truncated.xml.zst", data[: len(data) // 2])

    def test_truncated_bz2_multistream(self):
        """A multistream file cut exactly between two streams, mid-document:
        the XML in four bz2 streams (as Wikipedia's multistream dumps), the
        first two kept. The error must come where the second stream ends, so
        a reader that stopped after the first stream fails this test."""
        xml = self.corpus_xml
        cuts = [len(xml) * i // 4 for i in range(5)]
        streams = [bz2.compress(xml[a:b]) for a, b in zip(cuts, cuts[1:])]
        data = b"".join(streams[:2])
        # What was built: two whole streams, each starting with its own
        # header, together decompressing to the first half of the document.
        self.assertEqual(data.count(b"BZh9" + b"\x31\x41\x59\x26\x53\x59"), 2)
        self.assertEqual(bz2.decompress(data), xml[: cuts[2]])
        self.assertNotIn(b"</mediawiki>", xml[: cuts[2]])
        src = self.write_file("cut-between-streams.xml.bz2", data)
        self.expect_failure("build", [src], src, what="cut-between-streams.xml.bz2")
        # libxml2 reports the end of the document on the last line it got.
        line = xml[: cuts[2]].count(b"\n") + 1
        r = sstpipe("build", src, "-o", self.path("cut.sst"))
        self.assertIn(f"at line {line}:", r.err_text,
                      "the error must be at the end of the second stream" + r.describe())
        self.assertIn("truncated", r.err_text, r.describe())
        self.expect_failure("extract", [src], src, what="cut-between-streams.xml.bz2",
                            good=self.good_rs, out_name="out.rs")

    # ---- XML

    def test_malformed_xml_mismatched_tag(self):
        xml = self.corpus_xml.replace(b"</title>", b"</titel>", 1)
        self.assertNotEqual(xml, self.corpus_xml)
        self.bad_data("mismatched.xml", xml)

    def test_malformed_xml_in_compressed_input(self):
        xml = self.corpus_xml.replace(b"</title>", b"</titel>", 1)
        self.bad_data("mismatched.xml.bz2", bz2.compress(xml))

    def test_truncated_xml_mid_page(self):
        xml = self.corpus_xml
        pages = [m.start() for m in re.finditer(b"<page>", xml)]
        self.assertGreater(len(pages), 2)
        cut = (pages[len(pages) // 2] + pages[len(pages) // 2 + 1]) // 2
        self.bad_data("truncated.xml", xml[:cut])

    def test_wrong_root_element(self):
        self.bad_data("wrong-root.xml",
                      b'<?xml version="1.0"?>\n<html><body><page><title>X</title>'
                      b"<revision><text>t</text></revision></page></body></html>\n")

    def test_empty_input(self):
        self.bad_data("empty.xml", b"", location=False)

    def test_empty_bz2_stream(self):
        self.bad_data("empty.xml.bz2", bz2.compress(b""), location=False)

    def test_random_bytes(self):
        self.bad_data("random.bin", random.Random(1).randbytes(8192))

    def test_png(self):
        self.bad_data("image.png", _png())

    def test_plain_text(self):
        self.bad_data("notes.txt", b"This is plain text.\nIt is not XML at all.\n" * 20)

    # ---- safe parsing

    def _dump_if_built(self, data, name):
        """Builds data; returns None if it failed (cleanly), else the records.
        An expansion would show in the peak RSS and the records, not in a
        clock; a hang ends at sstpipe()'s timeout as a failure."""
        src = self.write_file(name, data)
        outdir, tmpdir = self.fresh_dirs(name)
        out = os.path.join(outdir, "out.sst")
        r = sstpipe("build", src, "-o", out, "--tmp", tmpdir, measure_rss=True)
        self.assertLess(r.maxrss_kib, 256 * 1024,
                        f"{name}: build peaked at {r.maxrss_kib // 1024} MiB RSS")
        self.assertEqual(leftover_temps(tmpdir), [], f"{name}: files left in --tmp")
        if r.code != 0:
            self.assertEqual(r.code, 1, f"{name}: exit code" + r.describe())
            check_error_line(self, r, [src, os.path.basename(src)], False, name)
            self.assertFalse(os.path.exists(out))
            self.assertEqual(leftover_temps(outdir), [], f"{name}: files left beside output")
            return None
        d = sstpipe("dump", out, "--jsonl")
        self.assertOk(d)
        return parse_dump(self, d.stdout)

    def test_billion_laughs(self):
        recs = self._dump_if_built(BILLION_LAUGHS, "laughs.xml")
        if recs is not None:
            total = sum(len(k) + len(v) for k, v in recs)
            self.assertLess(total, 4096, f"billion laughs expanded: {total} bytes of records")
            for k, v in recs:
                self.assertNotIn(b"lollollollollol", v, "entities were expanded")

    def test_billion_laughs_bz2(self):
        recs = self._dump_if_built(bz2.compress(BILLION_LAUGHS), "laughs.xml.bz2")
        if recs is not None:
            for k, v in recs:
                self.assertNotIn(b"lollollollollol", v, "entities were expanded")

    def test_quadratic_blowup(self):
        """One 50 KB entity referenced 20000 times (1 GB if expanded)."""
        recs = self._dump_if_built(QUADRATIC_BLOWUP, "quadratic.xml")
        if recs is not None:
            for k, v in recs:
                self.assertLessEqual(len(v), 1024)

    def _no_passwd(self, data, name):
        recs = self._dump_if_built(data, name)
        if recs is None:
            return
        markers = _passwd_markers()
        for k, v in recs:
            for m in markers + [b"root:x:0:0", b"/bin/"]:
                self.assertNotIn(m, k + v, f"{name}: /etc/passwd leaked into record {k!r}")

    def test_external_entity_in_text(self):
        self._no_passwd(XXE_TEXT, "xxe-text.xml")

    def test_external_parameter_entity(self):
        self._no_passwd(XXE_PARAM, "xxe-param.xml")

    def test_external_dtd(self):
        self._no_passwd(XXE_DTD, "xxe-dtd.xml")

    # ---- files and flags

    def test_missing_input_file(self):
        src = self.path("does-not-exist.xml.bz2")
        # An operand that does not exist is refused before any work (exit 2).
        self.expect_failure("build", [src], src, 2, location=False, what="missing input")
        self.expect_failure("extract", [src], src, 2, location=False, what="missing input",
                            good=self.good_rs, out_name="out.rs")

    def test_unknown_flag(self):
        src = self.write_file("ok.xml", SMALL_GOOD)
        for cmd, good, out_name in [("build", None, "out.sst"),
                                    ("extract", self.good_rs, "out.rs")]:
            self.expect_failure(cmd, [src, "--no-such-flag"], src, 2,
                                names=["--no-such-flag", "no-such-flag"], location=False,
                                what="unknown flag", good=good, out_name=out_name)
        for cmd in ["truncate", "sort", "write", "get", "dump", "info"]:
            with self.subTest(cmd=cmd):
                r = sstpipe(cmd, "--no-such-flag", self.good_rs)
                self.assertEqual(r.code, 2, f"{cmd} --no-such-flag" + r.describe())
                check_error_line(self, r, ["no-such-flag"], False, f"{cmd} unknown flag")

    # (flag, value, what the message may name)
    BUILD_OPTIONS = [
        ("--block-size", "1000", "block"),
        ("--block-size", "256", "block"),
        ("--block-size", "2M", "block"),
        ("--cluster-size", "100", "cluster"),
        ("--max-bytes", "0", "max"),
        ("--memory", "10", "memory"),
        ("--memory", "8Q", "memory"),
        ("--block-size", "8Q", "block"),
        ("--max-bytes", "-5", "max"),
        ("--fan-in", "1", "fan"),
    ]

    def test_options_out_of_range(self):
        """Refused as usage errors before any output is created, even when
        the input is bad too (options are checked first)."""
        src = self.write_file("ok.xml", SMALL_GOOD)
        for flag, value, word in self.BUILD_OPTIONS:
            with self.subTest(option=f"{flag} {value}"):
                self.expect_failure("build", [src, flag, value], src, 2,
                                    names=[value, word], location=False,
                                    what=f"build {flag} {value}")

    def test_block_512_with_default_max_bytes(self):
        """A 1024-byte value cannot fit a 512-byte block: refused up front,
        before the input is even read (so a bad input still gives exit 2)."""
        bad = self.write_file("bad.xml.bz2", b"BZh9 definitely not bz2 data")
        ok = self.write_file("ok.xml", SMALL_GOOD)
        # A FIFO that this test holds open and never writes: reading it would
        # block until sstpipe()'s timeout, so only a refusal before the input
        # is read passes (and at once, however loaded the machine).
        fifo = self.path("never-written.xml")
        os.mkfifo(fifo)
        hold = os.open(fifo, os.O_RDWR)
        try:
            for src in (ok, bad, fifo):
                self.expect_failure("build", [src, "--block-size", "512"], src, 2,
                                    names=["512", "block"], location=False,
                                    what=f"build --block-size 512 on {os.path.basename(src)}")
        finally:
            os.close(hold)

    def test_stage_options_out_of_range(self):
        cases = [("truncate", ["--max-bytes", "0"], "max"),
                 ("truncate", ["--max-bytes", "1x"], "max"),
                 ("sort", ["--memory", "10"], "memory"),
                 ("sort", ["--memory", "8Q"], "memory"),
                 ("write", ["--block-size", "1000"], "block"),
                 ("write", ["--block-size", "256"], "block"),
                 ("write", ["--block-size", "2M"], "block"),
                 ("write", ["--cluster-size", "100"], "cluster")]
        for cmd, opts, word in cases:
            with self.subTest(cmd=cmd, opts=opts):
                self.expect_failure(cmd, [self.good_rs] + opts, self.good_rs, 2,
                                    names=[opts[1], word], location=False,
                                    what=f"{cmd} {' '.join(opts)}", good=self.good_rs,
                                    out_name="out.rs")

    def test_write_block_512_refuses_1024_stream(self):
        """write sees the stream's bound (1024) in its header and refuses a
        512-byte block before writing anything."""
        tr = self.path("t.rs")
        r = sstpipe("truncate", self.good_rs, "-o", tr)
        self.assertOk(r)
        r = self.expect_failure("write", [tr, "--block-size", "512"], tr, None,
                                names=["512", "block", tr], location=False,
                                what="write --block-size 512 on a 1024 stream")

    def test_usage_errors_without_input(self):
        for args in (["build"], ["build", self.good_rs], ["get", self.good_sst], ["dump"],
                     ["nosuchcommand"]):
            r = sstpipe(*args)
            self.assertEqual(r.code, 2, f"{args}" + r.describe())
            self.assertTrue(r.err_text.startswith("sstpipe"), r.describe())

    def test_help_everywhere(self):
        for cmd in ["build", "extract", "truncate", "sort", "write", "get", "dump", "info"]:
            r = sstpipe(cmd, "--help")
            self.assertEqual(r.code, 0, f"{cmd} --help" + r.describe())
            self.assertIn(cmd.encode(), r.stdout, f"{cmd} --help must print usage on stdout")

    def test_get_dump_info_on_bad_tables(self):
        """A damaged or non-table file: get/dump/info fail (exit 1) naming the file; a
        missing one is refused (exit 2)."""
        with open(self.good_sst, "rb") as f:
            data = bytearray(f.read())
        data[10] ^= 0xFF  # inside data block 0: its checksum must catch it
        damaged = self.write_file("damaged.sst", bytes(data))
        notsst = self.write_file("notsst.sst", SMALL_GOOD)
        missing = self.path("missing.sst")
        for f in (damaged, notsst, missing):
            code = 2 if f == missing else 1
            for args in (["get", f, "Good"], ["dump", f, "--jsonl"], ["info", f]):
                if f == damaged and args[0] == "info":
                    continue  # info reads only the footer
                r = sstpipe(*args)
                self.assertEqual(r.code, code, f"{args}" + r.describe())
                check_error_line(self, r, [f, os.path.basename(f)], False, " ".join(args))


if __name__ == "__main__":
    unittest.main()
