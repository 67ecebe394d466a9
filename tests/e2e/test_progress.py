"""The live progress line of long commands (stages/common/progress.h).

Under a pseudo-terminal the line appears within a second of the start, with
the phase, bytes of the input's size, percent, pages and records, and ends
with a clean final line; piped, stderr stays empty; --progress forces it on
a pipe and --no-progress (or [progress] show = never) turns it off.
"""
import os
import pty
import re
import select
import subprocess
import tempfile
import time
import unittest

from sstpipe_e2e import sstpipe_bin, wikigen_bin

LINE = re.compile(rb"build: (reading|writing) [0-9.]+[KMG]? of [0-9.]+[KMG]? \(\d+\.\d%\)"
                  rb"(, xml [0-9.]+[KMG]?)?(, \d+ pages)?, \d+ records, [0-9.]+ MB/s, elapsed \d+:\d\d:\d\d")


def run_on_pty(args, timeout=120):
    """Runs args with stderr on a pseudo-terminal; returns (exit code,
    seconds until the first stderr byte, everything written to stderr)."""
    master, slave = pty.openpty()
    start = time.monotonic()
    p = subprocess.Popen(args, stderr=slave, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(slave)
    out, first = b"", None
    deadline = start + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if not ready:
            if p.poll() is not None:
                break
            continue
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        if first is None:
            first = time.monotonic() - start
        out += data
    os.close(master)
    return p.wait(timeout=timeout), first, out


class ProgressTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dump = os.path.join(cls.tmp.name, "d.xml.zst")
        subprocess.run([wikigen_bin(), "--size", "32M", "--format", "zst", "-o", cls.dump],
                       check=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def out(self, name):
        return os.path.join(self.tmp.name, name)

    def test_terminal_shows_live_line(self):
        code, first, err = run_on_pty(
            [sstpipe_bin(), "build", self.dump, "-o", self.out("t.sst"), "--memory", "16M"])
        self.assertEqual(code, 0, err)
        self.assertIsNotNone(first, "nothing on the terminal")
        # The meter draws its first line when it starts, before any work.
        self.assertLess(first, 1.0, err[:300])
        lines = err.split(b"\r\x1b[K")
        self.assertTrue(all(LINE.match(l) for l in lines if l), [l for l in lines if l][:3])
        self.assertTrue(err.endswith(b", done\r\n"), err[-200:])
        final = lines[-1]
        self.assertIn(b"(100.0%)", final)
        self.assertNotIn(b" 0 records", final)
        # Exactly one newline: the clean final line.
        self.assertEqual(err.count(b"\n"), 1)

    def test_nothing_when_piped(self):
        r = subprocess.run([sstpipe_bin(), "build", self.dump, "-o", self.out("p.sst")],
                           capture_output=True)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stderr, b"")

    def test_forced_on_a_pipe_and_off_on_a_terminal(self):
        r = subprocess.run([sstpipe_bin(), "build", self.dump, "-o", self.out("f.sst"),
                            "--progress"], capture_output=True)
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stderr, LINE)
        self.assertTrue(r.stderr.endswith(b", done\n"))
        for off in (["--no-progress"], ["--set", "progress.show=never"]):
            code, first, err = run_on_pty([sstpipe_bin(), "build", self.dump, "-o",
                                           self.out("n.sst")] + off)
            self.assertEqual(code, 0)
            self.assertEqual(err, b"", off)

    def test_stages_show_their_phase(self):
        rs = self.out("x.rs")
        code, _, err = run_on_pty([sstpipe_bin(), "extract", self.dump, "-o", rs])
        self.assertEqual(code, 0)
        self.assertRegex(err, rb"extract: reading .* of .*\(100\.0%\), xml .* pages, \d+ records"
                              rb".*, done\r\n$")
        tr = self.out("x.tr")
        subprocess.run([sstpipe_bin(), "truncate", rs, "-o", tr], check=True)
        so = self.out("x.so")
        code, _, err = run_on_pty([sstpipe_bin(), "sort", tr, "-o", so, "--memory", "8M"])
        self.assertEqual(code, 0)
        self.assertRegex(err, rb"sort: merging .*\(100\.0%\), \d+ records.*, done\r\n$")
        code, _, err = run_on_pty([sstpipe_bin(), "write", so, "-o", self.out("x.sst")])
        self.assertEqual(code, 0)
        self.assertRegex(err, rb"write: writing .*\(100\.0%\), \d+ records.*, done\r\n$")

    def test_error_stands_on_its_own_line(self):
        bad = self.out("bad.xml")
        with open(bad, "wb") as f:
            f.write(b"<mediawiki><page><title>A</title>")
        code, _, err = run_on_pty([sstpipe_bin(), "build", bad, "-o", self.out("b.sst")])
        self.assertEqual(code, 1)
        lines = [l.split("\r\x1b[K")[-1] for l in err.decode().split("\r\n")]
        self.assertEqual(lines[-1], "", err)
        errors = [l for l in lines if l.startswith("sstpipe: ")]
        self.assertEqual(len(errors), 1, err)
        self.assertIn("XML error", errors[0])
        self.assertTrue(any(l.endswith(", stopped") for l in lines), err)


if __name__ == "__main__":
    unittest.main()
