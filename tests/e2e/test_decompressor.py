"""test_decompressor.py: `[input] decompressor` / `--decompressor` and `[sort] threads`.

A build through an external decompressor (zstd -dc, bzip2 -dc, lbzip2 when
installed) writes the same table as the built-in decoders, with every thread
count, whether the command comes from --decompressor, -c FILE or --set; and
`extract` gives the same record stream. A failing command (exit status, a
signal, not installed) fails the build with one `sstpipe:` line that quotes
the command and its stderr, leaves no output file, no temp file and no
process behind; a parse error names the XML line and no compressed offset.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import hashlib
import os
import shutil
import unittest

from sstpipe_e2e import (E2ETest, check_error_line, corpus_files, load_xml, sstpipe, to_bz2,
                         to_bz2_multistream, to_zst)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class DecompressorTest(E2ETest):
    def setUp(self):
        super().setUp()
        corpus = [p for p in corpus_files() if "206pages" in p]
        if not corpus:
            self.skipTest("enwiki-206pages corpus not found")
        xml = load_xml(corpus[0])
        self.xml = self.write_file("d.xml", xml)
        self.zst = self.write_file("d.xml.zst", to_zst(xml))
        self.bz2 = self.write_file("d.xml.bz2", to_bz2(xml))
        self.bz2ms = self.write_file("d-multi.xml.bz2", to_bz2_multistream(xml))
        self.want = self.path("want.sst")
        self.build(self.xml, self.want)
        self.want_sha = sha256(self.want)

    def assertSameTable(self, src, *opts, what=""):
        out = self.path("got.sst")
        self.build(src, out, *opts)
        self.assertEqual(sha256(out), self.want_sha, f"{what}: table differs")

    def test_same_table_every_path_and_thread_count(self):
        commands = [(self.zst, "zstd -dc -T{threads}"), (self.bz2, "bzip2 -dc"),
                    (self.bz2ms, "bzip2 -dc")]
        if shutil.which("lbzip2"):
            commands += [(self.bz2, "lbzip2 -dc -n {threads}"),
                         (self.bz2ms, "lbzip2 -dc -n {threads}")]
        for threads in ("1", "2", "4"):
            for src in (self.zst, self.bz2, self.bz2ms):
                self.assertSameTable(src, "--set", f"sort.threads={threads}",
                                     what=f"{os.path.basename(src)} built in, {threads} threads")
            for src, cmd in commands:
                self.assertSameTable(src, "--decompressor", cmd, "--set",
                                     f"sort.threads={threads}",
                                     what=f"{os.path.basename(src)} via '{cmd}', {threads} threads")

    def test_config_file_and_set(self):
        ini = self.write_file("c.ini", b"[input]\ndecompressor = zstd -dc\n[sort]\nthreads = 3\n")
        self.assertSameTable(self.zst, "-c", ini, what="-c FILE")
        self.assertSameTable(self.zst, "--set", "input.decompressor=zstd -dc", what="--set")
        # The flag wins over the file: the file's command would fail on bz2.
        self.assertSameTable(self.bz2, "-c", ini, "--decompressor", "bzip2 -dc", what="flag")
        r = sstpipe("config", "show", "-c", ini)
        self.assertOk(r)
        self.assertIn("zstd -dc", r.stdout.decode())

    def test_extract_stream_identical(self):
        want = sstpipe("extract", self.xml)
        self.assertOk(want)
        for src, cmd in ((self.zst, "zstd -dc"), (self.bz2ms, "bzip2 -dc")):
            got = sstpipe("extract", src, "--decompressor", cmd, "-v")
            self.assertOk(got)
            self.assertEqual(got.stdout, want.stdout, cmd)
            # The bytes the command read from the input: all of them.
            self.assertIn(f"input_bytes={os.path.getsize(src)} ", got.err_text)
        with open(self.zst, "rb") as f:
            data = f.read()
        got = sstpipe("extract", "--decompressor", "zstd -dc", input_bytes=data)
        self.assertOk(got)
        self.assertEqual(got.stdout, want.stdout, "stdin")

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
