"""test_stages.py: the four stage commands agree with the fused `build`.

`extract | truncate | sort | write` through real shell pipes must give a file
byte-identical to `build` with the same options; builds are deterministic;
each stage gives the same bytes reading a file argument, "-" or stdin; the
record streams between stages carry what recstream.h says (sorted flag,
value bound) and the records reference.py expects; `write` refuses streams
that are not sorted or not truncated, or that lie about it.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import io
import os
import shutil
import struct
import tempfile
import unittest

import reference
from sstpipe_e2e import (E2ETest, check_error_line, corpus_files, corpus_name, edge_dump_xml,
                         leftover_temps, parse_stats, q, rs_decode, rs_encode, shell, sstpipe,
                         sstpipe_bin, to_gz, wikigen)

# (name, build/stage options) applied to every source.
OPTION_SETS = [
    ("defaults", {}),
    ("small", {"max_bytes": "300", "memory": "1M", "fan_in": "2", "block_size": "16K",
               "cluster_size": "8K"}),
]
FILTERED = ("filtered", {"namespaces": "0,1", "skip_redirects": True, "max_bytes": "2000",
                         "block_size": "64K"})


def stage_flags(opts, stage):
    """The flags of one stage (or of build: all of them) for an option set."""
    table = {
        "extract": ["namespaces", "skip_redirects"],
        "truncate": ["max_bytes"],
        "sort": ["memory", "fan_in"],
        "write": ["block_size", "cluster_size"],
    }
    names = sum(table.values(), []) if stage == "build" else table[stage]
    flags = []
    for n in names:
        if n in opts:
            flag = "--" + n.replace("_", "-")
            flags += [flag] if opts[n] is True else [flag, opts[n]]
    return flags


class Stages(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-e2e-stages-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.sources = [(corpus_name(p), p) for p in corpus_files()]
        edge = os.path.join(cls.classtmp, "edge.xml")
        with open(edge, "wb") as f:
            f.write(edge_dump_xml())
        cls.sources.append(("edge", edge))
        cls.generated = wikigen(os.path.join(cls.classtmp, "gen.xml.bz2"), "4M", "11",
                                "bz2-multistream")
        cls.sources.append(("wikigen", cls.generated))


    def piped(self, src, out, opts, tmpdir):
        s = q(sstpipe_bin())
        script = (f"{s} extract {q(src)} {' '.join(map(q, stage_flags(opts, 'extract')))}"
                  f" | {s} truncate {' '.join(map(q, stage_flags(opts, 'truncate')))}"
                  f" | {s} sort --tmp {q(tmpdir)} {' '.join(map(q, stage_flags(opts, 'sort')))}"
                  f" | {s} write -o {q(out)} {' '.join(map(q, stage_flags(opts, 'write')))}")
        r = shell(script)
        self.assertOk(r)
        return r

    def read(self, p):
        with open(p, "rb") as f:
            return f.read()

    def check_piped_equals_build(self, name, src, opts_name, opts):
        work = self.path(f"{name}-{opts_name}")
        tmpdir = os.path.join(work, "scratch")
        os.makedirs(tmpdir)
        a, b, c = (os.path.join(work, n) for n in ("piped.sst", "built.sst", "built2.sst"))
        self.piped(src, a, opts, tmpdir)
        self.build(src, b, "--tmp", tmpdir, *stage_flags(opts, "build"))
        self.build(src, c, "--tmp", tmpdir, *stage_flags(opts, "build"))
        pa, pb, pc = self.read(a), self.read(b), self.read(c)
        self.assertTrue(pa == pb, f"{name}/{opts_name}: piped stages ({len(pa)} bytes) and "
                        f"build ({len(pb)} bytes) differ")
        self.assertTrue(pb == pc, f"{name}/{opts_name}: two builds differ")
        self.assertEqual(leftover_temps(tmpdir), [], "scratch files left in --tmp")

    def test_piped_stages_equal_build(self):
        for name, src in self.sources:
            for opts_name, opts in OPTION_SETS:
                with self.subTest(source=name, options=opts_name):
                    self.check_piped_equals_build(name, src, opts_name, opts)

    def test_piped_stages_equal_build_filtered(self):
        self.check_piped_equals_build("wikigen", self.generated, *FILTERED)

    def filter_dump(self):
        src = self.path("ns.xml")
        pages = []
        for i, (title, ns, redirect) in enumerate([("A", 0, False), ("Talk:A", 1, False),
                                                   ("User:A", 2, False), ("R", 0, True),
                                                   ("Talk:R", 1, True)]):
            red = '<redirect title="A" />' if redirect else ""
            pages.append(f"<page><title>{title}</title><ns>{ns}</ns><id>{i + 1}</id>{red}"
                         f"<revision><id>{i + 1}</id><text>t{i}</text></revision></page>")
        with open(src, "w") as f:
            f.write('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" '
                    'version="0.10">' + "".join(pages) + "</mediawiki>")
        return src

    FILTER_EXPECTED = [(b"A", b"t0"), (b"Talk:A", b"t1")]

    def check_filter_stats(self, r):
        st = parse_stats(self, r.stderr, "extract")
        self.assertEqual((st["pages"], st["records"], st["skipped_redirects"],
                          st["skipped_namespace"]), (5, 2, 2, 1), r.describe())

    def test_filtered_records_extract(self):
        """extract --namespaces/--skip-redirects drop exactly the pages they name."""
        r = sstpipe("extract", self.filter_dump(), "--namespaces", "0,1", "--skip-redirects",
                    "-v")
        self.assertOk(r)
        self.check_filter_stats(r)
        _, _, recs = rs_decode(self, r.stdout)
        self.assertEqual(recs, self.FILTER_EXPECTED)

    def test_filtered_records_build(self):
        """build takes the same filter flags (cli.md) with the same effect."""
        out = self.path("ns.sst")
        r = self.build(self.filter_dump(), out, "--namespaces", "0,1", "--skip-redirects", "-v")
        self.check_filter_stats(r)
        self.assertEqual(self.dump(out), self.FILTER_EXPECTED)

    def test_stage_file_arg_dash_and_stdin_agree(self):
        s = q(sstpipe_bin())
        src = self.generated
        ref = reference.read_dump(src, 300)
        streams = {}
        prev = src
        for stage, flags in [("extract", []), ("truncate", ["--max-bytes", "300"]),
                             ("sort", ["--memory", "1M"])]:
            fl = " ".join(map(q, flags))
            o = [q(self.path(f"{stage}.{i}")) for i in range(4)]
            outs = []
            for i, (form, script) in enumerate([
                    ("file arg, -o", f"{s} {stage} {q(prev)} {fl} -o {o[0]}"),
                    ("file arg, stdout", f"{s} {stage} {q(prev)} {fl} > {o[1]}"),
                    ("'-' from a pipe", f"cat {q(prev)} | {s} {stage} - {fl} > {o[2]}"),
                    ("stdin redirect", f"{s} {stage} {fl} < {q(prev)} > {o[3]}")]):
                self.assertOk(shell(script))
                outs.append((form, self.read(self.path(f"{stage}.{i}"))))
            for form, data in outs[1:]:
                self.assertTrue(data == outs[0][1], f"{stage}: output with {form} differs from "
                                f"{outs[0][0]}")
            streams[stage] = outs[0][1]
            prev = self.path(f"{stage}.0")

        # What flows between the stages is what the reference says.
        flags, bound, recs = rs_decode(self, streams["truncate"])
        self.assertEqual(bound, 300, "truncate output header: max_value_bytes")
        last = {}
        for k, v in recs:
            last[k] = v
        self.assertRecordsEqual(sorted(last.items()), ref.records, "truncate output")
        self.assertEqual(len(recs), ref.pages, "truncate output: one record per page")
        flags, bound, recs = rs_decode(self, streams["sort"])
        self.assertEqual(flags & 1, 1, "sort output header: RS_SORTED flag (bytes 12..15 bit 0)")
        self.assertEqual(struct.unpack_from("<I", streams["sort"], 12)[0] & 1, 1)
        self.assertEqual(bound, 300, "sort output header keeps max_value_bytes")
        self.assertRecordsEqual(recs, ref.records, "sort output")

        outs = []
        for i, script in enumerate([f"{s} write {q(prev)} -o {q(self.path('w0.sst'))}",
                                    f"cat {q(prev)} | {s} write - -o {q(self.path('w1.sst'))}",
                                    f"{s} write -o {q(self.path('w2.sst'))} < {q(prev)}"]):
            self.assertOk(shell(script))
            outs.append(self.read(self.path(f"w{i}.sst")))
        self.assertTrue(outs[0] == outs[1] == outs[2], "write: file arg, '-' and stdin differ")
        self.assertRecordsEqual(self.dump(self.path("w0.sst")), ref.records, "write output")

    def test_format_detected_by_content(self):
        """A gzip file named .bz2 and a plain file named .zst build the same table."""
        name, src = self.sources[0]
        xml = reference.open_dump(src)
        f, close = xml
        data = f.read()
        close()
        a = self.write_file("really-gzip.xml.bz2", to_gz(data))
        b = self.write_file("really-plain.xml.zst", data)
        self.build(a, self.path("a.sst"))
        self.build(b, self.path("b.sst"))
        self.build(src, self.path("c.sst"))
        c = self.read(self.path("c.sst"))
        self.assertTrue(self.read(self.path("a.sst")) == c, "gzip named .bz2 differs")
        self.assertTrue(self.read(self.path("b.sst")) == c, "plain XML named .zst differs")

    # ---- write refuses streams it cannot trust

    def refused(self, stream_script, what):
        out = self.path("refused.sst")
        r = shell(f"{stream_script} | {q(sstpipe_bin())} write -o {q(out)}")
        self.assertEqual(r.code, 1, f"{what}: write must fail with exit 1" + r.describe())
        check_error_line(self, r, what=what)
        self.assertFalse(os.path.exists(out), f"{what}: output exists after failure")
        self.assertEqual([p for p in leftover_temps(self.tmp) if ".tmp." in p], [],
                         f"{what}: temp files left beside the output")

    def test_write_refuses_unsorted_stream(self):
        s = q(sstpipe_bin())
        self.refused(f"{s} extract {q(self.generated)} | {s} truncate", "unsorted stream")

    def test_write_refuses_untruncated_stream(self):
        s = q(sstpipe_bin())
        self.refused(f"{s} extract {q(self.generated)} | {s} sort", "untruncated stream")

    def crafted(self, data, what):
        p = self.write_file("crafted.rs", data)
        self.refused(f"cat {q(p)}", what)

    def test_write_refuses_lying_streams(self):
        recs = [(b"a", b"1"), (b"c", b"2"), (b"b", b"3")]
        self.crafted(rs_encode(recs, 1, 1024), "sorted flag but keys out of order")
        self.crafted(rs_encode([(b"a", b"1"), (b"a", b"2")], 1, 1024),
                     "sorted flag but a duplicate key")
        self.crafted(rs_encode([(b"a", b"x" * 2000)], 1, 1024),
                     "value longer than the header's bound")
        self.crafted(rs_encode([(b"a", b"1"), (b"b", b"2")], 1, 1024)[:-9],
                     "stream without end marker")
        self.crafted(rs_encode([(b"a", b"1")], 1, 1024, count=5), "end marker count wrong")
        self.crafted(b"SSTPRS99" + rs_encode([], 1, 1024)[8:], "bad magic")

    def test_sort_output_sorted_flag(self):
        s = q(sstpipe_bin())
        edge = dict(self.sources)["edge"]
        p = self.path("sorted.rs")
        self.assertOk(shell(f"{s} extract {q(edge)} | {s} truncate | {s} sort > {q(p)}"))
        data = self.read(p)
        self.assertEqual(data[:8], b"SSTPRS01")
        self.assertEqual(struct.unpack_from("<I", data, 12)[0] & 1, 1,
                         "sort output lacks RS_SORTED (header bytes 12..15 bit 0)")
        _, _, recs = rs_decode(self, data)
        ref = reference.read_records(io.BytesIO(edge_dump_xml()), 1024)
        self.assertRecordsEqual(recs, ref.records, "sort output of the edge dump")


if __name__ == "__main__":
    unittest.main()
