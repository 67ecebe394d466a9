"""test_cli_first_hour.py: what a new user trips on at the command line
(issue 33, "Command line").

- build ends with one summary line on stdout (output, records, bytes,
  seconds), and with -q with nothing.
- An output that cannot be written (an existing directory, a directory to
  write into that does not exist) is refused before any input is read, by
  every command that takes -o: exit 2, one line naming it, and with -v no
  statistics. The input is a FIFO nobody writes, so a command that read it
  would hang until the timeout.
- An unknown option is named wherever it stands (before, between or after
  the operands); a long option is taken by its full name only, an
  abbreviation or typo being named with the option meant; an unknown
  command says the command meant, in one line.
- profile FILE without N takes [profile] lookups (10000); its help tells one
  story of the seed (default 1, no word of a random one); times are printed
  with sensible precision (no "(0.000 s)", no 17-digit JSON reals).
- One table of exit codes for every command (0 done, 1 failed, 2 refused
  before any work, 3 the answer is no), each error one line starting
  "sstpipe: ", checked command by command.
- info's help and the man page say what each figure info prints is,
  compactness included.
- A config value may be followed by a '#' comment as by a ';' one.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import gzip
import json
import os
import re
import unittest

from sstpipe_e2e import E2ETest, check_error_line, corpora_dir, sstpipe

SRC = os.path.join(corpora_dir(), "enwiki-11pages.xml")


class BuildSummary(E2ETest):
    def test_one_line_on_success(self):
        out = self.path("out.sst")
        r = sstpipe("build", SRC, "-o", out)
        self.assertOk(r)
        size = os.path.getsize(out)
        self.assertRegex(r.stdout.decode(),
                         r"\Awrote " + re.escape(out) + r": 11 records, " + str(size) +
                         r" bytes \([0-9.]+[KM]?\) in [0-9.]+ (s|ms)\n\Z")
        self.assertEqual(r.stderr, b"", r.describe())

    def test_quiet(self):
        r = sstpipe("build", SRC, "-o", self.path("q.sst"), "-q")
        self.assertOk(r)
        self.assertEqual((r.stdout, r.stderr), (b"", b""), r.describe())


class OutputRefused(E2ETest):
    def test_before_any_input_is_read(self):
        fifo = self.path("never-written")
        os.mkfifo(fifo)
        hold = os.open(fifo, os.O_RDWR)
        self.addCleanup(os.close, hold)
        table = self.path("t.sst")
        self.assertOk(sstpipe("build", SRC, "-o", table, "-q"))
        existing_dir = self.path("a-directory")
        os.mkdir(existing_dir)
        no_dir = self.path("no-such-dir", "out")
        for out in (existing_dir, no_dir):
            for args in (["build", fifo], ["extract", fifo], ["truncate", fifo], ["sort", fifo],
                         ["write", fifo], ["merge", table]):
                with self.subTest(cmd=args[0], out=out):
                    r = sstpipe(*args, "-o", out, "-v", timeout=30)
                    self.assertEqual(r.code, 2, r.describe())
                    check_error_line(self, r, [out], what=f"{args[0]} -o {out}")
                    self.assertEqual(r.stdout, b"", r.describe())
        self.assertEqual(os.listdir(existing_dir), [])


class BadWords(E2ETest):
    def setUp(self):
        super().setUp()
        self.table = self.path("t.sst")
        self.assertOk(sstpipe("build", SRC, "-o", self.table, "-q"))

    def refused(self, args, *parts):
        r = sstpipe(*args)
        self.assertEqual(r.code, 2, r.describe())
        check_error_line(self, r, what=" ".join(args))
        for p in parts:
            self.assertIn(p, r.err_text, r.describe())
        self.assertEqual(r.stdout, b"", r.describe())
        return r

    def test_unknown_option_wherever_it_stands(self):
        for args, name in ((["get", self.table, "--json", "Anarchism"], "--json"),
                           (["get", self.table, "Anarchism", "--bogus"], "--bogus"),
                           (["get", "--bogus", self.table, "Anarchism"], "--bogus"),
                           (["info", self.table, "-x"], "-x"),
                           (["build", SRC, "-o", self.path("x.sst"), "--nope"], "--nope")):
            with self.subTest(args=args):
                r = self.refused(args, f"unknown option '{name}'")
                self.assertNotIn("expected", r.err_text)

    def test_key_after_double_dash(self):
        r = sstpipe("get", self.table, "--", "--json")
        self.assertEqual((r.code, r.stdout), (3, b""), r.describe())  # absent

    def test_full_names_only(self):
        for args, written, meant in (
                (["build", SRC, "-o", self.path("a.sst"), "--max-byte", "10"], "--max-byte",
                 "--max-bytes"),
                (["build", SRC, "-o", self.path("b.sst"), "--max-byte=10"], "--max-byte",
                 "--max-bytes"),
                (["info", self.table, "--jso"], "--jso", "--json"),
                (["dump", self.table, "--jsnol"], "--jsnol", "--jsonl")):
            with self.subTest(args=args):
                self.refused(args, f"unknown option '{written}', did you mean {meant}?")
        self.assertFalse(os.path.exists(self.path("a.sst")))

    def test_switch_given_a_value(self):
        for args, name in ((["dump", self.table, "--keys-only=1"], "--keys-only"),
                           (["info", self.table, "--help=yes"], "--help")):
            with self.subTest(args=args):
                r = self.refused(args, f"option '{name}' takes no argument")
                self.assertNotIn("did you mean", r.err_text)

    def test_unknown_command(self):
        r = self.refused(["bulid"], "unknown command 'bulid', did you mean build?")
        self.assertNotIn("commands:", r.err_text)
        r = self.refused(["frobnicate"], "unknown command 'frobnicate'")
        self.assertNotIn("did you mean", r.err_text)


class Profile(E2ETest):
    def test_n_from_the_config_and_figures_readable(self):
        table = self.path("t.sst")
        self.assertOk(sstpipe("build", SRC, "-o", table, "-q"))
        report = self.path("p.json")
        r = sstpipe("profile", table, "--json", report)
        self.assertOk(r)
        text = r.stdout.decode()
        self.assertIn("lookups:     10000 ", text)
        self.assertIn("seed 1", text)
        m = re.search(r"^throughput:  \d+ lookups/s \(([0-9.]+) (s|ms|us)\)$", text, re.M)
        self.assertTrue(m, text)
        # Three significant digits in the unit it is read in ("8.43 ms").
        self.assertEqual(len(m.group(1).replace(".", "").lstrip("0")), 3, text)
        with open(report) as f:
            raw = f.read()
        reals = re.findall(r"-?\d+\.\d+(?:e-?\d+)?", raw)
        self.assertTrue(reals, raw[:400])
        for real in reals:
            digits = re.sub(r"e.*|[-.]", "", real).lstrip("0")
            self.assertLessEqual(len(digits), 12, f"{real} in {report}")

    def test_help_tells_one_story_of_the_seed(self):
        r = sstpipe("profile", "--help")
        self.assertOk(r)
        text = r.stdout.decode()
        self.assertNotIn("random", text)
        self.assertIn("default 1", text)
        self.assertNotIn("may be omitted", text)


class ExitCodes(E2ETest):
    def test_one_table_for_every_command(self):
        table = self.path("t.sst")
        self.assertOk(sstpipe("build", SRC, "-o", table, "-q"))
        stream = self.path("s.rs")
        self.assertOk(sstpipe("extract", SRC, "-o", stream))
        missing = self.path("missing.sst")
        junk = self.write_file("junk.sst", b"not a table\n" * 1000)
        with open(table, "rb") as f:
            damaged = bytearray(f.read())
        damaged[100] ^= 0x20  # in data block 0
        damaged = self.write_file("damaged.sst", bytes(damaged))
        first_key = json.loads(sstpipe("dump", table).stdout.splitlines()[0])["key"]
        out = self.path("out")
        cases = [
            # refused before any work: an operand that does not exist, a bad flag
            (["get", missing, "k"], 2), (["dump", missing], 2), (["info", missing], 2),
            (["profile", missing, "5"], 2), (["serve", missing, "--listen", "127.0.0.1:0"], 2),
            (["merge", "-o", out, missing], 2), (["build", missing, "-o", out], 2),
            (["extract", missing], 2), (["truncate", missing], 2), (["sort", missing], 2),
            (["write", missing, "-o", out], 2), (["info", table, "--bogus"], 2), (["info"], 2),
            (["serve", table, "--listen", "127.0.0.1:0", "--set",
              f"serve.access_log={missing}/access.log"], 2),
            # the work failed: not a table, bad input
            (["get", junk, "k"], 1), (["dump", junk], 1), (["info", junk], 1),
            (["verify", junk], 1), (["profile", junk, "5"], 1),
            (["serve", junk, "--listen", "127.0.0.1:0"], 1), (["merge", "-o", out, junk], 1),
            (["build", junk, "-o", out], 1), (["truncate", junk], 1), (["write", junk, "-o", out], 1),
            (["get", damaged, "--", first_key], 1), (["dump", damaged], 1),
            # the answer is no
            (["get", table, "no such key"], 3), (["verify", damaged], 3),
        ]
        for args, code in cases:
            with self.subTest(args=args):
                r = sstpipe(*args, timeout=60)
                self.assertEqual(r.code, code, r.describe())
                if code in (1, 2):
                    check_error_line(self, r, what=" ".join(args))
                    self.assertTrue(r.err_text.startswith("sstpipe: "), r.describe())
                if code == 3 and args[0] == "get":
                    # A miss is said, with what it may have meant (issue 32).
                    self.assertTrue(r.stderr.startswith(b"sstpipe: not found: no such key\n"),
                                    r.describe())
                elif code == 3:
                    self.assertEqual(r.stderr, b"", r.describe())

    def test_nightly_records_a_missing_input(self):
        """nightly's missing INPUT is a failed run, recorded under failed/ as
        when [input] path matches nothing, not a refusal that leaves no trace
        for cron to find."""
        out = self.path("nightly")
        ini = self.write_file("n.ini", f"[output]\ndir = {out}\n".encode())
        r = sstpipe("nightly", "-c", ini, self.path("missing.xml.bz2"))
        self.assertEqual(r.code, 1, r.describe())
        self.assertEqual(len(os.listdir(os.path.join(out, "failed"))), 1, r.describe())


class InfoFigures(E2ETest):
    def test_every_figure_explained(self):
        table = self.path("t.sst")
        self.assertOk(sstpipe("build", SRC, "-o", table, "-q"))
        r = sstpipe("info", table)
        self.assertOk(r)
        labels = [l.split(":")[0] for l in r.stdout.decode().splitlines()]
        self.assertIn("compactness", labels)
        help_text = sstpipe("info", "--help").stdout.decode()
        for label in labels:
            with self.subTest(label=label):
                self.assertRegex(help_text, r"(?m)^  " + re.escape(label) + r"  +\S")
        self.assertIn("(key bytes + value bytes) / file size", help_text)
        man = os.path.join(os.path.dirname(os.environ["SSTPIPE"]), "man", "sstpipe.1.gz")
        if os.path.exists(man):
            with gzip.open(man, "rt") as f:
                self.assertIn("(key bytes + value bytes) / file size", f.read())


class ConfigComments(E2ETest):
    def test_hash_starts_a_comment_after_a_value(self):
        ini = self.write_file("c.ini", b"# a whole line\n[sst]\nblock_size = 16K # comment\n"
                                       b"cluster_size = 8K ; comment\n")
        r = sstpipe("config", "show", "-c", ini)
        self.assertOk(r)
        text = r.stdout.decode()
        self.assertRegex(text, r"(?m)^block_size = 16K +; " + re.escape(ini) + ":3$")
        self.assertRegex(text, r"(?m)^cluster_size = 8K +; " + re.escape(ini) + ":4$")


if __name__ == "__main__":
    unittest.main()
