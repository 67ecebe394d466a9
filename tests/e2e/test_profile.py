"""test_profile.py: `sstpipe profile` from the command line.

On a table built from the largest corpus: the report's figures agree with
each other (all lookups done, percentiles ordered, misses as requested, one
block per lookup and, as the kernel counted, one read of it, or none when
mapped; also cold and with threads and batches), and those reads are what
the preloaded faultshim.c counts from outside (the preads and io_uring
reads of the lookup threads; cold, all on the O_DIRECT descriptor);
the text has the familiar three lines; --json parses and --svg is
well-formed XML with its axes labelled; the same seed gives the same keys; bad arguments fail with
one clear line.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from sstpipe_e2e import E2ETest, check_error_line, corpus_files, parse_info, sstpipe  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


class ProfileTest(E2ETest):

    def setUp(self):
        super().setUp()
        src = max(corpus_files(), key=os.path.getsize)
        self.sst = self.path("t.sst")
        self.build(src, self.sst, "--block-size", "4K", "--cluster-size", "4K")
        self.info = parse_info(self, self.sst)

    def profile(self, *args):
        """Runs profile with --json under the counting shim; returns (the
        faultlib run, parsed JSON)."""
        report = self.path("p.json")
        r = faultlib.sstpipe_run("profile", self.sst, *args, "--json", report,
                                 fault_dir=os.path.dirname(self.sst))
        self.assertEqual(r.code, 0, r.describe())
        with open(report) as f:
            return r, json.load(f)

    def assertConsistent(self, doc, n, misses, run):
        lat = doc["latency_ns"]
        self.assertEqual(doc["lookups"], n)
        self.assertEqual(doc["misses"], misses)
        self.assertEqual(doc["misses_requested"], misses)
        self.assertEqual(doc["hits"], n - misses)
        self.assertTrue(0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99_9"]
                        <= lat["max"], lat)
        self.assertTrue(lat["min"] <= lat["avg"] <= lat["max"], lat)
        # One block per lookup (every key sorts at or after the first):
        # read in place warm, cold by one pread returning the whole block,
        # or in a batch through io_uring, each distinct block of it once.
        self.assertEqual(doc["blocks_searched"], n)
        cold = doc["mode"] == "cold"
        uring = cold and doc["queue_depth"] > 1
        self.assertEqual(doc["io"], "io_uring" if uring else "pread" if cold else "mapped")
        per = 1 if cold else 0
        if uring:
            self.assertTrue(0 < doc["reads"] <= n, doc["reads"])
            self.assertLessEqual(doc["max_reads_per_lookup"], 1)
        else:
            self.assertEqual(doc["reads"], per * n)
            self.assertEqual((doc["min_reads_per_lookup"], doc["max_reads_per_lookup"]),
                             (per, per))
        if cold:
            self.assertEqual(doc["bytes_read"], doc["reads"] * doc["block_size"])
        # As seen from outside: the lookup threads (all but the first) made
        # exactly those reads, by pread or through io_uring as the mode says,
        # cold every one of them on the O_DIRECT descriptor.
        seen = (run.threads["pread"], run.threads["uring_read"])
        self.assertEqual(seen, (0, doc["reads"]) if uring else (per * n, 0), run.describe())
        self.assertEqual(run.counts["uring_read"], seen[1], "an io_uring read off the lookups")
        # Beside them, the opening thread's: the library's proof, when it
        # opens with direct I/O, that the descriptor reads.
        direct = run.direct["pread"] + run.direct["uring_read"]
        opener = run.counts["pread"] - run.threads["pread"]
        if cold:
            self.assertTrue(doc["reads"] <= direct <= doc["reads"] + opener, run.describe())
        else:
            self.assertEqual(direct, 0)
        self.assertEqual(doc["records"], self.info["records"])
        self.assertGreater(doc["lookups_per_sec"], 0)

    def test_warm_report_json_and_svg(self):
        svg = self.path("p.svg")
        r, doc = self.profile("2000", "--misses", "10", "--seed", "1", "--svg", svg)
        self.assertConsistent(doc, 2000, 200, r)
        self.assertEqual((doc["mode"], doc["threads"], doc["queue_depth"], doc["seed"]),
                         ("warm", 1, 1, 1))
        text = r.stdout.decode()
        self.assertIn("\nProfile results for 2000 lookups:\nAverage time: ", text)
        self.assertIn("\nMin time: ", text)
        self.assertIn("\nMax time: ", text)
        for word in ("p50", "p90", "p99", "p99.9", "lookups/s", "per lookup", "seed 1"):
            self.assertIn(word, text)
        root = ET.parse(svg).getroot()
        self.assertEqual(root.tag, SVG + "svg")
        labels = " ".join(t.text or "" for t in root.iter(SVG + "text"))
        for word in ("latency (log scale)", "lookups per bin", "cumulative", "p50", "p99.9"):
            self.assertIn(word, labels)
        self.assertTrue(list(root.iter(SVG + "polyline")), "no CDF line")
        self.assertTrue(list(root.iter(SVG + "rect")), "no histogram bars")

    def test_cold_threads_and_queue_depth(self):
        for args in (["--cold"], ["--threads", "3"], ["--queue-depth", "8"],
                     ["--cold", "--threads", "2", "--queue-depth", "4"]):
            with self.subTest(args=args):
                r, doc = self.profile("999", "--misses", "5", "--seed", "9", *args)
                self.assertConsistent(doc, 999, 50, r)
                self.assertEqual(doc["mode"], "cold" if "--cold" in args else "warm")

    def test_same_seed_same_keys(self):
        _, a = self.profile("500", "--misses", "20", "--seed", "123")
        _, b = self.profile("500", "--misses", "20", "--seed", "123", "--threads", "2")
        _, c = self.profile("500", "--misses", "20", "--seed", "124")
        self.assertEqual(a["key_sequence_hash"], b["key_sequence_hash"])
        self.assertNotEqual(a["key_sequence_hash"], c["key_sequence_hash"])
        # Without --seed the seed is [profile] seed's default, 1, as --help says.
        _, d = self.profile("500", "--misses", "20")
        self.assertEqual(d["seed"], 1)
        _, e = self.profile("500", "--misses", "20", "--seed", "1")
        self.assertEqual(d["key_sequence_hash"], e["key_sequence_hash"])

    def test_bad_arguments(self):
        text = self.write_file("notes.txt", b"no sstable here\n" * 500)
        usage = [[self.sst, "0"], [self.sst, "-5"], [self.sst, "ten"], [self.sst, "1", "2"],
                 [self.sst, "10", "--queue-depth", "0"], [self.sst, "10", "--threads", "0"],
                 [self.sst, "10", "--misses", "150"], [self.sst, "10", "--bogus"]]
        for args in usage:
            with self.subTest(args=args):
                r = sstpipe("profile", *args)
                self.assertEqual(r.code, 2, r.describe())
                self.assertTrue(r.err_text.startswith("sstpipe"), r.describe())
        r = sstpipe("profile", self.path("missing.sst"), "10")
        self.assertEqual(r.code, 2, r.describe())  # refused before any work
        check_error_line(self, r, names=["missing.sst"], what="profile of a missing file")
        failures = [([text, "10"], ["notes.txt"]),
                    ([self.sst, "10", "--cold", "--queue-depth", "100000"],
                     ["queue depth 100000"])]
        for args, names in failures:
            with self.subTest(args=args):
                r = sstpipe("profile", *args)
                self.assertEqual(r.code, 1, r.describe())
                check_error_line(self, r, names=names, what=" ".join(args))
        r = sstpipe("profile", "--help")
        self.assertEqual(r.code, 0)
        self.assertIn(b"usage: sstpipe profile", r.stdout)


if __name__ == "__main__":
    unittest.main()
