"""test_completion.py: the bash completion the build generates.

Run in bash as the shell runs it (COMP_WORDS, COMP_CWORD, then _sstpipe):
the commands are `sstpipe --help`'s; after `sstpipe CMD -` every flag of
`sstpipe CMD --help`, and nothing else; --set offers every key of
`config show --json` as section.key=; a FILE operand or flag argument
completes file names, a DIR one directories only, a flag given as
--flag=VALUE too, and a word operand its words. Short flags are offered
with the long ones (-o, -c, -v, -h); -c and --config offer *.ini files and
directories first, every file when no *.ini name matches.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import re
import shutil
import subprocess
import unittest

from sstpipe_e2e import E2ETest, env_path, sstpipe

SCRIPT = r'''
source "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_sstpipe
printf '%s\n' "${COMPREPLY[@]}"
'''


class CompletionTest(E2ETest):

    def setUp(self):
        super().setUp()
        if shutil.which("bash") is None:
            self.skipTest("bash is not installed")
        self.script = os.path.join(env_path("SSTPIPE_BUILD_DIR"), "completion", "sstpipe")

    def complete(self, *words, cwd=None):
        """The candidates for the last word of `sstpipe words...`."""
        p = subprocess.run(["bash", "-c", SCRIPT, "complete", self.script, "sstpipe", *words],
                           capture_output=True, text=True, cwd=cwd or self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        return sorted(l for l in p.stdout.splitlines() if l)

    def commands(self):
        r = sstpipe("--help")
        self.assertOk(r)
        return re.findall(r"(?m)^  (\S+)\s", r.stdout.decode())

    def test_commands(self):
        self.assertEqual(self.complete(""),
                         sorted(self.commands() + ["-h", "--help", "--version"]))
        self.assertEqual(self.complete("ve"), ["verify"])

    def test_flags_are_helps(self):
        for cmd in self.commands():
            with self.subTest(cmd=cmd):
                r = sstpipe(cmd, "--help")
                self.assertOk(r)
                flags = set()
                for m in re.finditer(r"(?m)^  (?:(-\S), |    )(--[a-z0-9-]+)", r.stdout.decode()):
                    flags |= {f for f in m.groups() if f}
                self.assertEqual(self.complete(cmd, "-"), sorted(flags))

    def test_short_flags(self):
        """The short spellings, beside the long ones, and their arguments."""
        self.assertEqual(self.complete("-"), ["--help", "--version", "-h"])
        build = self.complete("build", "-")
        for f in ("-o", "--output", "-v", "--verbose", "-q", "--quiet", "-c", "--config", "-h"):
            self.assertIn(f, build)
        self.assertEqual(self.complete("get", "-"), ["--config", "--help", "--raw", "--set", "-c", "-h"])
        self.write_file("enwiki.sst", b"")
        self.assertEqual(self.complete("build", "dump.xml", "-v", "-o", "en"), ["enwiki.sst"])
        # A switch takes no argument: the word after it is an operand.
        self.assertEqual(self.complete("verify", "-h", "en"), ["enwiki.sst"])

    def test_config_ini_first(self):
        os.mkdir(self.path("conf.d"))
        for name in ("nightly.ini", "cluster.ini", "night.txt", "enwiki.sst"):
            self.write_file(name, b"")
        for flag in ("-c", "--config"):
            with self.subTest(flag=flag):
                self.assertEqual(self.complete("build", flag, ""),
                                 ["cluster.ini", "conf.d", "nightly.ini"])
                self.assertEqual(self.complete("serve", flag, "n"), ["nightly.ini"])
                self.assertEqual(self.complete("nightly", flag, "=", "c"), ["cluster.ini", "conf.d"])
                # No *.ini name matches: every file.
                self.assertEqual(self.complete("build", flag, "night."), ["night.txt"])
                self.assertEqual(self.complete("info", flag, "e"), ["enwiki.sst"])
        # Operands and other FILE arguments stay every file.
        self.assertEqual(self.complete("info", ""),
                         ["cluster.ini", "conf.d", "enwiki.sst", "night.txt", "nightly.ini"])

    def test_set_keys(self):
        r = sstpipe("config", "show", "--json")
        self.assertOk(r)
        keys = [f"{s}.{k}=" for s, ks in json.loads(r.stdout).items() for k in ks]
        self.assertEqual(self.complete("build", "--set", ""), sorted(keys))
        self.assertEqual(self.complete("info", "--set", "sst.bl"), ["sst.block_size="])

    def test_files_dirs_and_words(self):
        os.mkdir(self.path("spill"))
        self.write_file("enwiki.sst", b"")
        self.write_file("dump.xml", b"")
        self.assertEqual(self.complete("info", ""), ["dump.xml", "enwiki.sst", "spill"])
        self.assertEqual(self.complete("verify", "enwiki.sst", "en"), ["enwiki.sst"])
        self.assertEqual(self.complete("build", "dump.xml", "--tmp", ""), ["spill"])
        self.assertEqual(self.complete("build", "dump.xml", "--tmp", "=", ""), ["spill"])
        self.assertEqual(self.complete("build", "dump.xml", "-o", "en"), ["enwiki.sst"])
        # After a flag's argument, the next word is an operand again.
        self.assertEqual(self.complete("get", "-c", "dump.xml", "en"), ["enwiki.sst"])
        self.assertEqual(self.complete("config", ""), ["show"])


if __name__ == "__main__":
    unittest.main()
