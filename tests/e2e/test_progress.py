"""The live progress line of long commands (stages/common/progress.h).

Under a pseudo-terminal the line appears as the work starts: while the work
is held (the fault shim's HOLD) at its first open of its input (iotest: of
its test file), before it has read any of it, the line is on the terminal
already, with the phase, bytes of the input's size, percent, pages and
records, and the run ends with a clean final line; piped, stderr stays
empty; --progress forces it on a pipe and --no-progress (or [progress] show
= never) turns it off. Also for verify (one line per file, bytes of the
file, records as the report's), tune (trial i of n, percent of all trials'
input, its phases) and iotest (the fill with percent, then pattern i of n,
bytes and IOs as the report's). No wall-clock bound: every wait is for an
event, bounded only against a hang.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import pty
import re
import select
import shutil
import subprocess
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from sstpipe_e2e import sstpipe_bin, wikigen_bin  # noqa: E402

LINE = re.compile(rb"build: (reading|writing) [0-9.]+[KMG]? of [0-9.]+[KMG]? \(\d+\.\d%\)"
                  rb"(, xml [0-9.]+[KMG]?)?(, \d+ pages)?, \d+ records, [0-9.]+ MB/s, elapsed \d+:\d\d:\d\d")


def run_on_pty(args, timeout=120, hold=None):
    """Runs args with stderr on a pseudo-terminal; returns (exit code,
    everything written to stderr). timeout only bounds a hung run.

    hold=(op, path): the run's first call of op on path (a file, or any
    file under a directory; faultshim.c's names: "open_read" for opening
    an input) is held, that thread alone, until the terminal has shown
    something; a run that shows nothing while it is held there fails."""
    master, slave = pty.openpty()
    env = None
    if hold:
        where = tempfile.mkdtemp(prefix="sstpipe-progress-hold-")
        fifo, log = os.path.join(where, "hold"), os.path.join(where, "log")
        os.mkfifo(fifo)
        env = faultlib.shim_env(os.environ, f"{hold[0]}:1:HOLD", hold[1], log)
        env["SSTPIPE_FAULT_HOLD"] = fifo
    p = subprocess.Popen(args, stderr=slave, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                         env=env)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if hold and out and held(log):
                # Shown while the work waits before its input: let it go on.
                with open(fifo, "wb"):
                    pass
                hold = None
            ready, _, _ = select.select([master], [], [], 0.05 if hold and out else 1)
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
            out += data
        if hold:
            p.kill()
            if not held(log):
                raise AssertionError(f"{args[1]}: never reached its hold ({hold[0]} under "
                                     f"{hold[1]}): {out[:300]!r}")
            raise AssertionError(f"{args[1]}: nothing on the terminal in {timeout} s while the "
                                 f"work was held before its input")
    finally:
        os.close(master)
        if env:
            shutil.rmtree(where, True)
    return p.wait(timeout=timeout), out


def held(log):
    """Whether the shim's log says the hold was reached."""
    try:
        with open(log) as f:
            return any(l.startswith("fired ") for l in f)
    except FileNotFoundError:  # the shim writes it when the process starts
        return False


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
        # The meter draws its first line when it starts, before any work:
        # with the build held before it opens its input.
        code, err = run_on_pty(
            [sstpipe_bin(), "build", self.dump, "-o", self.out("t.sst"), "--memory", "16M"],
            hold=("open_read", self.dump))
        self.assertEqual(code, 0, err)
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
            code, err = run_on_pty([sstpipe_bin(), "build", self.dump, "-o",
                                           self.out("n.sst")] + off)
            self.assertEqual(code, 0)
            self.assertEqual(err, b"", off)

    def test_stages_show_their_phase(self):
        rs = self.out("x.rs")
        code, err = run_on_pty([sstpipe_bin(), "extract", self.dump, "-o", rs])
        self.assertEqual(code, 0)
        self.assertRegex(err, rb"extract: reading .* of .*\(100\.0%\), xml .* pages, \d+ records"
                              rb".*, done\r\n$")
        tr = self.out("x.tr")
        subprocess.run([sstpipe_bin(), "truncate", rs, "-o", tr], check=True)
        so = self.out("x.so")
        code, err = run_on_pty([sstpipe_bin(), "sort", tr, "-o", so, "--memory", "8M"])
        self.assertEqual(code, 0)
        self.assertRegex(err, rb"sort: merging .*\(100\.0%\), \d+ records.*, done\r\n$")
        code, err = run_on_pty([sstpipe_bin(), "write", so, "-o", self.out("x.sst")])
        self.assertEqual(code, 0)
        self.assertRegex(err, rb"write: writing .*\(100\.0%\), \d+ records.*, done\r\n$")

    def table(self):
        """A table of the class's dump, built once."""
        path = self.out("v.sst")
        if not os.path.exists(path):
            subprocess.run([sstpipe_bin(), "build", self.dump, "-o", path], check=True)
        return path

    def assertLiveLines(self, err, line, final):
        """Every rewrite of the line matches line; the one newline ends the final line."""
        lines = [l for l in err.split(b"\r\x1b[K") if l]
        self.assertTrue(lines, err)
        for l in lines:
            self.assertRegex(l, line)
        self.assertRegex(lines[-1], final)
        self.assertTrue(err.endswith(b", done\r\n"), err[-200:])
        self.assertEqual(err.count(b"\n"), 1, err)

    def test_verify(self):
        table = self.table()
        size = os.path.getsize(table)
        code, err = run_on_pty([sstpipe_bin(), "verify", table],
                               hold=("open_read", table))
        self.assertEqual(code, 0, err)
        self.assertLiveLines(err, rb"^verify: checking [0-9.]+[KMG]? of [0-9.]+[KMG]? \(\d+\.\d%\), "
                                  rb"\d+ records, [0-9.]+ MB/s, elapsed \d+:\d\d:\d\d",
                             rb"\(100\.0%\), [1-9]\d* records")
        # The final line's records are the report's.
        r = subprocess.run([sstpipe_bin(), "verify", table, "--json", self.out("v.json")],
                           capture_output=True)
        self.assertEqual((r.returncode, r.stderr), (0, b""))
        with open(self.out("v.json")) as f:
            rep = json.load(f)["files"][0]
        self.assertEqual(rep["bytes"], size)
        self.assertIn(b", %d records," % rep["records"], err.split(b"\r\x1b[K")[-1])
        # Several files: one line each, naming the file of how many, ended
        # before its report reaches stdout.
        r = subprocess.run([sstpipe_bin(), "verify", table, table, "--progress"],
                           capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        finals = r.stderr.decode().split("\n")
        self.assertRegex(finals[0], r"verify: file 1 of 2, checking .*\(100\.0%\).*, done$")
        self.assertRegex(finals[1], r"verify: file 2 of 2, checking .*\(100\.0%\).*, done$")
        self.assertEqual(finals[2:], [""])
        # Piped: nothing; --no-progress on a terminal: nothing.
        r = subprocess.run([sstpipe_bin(), "verify", table], capture_output=True)
        self.assertEqual((r.returncode, r.stderr), (0, b""))
        code, err = run_on_pty([sstpipe_bin(), "verify", table, "--no-progress"])
        self.assertEqual((code, err), (0, b""))

    def test_tune(self):
        scratch = self.out("tune")
        os.makedirs(scratch, exist_ok=True)
        args = [sstpipe_bin(), "tune", self.dump, "--tmp", scratch, "--sample", "4M",
                "--block-sizes", "4K,8K", "--cluster-sizes", "4K", "--lookups", "200",
                "--compression-levels", "none"]
        code, err = run_on_pty(args, timeout=600, hold=("open_read", self.dump))
        self.assertEqual(code, 0, err)
        # Each trial is a step; the percent is of both trials' input. Which
        # moments the meter drew depends on timing: every line is checked,
        # and the final one exactly.
        self.assertLiveLines(err, rb"^tune: (trial [12] of 2, )?(reading|writing|checking|profiling) ",
                             rb"^tune: trial 2 of 2, profiling [0-9.]+[KMG]? of [0-9.]+[KMG]? "
                             rb"\(100\.0%\), xml [0-9.]+[KMG]?, \d+ pages, [1-9]\d* records")
        r = subprocess.run(args, capture_output=True, timeout=600)
        self.assertEqual((r.returncode, r.stderr), (0, b""))
        # -v's trial lines and the live line share the terminal cleanly.
        code, err = run_on_pty(args + ["-v"], timeout=600)
        self.assertEqual(code, 0, err)
        text = [l.split("\r\x1b[K")[-1] for l in err.decode().split("\r\n")]
        self.assertEqual(len([l for l in text if l.startswith("tune: trial=")]), 2, err)
        self.assertTrue(text[-2].endswith(", done") and text[-1] == "", err)

    def test_iotest(self):
        disk = self.out("disk")
        os.makedirs(disk, exist_ok=True)
        args = [sstpipe_bin(), "iotest", disk, "--size", "8M", "--threads", "1",
                "--queue-depth", "2", "--duration", "0.5", "--pattern", "rr:4K",
                "--pattern", "sw:8K"]
        code, err = run_on_pty(args, hold=("open", disk))
        self.assertEqual(code, 0, err)
        # The fill (writing, of the file's size) has a percent; each pattern
        # is a step without one. Which moments the meter drew depends on
        # timing: every line is checked, and the final one exactly.
        self.assertLiveLines(err, rb"^iotest: (reading 0, 0 IOs|writing [0-9.]+[KMG]? of 8M "
                                  rb"\(\d+\.\d%\)|pattern 1 of 2, reading [0-9.]+[KMG]?, \d+ IOs|"
                                  rb"pattern 2 of 2, writing [0-9.]+[KMG]?, \d+ IOs), ",
                             rb"^iotest: pattern 2 of 2, writing [0-9.]+[KMG]?, [1-9]\d* IOs, "
                             rb"[0-9.]+ MB/s, elapsed \d+:\d\d:\d\d")
        # Its IOs are the report's.
        r = subprocess.run(args + ["--progress", "--json", self.out("io.json")],
                           capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.out("io.json")) as f:
            rep = json.load(f)
        ios = sum(p["ios"] for p in rep["patterns"])
        final = [l for l in r.stderr.split(b"\n") if l.endswith(b", done")]
        self.assertEqual(len(final), 1, r.stderr)
        self.assertIn(b", %d IOs," % ios, final[0])
        r = subprocess.run(args, capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn(b"iotest: pattern", r.stderr)

    def test_error_stands_on_its_own_line(self):
        bad = self.out("bad.xml")
        with open(bad, "wb") as f:
            f.write(b"<mediawiki><page><title>A</title>")
        code, err = run_on_pty([sstpipe_bin(), "build", bad, "-o", self.out("b.sst")])
        self.assertEqual(code, 1)
        lines = [l.split("\r\x1b[K")[-1] for l in err.decode().split("\r\n")]
        self.assertEqual(lines[-1], "", err)
        errors = [l for l in lines if l.startswith("sstpipe: ")]
        self.assertEqual(len(errors), 1, err)
        self.assertIn("XML error", errors[0])
        self.assertTrue(any(l.endswith(", stopped") for l in lines), err)


if __name__ == "__main__":
    unittest.main()
