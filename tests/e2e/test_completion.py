"""test_completion.py: the bash completion the build generates.

Run in bash as the shell runs it (COMP_WORDS, COMP_CWORD, then _sstpipe):
the commands are `sstpipe --help`'s; after `sstpipe CMD -` every flag of
`sstpipe CMD --help`, and nothing else; --set offers every key of
`config show --json` as section.key=; a FILE operand or flag argument
completes file names, a DIR one directories only, a flag given as
--flag=VALUE too, and a word operand its words.
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
        self.assertEqual(self.complete(""), sorted(self.commands() + ["--help", "--version"]))
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
