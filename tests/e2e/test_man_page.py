"""test_man_page.py: the man page sstpipe(1) that the build generates.

Its COMMANDS are `sstpipe --help`'s, in order; under each, the options are
exactly `sstpipe CMD --help`'s (spelling, argument and text, in order); its
configuration keys are every key `config show --json` knows; its EXIT STATUS
lists every exit code the sources define; it renders
without a groff warning. The option lists are generated from the command
table, so this holds for a flag added tomorrow as well.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import gzip
import json
import os
import re
import shutil
import subprocess
import unittest

from sstpipe_e2e import E2ETest, env_path, sstpipe

HELP_FLAG_RE = re.compile(r"^  (-\S, |    )(--\S+)(?: (\S+))?(?:\s{2,}(.*))?$")


def unroff(text):
    """Roff source -> plain text, for the escapes man_page.c writes."""
    text = re.sub(r"\\f[BIRP]", "", text)
    return text.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")


def words(text):
    return " ".join(text.split())


def help_options(cmd):
    """[(spec, text)] of `sstpipe CMD --help`: spec as "-o, --output FILE"."""
    r = sstpipe(cmd, "--help")
    assert r.code == 0, r.describe()
    out, cur = [], None
    for line in r.stdout.decode().splitlines():
        m = HELP_FLAG_RE.match(line)
        if m:
            short = m.group(1).strip()
            spec = (short + " " if short else "") + m.group(2) + (
                " " + m.group(3) if m.group(3) else "")
            cur = [spec, m.group(4) or ""]
            out.append(cur)
        elif cur and line.startswith(" " * 20) and line.strip():
            cur[1] += " " + line.strip()
        else:
            cur = None
    return [(s, words(t)) for s, t in out]


class ManPageTest(E2ETest):

    @classmethod
    def setUpClass(cls):
        page = os.path.join(env_path("SSTPIPE_BUILD_DIR"), "man", "sstpipe.1.gz")
        with gzip.open(page, "rt") as f:
            cls.roff = f.read()

    def section(self, name):
        m = re.search(r"(?ms)^\.SH %s\n(.*?)(?=^\.SH )" % re.escape(name), self.roff)
        self.assertTrue(m, f"no section {name}")
        return m.group(1)

    def man_commands(self):
        """{command: [(spec, text)]} in page order."""
        cmds = {}
        for block in re.split(r"(?m)^\.SS ", self.section("COMMANDS"))[1:]:
            name, body = block.split("\n", 1)
            entries = []
            for tp in re.split(r"(?m)^\.TP\n", body)[1:]:
                spec, text = tp.split("\n", 1)
                text = re.split(r"(?m)^\.(?:RE|PP|SS|TP)\b", text)[0]
                entries.append((words(unroff(spec)), words(unroff(text))))
            cmds[unroff(name)] = entries
        return cmds

    def test_commands_are_helps(self):
        r = sstpipe("--help")
        self.assertOk(r)
        listed = re.findall(r"(?m)^  (\S+)\s", r.stdout.decode())
        self.assertEqual(list(self.man_commands()), listed)

    def test_option_lists_equal_help(self):
        man = self.man_commands()
        for cmd, entries in man.items():
            with self.subTest(cmd=cmd):
                self.assertEqual(entries, help_options(cmd))
                self.assertIn(("-h, --help", "show this help"), entries)

    def test_every_config_key(self):
        r = sstpipe("config", "show", "--json")
        self.assertOk(r)
        keys = [f"[{s}] {k}" for s, ks in json.loads(r.stdout).items() for k in ks]
        listed = re.findall(r"(?m)^\.TP\n\\fB(\[[a-z_]+\] [a-z_]+)\\fR",
                            self.section("CONFIGURATION"))
        self.assertEqual([unroff(k) for k in listed], keys)

    def test_exit_codes_and_version(self):
        # Every exit code the sources define (SP_EXIT_*, NIGHTLY_EXIT_*, and any
        # added later), and the two of the signals, has an entry.
        codes = set()
        src = env_path("SSTPIPE_SOURCE")
        for top in ["pipeline", "stages", "config"]:
            for root, _, files in os.walk(os.path.join(src, top)):
                for name in files:
                    if name.endswith(".h"):
                        with open(os.path.join(root, name)) as f:
                            codes |= set(re.findall(r"(?m)^#define \w*EXIT\w* (\d+)\b", f.read()))
        self.assertTrue({"0", "1", "2", "3"} <= codes, codes)
        status = self.section("EXIT STATUS")
        listed = set(re.findall(r"(?m)^\.B (\d+(?:, \d+)*)$", status))
        listed = {c for entry in listed for c in entry.split(", ")}
        self.assertEqual(listed, codes | {"130", "143"})
        self.assertRegex(self.roff, r'(?m)^\.TH SSTPIPE 1 "" "sstpipe \d+\.\d+\.\d+"')

    def test_renders_without_warnings(self):
        if shutil.which("groff") is None:
            self.skipTest("groff is not installed")
        p = subprocess.run(["groff", "-man", "-ww", "-z", "-Tutf8"], input=self.roff.encode(),
                           capture_output=True)
        self.assertEqual((p.returncode, p.stderr), (0, b""))


if __name__ == "__main__":
    unittest.main()
