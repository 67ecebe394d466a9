"""test_iotest.py: `sstpipe iotest` from the command line.

Every default pattern on a small file for a short time: the figures agree
with each other (IOPS > 0, MB/s = IOPS x IO size, bytes = IOs x IO size,
min <= p50 <= p99 <= max, min <= avg <= max), the JSON parses and matches
the text, the test file is gone afterwards -- also after SIGTERM; --pattern
replaces the default set; tmpfs is run with a clear note; bad arguments get
one clear error line.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import signal
import subprocess
import time
import unittest

from sstpipe_e2e import E2ETest, check_error_line, sstpipe, sstpipe_bin

SMALL = ["--size", "16M", "--threads", "2", "--queue-depth", "2"]
DEFAULTS = ["rr:8K", "rr:64K", "rw:8K", "sr:64K", "sw:8K", "sr:256K"]
SIZES = {"4K": 4096, "8K": 8192, "16K": 16384, "64K": 65536, "256K": 262144}


class IotestTest(E2ETest):

    def setUp(self):
        super().setUp()
        self.dir = self.path("disk")
        os.mkdir(self.dir)

    def iotest(self, *args, where=None):
        report = self.path("io.json")
        r = sstpipe("iotest", where or self.dir, *SMALL, *args, "--json", report)
        self.assertOk(r)
        with open(report) as f:
            return r, json.load(f)

    def assertSane(self, p):
        size = SIZES[p["pattern"].split(":")[1]]
        self.assertEqual(p["io_size"], size)
        self.assertGreater(p["ios"], 0, p)
        self.assertEqual(p["bytes"], p["ios"] * size)
        self.assertGreater(p["iops"], 0, p)
        self.assertAlmostEqual(p["mb_per_s"], p["iops"] * size / 1e6, delta=p["mb_per_s"] * 1e-9)
        self.assertAlmostEqual(p["iops"], p["ios"] / p["seconds"], delta=p["iops"] * 1e-9)
        lat = p["latency_ns"]
        self.assertTrue(0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["max"], lat)
        self.assertTrue(lat["min"] <= lat["avg"] <= lat["max"], lat)

    def test_default_patterns(self):
        r, doc = self.iotest("--duration", "1")
        self.assertEqual([p["pattern"] for p in doc["patterns"]], DEFAULTS)
        self.assertEqual((doc["threads"], doc["queue_depth"], doc["file_size"]), (2, 2, 16 << 20))
        for p in doc["patterns"]:
            self.assertSane(p)
            self.assertEqual(p["random"], p["pattern"][0] == "r")
            self.assertEqual(p["write"], p["pattern"][1] == "w")
            # Each thread issues IOs until its deadline, so a pattern lasts at
            # least its duration, on the same monotonic clock. After that only
            # the IOs in flight drain: each took at most the slowest latency
            # measured. The slack covers the threads' start through one gate,
            # however loaded the machine: a pattern that ignored its deadline
            # would run until ctest's timeout.
            self.assertGreaterEqual(p["seconds"], 1.0, p)
            self.assertLess(p["seconds"], 1.0 + p["latency_ns"]["max"] / 1e9 + 60, p)
        self.assertEqual(os.listdir(self.dir), [], "the test file must be removed")
        # One text line per pattern, with the JSON's IOPS.
        text = r.stdout.decode()
        for p in doc["patterns"]:
            line = next(l for l in text.splitlines() if l.startswith(p["pattern"] + " "))
            self.assertEqual(int(line.split()[3]), round(p["iops"]), line)

    def test_patterns_replace_defaults(self):
        _, doc = self.iotest("--duration", "0.3", "--pattern", "rr:4K", "--pattern", "sw:16K")
        self.assertEqual([p["pattern"] for p in doc["patterns"]], ["rr:4K", "sw:16K"])
        for p in doc["patterns"]:
            self.assertSane(p)
        self.assertEqual(os.listdir(self.dir), [])

    def test_tmpfs_runs_with_a_note(self):
        if not os.path.isdir("/dev/shm"):
            raise unittest.SkipTest("no /dev/shm")
        import tempfile
        shm = tempfile.mkdtemp(prefix="sstpipe-e2e-", dir="/dev/shm")
        self.addCleanup(os.rmdir, shm)
        r, doc = self.iotest("--duration", "0.2", "--pattern", "rr:4K", where=shm)
        self.assertIn("memory", doc["note"])
        self.assertIn("note:", r.stdout.decode())
        self.assertIn("note:", r.err_text)
        self.assertSane(doc["patterns"][0])
        self.assertEqual(os.listdir(shm), [])

    def test_sigterm_removes_the_test_file(self):
        proc = subprocess.Popen([sstpipe_bin(), "iotest", self.dir, *SMALL, "--duration", "30"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while not os.listdir(self.dir) and time.monotonic() < deadline:
                time.sleep(0.02)
            self.assertTrue(os.listdir(self.dir), "the test file never appeared")
            self.assertTrue(os.listdir(self.dir)[0].startswith("sstpipe-iotest."))
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=20), 128 + signal.SIGTERM)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(os.listdir(self.dir), [])

    def test_bad_arguments(self):
        for args in (["--pattern", "xx:8K"], ["--pattern", "rr:3K"], ["--size", "10000"],
                     ["--duration", "0"], ["--threads", "0"], ["--queue-depth", "x"],
                     ["--bogus"]):
            r = sstpipe("iotest", self.dir, *args)
            self.assertEqual(r.code, 2, r.describe())
            check_error_line(self, r, what=" ".join(args))
        r = sstpipe("iotest")
        self.assertEqual(r.code, 2, r.describe())
        r = sstpipe("iotest", "--help")
        self.assertEqual(r.code, 0)
        self.assertIn(b"usage: sstpipe iotest", r.stdout)
        # Runtime refusals: exit 1, one line naming the cause, nothing left behind.
        notdir = self.write_file("plain", b"x")
        cases = [([notdir], "not a directory"), ([self.dir, "--size", "1T"], "no room"),
                 ([self.dir, "--size", "16K", "--threads", "4", "--pattern", "rr:8K"],
                  "too small"), ([self.path("missing")], "missing")]
        for args, words in cases:
            r = sstpipe("iotest", *args)
            self.assertEqual(r.code, 1, r.describe())
            check_error_line(self, r, names=[words], what=words)
        self.assertEqual(os.listdir(self.dir), [])


if __name__ == "__main__":
    unittest.main()
