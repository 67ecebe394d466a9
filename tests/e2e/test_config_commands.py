"""test_config_commands.py: every command takes `-c FILE` and `--set
section.key=value`, end to end.

For each command whose behaviour a key changes, the effect is observed in
what the command makes (the table's block size in `info --json`, spill counts
in the `-v` line, value lengths in the record stream, pages dropped by
extract, lookups done by profile, problems listed by verify), and the
precedence is checked on it: defaults < -c FILE < --set < the command's own
flag. A bad value or a typo'd key in the file fails every command before any
output, naming file:line (and the closest key); a flag's bad value gets the
same wording as the key's, because both are checked by the config. A `get`
key that starts with -c needs `--` before it.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import shutil
import tempfile
import unittest

from sstpipe_e2e import (E2ETest, check_error_line, corpus_files, edge_dump_xml, parse_info,
                         parse_stats, q, rs_decode, shell, sstpipe, wikigen)

ALL_COMMANDS = ["extract", "truncate", "sort", "write", "build", "verify", "profile", "get",
                "dump", "info"]


def tiny_dump(titles):
    """A minimal export with one page per (title, text)."""
    pages = "".join(
        f"  <page>\n    <title>{t}</title>\n    <ns>0</ns>\n    <id>{i + 1}</id>\n"
        f"    <revision>\n      <id>{i + 1}</id>\n"
        f"      <text xml:space=\"preserve\">{v}</text>\n    </revision>\n  </page>\n"
        for i, (t, v) in enumerate(titles))
    return ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11">\n'
            + pages + "</mediawiki>\n").encode("utf-8")


class ConfigCommands(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-e2e-cfgcmd-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        corpora = corpus_files()
        if not corpora:
            raise unittest.SkipTest("no corpus files")
        # The largest corpus: its values exceed every bound used below.
        cls.corpus = max(corpora, key=os.path.getsize)
        # The extracted stream (values whole) and its truncated form, about
        # 3.5 MB: a 1M sort budget has to spill it in several runs.
        cls.dump = wikigen(os.path.join(cls.classtmp, "gen.xml"), "32M", "7", "xml")
        cls.raw_stream = os.path.join(cls.classtmp, "gen-raw.rs")
        cls.stream = os.path.join(cls.classtmp, "gen.rs")
        r = shell(f"{q(os.environ['SSTPIPE'])} extract {q(cls.dump)} -o {q(cls.raw_stream)} && "
                  f"{q(os.environ['SSTPIPE'])} truncate {q(cls.raw_stream)} -o {q(cls.stream)}")
        if r.code != 0:
            raise AssertionError("making the sort input failed:" + r.describe())
        cls.table = os.path.join(cls.classtmp, "corpus.sst")
        r = sstpipe("build", cls.corpus, "-o", cls.table, "--block-size", "4K")
        if r.code != 0:
            raise AssertionError("building the corpus table failed:" + r.describe())

    def ini(self, text, name="c.ini"):
        return self.write_file(name, text.encode())

    def ok(self, *args, **kw):
        r = sstpipe(*args, **kw)
        self.assertOk(r)
        return r

    # ---- precedence, observed in each command's output

    def test_build_block_size(self):
        ini = self.ini("[sst]\nblock_size = 16K\ncluster_size = 8K\n")
        out = self.path("t.sst")
        cases = [([], 8192, 4096),
                 (["-c", ini], 16384, 8192),
                 (["-c", ini, "--set", "sst.block_size=32K"], 32768, 8192),
                 (["-c", ini, "--set", "sst.block_size=32K", "--block-size", "64K"], 65536,
                  8192),
                 # the flag wins wherever it stands, --set=... form too
                 (["--block-size", "64K", "--set=sst.block_size=32K", "-c", ini], 65536, 8192)]
        for opts, block, cluster in cases:
            with self.subTest(opts=opts):
                self.ok("build", self.corpus, "-o", out, *opts)
                info = parse_info(self, out)
                self.assertEqual((info["block_size"], info["cluster_size"]), (block, cluster))

    def test_write_block_size(self):
        rs = self.path("sorted.rs")
        self.ok("sort", self.stream, "-o", rs)
        ini = self.ini("[sst]\nblock_size = 16K\n")
        out = self.path("w.sst")
        for opts, block in [(["-c", ini], 16384),
                            (["-c", ini, "--set", "sst.block_size=32K"], 32768),
                            (["-c", ini, "--set", "sst.block_size=32K", "--block-size", "4K"],
                             4096)]:
            with self.subTest(opts=opts):
                self.ok("write", rs, "-o", out, *opts)
                self.assertEqual(parse_info(self, out)["block_size"], block)

    def sort_stats(self, *opts):
        r = self.ok("sort", self.stream, "-o", self.path("s.rs"), "-v", *opts)
        return parse_stats(self, r.stderr, "sort")

    def test_sort_memory_and_fan_in(self):
        ini = self.ini("[sort]\nmemory = 1M\nfan_in = 2\n")
        base = self.sort_stats()
        self.assertEqual(base["runs"], 0, "the default 256M budget holds the whole stream")
        low = self.sort_stats("-c", ini)
        self.assertGreater(low["runs"], 2, "1M from the file must spill")
        self.assertGreater(low["merge_passes"], 1, "fan_in 2 from the file over >2 runs")
        self.assertGreater(low["spilled_bytes"], 0)
        high = self.sort_stats("-c", ini, "--set", "sort.memory=256M")
        self.assertEqual(high["runs"], 0, "--set beats the file")
        again = self.sort_stats("-c", ini, "--set", "sort.memory=256M", "--memory", "1M",
                                "--fan-in", "64")
        self.assertGreater(again["runs"], 2, "--memory beats --set")
        self.assertEqual(again["merge_passes"], 1, "--fan-in beats the file")
        self.assertEqual(base["records_out"], low["records_out"])
        with open(self.path("s.rs"), "rb") as f:
            sorted_rs = f.read()
        self.ok("sort", self.stream, "-o", self.path("s2.rs"))
        with open(self.path("s2.rs"), "rb") as f:
            self.assertEqual(f.read(), sorted_rs, "the budget changes the work, not the result")

    def test_build_sort_memory(self):
        ini = self.ini("[sort]\nmemory = 1M\n")
        r = self.ok("build", self.dump, "-o", self.path("b.sst"), "-v", "-c", ini)
        self.assertGreater(parse_stats(self, r.stderr, "sort")["runs"], 2)
        r = self.ok("build", self.dump, "-o", self.path("b.sst"), "-v", "-c", ini, "--set",
                    "sort.memory=64M")
        self.assertEqual(parse_stats(self, r.stderr, "sort")["runs"], 0)

    def test_sort_tmp_dir(self):
        """[sort] tmp_dir is where a spilling sort writes: a missing directory
        in the file fails; --tmp beats it."""
        missing = self.path("no-such-dir")
        ini = self.ini(f"[sort]\nmemory = 1M\ntmp_dir = {missing}\n")
        r = sstpipe("sort", self.stream, "-o", self.path("s.rs"), "-c", ini)
        self.assertEqual(r.code, 1, r.describe())
        check_error_line(self, r, ["no-such-dir"], what="sort with a missing tmp_dir")
        self.assertFalse(os.path.exists(self.path("s.rs")))
        os.mkdir(self.path("spill"))
        self.ok("sort", self.stream, "-o", self.path("s.rs"), "-c", ini, "--tmp",
                self.path("spill"))
        self.assertEqual(os.listdir(self.path("spill")), [])

    def truncated(self, *opts):
        out = self.path("t.rs")
        r = self.ok("truncate", self.raw_stream, "-o", out, "-v", *opts)
        with open(out, "rb") as f:
            _, bound, records = rs_decode(self, f.read())
        longest = max(len(v) for _, v in records)
        return bound, longest, parse_stats(self, r.stderr, "truncate")["truncated"]

    def test_truncate_max_bytes(self):
        ini = self.ini("[truncate]\nmax_bytes = 100\n")
        for opts, bound in [([], 1024), (["-c", ini], 100),
                            (["-c", ini, "--set", "truncate.max_bytes=200"], 200),
                            (["-c", ini, "--set", "truncate.max_bytes=200", "--max-bytes",
                              "50"], 50)]:
            with self.subTest(opts=opts):
                got, longest, truncated = self.truncated(*opts)
                self.assertEqual(got, bound, "stream header bound")
                self.assertLessEqual(longest, bound)
                self.assertGreater(longest, bound - 4, "values are cut near the bound")
                self.assertGreater(truncated, 0)

    def test_build_max_bytes(self):
        ini = self.ini("[truncate]\nmax_bytes = 300\n")
        out = self.path("m.sst")
        self.ok("build", self.corpus, "-o", out, "-c", ini)
        self.assertEqual(parse_info(self, out)["max_value_bytes"], 300)
        self.ok("build", self.corpus, "-o", out, "-c", ini, "--max-bytes", "700")
        self.assertEqual(parse_info(self, out)["max_value_bytes"], 700)

    def extract_keys(self, cmd, *opts):
        src = self.path("edge.xml")
        if not os.path.exists(src):
            self.write_file("edge.xml", edge_dump_xml())
        out = self.path("e.out")
        if cmd == "extract":
            r = self.ok("extract", src, "-o", out, "-v", *opts)
            with open(out, "rb") as f:
                keys = {k for k, _ in rs_decode(self, f.read())[2]}
            return keys, parse_stats(self, r.stderr, "extract")
        r = self.ok("build", src, "-o", out, "-v", *opts)
        keys = {json.loads(l)["key"].encode() for l in
                self.ok("dump", out).stdout.decode().splitlines()}
        return keys, parse_stats(self, r.stderr, "extract")

    def test_extract_redirects_and_namespaces(self):
        redirect, talk = b"Redirect to Alpha", b"Talk:Foo"
        ini = self.ini("[extract]\nredirects = skip\nnamespaces = 0\n")
        for cmd in ("extract", "build"):
            with self.subTest(cmd=cmd):
                keys, st = self.extract_keys(cmd)
                self.assertTrue({redirect, talk} <= keys, "defaults keep both")
                keys, st = self.extract_keys(cmd, "-c", ini)
                self.assertNotIn(redirect, keys)
                self.assertNotIn(talk, keys)
                self.assertEqual((st["skipped_redirects"], st["skipped_namespace"]), (1, 1))
                keys, st = self.extract_keys(cmd, "-c", ini, "--set", "extract.redirects=keep",
                                             "--set", "extract.namespaces=all")
                self.assertTrue({redirect, talk} <= keys, "--set beats the file")
                keys, st = self.extract_keys(cmd, "-c", ini, "--set", "extract.redirects=keep",
                                             "--skip-redirects", "--namespaces", "0,1")
                self.assertNotIn(redirect, keys, "--skip-redirects beats --set")
                self.assertIn(talk, keys, "--namespaces beats the file")

    def profile_json(self, *args):
        out = self.path("p.json")
        self.ok("profile", self.table, *args, "--json", out)
        with open(out) as f:
            return json.load(f)

    def test_profile(self):
        ini = self.ini("[profile]\nlookups = 300\nseed = 42\nmisses = 10\nthreads = 2\n")
        doc = self.profile_json("-c", ini)
        self.assertEqual(doc["lookups"], 300, "N comes from [profile] lookups")
        self.assertEqual((doc["seed"], doc["threads"]), (42, 2))
        self.assertEqual(doc["misses_pct"], 10)
        self.assertGreater(doc["misses_requested"], 0)
        doc = self.profile_json("120", "-c", ini, "--set", "profile.threads=3", "--seed", "5")
        self.assertEqual((doc["lookups"], doc["threads"], doc["seed"]), (120, 3, 5))
        doc = self.profile_json("40", "--set", "profile.lookups=300")
        self.assertEqual(doc["lookups"], 40, "N beats --set")
        # N defaults to [profile] lookups (test_cli_first_hour); 0 lookups is refused.
        for args in ([self.table, "--set", "profile.lookups=0"], [self.table, "0"]):
            with self.subTest(args=args):
                r = sstpipe("profile", *args)
                self.assertEqual(r.code, 2, r.describe())
                check_error_line(self, r, ["N", "lookups"], what="profile without N")

    def test_verify_max_problems(self):
        bad = self.path("bad.sst")
        shutil.copyfile(self.table, bad)
        blocks = parse_info(self, bad)["data_blocks"]
        self.assertGreaterEqual(blocks, 3)
        with open(bad, "r+b") as f:
            for b in range(3):
                f.seek(b * 4096 + 100)
                byte = f.read(1)
                f.seek(b * 4096 + 100)
                f.write(bytes([byte[0] ^ 0xFF]))
        ini = self.ini("[verify]\nmax_problems = 1\nread_size = 64K\n")
        for opts, listed in [([], 3), (["-c", ini], 1),
                             (["-c", ini, "--set", "verify.max_problems=2"], 2)]:
            with self.subTest(opts=opts):
                out = self.path("v.json")
                r = sstpipe("verify", bad, "--json", out, *opts)
                self.assertEqual(r.code, 3, r.describe())
                with open(out) as f:
                    rep = json.load(f)["files"][0]
                self.assertEqual(rep["problem_count"], 3)
                self.assertEqual(len(rep["problems"]), listed)

    # ---- errors: before any output, naming where

    def run_all(self, cfg_args, expect_names):
        """Every command with cfg_args: exit 2, one stderr line naming
        expect_names, nothing on stdout, no -o file, the input not read."""
        missing_input = self.path("missing-input.xml")
        out = self.path("never.out")
        args = {
            "extract": [missing_input, "-o", out],
            "truncate": [missing_input, "-o", out],
            "sort": [missing_input, "-o", out],
            "write": [missing_input, "-o", out],
            "build": [missing_input, "-o", out],
            "verify": [self.table, "--json", out],
            "profile": [self.table, "10", "--json", out],
            "get": [self.table, "A"],
            "dump": [self.table],
            "info": [self.table],
        }
        for cmd in ALL_COMMANDS:
            with self.subTest(cmd=cmd, cfg=cfg_args):
                r = sstpipe(cmd, *args[cmd], *cfg_args)
                self.assertEqual(r.code, 2, r.describe())
                self.assertEqual(r.stdout, b"", r.describe())
                check_error_line(self, r, [], what=f"{cmd} {cfg_args}")
                for n in expect_names:
                    self.assertIn(n, r.err_text, r.describe())
                self.assertNotIn("missing-input", r.err_text, "config checked before input")
                self.assertFalse(os.path.exists(out), f"{cmd} created its output")

    def test_bad_value_in_file(self):
        ini = self.ini("; bad\n[sst]\nblock_size = 8K\n\n[sort]\nmemory = 12Q\n", "bad.ini")
        self.run_all(["-c", ini], [ini + ":6:", "[sort] memory", "'12Q' is not a size"])
        pow2 = self.ini("[sst]\ncluster_size = 3000\n", "pow2.ini")
        self.run_all(["-c", pow2], [pow2 + ":2:", "power of two"])

    def test_typo_gets_a_suggestion(self):
        ini = self.ini("[truncate]\nmax_byte = 100\n", "typo.ini")
        self.run_all(["-c", ini], [ini + ":2: unknown key [truncate] max_byte",
                                   "did you mean [truncate] max_bytes?"])
        self.run_all(["--set", "sst.blok_size=16K"], ["--set sst.blok_size=16K",
                                                      "did you mean [sst] block_size?"])
        self.run_all(["-c", self.path("absent.ini")], ["absent.ini: cannot open config file"])

    def test_flag_errors_share_the_config_check(self):
        """A flag is checked by the same code as its key: same wording."""
        cases = [("sort", "--memory", "10", "sort.memory", [self.stream]),
                 ("build", "--memory", "10", "sort.memory", [self.corpus]),
                 ("truncate", "--max-bytes", "2G", "truncate.max_bytes", [self.raw_stream]),
                 ("build", "--max-bytes", "0", "truncate.max_bytes", [self.corpus]),
                 ("write", "--block-size", "3000", "sst.block_size", [self.stream]),
                 ("build", "--fan-in", "1", "sort.fan_in", [self.corpus]),
                 ("extract", "--namespaces", "0,talk", "extract.namespaces", [self.corpus]),
                 ("profile", "--misses", "150", "profile.misses", [self.table, "10"])]
        for cmd, flag, value, key, args in cases:
            with self.subTest(cmd=cmd, flag=flag):
                out = self.path("x.out")
                r1 = sstpipe(cmd, *args, flag, value, "-o", out)
                r2 = sstpipe(cmd, *args, "--set", f"{key}={value}", "-o", out)
                for r in (r1, r2):
                    self.assertEqual(r.code, 2, r.describe())
                    check_error_line(self, r, [value], what=f"{cmd} {flag} {value}")
                    self.assertFalse(os.path.exists(out))
                tail1 = r1.err_text.split(f"'{value}'", 1)[1]
                tail2 = r2.err_text.split(f"'{value}'", 1)[1]
                self.assertEqual(tail1, tail2, r1.describe() + r2.describe())
                self.assertIn(flag + ":", r1.err_text)

    # ---- get and keys that look like options

    def test_get_key_starting_with_dash_c(self):
        src = self.write_file("dash.xml", tiny_dump([("-cKey", "dash c"), ("--set", "dash set"),
                                                     ("Key", "plain")]))
        sst = self.path("dash.sst")
        ini = self.ini("[sst]\nblock_size = 4K\n")
        self.ok("build", src, "-o", sst, "-c", ini)
        self.assertEqual(self.ok("get", sst, "--", "-cKey").stdout, b"dash c\n")
        self.assertEqual(self.ok("get", "--", sst, "-cKey").stdout, b"dash c\n")
        self.assertEqual(self.ok("get", "-c", ini, sst, "--", "--set").stdout, b"dash set\n")
        self.assertEqual(self.ok("get", sst, "Key", "--set", "sst.block_size=8K").stdout,
                         b"plain\n")
        # Without "--", -cKey is taken as -c Key: a config file that is not there.
        r = sstpipe("get", sst, "-cKey")
        self.assertEqual(r.code, 2, r.describe())
        check_error_line(self, r, ["Key: cannot open config file"], what="get FILE -cKey")

    def test_help_mentions_config(self):
        for cmd in ALL_COMMANDS:
            with self.subTest(cmd=cmd):
                r = self.ok(cmd, "--help")
                self.assertIn(b"-c, --config FILE", r.stdout)
                self.assertIn(b"--set", r.stdout)


if __name__ == "__main__":
    unittest.main()
