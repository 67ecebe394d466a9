"""test_verify.py: `sstpipe verify` from the command line.

Tables built with `sstpipe build` from the corpora verify clean under several
block and cluster sizes, with a summary that agrees with `info`; single-byte
changes (a CLI-level sample; the full sweep is in tests/unit/test_verify.c),
truncations and appended bytes give exit 3 (problems found) and problem
lines; files that cannot be checked give exit 1 and one error line; --json writes the same
report as JSON, naming the UTF-8 check this CPU's flags call for.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import re
import unittest

from sstpipe_e2e import (SANITIZED, E2ETest, check_error_line, corpus_files, parse_info,
                         sstpipe)

SUMMARY_RE = re.compile(r"^(?P<file>.*): records=(?P<records>\d+) blocks=(?P<blocks>\d+) "
                        r"bytes=(?P<bytes>\d+) seconds=[\d.]+ MB/s=[\d.]+ "
                        r"(?P<status>OK|\d+ problems?)$")
PROBLEM_RE = re.compile(r"^.*: (block \d+ at )?byte \d+: .+$")

SHAPES = [("4K", "512"), ("16K", "4K"), ("64K", "64K")]


def summaries(test, stdout):
    """Summary lines of a verify run, as dicts; every other line must be a problem line."""
    out = []
    for line in stdout.decode("utf-8", "replace").splitlines():
        m = SUMMARY_RE.match(line)
        if m:
            out.append(m.groupdict())
        else:
            test.assertRegex(line, PROBLEM_RE, "verify printed a line that is neither a problem "
                             "nor a summary")
    return out


def widest_utf8_check():
    """The UTF-8 check verify's --json should name on this CPU: the widest
    of its vector paths whose instructions /proc/cpuinfo lists, else
    "scalar"."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags.update(line.split(":", 1)[1].split())
    return "AVX-512BW" if "avx512bw" in flags else "AVX2" if "avx2" in flags else "scalar"


class VerifyTest(E2ETest):

    def small_table(self, name="small.sst"):
        """A table of a few kilobytes: the smallest corpus, small blocks and clusters."""
        src = min(corpus_files(), key=os.path.getsize)
        out = self.path(name)
        self.build(src, out, "--block-size", "2K", "--cluster-size", "512", "--max-bytes",
                   "300")
        return out

    def test_clean_tables_of_every_shape(self):
        for src in corpus_files():
            for bs, cs in SHAPES:
                with self.subTest(src=os.path.basename(src), block=bs, cluster=cs):
                    out = self.path("t.sst")
                    self.build(src, out, "--block-size", bs, "--cluster-size", cs)
                    r = sstpipe("verify", out)
                    self.assertEqual(r.code, 0, "clean table reported bad:" + r.describe())
                    (s,) = summaries(self, r.stdout)
                    self.assertEqual(s["status"], "OK")
                    info = parse_info(self, out)
                    self.assertEqual(int(s["records"]), info["records"])
                    self.assertEqual(int(s["bytes"]), os.path.getsize(out))

    def test_every_byte_or_a_sample_is_caught(self):
        path = self.small_table()
        data = open(path, "rb").read()
        n = len(data)
        # Every byte of the footer region and the index, a stride over the
        # data; in a sanitized build, which looks for memory errors on the
        # paths a flip takes (tests/unit/test_verify.c sweeps every third
        # byte there too, in-process and cheaper), a third as many, of those
        # in the data blocks, where every flip is a block checksum mismatch
        # (one problem line, printed the same way), a quarter, and of all
        # these every third: what a flip adds here to the library's sweep is
        # its problem line, which every flip of a region prints the same way.
        k = 200 if SANITIZED else 600
        info = parse_info(self, path)
        data_end = info["data_blocks"] * info["block_size"]
        stride = max(1, n // k)
        positions = sorted({p for p in range(0, n, stride)
                            if not SANITIZED or p >= data_end or p % (4 * stride) == 0} |
                           set(range(max(0, n - k), n)))
        if SANITIZED:
            positions = positions[::3]
        for pos in positions:
            bad = bytearray(data)
            bad[pos] ^= 0x01
            with open(path, "wb") as f:
                f.write(bad)
            r = sstpipe("verify", path)
            self.assertEqual(r.code, 3, f"flip of byte {pos} of {n} not caught:" + r.describe())
            (s,) = summaries(self, r.stdout)
            self.assertNotEqual(s["status"], "OK")

    def test_truncated_and_appended(self):
        path = self.small_table()
        data = open(path, "rb").read()
        cases = {f"cut to {k}": data[:k] for k in (len(data) - 1, len(data) - 128,
                                                     len(data) // 2, 2048)}
        cases.update({f"{len(x)} bytes appended": data + x
                      for x in (b"\0", b"x" * 100, data[-512:])})
        for what, content in cases.items():
            with self.subTest(what):
                bad = self.write_file("bad.sst", content)
                r = sstpipe("verify", bad)
                self.assertEqual(r.code, 3, what + r.describe())
                self.assertTrue(any(PROBLEM_RE.match(l) for l in
                                    r.stdout.decode().splitlines()), what + r.describe())

    def test_json_report_and_many_files(self):
        good = self.small_table("good.sst")
        data = bytearray(open(good, "rb").read())
        data[2048 + 100] ^= 0xFF  # inside block 1
        bad = self.write_file("bad.sst", bytes(data))
        report = self.path("report.json")
        r = sstpipe("verify", good, bad, "--json", report)
        self.assertEqual(r.code, 3, r.describe())
        lines = r.stdout.decode().splitlines()
        self.assertIn(f"{bad}: block 1 at byte 2048: block checksum mismatch", "\n".join(lines))
        got = summaries(self, r.stdout)
        self.assertEqual([s["file"] for s in got], [good, bad])
        with open(report) as f:
            doc = json.load(f)
        self.assertEqual(doc["problems"], 1)
        # The UTF-8 check named is the widest this CPU has, by the kernel's
        # account of its flags.
        self.assertEqual(doc["utf8_check"], widest_utf8_check())
        g, b = doc["files"]
        self.assertEqual((g["file"], g["ok"], g["problem_count"]), (good, True, 0))
        self.assertEqual(g["records"], parse_info(self, good)["records"])
        self.assertEqual(g["bytes"], os.path.getsize(good))
        for key in ("blocks", "seconds", "mb_per_s", "problems"):
            self.assertIn(key, g)
        self.assertEqual((b["ok"], b["problem_count"]), (False, 1))
        self.assertEqual((b["problems"][0]["block"], b["problems"][0]["offset"]), (1, 2048))

    def test_files_that_cannot_be_checked(self):
        good = self.small_table("good.sst")
        text = self.write_file("notes.txt", b"just some text\n" * 500)
        missing = self.path("missing.sst")
        for path, name in ((missing, "missing.sst"), (text, "notes.txt")):
            with self.subTest(name):
                r = sstpipe("verify", path)
                self.assertEqual(r.code, 1, r.describe())
                check_error_line(self, r, names=[name], what=name)
        # The other files are still checked and reported.
        r = sstpipe("verify", missing, good)
        self.assertEqual(r.code, 1, r.describe())
        self.assertEqual([s["status"] for s in summaries(self, r.stdout)], ["OK"])

    def test_threads_give_the_same_report(self):
        # The library test (tests/unit/test_verify.c) runs many chunks on up to
        # 16 threads; here, that --threads and [verify] threads reach it and
        # change nothing in what is printed but the timing.
        src = max(corpus_files(), key=os.path.getsize)
        path = self.path("t.sst")
        self.build(src, path, "--block-size", "2K", "--cluster-size", "512")
        with open(path, "rb") as f:
            data = bytearray(f.read())
        for block in (1, 5, 9):
            data[block * 2048 + 100] ^= 0x20
        bad = self.write_file("bad.sst", bytes(data))
        timing = re.compile(rb"seconds=[\d.]+ MB/s=[\d.]+")
        outs = {}
        for args in ([], ["--threads", "1"], ["--threads", "3"], ["--set", "verify.threads=2"]):
            with self.subTest(args=args):
                r = sstpipe("verify", bad, *args)
                self.assertEqual(r.code, 3, r.describe())
                outs[" ".join(args)] = timing.sub(b"", r.stdout)
        self.assertEqual(len(set(outs.values())), 1, outs)
        self.assertIn(f"{bad}: block 1 at byte 2048: block checksum mismatch".encode(),
                      outs[""].splitlines()[0])
        for value in ("x", "-1", "2000"):
            with self.subTest(threads=value):
                r = sstpipe("verify", bad, "--threads", value)
                self.assertEqual(r.code, 2, r.describe())
                check_error_line(self, r, names=["--threads"], what="--threads " + value)

    def test_usage(self):
        r = sstpipe("verify", "--help")
        self.assertEqual(r.code, 0)
        self.assertIn(b"usage: sstpipe verify", r.stdout)
        for args in ([], ["--bogus", "x.sst"], ["x.sst", "--json"]):
            with self.subTest(args=args):
                r = sstpipe("verify", *args)
                self.assertEqual(r.code, 2, r.describe())


if __name__ == "__main__":
    unittest.main()
