"""test_decompressor.py: `[input] decompressor` / `--decompressor` and `[build] threads`.

A build through an external decompressor (zstd -dc, bzip2 -dc, and the
README's example, lbzip2 -dc -n {threads}, which pipeline/install-deps
installs for it) writes the same table as the built-in decoders, with every
thread count, whether the command comes from --decompressor, -c FILE or
--set; and `extract` gives the same record stream. Each command must really
have run, once, with {threads} replaced: the tools are reached through
wrappers first on PATH that record their arguments (the built-in decoders
run none of them), since a build that ignored the command would write the
same table. A failing command (exit status, a signal, not installed) fails
the build with one `sstpipe:` line that quotes the command and its stderr,
leaves no output file, no temp file and no process behind; a parse error
names the XML line and no compressed offset.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import hashlib
import os
import shlex
import shutil
import tempfile
import unittest

from sstpipe_e2e import (E2ETest, check_error_line, corpus_files, load_xml, sstpipe, to_bz2,
                         to_bz2_multistream, to_zst)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# The decompressors the tests run through wrappers (see the module's text).
TOOLS = ("zstd", "bzip2", "lbzip2")

WRAPPER = """#!/bin/sh
printf '%s\\n' "${{0##*/}} $*" >> {log}
exec {real} "$@"
"""


class DecompressorTest(E2ETest):
    @classmethod
    def setUpClass(cls):
        """The inputs and the built-in decoders' table, made once: every
        test reads them and none changes them."""
        corpus = [p for p in corpus_files() if "206pages" in p]
        if not corpus:
            raise unittest.SkipTest("enwiki-206pages corpus not found")
        cls.inputs = tempfile.mkdtemp(prefix="sstpipe-decompressor-")
        cls.addClassCleanup(shutil.rmtree, cls.inputs, True)
        xml = load_xml(corpus[0])
        made = {}
        for name, data in (("d.xml", xml), ("d.xml.zst", to_zst(xml)),
                           ("d.xml.bz2", to_bz2(xml)),
                           ("d-multi.xml.bz2", to_bz2_multistream(xml))):
            made[name] = os.path.join(cls.inputs, name)
            with open(made[name], "wb") as f:
                f.write(data)
        cls.xml, cls.zst = made["d.xml"], made["d.xml.zst"]
        cls.bz2, cls.bz2ms = made["d.xml.bz2"], made["d-multi.xml.bz2"]
        cls.want = os.path.join(cls.inputs, "want.sst")
        r = sstpipe("build", cls.xml, "-o", cls.want)
        assert r.code == 0, r.describe()
        cls.want_sha = sha256(cls.want)

    def setUp(self):
        super().setUp()
        self.ran_log = self.path("ran.log")
        bin_dir = self.path("bin")
        os.mkdir(bin_dir)
        self.missing = [tool for tool in TOOLS if not shutil.which(tool)]
        for tool in set(TOOLS) - set(self.missing):
            real = shutil.which(tool)
            wrapper = os.path.join(bin_dir, tool)
            with open(wrapper, "w") as f:
                f.write(WRAPPER.format(log=shlex.quote(self.ran_log), real=shlex.quote(real)))
            os.chmod(wrapper, 0o755)
        path = os.environ["PATH"]
        self.addCleanup(os.environ.__setitem__, "PATH", path)
        os.environ["PATH"] = bin_dir + os.pathsep + path

    def assertInstalled(self, tool):
        self.assertNotIn(tool, self.missing,
                         f"{tool} is not installed (pipeline/install-deps installs it)")

    def runs(self):
        """The decompressor runs recorded since the last call, as run."""
        if not os.path.exists(self.ran_log):
            return []
        with open(self.ran_log) as f:
            ran = f.read().splitlines()
        os.remove(self.ran_log)
        return ran

    def assertSameTable(self, src, *opts, what="", ran=None):
        """The table built from src with opts is the built-in decoders' one,
        and ran (a command line, {threads} replaced) ran once: the only
        decompressor run, none without ran."""
        self.runs()
        out = self.path("got.sst")
        self.build(src, out, *opts)
        self.assertEqual(sha256(out), self.want_sha, f"{what}: table differs")
        self.assertEqual(self.runs(), [ran] if ran else [], f"{what}: the decompressors run")

    def test_same_table_every_path_and_thread_count(self):
        self.assertInstalled("lbzip2")
        commands = [(self.zst, "zstd -dc -T{threads}"), (self.bz2, "bzip2 -dc"),
                    (self.bz2ms, "bzip2 -dc"), (self.bz2, "lbzip2 -dc -n {threads}"),
                    (self.bz2ms, "lbzip2 -dc -n {threads}")]
        for threads in ("1", "2", "4"):
            for src in (self.zst, self.bz2, self.bz2ms):
                self.assertSameTable(src, "--set", f"build.threads={threads}",
                                     what=f"{os.path.basename(src)} built in, {threads} threads")
            for src, cmd in commands:
                self.assertSameTable(src, "--decompressor", cmd, "--set",
                                     f"build.threads={threads}",
                                     what=f"{os.path.basename(src)} via '{cmd}', {threads} threads",
                                     ran=cmd.replace("{threads}", threads))

    def test_readme_example(self):
        # README, Configuration: `lbzip2 -dc -n {threads}`, as --decompressor
        # and as [input] decompressor, {threads} being [build] threads, by
        # default every core the process may run on.
        self.assertInstalled("lbzip2")
        cmd = "lbzip2 -dc -n {threads}"
        cores = str(len(os.sched_getaffinity(0)))
        ini = self.write_file("lbzip2.ini", f"[input]\ndecompressor = {cmd}\n".encode())
        self.assertSameTable(self.bz2ms, "--decompressor", cmd, what=f"'{cmd}'",
                             ran=f"lbzip2 -dc -n {cores}")
        self.assertSameTable(self.bz2, "-c", ini, "--set", "build.threads=3",
                             what=f"'{cmd}' from -c FILE", ran="lbzip2 -dc -n 3")
        want = sstpipe("extract", self.xml)
        self.assertOk(want)
        self.runs()
        got = sstpipe("extract", self.bz2ms, "--decompressor", cmd)
        self.assertOk(got)
        self.assertEqual(got.stdout, want.stdout, cmd)
        self.assertEqual(self.runs(), [f"lbzip2 -dc -n {cores}"], "extract's decompressor runs")

    def test_config_file_and_set(self):
        ini = self.write_file("c.ini", b"[input]\ndecompressor = zstd -dc\n[build]\nthreads = 3\n")
        self.assertSameTable(self.zst, "-c", ini, what="-c FILE", ran="zstd -dc")
        self.assertSameTable(self.zst, "--set", "input.decompressor=zstd -dc", what="--set",
                             ran="zstd -dc")
        # The flag wins over the file: the file's command would fail on bz2.
        self.assertSameTable(self.bz2, "-c", ini, "--decompressor", "bzip2 -dc", what="flag",
                             ran="bzip2 -dc")
        r = sstpipe("config", "show", "-c", ini)
        self.assertOk(r)
        self.assertIn("zstd -dc", r.stdout.decode())

    def test_extract_stream_identical(self):
        want = sstpipe("extract", self.xml)
        self.assertOk(want)
        for src, cmd in ((self.zst, "zstd -dc"), (self.bz2ms, "bzip2 -dc")):
            self.runs()
            got = sstpipe("extract", src, "--decompressor", cmd, "-v")
            self.assertOk(got)
            self.assertEqual(got.stdout, want.stdout, cmd)
            self.assertEqual(self.runs(), [cmd], f"{cmd}: the decompressors run")
            # The bytes the command read from the input: all of them.
            self.assertIn(f"input_bytes={os.path.getsize(src)} ", got.err_text)
        with open(self.zst, "rb") as f:
            data = f.read()
        self.runs()
        got = sstpipe("extract", "--decompressor", "zstd -dc", input_bytes=data)
        self.assertOk(got)
        self.assertEqual(got.stdout, want.stdout, "stdin")
        self.assertEqual(self.runs(), ["zstd -dc"], "stdin: the decompressors run")

    def assertFails(self, src, cmd, *wants):
        out = self.path("fail.sst")
        r = sstpipe("build", src, "-o", out, "--tmp", self.path("tmpdir"), "--decompressor", cmd,
                    timeout=120)
        self.assertEqual(r.code, 1, r.describe())
        check_error_line(self, r, names=(src,), what=cmd)
        for want in wants:
            self.assertIn(want, r.err_text, r.describe())
        self.assertNotIn("compressed byte", r.err_text)
        self.assertFalse(os.path.exists(out))
        self.assertEqual(os.listdir(self.path("tmpdir")), [])
        return r

    def test_failures(self):
        os.mkdir(self.path("tmpdir"))
        self.assertFails(self.zst, "false", "decompressor 'false' failed (exit 1)")
        self.assertFails(self.zst, "echo 'it broke' >&2; exit 3", "failed (exit 3): it broke")
        self.assertFails(self.zst, "sstpipe-no-such-tool -dc",
                         "failed (exit 127, command not found)", "not found")
        # The wrong decompressor for the data: zstd's own complaint.
        self.assertFails(self.bz2, "zstd -dc -T{threads}", "decompressor 'zstd -dc -T",
                         "failed (exit 1)")
        # Killed after some output: the truncated data is not taken for whole.
        self.assertFails(self.xml, "head -c 100000; kill -9 $$",
                         "failed (killed by signal 9, SIGKILL)")

    def test_parse_error_while_command_writes(self):
        os.mkdir(self.path("tmpdir"))
        pidfile = self.path("pid")
        r = self.assertFails(
            self.xml, f"echo $$ > {pidfile}; printf '<mediawiki>\\n\\n<page>'; exec yes '</x>'",
            "XML error at line 3")
        with open(pidfile) as f:
            pid = int(f.read())
        with self.assertRaises(ProcessLookupError, msg="the command outlived the build"):
            os.kill(pid, 0)

    def test_help_names_the_flag(self):
        for cmd in ("build", "extract"):
            r = sstpipe(cmd, "--help")
            self.assertOk(r)
            self.assertIn("--decompressor CMD", r.stdout.decode())


if __name__ == "__main__":
    unittest.main()
