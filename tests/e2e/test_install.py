"""test_install.py: libsstpipe as a user gets it, from `cmake --install`.

The build directory is installed into a temporary prefix; a C program
written outside the build tree is compiled against the installed library
with `pkg-config --cflags --libs sstpipe` (PKG_CONFIG_PATH pointing into
the prefix) and run on a table built from a corpus dump: its lookups, a
prefix scan and a full scan must agree with `sstpipe get` and `dump`. The
installed header, SONAME link, pkg-config version, manual page and exported
symbols are checked, and the installed Python module is imported from the
prefix (SSTPIPE_PYTHON, the interpreter it was built for) and read too.

The README's library examples, the complete C program and the Python
script, are taken from README.md as they stand, built and run the same way
on a table holding the keys they name ("Alan Turing", the prefix "Alan",
the range [M, Ma)); their whole output must be what `sstpipe dump` says
it should be.

sstpipe(3) is held to what it says: its EXAMPLES program, built with
LeakSanitizer, frees every message (an open that fails, a lookup and a scan
over corrupt blocks); every sstpipe_* it or the header's comments name is
declared; SEE ALSO names manual pages, not source paths; it and the README
say how a program finds libsstpipe.so.1 under a prefix.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from sstpipe_e2e import _page, corpora_dir, sstpipe_bin, wikigen_bin

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
README = os.path.join(SOURCE, "README.md")
MAN3 = os.path.join(SOURCE, "stages", "sst", "sstpipe.3")
HEADER = os.path.join(SOURCE, "stages", "sst", "sstpipe.h")


def man_example():
    """The C program of sstpipe(3)'s EXAMPLES, unescaped."""
    with open(MAN3, encoding="utf-8") as f:
        text = f.read()
    body = text[text.index(".SH EXAMPLES"):]
    code = body[body.index(".EX\n") + 4:body.index(".EE\n")]
    return code.replace("\\e", "\\").replace("\\-", "-")


def readme_block(after, lang):
    """The first ```lang block of README.md after the line holding `after`."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    at = text.index(after)
    start = text.index(f"```{lang}\n", at) + len(f"```{lang}\n")
    return text[start:text.index("```\n", start)]


# Pages whose titles the README's examples name, with some around them.
EXAMPLE_TITLES = ["Al", "Alan Kay", "Alan Turing", "Alanine", "Alba", "Lisp", "M", "MIT",
                  "Ma", "Mac", "Zebra"]

APP_C = r"""
#include <sstpipe/sstpipe.h>

#include <stdio.h>
#include <string.h>

/* app TABLE KEY PREFIX: the value of KEY (or "absent"), the keys with
 * PREFIX, and the number of records a full scan returns. */
int main(int argc, char **argv) {
    if (argc != 4)
        return 2;
    char *err = NULL;
    sstpipe_table *t = sstpipe_open(argv[1], &err);
    if (!t) {
        fprintf(stderr, "open: %s\n", err);
        sstpipe_free(err);
        return 2;
    }
    const void *v, *k;
    size_t vlen, klen;
    int rc = sstpipe_get(t, argv[2], strlen(argv[2]), &v, &vlen, &err);
    if (rc < 0) {
        fprintf(stderr, "get: %s\n", err);
        return 2;
    }
    if (rc == 1)
        printf("value %.*s\n", (int)vlen, (const char *)v);
    else
        printf("absent\n");
    sstpipe_iter *it = sstpipe_iter_new(t, NULL, 0, argv[3], strlen(argv[3]));
    while ((rc = sstpipe_iter_next(it, &k, &klen, &v, &vlen, &err)) == 1)
        printf("prefix %.*s\n", (int)klen, (const char *)k);
    sstpipe_iter_free(it);
    unsigned long long n = 0;
    it = sstpipe_iter_new(t, NULL, 0, NULL, 0);
    while ((rc = sstpipe_iter_next(it, &k, &klen, &v, &vlen, &err)) == 1)
        n++;
    sstpipe_iter_free(it);
    sstpipe_info info;
    sstpipe_info_get(t, &info);
    printf("scanned %llu of %llu, library %s\n", n, (unsigned long long)info.records,
           sstpipe_version());
    sstpipe_close(t);
    return rc < 0 ? 2 : 0;
}
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


class InstallTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sstpipe-install-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.build = os.path.dirname(sstpipe_bin())
        self.prefix = os.path.join(self.tmp, "prefix")
        run(["cmake", "--install", self.build, "--prefix", self.prefix])
        self.table = os.path.join(self.tmp, "t.sst")
        run([sstpipe_bin(), "build", os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2"),
             "-o", self.table])
        dump = run([sstpipe_bin(), "dump", self.table]).stdout.splitlines()
        self.recs = [(o["key"], o["value"]) for o in map(json.loads, dump)]

    def libdir(self):
        pcs = glob.glob(os.path.join(self.prefix, "**", "pkgconfig", "sstpipe.pc"),
                        recursive=True)
        self.assertEqual(len(pcs), 1, pcs)
        return os.path.dirname(os.path.dirname(pcs[0]))

    def compile(self, name, code, extra=()):
        """code, written outside the build tree to a directory name, built
        against the installed library as a user would (pkg-config, an rpath
        to the prefix); the program's path."""
        libdir = self.libdir()
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"))
        flags = run(["pkg-config", "--cflags", "--libs", "sstpipe"], env=env).stdout.split()
        src = os.path.join(self.tmp, name)
        os.makedirs(src)
        with open(os.path.join(src, "app.c"), "w") as f:
            f.write(code)
        app = os.path.join(src, "app")
        run([os.environ.get("CC", "cc"), "-Wall", "-Wextra", "-Werror", *extra, "app.c", "-o",
             app] + flags + ["-Wl,-rpath," + libdir], cwd=src, env=env)
        return app

    def test_c_program_against_the_installed_library(self):
        libdir = self.libdir()
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"))
        self.assertEqual(run(["pkg-config", "--modversion", "sstpipe"], env=env).stdout.strip(),
                         "1.6.0")
        flags = run(["pkg-config", "--cflags", "--libs", "sstpipe"], env=env).stdout.split()
        self.assertIn("-lsstpipe", flags)
        self.assertTrue(os.path.isfile(os.path.join(self.prefix, "include", "sstpipe",
                                                    "sstpipe.h")))
        # Gzipped, as every other page (Debian's policy): never the plain page.
        man3 = os.listdir(os.path.join(self.prefix, "share", "man", "man3"))
        self.assertEqual(man3, ["sstpipe.3.gz"])
        page = run(["gzip", "-dc", os.path.join(self.prefix, "share", "man", "man3",
                                                "sstpipe.3.gz")]).stdout
        with open(MAN3, encoding="utf-8") as f:
            self.assertEqual(page, f.read())
        self.assertTrue(os.path.islink(os.path.join(libdir, "libsstpipe.so")))
        soname = run(["readelf", "-d", os.path.join(libdir, "libsstpipe.so")]).stdout
        self.assertIn("Library soname: [libsstpipe.so.1]", soname)
        # Only the API is exported.
        syms = run(["nm", "-D", "--defined-only", os.path.join(libdir, "libsstpipe.so")]).stdout
        names = {line.split()[-1].split("@")[0] for line in syms.splitlines()}
        names.discard("SSTPIPE_1")
        names.discard("SSTPIPE_1.1")
        names.discard("SSTPIPE_1.2")
        names.discard("SSTPIPE_1.3")
        names.discard("SSTPIPE_1.4")
        names.discard("SSTPIPE_1.5")
        names.discard("SSTPIPE_1.6")
        self.assertTrue(names and all(n.startswith("sstpipe_") for n in names), names)

        app = self.compile("src", APP_C)
        # It runs on the installed library, not the build's.
        ldd = run(["ldd", app]).stdout
        self.assertIn(os.path.realpath(libdir), os.path.realpath(
            [l.split("=>")[1].split()[0] for l in ldd.splitlines() if "libsstpipe" in l][0]))

        key, value = self.recs[len(self.recs) // 2]
        prefix = key[:3]
        out = run([app, self.table, key, prefix]).stdout.splitlines()
        got_value = run([sstpipe_bin(), "get", "--raw", self.table, key]).stdout[:-1]
        self.assertEqual(got_value, value)
        text = "\n".join(out)
        self.assertTrue(text.startswith("value " + value))
        want_prefix = [k for k, _ in self.recs if k.startswith(prefix)]
        self.assertEqual([l[len("prefix "):] for l in out if l.startswith("prefix ")],
                         want_prefix)
        self.assertEqual(out[-1], f"scanned {len(self.recs)} of {len(self.recs)}, library 1.6.0")
        absent = run([app, self.table, key + "\x7f", prefix]).stdout.splitlines()
        self.assertEqual(absent[0], "absent")

    def example_table(self):
        xml = os.path.join(self.tmp, "examples.xml")
        pages = [_page(t, [f"The article {t}, {i} words."]) for i, t in enumerate(EXAMPLE_TITLES)]
        with open(xml, "w", encoding="utf-8") as f:
            f.write('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11">'
                    "\n" + "".join(pages) + "</mediawiki>\n")
        table = os.path.join(self.tmp, "examples.sst")
        run([sstpipe_bin(), "build", xml, "-o", table])
        recs = [(o["key"], o["value"]) for o in
                map(json.loads, run([sstpipe_bin(), "dump", table]).stdout.splitlines())]
        self.assertEqual([k for k, _ in recs], EXAMPLE_TITLES)
        return table, recs

    def test_readme_c_example(self):
        app = self.compile("readme", readme_block("A complete C program", "c"))
        table, recs = self.example_table()
        values = dict(recs)

        def line(k):
            return f"{k} ({len(values[k].encode())} bytes)"

        scans = ([line(k) for k, _ in recs if k.startswith("Alan")] +
                 [line(k) for k, _ in recs if "M" <= k < "Ma"] + [line(k) for k, _ in recs])
        head = f"{len(recs)} records, libsstpipe 1.6.0"
        out = run([app, table, "Alan Turing"]).stdout
        self.assertEqual(out, "\n".join([head, values["Alan Turing"]] + scans) + "\n")
        out = run([app, table, "No such page"]).stdout
        self.assertEqual(out, "\n".join([head, "No such page: not found"] + scans) + "\n")

    def test_readme_python_example(self):
        python = os.environ.get("SSTPIPE_PYTHON")
        if not python:
            self.skipTest("SSTPIPE_PYTHON is not set (no Python module in this build)")
        (mod,) = glob.glob(os.path.join(self.prefix, "**", "sstpipe*.so"), recursive=True)
        table, recs = self.example_table()
        values = dict(recs)
        code = readme_block("The same in Python", "python")
        self.assertIn('"enwiki.sst"', code)
        script = os.path.join(self.tmp, "example.py")
        with open(script, "w") as f:
            f.write(code.replace('"enwiki.sst"', repr(table)))
        env = dict(os.environ, PYTHONPATH=os.path.dirname(mod))
        out = run([python, script], env=env).stdout
        info = json.loads(run([sstpipe_bin(), "info", table, "--json"]).stdout)
        want = ([f"{len(recs)} records {info['block_size']} byte blocks",
                 values["Alan Turing"], "-", "True"] +
                [f"{k} {len(v)}" for k, v in recs if k.startswith("Alan")] +
                [k for k, _ in recs if "M" <= k < "Ma"])
        self.assertEqual(out, "\n".join(want) + "\n")

    def test_installed_python_module(self):
        python = os.environ.get("SSTPIPE_PYTHON")
        if not python:
            self.skipTest("SSTPIPE_PYTHON is not set (no Python module in this build)")
        mods = glob.glob(os.path.join(self.prefix, "**", "sstpipe*.so"), recursive=True)
        self.assertEqual(len(mods), 1, mods)
        key, value = self.recs[3]
        code = ("import sstpipe, sys; t = sstpipe.open(sys.argv[1], decode=True); "
                "print(t[sys.argv[2]] == sys.argv[3], len(t), sstpipe.__file__)")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(mods[0]))
        out = run([python, "-c", code, self.table, key, value], env=env).stdout.split()
        self.assertEqual(out[:2], ["True", str(len(self.recs))])
        self.assertTrue(out[2].startswith(self.prefix), out[2])

    def test_help_and_man_page_name_the_installed_examples(self):
        """`sstpipe nightly --help`, installed under a prefix of the install's
        choosing, names default.ini and nightly.ini where that install put
        them; sstpipe(1), made for the configured prefix, names files that
        exist once installed there (DESTDIR shows where that is)."""
        sstpipe = os.path.join(self.prefix, "bin", "sstpipe")
        helped = " ".join(run([sstpipe, "nightly", "--help"]).stdout.split())
        named = re.findall(r"(/\S+/(default|nightly)\.ini)", helped)
        self.assertEqual(sorted(n for _, n in named), ["default", "nightly"], helped)
        for path, _ in named:
            self.assertTrue(path.startswith(os.path.realpath(self.prefix) + os.sep), path)
            self.assertTrue(os.path.isfile(path), path)
        dest = os.path.join(self.tmp, "dest")
        run(["cmake", "--install", self.build], env=dict(os.environ, DESTDIR=dest))
        (page,) = glob.glob(os.path.join(dest, "**", "man1", "sstpipe.1.gz"), recursive=True)
        man = run(["gzip", "-dc", page]).stdout
        files = man[man.index(".SH FILES\n"):man.index(".SH EXAMPLES\n")]
        see_also = man[man.index(".SH SEE ALSO\n"):]
        paths = re.findall(r"^\.I (/\S+)$", files, re.M) + re.findall(r"(/\S+README\.md)", see_also)
        self.assertEqual(len(paths), 4, paths)
        for path in paths:
            self.assertTrue(os.path.isfile(dest + path), path)

    def test_python_module_in_a_virtual_environment(self):
        """The module installs into a virtual environment with pip, as the
        README says: from the source tree (stages/sst/python, copied with
        the header it includes so that pip's build leaves this tree clean),
        offline, against the library installed in the prefix; the venv's
        python then imports it from the venv and reads a table."""
        python = os.environ.get("SSTPIPE_PYTHON")
        if not python:
            self.skipTest("SSTPIPE_PYTHON is not set (no Python module in this build)")
        if subprocess.run([python, "-c", "import ensurepip, venv"],
                          capture_output=True).returncode != 0:
            self.skipTest(f"{python} has no venv/ensurepip: python3-venv is not installed "
                          "(pipeline/install-deps installs it)")
        src = os.path.join(self.tmp, "src")
        shutil.copytree(os.path.join(SOURCE, "stages", "sst", "python"),
                        os.path.join(src, "stages", "sst", "python"),
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        shutil.copy(HEADER, os.path.join(src, "stages", "sst"))
        venv = os.path.join(self.tmp, "venv")
        run([python, "-m", "venv", "--system-site-packages", venv])
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(self.libdir(), "pkgconfig"))
        env.pop("PYTHONPATH", None)
        run([os.path.join(venv, "bin", "pip"), "install", "--no-build-isolation", "--no-index",
             "--disable-pip-version-check", os.path.join(src, "stages", "sst", "python")],
            env=env, cwd=self.tmp)
        key, value = self.recs[5]
        code = ("import sstpipe, sys; t = sstpipe.open(sys.argv[1], decode=True); "
                "print(sstpipe.__file__); print(sstpipe.__version__, sstpipe.library_version(), "
                "len(t)); print(t[sys.argv[2]] == sys.argv[3])")
        out = run([os.path.join(venv, "bin", "python"), "-c", code, self.table, key, value],
                  env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                  cwd=self.tmp).stdout.splitlines()
        self.assertTrue(out[0].startswith(venv + os.sep), out[0])
        self.assertEqual(out[1:], [f"1.6.0 1.6.0 {len(self.recs)}", "True"])
        # It loads the prefix's library (the rpath pip's build recorded).
        ldd = run(["ldd", out[0]]).stdout
        self.assertIn(os.path.realpath(self.libdir()), os.path.realpath(
            [l.split("=>")[1].split()[0] for l in ldd.splitlines() if "libsstpipe" in l][0]))

    def test_man_page_example_frees_every_message(self):
        """sstpipe(3)'s EXAMPLES, built with LeakSanitizer against the
        installed library, leaks nothing when the open fails, nor when every
        block is corrupt so that its lookup and its scan fail."""
        app = self.compile("man3", man_example(), ("-fsanitize=address", "-g"))
        info = json.loads(run([sstpipe_bin(), "info", self.table, "--json"]).stdout)
        data = bytearray(open(self.table, "rb").read())
        for b in range(info["data_blocks"]):
            data[b * info["block_size"] + 100] ^= 0x20
        bad = os.path.join(self.tmp, "bad.sst")
        with open(bad, "wb") as f:
            f.write(bytes(data))
        lsan = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
        for table, want in ((self.table, 0), (bad, 1), (os.path.join(self.tmp, "none.sst"), 2)):
            r = subprocess.run([app, table], capture_output=True, text=True, env=lsan)
            self.assertNotIn("LeakSanitizer", r.stderr, table)
            self.assertEqual(r.returncode, want, (table, r.stderr))
            if want == 1:
                self.assertIn("block checksum", r.stderr)

    def test_man_page_and_header_name_what_exists(self):
        """Every sstpipe_* name in sstpipe(3) and in the header's comments is
        declared by the header; the call filling sstpipe_info is named
        sstpipe_info_get, never sstpipe_info (a type, not a call)."""
        with open(HEADER, encoding="utf-8") as f:
            header = f.read()
        declared = set(re.findall(r"\b(sstpipe_\w+)\s*\(", header))
        declared |= set(re.findall(r"typedef struct \w+ (sstpipe_\w+);", header))
        declared |= set(re.findall(r"\} (sstpipe_\w+);", header))
        comments = " ".join(re.findall(r"/\*.*?\*/", header, re.S))
        with open(MAN3, encoding="utf-8") as f:
            man = f.read()
        for where, text in (("sstpipe.h", comments), ("sstpipe.3", man)):
            named = set(re.findall(r"\b(sstpipe_\w+)", text.replace("\\f", " ")))
            # A family ("the sstpipe_shard_* calls") names a prefix of declared names.
            unknown = {n for n in named - declared
                       if not (n.endswith("_") and any(d.startswith(n) for d in declared))}
            self.assertEqual(unknown, set(), where)
        calls = re.findall(r"\bsstpipe_info\b(?!')(?!\s*\*)", comments)
        self.assertEqual(calls, [], "the header's comments call sstpipe_info a function")

    def test_one_naming_rule_and_the_old_names_kept(self):
        """sstpipe.h's naming rule: a table is made by sstpipe_open* and
        released by sstpipe_close, every other object by sstpipe_X_new and
        sstpipe_X_free; the only other makers and releasers are the old
        names kept for compatibility, still exported at SSTPIPE_1 beside
        the new ones at SSTPIPE_1.3; sstpipe(3) states the rule."""
        with open(HEADER, encoding="utf-8") as f:
            header = f.read()
        calls = {name: (ret, params) for ret, name, params in re.findall(
            r"^(?:const )?(\w+ \*?)(sstpipe_\w+)\((.*?)\);", header, re.M | re.S)}
        kept = {"sstpipe_options_init": "sstpipe_options_new",
                "sstpipe_options_destroy": "sstpipe_options_free"}
        for typ in re.findall(r"typedef struct (sstpipe_\w+) \1;", header):
            makers = {n for n, (ret, _) in calls.items() if ret == typ + " *" and
                      (n.startswith("sstpipe_open") or n.endswith(("_new", "_init")))}
            releasers = {n for n, (ret, params) in calls.items() if ret == "void " and
                         re.fullmatch(rf"(const )?{typ} \*\w+", params.strip())}
            releasers -= {n for n in releasers if n.startswith(typ + "_set_")}
            if typ == "sstpipe_table":
                want = ({"sstpipe_open", "sstpipe_open_with"}, {"sstpipe_close"})
            else:
                want = ({typ + "_new"}, {typ + "_free"})
            self.assertEqual((makers - set(kept), releasers - set(kept)), want, typ)
        at = header.index("sstpipe_options *sstpipe_options_init(void);")
        self.assertIn("Kept for compatibility", header[header.rindex("/*", 0, at):at])
        syms = run(["nm", "-D", "--defined-only", os.path.join(self.libdir(), "libsstpipe.so")]).stdout
        # nm -D: name@@VERSION (the default version) or name@VERSION.
        versions = {}
        for line in syms.splitlines():
            name, _, version = line.split()[-1].partition("@")
            versions[name] = version.lstrip("@")
        for old, new in kept.items():
            self.assertEqual(versions[old], "SSTPIPE_1", old)
            self.assertEqual(versions[new], "SSTPIPE_1.3", new)
        with open(MAN3, encoding="utf-8") as f:
            man = f.read()
        self.assertIn(".SS Names\n", man)
        for name in [*kept, *kept.values()]:
            self.assertIn(f".BR {name} ()", man)

    def test_wikigen_page_names_every_option(self):
        """wikigen(1) is installed, gzipped, and names every option that
        `wikigen --help` lists (the page is made from data/README.md)."""
        page = os.path.join(self.prefix, "share", "man", "man1", "wikigen.1.gz")
        if not os.path.exists(page) and shutil.which("go-md2man") is None:
            self.skipTest("go-md2man is not installed: the Markdown pages are not made")
        text = run(["gzip", "-dc", page]).stdout.replace("\\-", "-")
        self.assertIn(".TH WIKIGEN 1 ", text)
        helped = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", run([wikigen_bin(), "--help"]).stdout))
        self.assertIn("--version", helped)
        self.assertEqual({o for o in helped if o not in text}, set())

    def test_every_info_field_is_described(self):
        """Every field of struct sstpipe_info has its comment in the header
        and its own entry (.TP, .B name, a description) in sstpipe(3), and
        the page describes no field the struct does not have."""
        with open(HEADER, encoding="utf-8") as f:
            header = f.read()
        struct = re.search(r"typedef struct sstpipe_info \{(.*?)\} sstpipe_info;", header, re.S)
        fields = re.findall(r"^\s*u?int\d+_t (\w+);(.*)$", struct.group(1), re.M)
        self.assertGreater(len(fields), 5, fields)
        for name, comment in fields:
            self.assertRegex(comment, r"/\* \S.* \*/", f"sstpipe.h: {name} has no comment")
        with open(MAN3, encoding="utf-8") as f:
            man = f.read()
        at = man.index(".BR sstpipe_info_get ()\nfills a\n.B sstpipe_info\n")
        entries = man[at:man.index("\n.PP\n", at)]
        described = re.findall(r"^\.TP\n\.B (\w+)\n[^.\n]", entries, re.M)
        self.assertEqual(sorted(described), sorted(n for n, _ in fields))

    def test_man_page_sees_pages_and_says_how_to_find_the_library(self):
        """SEE ALSO names manual pages, no source path; sstpipe(3) and the
        README both say how a program finds libsstpipe.so.1 from a prefix."""
        with open(MAN3, encoding="utf-8") as f:
            man = f.read()
        see_also = man[man.index(".SH SEE ALSO"):]
        self.assertIn(".BR sstpipe (1)", see_also)
        self.assertNotIn("stages/", see_also)
        with open(README, encoding="utf-8") as f:
            readme = f.read()
        for text in (man, readme):
            for way in ("ldconfig", "rpath", "LD_LIBRARY_PATH", "libsstpipe.so.1: cannot open"):
                self.assertIn(way, text.replace("\\-", "-"))


if __name__ == "__main__":
    unittest.main()
