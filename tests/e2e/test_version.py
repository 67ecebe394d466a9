"""test_version.py: which sstpipe made a thing.

`sstpipe --version` prints the CMake project version (read here from
CMakeLists.txt), the program's, and on a second line the library's, said to be
its ABI's (SSTPIPE_LIB_VERSION, and the SONAME's major); and, built from this
checkout, `git describe` of a commit that exists in it; every JSON report (info, verify, profile, iotest, tune) and the
nightly manifest record the same text as "sstpipe_version". The script that
makes the version (pipeline/cmake/version.cmake) gives the git part only for the top of
a checkout: none outside git nor inside some other tree, a tag and "-dirty"
where there are.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import re
import shutil
import subprocess
import unittest

from sstpipe_e2e import E2ETest, corpora_dir, env_path, sstpipe, wikigen_bin

VERSION_RE = re.compile(r"sstpipe (\d+\.\d+\.\d+)(?: \(git (\S+)\))?\n"
                        r"libsstpipe (\d+)\.\d+\.\d+: the library's ABI version "
                        r"\(libsstpipe\.so\.(\d+)\), not the program's above\n\Z")


def library_version(source):
    with open(os.path.join(source, "CMakeLists.txt")) as f:
        m = re.search(r"^set\(SSTPIPE_LIB_VERSION (\S+)\)", f.read(), re.M)
    assert m, "CMakeLists.txt has no set(SSTPIPE_LIB_VERSION ...)"
    return m.group(1)


def project_version(source):
    with open(os.path.join(source, "CMakeLists.txt")) as f:
        m = re.search(r"^project\(sstpipe VERSION (\S+)", f.read(), re.M)
    assert m, "CMakeLists.txt has no project(sstpipe VERSION ...)"
    return m.group(1)


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


class VersionTest(E2ETest):

    def setUp(self):
        super().setUp()
        self.source = env_path("SSTPIPE_SOURCE")

    def version_text(self):
        r = sstpipe("--version")
        self.assertOk(r)
        self.assertEqual(r.stderr, b"")
        m = VERSION_RE.match(r.stdout.decode())
        self.assertTrue(m, f"--version printed {r.stdout!r}")
        return m, r.stdout.decode().split("\n")[0][len("sstpipe "):]

    def test_version_names_the_program_and_the_library(self):
        """The second line is the library's version, said to be its ABI's
        (the SONAME's major), apart from the program's first."""
        r = sstpipe("--version")
        self.assertOk(r)
        m = VERSION_RE.match(r.stdout.decode())
        self.assertTrue(m, f"--version printed {r.stdout!r}")
        lines = r.stdout.decode().split("\n")
        self.assertEqual(lines[1].split()[1].rstrip(":"), library_version(self.source))
        self.assertEqual(m.group(3), m.group(4))

    def test_wikigen_says_the_same_version(self):
        """wikigen, built and installed with sstpipe, prints `wikigen` and
        the program's version, the text of sstpipe --version's first line."""
        _, version = self.version_text()
        r = subprocess.run([wikigen_bin(), "--version"], capture_output=True)
        self.assertEqual((r.returncode, r.stdout.decode(), r.stderr),
                         (0, f"wikigen {version}\n", b""))
        self.assertIn("--version", subprocess.run([wikigen_bin(), "--help"],
                                                  capture_output=True, text=True).stdout)

    def test_version_is_the_project_and_the_checkout(self):
        m, _ = self.version_text()
        self.assertEqual(m.group(1), project_version(self.source))
        if shutil.which("git") is None:
            self.skipTest("git is not installed: the git part cannot be checked")
        top = git("rev-parse", "--show-toplevel", cwd=self.source)
        if top.returncode != 0 or os.path.realpath(top.stdout.strip()) != os.path.realpath(
                self.source):
            self.assertIsNone(m.group(2), "a build outside a checkout names no commit")
            return
        self.assertTrue(m.group(2), "built from a checkout, --version names its commit")
        # The describe names a commit of this repository (a tag's distance and
        # "-gHASH", or a bare abbreviated hash), built dirty or clean.
        describe = re.sub(r"-dirty$", "", m.group(2))
        commit = re.sub(r"^.*-g([0-9a-f]+)$", r"\1", describe)
        self.assertEqual(git("rev-parse", "--verify", "--quiet", commit + "^{commit}",
                             cwd=self.source).returncode, 0,
                         f"{m.group(2)!r} does not name a commit of {self.source}")

    def test_help_mentions_version(self):
        r = sstpipe("--help")
        self.assertOk(r)
        self.assertIn(b"sstpipe --version", r.stdout)

    def test_every_report_records_the_version(self):
        _, version = self.version_text()
        dump = os.path.join(corpora_dir(), "simplewiki-7pages.xml.bz2")
        sst = self.path("t.sst")
        self.assertOk(sstpipe("build", dump, "-o", sst))
        docs = {}

        r = sstpipe("info", sst, "--json")
        self.assertOk(r)
        docs["info"] = json.loads(r.stdout)

        def report(name, *args):
            path = self.path(name + ".json")
            self.assertOk(sstpipe(*args, "--json", path))
            with open(path) as f:
                docs[name] = json.load(f)

        report("verify", "verify", sst)
        report("profile", "profile", sst, "50", "--seed", "1")
        disk = self.path("disk")
        os.mkdir(disk)
        report("iotest", "iotest", disk, "--size", "1M", "--duration", "0.1", "--threads", "1",
               "--queue-depth", "1", "--pattern", "rr:4K")
        scratch = self.path("scratch")
        os.mkdir(scratch)
        report("tune", "tune", dump, "--tmp", scratch, "--block-sizes", "8K", "--cluster-sizes",
               "4K", "--lookups", "20", "--compression-levels", "none")

        out = self.path("out")
        ini = self.write_file("nightly.ini", (f"[output]\ndir = {out}\n[profile]\nlookups = 20\n"
                                              "[sort]\nmemory = 4M\n").encode())
        self.assertOk(sstpipe("nightly", "-c", ini, dump))
        with open(os.path.join(out, "current", "manifest.json")) as f:
            docs["manifest"] = json.load(f)

        for name, doc in docs.items():
            self.assertEqual(doc.get("sstpipe_version"), version, name)


class VersionScriptTest(E2ETest):
    """pipeline/cmake/version.cmake on its own, on throwaway directories."""

    def setUp(self):
        super().setUp()
        self.source = env_path("SSTPIPE_SOURCE")
        self.cmake = env_path("CMAKE_COMMAND")
        if shutil.which("git") is None:
            self.skipTest("git is not installed")
        # No test directory may see the checkout around /tmp, if there is one.
        self.env = dict(os.environ, GIT_CEILING_DIRECTORIES=self.tmp,
                        GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")

    def version_of(self, src):
        out = self.path("version.c")
        p = subprocess.run([self.cmake, f"-DSOURCE_DIR={src}", f"-DOUT={out}", "-DVERSION=1.2.3",
                            "-P", os.path.join(self.source, "pipeline", "cmake", "version.cmake")],
                           capture_output=True, text=True, env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            m = re.search(r'return "([^"]*)";', f.read())
        self.assertTrue(m, "version.c has no version string")
        return m.group(1)

    def git(self, *args, cwd):
        p = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                           cwd=cwd, capture_output=True, text=True, env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.strip()

    def test_no_checkout_no_git_part(self):
        src = self.path("tarball")
        os.mkdir(src)
        self.assertEqual(self.version_of(src), "1.2.3")

    def test_inside_another_checkout_no_git_part(self):
        repo = self.path("packaging")
        os.makedirs(os.path.join(repo, "sstpipe-1.2.3"))
        self.git("init", "-q", cwd=repo)
        self.write_file("packaging/README", b"x\n")
        self.git("add", "README", cwd=repo)
        self.git("commit", "-q", "-m", "x", cwd=repo)
        self.assertEqual(self.version_of(os.path.join(repo, "sstpipe-1.2.3")), "1.2.3")

    def test_checkout_tag_and_dirty(self):
        repo = self.path("checkout")
        os.mkdir(repo)
        self.git("init", "-q", cwd=repo)
        self.write_file("checkout/a", b"1\n")
        self.git("add", "a", cwd=repo)
        self.git("commit", "-q", "-m", "one", cwd=repo)
        head = self.git("rev-parse", "--short", "HEAD", cwd=repo)
        self.assertEqual(self.version_of(repo), f"1.2.3 (git {head})")
        self.git("tag", "v1.2.3", cwd=repo)
        self.assertEqual(self.version_of(repo), "1.2.3 (git v1.2.3)")
        self.write_file("checkout/a", b"2\n")
        self.assertEqual(self.version_of(repo), "1.2.3 (git v1.2.3-dirty)")


if __name__ == "__main__":
    unittest.main()
