"""test_tune.py: `sstpipe tune` from the command line, on generated dumps.

One full run (4 block sizes x 2 cluster sizes) on a 4M dump: every
combination is built (its size and record count agree with `sstpipe build`
of the same options), verified and profiled warm and cold (the cold
lookups' one O_DIRECT read each also counted outside sstpipe, by the
preloaded faultshim.c); the
recommendation is one of the combinations and follows the documented rule;
the snippet (stdout and --config-out) parses as config; the SVG is
well-formed; no trial file is left. A sample run builds exactly what
`sstpipe build` makes of the dump's head cut after its last whole page.
No room and bad arguments are refused clearly, leaving nothing behind.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from sstpipe_e2e import E2ETest, check_error_line, parse_info, sstpipe, wikigen  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
BLOCKS = [4096, 8192, 16384, 65536]
CLUSTERS = [4096, 65536]


def size_text(n):
    return f"{n // 1024}K"


class TuneTest(E2ETest):

    def setUp(self):
        super().setUp()
        self.scratch = self.path("scratch")
        os.mkdir(self.scratch)

    def tune(self, src, *args):
        """Runs tune with --json under the counting shim (its calls on the
        trial files); returns (the faultlib run, parsed JSON)."""
        report = self.path("tune.json")
        r = faultlib.sstpipe_run("tune", src, "--tmp", self.scratch, "--json", report, *args,
                                 fault_dir=self.scratch)
        self.assertEqual(r.code, 0, r.describe())
        with open(report) as f:
            return r, json.load(f)

    def assertRule(self, doc):
        """The recommendation is a trial, and the documented rule picks it."""
        trials = doc["trials"]
        rec = doc["recommendation"]
        combos = [(t["block_size"], t["cluster_size"]) for t in trials]
        self.assertIn((rec["block_size"], rec["cluster_size"]), combos)
        best = min(t["cold"]["p50_ns"] for t in trials)
        close = [t for t in trials if t["cold"]["p50_ns"] <= best * (1 + rec["tolerance_pct"] / 100)]
        pick = min(close, key=lambda t: (t["file_size"], t["block_size"], t["cluster_size"]))
        self.assertEqual((pick["block_size"], pick["cluster_size"]),
                         (rec["block_size"], rec["cluster_size"]))
        self.assertEqual(rec["basis"], "cold_p50")
        self.assertTrue(rec["reason"])
        return pick

    def test_full_run(self):
        src = wikigen(self.path("d.xml.bz2"), "4M", "11", "bz2")
        out_ini = self.path("tuned.ini")
        svg = self.path("tune.svg")
        # Compressed trials are test_compression_trials' (cheaply, on a small dump).
        r, doc = self.tune(src, "--lookups", "300", "--config-out", out_ini, "--svg", svg,
                           "--compression-levels", "none")
        trials = doc["trials"]
        self.assertEqual(sorted((t["block_size"], t["cluster_size"]) for t in trials),
                         sorted((b, c) for b in BLOCKS for c in CLUSTERS))
        records = {t["records"] for t in trials}
        self.assertEqual(len(records), 1, "every trial holds the same records")
        self.assertGreater(records.pop(), 0)
        for t in trials:
            what = f"block {t['block_size']} cluster {t['cluster_size']}"
            self.assertEqual(t["verify"]["problems"], 0, what)
            self.assertEqual(t["file_size"] % t["cluster_size"], 0, what)
            self.assertAlmostEqual(t["compactness"],
                                   (t["key_bytes"] + t["value_bytes"]) / t["file_size"], places=9)
            for mode in ("warm", "cold"):
                lat = t[mode]
                self.assertTrue(0 < lat["p50_ns"] <= lat["p99_ns"], (what, mode, lat))
            # Warm at queue depth 1 blocks are read in place: no read call.
            self.assertEqual((t["warm"]["reads_per_lookup"], t["warm"]["bytes_per_lookup"]),
                             (0, 0), what)
            self.assertEqual(t["cold"]["bytes_per_lookup"], t["block_size"], what)
            # Cold reads are O_DIRECT: exactly one aligned read per lookup.
            self.assertEqual(t["cold"]["reads_per_lookup"], 1.0, what)
        self.assertEqual(doc["queue_depth"], 1)
        self.assertEqual(r.counts["uring_read"], 0)
        pick = self.assertRule(doc)

        # The trial really was a build with those options: sstpipe build agrees.
        ref = self.path("ref.sst")
        self.build(src, ref, "--block-size", size_text(pick["block_size"]), "--cluster-size",
                   size_text(pick["cluster_size"]))
        # And as seen from outside: the only O_DIRECT reads of the trial
        # files are the cold lookups, one pread each (queue depth 1), and
        # those of each trial's cold open, as many as a cold profile of one
        # lookup on a table built alike makes beside its one (the library
        # proving, when it opens a table with direct I/O, that the
        # descriptor reads); no read went through an io_uring.
        one = faultlib.sstpipe_run("profile", ref, "1", "--cold", fault_dir=os.path.dirname(ref))
        self.assertEqual(one.code, 0, one.describe())
        per_open = one.direct["pread"] - 1
        self.assertEqual(r.direct["pread"], len(trials) * (doc["lookups"] + per_open),
                         r.describe())
        info = parse_info(self, ref)
        self.assertEqual((info["records"], info["file_size"]), (pick["records"], pick["file_size"]))

        # The snippet: the same on stdout and in the file, and config reads it back.
        with open(out_ini) as f:
            snippet = f.read()
        self.assertIn(snippet, r.stdout.decode())
        self.assertEqual(snippet, doc["recommendation"]["config"])
        shown = sstpipe("config", "show", "-c", out_ini, "--json")
        self.assertOk(shown)
        sst = json.loads(shown.stdout)["sst"]
        self.assertEqual(sst["block_size"]["value"], pick["block_size"])
        self.assertEqual(sst["cluster_size"]["value"], pick["cluster_size"])
        self.assertTrue(sst["block_size"]["origin"].startswith(out_ini + ":"))

        # The chart: well-formed, a cold and a warm line per cluster size, each through every block size.
        root = ET.parse(svg).getroot()
        self.assertEqual(root.tag, SVG + "svg")
        lines = root.findall(SVG + "polyline")
        self.assertEqual(len(lines), 2 * len(CLUSTERS))
        for line in lines:
            self.assertEqual(len(line.get("points").split()), len(BLOCKS))
        texts = " ".join(t.text or "" for t in root.iter(SVG + "text"))
        for label in ("block size", "cluster 4K", "cluster 64K", "recommended"):
            self.assertIn(label, texts)

        self.assertEqual(os.listdir(self.scratch), [], "trial files must be removed")

    def test_sample_is_the_head_cut_at_a_page(self):
        xml_path = wikigen(self.path("d.xml"), "6M", "12", "xml")
        src = wikigen(self.path("d.xml.zst"), "6M", "12", "zst")
        limit = 1 << 20
        _, doc = self.tune(src, "--sample", "1M", "--block-sizes", "8K", "--cluster-sizes", "4K",
                           "--lookups", "200", "--compression-levels", "none")
        with open(xml_path, "rb") as f:
            head = f.read(limit)
        cut = head.rindex(b"</page>") + len(b"</page>")
        expected = head[:cut] + b"\n</mediawiki>\n"
        sample = doc["sample"]
        self.assertEqual(sample["limit"], limit)
        self.assertEqual(sample["xml_bytes"], len(expected))
        self.assertEqual(sample["pages"], head[:cut].count(b"</page>"))
        ref_xml = self.write_file("head.xml", expected)
        ref = self.path("head.sst")
        self.build(ref_xml, ref, "--block-size", "8K", "--cluster-size", "4K")
        info = parse_info(self, ref)
        (t,) = doc["trials"]
        self.assertEqual((t["records"], t["file_size"]), (info["records"], info["file_size"]))
        self.assertRule(doc)
        self.assertEqual(os.listdir(self.scratch), [])

    def test_compression_trials(self):
        """After the sizes, zstd levels x dictionary sizes at the best of
        them; each trial's bytes per record and compression ratio are info's
        of a table built alike, and the recommendation names its compression."""
        src = wikigen(self.path("d.xml"), "1M", "14", "xml")
        _, doc = self.tune(src, "--block-sizes", "8K,16K", "--cluster-sizes", "4K",
                           "--compression-levels", "1", "--dictionary-sizes", "0,4K",
                           "--lookups", "100")
        trials = doc["trials"]
        plain = [t for t in trials if t["compression"] == "none"]
        zstd = [t for t in trials if t["compression"] == "zstd"]
        self.assertEqual(len(plain), 2)
        self.assertEqual([(t["compression_level"], t["dictionary_size"]) for t in zstd],
                         [(1, 0), (1, 4096)])
        best_plain = min(
            [t for t in plain if t["cold"]["p50_ns"] <= min(p["cold"]["p50_ns"] for p in plain)
             * (1 + doc["recommendation"]["tolerance_pct"] / 100)],
            key=lambda t: (t["file_size"], t["block_size"]))
        for t in trials:
            what = f"{t['block_size']} {t['compression']} {t['dictionary_size']}"
            if t["compression"] == "zstd":
                self.assertEqual((t["block_size"], t["cluster_size"]),
                                 (best_plain["block_size"], best_plain["cluster_size"]), what)
                # Still one aligned read of a block per cold lookup.
                self.assertEqual(t["cold"]["reads_per_lookup"], 1.0, what)
            else:
                self.assertEqual((t["compression_level"], t["dictionary_size"]), (None, None))
            ref = self.path("ref.sst")
            sets = ["--set", f"sst.compression={t['compression']}"]
            if t["compression"] == "zstd":
                sets += ["--set", f"sst.compression_level={t['compression_level']}",
                         "--set", f"sst.dictionary_size={t['dictionary_size']}"]
            self.build(src, ref, "--block-size", size_text(t["block_size"]), "--cluster-size",
                       size_text(t["cluster_size"]), *sets)
            info = parse_info(self, ref)
            self.assertEqual(t["file_size"], info["file_size"], what)
            for k in ("bytes_per_record", "compression_ratio"):
                self.assertAlmostEqual(t[k], info[k], places=9, msg=f"{what}: {k}")
            os.unlink(ref)
        self.assertGreater(min(t["compression_ratio"] for t in zstd),
                           max(t["compression_ratio"] for t in plain))
        rec = doc["recommendation"]
        keys = ("block_size", "cluster_size", "compression", "compression_level",
                "dictionary_size")
        self.assertEqual(len([t for t in trials if all(t[k] == rec[k] for k in keys)]), 1)
        self.assertIn(f"compression = {rec['compression']}\n", rec["config"])
        self.assertEqual(os.listdir(self.scratch), [])

    def test_refusals(self):
        src = wikigen(self.path("d.xml"), "1M", "13", "xml")
        # No room: refused before any trial, with the sizes named; nothing left.
        r = sstpipe("tune", src, "--tmp", self.scratch, "--sample", "1T")
        self.assertEqual(r.code, 1, r.describe())
        check_error_line(self, r, names=["no room"])
        self.assertEqual(os.listdir(self.scratch), [])
        # Not a file: stdin cannot be read once per trial.
        r = sstpipe("tune", "-", "--tmp", self.scratch)
        self.assertEqual(r.code, 1, r.describe())
        check_error_line(self, r, names=["stdin"])
        r = sstpipe("tune", self.path("missing.xml"), "--tmp", self.scratch)
        self.assertEqual(r.code, 2, r.describe())  # refused before any work
        check_error_line(self, r, names=["missing.xml"])
        self.assertEqual(os.listdir(self.scratch), [])
        for args in (["--block-sizes", "3K"], ["--block-sizes", "512"], ["--block-sizes", "8K,8K"],
                     ["--cluster-sizes", ""], ["--sample", "1X"], ["--lookups", "0"],
                     ["--tolerance", "-1"], ["--compression-levels", "20"],
                     ["--compression-levels", "3,3"], ["--dictionary-sizes", "2M"], ["--bogus"]):
            r = sstpipe("tune", src, *args)
            self.assertEqual(r.code, 2, r.describe())
            check_error_line(self, r, what=" ".join(args))
        r = sstpipe("tune")
        self.assertEqual(r.code, 2, r.describe())
        r = sstpipe("tune", "--help")
        self.assertEqual(r.code, 0)
        self.assertIn(b"usage: sstpipe tune", r.stdout)


if __name__ == "__main__":
    unittest.main()
