"""test_package.py: the Debian package, `cpack -G DEB` of this build.

Its fields (name, the project version, this machine's architecture); its
files are exactly what `cmake --install` installs under /usr, owned by root,
with the binaries, man pages and documentation the README promises; its
Depends name the Debian package of every shared library its programs link
or load by name (readelf NEEDED, and the SONAMEs written in the programs for
dlopen -> ldconfig -> dpkg -S, found here independently); apt accepts
it (a simulated `apt-get install ./sstpipe_*.deb`). Unpacked into a
throwaway root (dpkg -x), the installed sstpipe says the build's --version,
and the installed wikigen and sstpipe build and verify a table; the man
pages render without a warning.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from sstpipe_e2e import E2ETest, env_path, sstpipe

NEEDED_RE = re.compile(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]")
# A SONAME as a string in a program: a library it opens itself, on first
# use (stages/common/dynlib.h), which readelf's NEEDED does not list.
SONAME_RE = re.compile(rb"\0(lib[A-Za-z0-9_+.-]*\.so\.[0-9]+)\0")


def need_tools(*tools):
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        raise unittest.SkipTest(f"not installed: {', '.join(missing)} "
                                "(pipeline/install-deps installs them)")


def check_output(test, args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    test.assertEqual(p.returncode, 0, f"{' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return p.stdout


class PackageTest(E2ETest):

    @classmethod
    def setUpClass(cls):
        need_tools("dpkg-deb", "dpkg-shlibdeps", "readelf", "file", "ldd")
        cls.build_dir = env_path("SSTPIPE_BUILD_DIR")
        cls.cpack = env_path("CPACK_COMMAND")
        cls.cmake = env_path("CMAKE_COMMAND")
        source = env_path("SSTPIPE_SOURCE")
        with open(os.path.join(source, "CMakeLists.txt")) as f:
            cls.version = re.search(r"^project\(sstpipe VERSION (\S+)", f.read(), re.M).group(1)
        # One package for every test here: building it is the slow part.
        cls.work = tempfile.mkdtemp(prefix="sstpipe-package-")
        p = subprocess.run([cls.cpack, "-G", "DEB", "--config",
                            os.path.join(cls.build_dir, "CPackConfig.cmake"), "-B", cls.work],
                           capture_output=True, text=True)
        debs = glob.glob(os.path.join(cls.work, "sstpipe_*.deb"))
        if p.returncode != 0 or len(debs) != 1:
            shutil.rmtree(cls.work, True)
            raise AssertionError(f"cpack failed (exit {p.returncode}):\n{p.stdout}\n{p.stderr}")
        cls.deb = debs[0]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, True)

    def field(self, name):
        return check_output(self, ["dpkg-deb", "-f", self.deb, name]).strip()

    def contents(self):
        """{path without the leading ./: (mode string, owner)} of every file."""
        files = {}
        for line in check_output(self, ["dpkg-deb", "-c", self.deb]).splitlines():
            mode, owner, _size, _date, _time, path = line.split(None, 5)
            path = path.split(" -> ")[0]
            files[path[2:].rstrip("/")] = (mode, owner)
        return files

    def unpacked(self):
        root = self.path("root")
        check_output(self, ["dpkg-deb", "-x", self.deb, root])
        return root

    @staticmethod
    def libdirs(root):
        """The unpacked package's library directories, for LD_LIBRARY_PATH."""
        return [d for d in glob.glob(os.path.join(root, "usr/lib*")) +
                glob.glob(os.path.join(root, "usr/lib/*-linux-gnu")) if os.path.isdir(d)]

    def test_fields(self):
        arch = check_output(self, ["dpkg", "--print-architecture"]).strip()
        self.assertEqual(os.path.basename(self.deb), f"sstpipe_{self.version}-1_{arch}.deb")
        self.assertEqual(self.field("Package"), "sstpipe")
        self.assertEqual(self.field("Version"), f"{self.version}-1")
        self.assertEqual(self.field("Architecture"), arch)
        self.assertTrue(self.field("Maintainer"))
        self.assertIn("MediaWiki", self.field("Description"))

    def test_contents_are_the_install(self):
        files = self.contents()
        for path in ["usr/bin/sstpipe", "usr/bin/wikigen",
                     "usr/share/man/man1/sstpipe.1.gz", "usr/share/man/man5/sstpipe-format.5.gz",
                     "usr/share/man/man3/sstpipe.3.gz", "usr/share/man/man1/wikigen.1.gz",
                     "usr/share/bash-completion/completions/sstpipe",
                     "usr/share/doc/sstpipe/README.md", "usr/share/doc/sstpipe/FORMAT.md",
                     "usr/share/doc/sstpipe/MANIFEST.md", "usr/share/doc/sstpipe/TABLESET.md",
                     "usr/share/doc/sstpipe/examples/default.ini",
                     "usr/share/doc/sstpipe/examples/nightly.ini"]:
            self.assertIn(path, files)
        self.assertTrue(files["usr/bin/sstpipe"][0].startswith("-rwxr-xr-x"), files)
        for path, (mode, owner) in files.items():
            self.assertEqual(owner, "root/root", path)
            self.assertTrue(path == "usr" or path.startswith("usr/"), path)
        # Exactly what `cmake --install` puts under /usr, nothing more or less.
        dest = self.path("install")
        check_output(self, [self.cmake, "--install", self.build_dir, "--prefix", "/usr"],
                     env=dict(os.environ, DESTDIR=dest))
        installed = set()
        for top, dirs, names in os.walk(dest):
            for name in dirs + names:
                installed.add(os.path.relpath(os.path.join(top, name), dest))
        self.assertEqual(set(files) - {"usr"}, installed - {"usr"})

    def test_depends_cover_every_linked_library(self):
        depends = {re.sub(r"\s*\(.*\)", "", d).strip()
                   for d in self.field("Depends").split(",")}
        root = self.unpacked()
        own = set()  # libraries the package itself ships
        elves = []
        for top, _, names in os.walk(root):
            for name in names:
                path = os.path.join(top, name)
                with open(path, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        elves.append(path)
                        own.add(name)
        self.assertTrue(elves, "no programs in the package")
        # Where the loader finds each library (ldd: this machine's own answer,
        # for the programs' architecture); the package's own are not asked for.
        env = dict(os.environ, LD_LIBRARY_PATH=":".join(self.libdirs(root)))
        where = {}
        for elf in elves:
            for m in re.finditer(r"(?m)^\s*(\S+) => (/\S+)", check_output(self, ["ldd", elf],
                                                                          env=env)):
                where.setdefault(m.group(1), m.group(2))
        needed = set()
        opened = set()
        for elf in elves:
            needed |= set(NEEDED_RE.findall(check_output(self, ["readelf", "-d", elf])))
            with open(elf, "rb") as f:
                opened |= {m.decode() for m in SONAME_RE.findall(f.read())}
        self.assertIn("libc.so.6", needed)
        # libxml2 at least: sstpipe opens it the first time it parses.
        self.assertIn("libxml2.so.2", opened)
        ldconfig = check_output(self, ["ldconfig", "-p"])
        for soname in sorted(opened - needed - own):
            m = re.search(r"(?m)^\s*" + re.escape(soname) + r" \(.*\) => (/\S+)", ldconfig)
            self.assertIsNotNone(m, f"the loader does not find {soname}")
            where.setdefault(soname, m.group(1))
        needed |= opened
        # dpkg knows a library by the path its package installed, which may
        # be the link or its target, under /lib or /usr/lib: every candidate
        # of every library asked in one dpkg -S (each call reads dpkg's
        # whole database), which lists the owned ones as "OWNERS: PATH".
        candidates = {}
        for soname in sorted(needed - own):
            self.assertIn(soname, where, f"the loader does not find {soname}")
            c = {where[soname], os.path.realpath(where[soname])}
            c |= {p.replace("/usr/lib/", "/lib/", 1) for p in c}
            c |= {p.replace("/lib/", "/usr/lib/", 1) for p in c if p.startswith("/lib/")}
            candidates[soname] = sorted(c)
        p = subprocess.run(["dpkg", "-S", *sorted({c for cs in candidates.values() for c in cs})],
                           capture_output=True, text=True)
        owners = {}
        for line in p.stdout.splitlines():
            pkgs, sep, path = line.rpartition(": ")
            if sep and not pkgs.startswith("diversion"):
                owners[path] = pkgs.split(":")[0].split(",")[0].strip()
        for soname, cs in candidates.items():
            owner = next((owners[c] for c in cs if c in owners), None)
            self.assertIsNotNone(owner, f"no Debian package owns {soname} "
                                        f"({os.path.realpath(where[soname])})")
            self.assertIn(owner, depends, f"{soname} comes from {owner}, not in Depends")

    def test_apt_accepts_it(self):
        need_tools("apt-get")
        p = subprocess.run(["apt-get", "install", "-s", "--no-install-recommends", self.deb],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"(?m)^Inst sstpipe ")

    def test_installed_programs_run(self):
        root = self.unpacked()
        env = dict(os.environ, LD_LIBRARY_PATH=":".join(self.libdirs(root)))
        installed = os.path.join(root, "usr/bin/sstpipe")
        want = sstpipe("--version")
        self.assertOk(want)
        self.assertEqual(check_output(self, [installed, "--version"], env=env),
                         want.stdout.decode())
        dump, table = self.path("d.xml.bz2"), self.path("d.sst")
        check_output(self, [os.path.join(root, "usr/bin/wikigen"), "--size", "256K", "--seed", "3",
                            "--format", "bz2", "-o", dump], env=env)
        check_output(self, [installed, "build", dump, "-o", table], env=env)
        check_output(self, [installed, "verify", table], env=env)
        info = check_output(self, [installed, "info", table, "--json"], env=env)
        self.assertIn('"records"', info)

    def test_man_pages_render_cleanly(self):
        need_tools("groff")
        root = self.unpacked()
        pages = glob.glob(os.path.join(root, "usr/share/man/man*/*.gz"))
        self.assertTrue(pages)
        for page in pages:
            text = subprocess.run(["gzip", "-dc", page], capture_output=True, check=True).stdout
            p = subprocess.run(["groff", "-man", "-ww", "-z", "-Tutf8"], input=text,
                               capture_output=True)
            self.assertEqual((p.returncode, p.stderr), (0, b""), page)


if __name__ == "__main__":
    unittest.main()
