"""tests/e2e/test_readme.py: README.md's first screen shows the job, and its lines work.

Issue 33: a new reader met building and packaging first and the commands at line 104. The
first screen (FIRST_SCREEN lines) must hold the job's shell block: a table built from a dump,
a get, serve and nightly. Every `sstpipe CMD ...` line of it names a command of `sstpipe
--help` and only flags of `sstpipe CMD --help`; its table lines (build, get, dump, verify) run
as written, the dump's name replaced by a corpus's.
"""
import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import re
import shlex
import unittest

from sstpipe_e2e import E2ETest, corpora_dir, env_path, sstpipe

FIRST_SCREEN = 60
README = os.path.join(env_path("SSTPIPE_SOURCE"), "README.md")


def job_lines():
    """The `sstpipe ...` lines of the first ```sh block on the first screen after its
    "## The job" heading, as argument lists (comments dropped)."""
    with open(README, encoding="utf-8") as f:
        head = f.read().split("\n")[:FIRST_SCREEN]
    text = "\n".join(head)
    m = re.search(r"^## The job\n.*?^```sh\n(.*?)^```$", text, re.S | re.M)
    if not m:
        return None
    return [shlex.split(l, comments=True) for l in m.group(1).splitlines()
            if l.startswith("sstpipe ")]


class ReadmeTest(E2ETest):
    def test_first_screen_shows_the_job(self):
        lines = job_lines()
        self.assertIsNotNone(lines, f"no ```sh block under '## The job' in the first "
                                    f"{FIRST_SCREEN} lines of README.md")
        commands = [l[1] for l in lines]
        for cmd in ("build", "get", "serve", "nightly"):
            self.assertIn(cmd, commands)
        r = sstpipe("--help")
        self.assertOk(r)
        known = re.findall(r"(?m)^  (\S+)\s", r.stdout.decode())
        for args in lines:
            with self.subTest(line=" ".join(args)):
                self.assertIn(args[1], known)
                r = sstpipe(args[1], "--help")
                self.assertOk(r)
                flags = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", r.stdout.decode()))
                for a in args[2:]:
                    if a.startswith("-"):
                        self.assertIn(a.split("=")[0], flags)

    def test_table_lines_run(self):
        src = os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2")
        if not os.path.exists(src):
            self.skipTest("no " + src)
        lines = job_lines()
        self.assertIsNotNone(lines)
        build = next(l for l in lines if l[1] == "build")
        dump = next(a for a in build[2:] if not a.startswith("-") and "." in a
                    and a != build[build.index("-o") + 1])
        for args in lines:
            if args[1] not in ("build", "get", "dump", "verify"):
                continue
            with self.subTest(line=" ".join(args)):
                r = sstpipe(*[src if a == dump else a for a in args[1:]], cwd=self.tmp)
                # get's key need not be in the small corpus: 3 is its "not found".
                self.assertIn(r.code, (0, 3) if args[1] == "get" else (0,), r.describe())


if __name__ == "__main__":
    unittest.main()
