"""test_titles.py: titles as people type them, redirects followed, and
suggestions (issue 32), through the command line.

- build writes a title index beside the table, FILE.titles, an ordinary
  table (verify reads it) whose first record is the dump's title rules
  (<siteinfo>'s <case> and namespaces) and whose others are keyed by the
  folded title, marking redirects with their normalised targets.
- `get` of one key: the exact key first, then the title as MediaWiki stores
  it; a redirect followed to its target's record, noted on stderr; --raw the
  record itself; a miss says "not found" with suggestions, and a redirect to
  a missing page says so.
- The rules are the dump's: a case-sensitive main namespace (Wiktionary's)
  never upper-cases, a first-letter one does, namespace prefixes are
  recognised in any case with each namespace's own rule.
- `suggest` folds case and accents in Latin, Greek and Cyrillic and ranks the
  normalised match first, articles before redirects, shorter titles first.
- A table without a title index answers get exactly as before.
- The pair: the index records its table's identity (file size, footer
  checksum). A build killed (SIGKILL, held by the fault shim at the table's
  rename) between the two publishes leaves the new index beside the old
  table: every reader ignores it (get and suggest answer as without an
  index), verify of the index reports it, and the next build puts both right.
  SIGTERM there takes the new index back.
- serve: /v1/get follows a redirect and names it in X-Sstpipe-Redirect-From
  and -To (raw=1 the record itself), a redirect to a missing page is a 404
  saying so; /v1/suggest answers JSON, bad input (empty or over-long q, bad
  UTF-8, a limit out of range, an unknown parameter) a 400.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import signal
import subprocess
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import sha  # noqa: E402
from serve_client import Server  # noqa: E402
from sstpipe_e2e import E2ETest, _page, corpora_dir, sstpipe, sstpipe_bin  # noqa: E402

ENWIKI = os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2")
LTGWIKI = os.path.join(corpora_dir(), "ltgwiki-2004pages.xml")


def dump_xml(pages, case="first-letter", namespaces=None):
    """A dump with a <siteinfo> of the given rules; namespaces: [(key,
    case, name)]."""
    ns = namespaces if namespaces is not None else [(0, case, ""), (2, "first-letter", "User")]
    ns_xml = "".join(f'      <namespace key="{k}" case="{c}">{n}</namespace>\n' for k, c, n in ns)
    return ("<mediawiki>\n  <siteinfo>\n    <sitename>Test</sitename>\n"
            f"    <case>{case}</case>\n    <namespaces>\n{ns_xml}    </namespaces>\n"
            "  </siteinfo>\n" + "".join(pages) + "</mediawiki>\n")


class Corpus(E2ETest):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.dir = tempfile.mkdtemp(prefix="sstpipe-titles-")
        cls.en = os.path.join(cls.dir, "en.sst")
        r = sstpipe("build", ENWIKI, "-o", cls.en, "-q")
        assert r.code == 0, r.describe()

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.dir, True)

    def get(self, *args):
        return sstpipe("get", self.en, *args)

    def text_of(self, title):
        r = self.get("--raw", "--", title)
        self.assertOk(r)
        return r.stdout

    def test_title_index_is_a_table(self):
        titles = self.en + ".titles"
        self.assertOk(sstpipe("verify", titles))
        recs = [line for line in sstpipe("dump", titles).stdout.decode().splitlines()]
        # The table it was built for, then the rules.
        size = os.path.getsize(self.en)
        self.assertRegex(recs[0], '^{"key": "\\\\u0000", "value": "table=%d [0-9a-f]{16}\\\\n'
                         'case=first-letter\\\\n' % size)
        self.assertIn("ns=2 first-letter User\\n", recs[0])
        self.assertIn("\\nlayout=4\\n", recs[0])
        # Layout 2: the title as its fold's letters upper-cased, at 0 and 5.
        # Layout 4: a page's value its kind alone, a redirect's target being
        # in its text in the table.
        self.assertIn('{"key": "abacus\\u0000\\u0001\\u0001\\u0005", "value": "r"}', recs)
        self.assertIn('{"key": "assistivetechnology\\u0000\\u0001\\u0001\\t", '
                      '"value": "r"}', recs)
        pages = [r for r in map(json.loads, recs) if "\0" in r["key"] and r["key"] != "\0"]
        self.assertGreater(len(pages), 100)
        self.assertEqual({p["value"] for p in pages}, {"a", "r"})

    def test_damaged_index_block(self):
        """A suggestion reads the index's blocks in place through the
        mapping: each is checked in full on its first use, so a byte changed
        is an error naming the block, never a wrong title."""
        t = self.path("damaged.sst")
        self.build(LTGWIKI, t, "-q")
        with open(t + ".titles", "r+b") as f:
            data = f.read()
            at = data.index("Zušupeite".encode())  # in the last data block
            f.seek(at)
            f.write(b"z")
        r = sstpipe("suggest", t, "zu")
        self.assertEqual(r.code, 1, r.describe())
        self.assertRegex(r.stderr, rb"block \d+ at byte \d+: block checksum mismatch")

    def test_typed_titles(self):
        anarchism = self.text_of("Anarchism")
        lincoln = self.text_of("Abraham Lincoln")
        for typed, want in (("anarchism", anarchism), ("Anarchism ", anarchism),
                            ("Abraham_Lincoln", lincoln), ("abraham Lincoln", lincoln),
                            ("  abraham__Lincoln_", lincoln)):
            r = self.get(typed)
            self.assertOk(r)
            self.assertEqual(r.stdout, want, typed)
            self.assertEqual(r.stderr, b"", typed)

    def test_redirects_followed(self):
        for typed, target in (("AbacuS", "Abacus"),
                              ("AssistiveTechnology", "Assistive technology"),
                              ("abacuS", "Abacus")):
            r = self.get(typed)
            self.assertOk(r)
            self.assertEqual(r.stdout, self.text_of(target), typed)
            self.assertIn(f"redirects to {target}".encode(), r.stderr, typed)
        raw = self.get("--raw", "AbacuS")
        self.assertOk(raw)
        self.assertTrue(raw.stdout.startswith(b"#REDIRECT [[Abacus]]"), raw.stdout)
        self.assertEqual(raw.stderr, b"")

    def test_miss_suggests(self):
        r = self.get("abacu")
        self.assertEqual(r.code, 3, r.describe())
        self.assertEqual(r.stdout, b"")
        self.assertEqual(r.stderr.decode(),
                         "sstpipe: not found: abacu\ndid you mean:\n  Abacus\n"
                         "  AbacuS (a redirect)\n")

    def test_suggest(self):
        r = sstpipe("suggest", self.en, "anarch")
        self.assertOk(r)
        lines = r.stdout.decode().splitlines()
        self.assertEqual(lines[0], "Anarchism")
        self.assertTrue(all(l.endswith("\t(a redirect)") for l in lines[1:]), lines)
        r = sstpipe("suggest", self.en, "a", "--limit", "3")
        self.assertOk(r)
        self.assertEqual(r.stdout.decode().splitlines(), ["A", "Ada", "Art"])
        self.assertEqual(sstpipe("suggest", self.en, "zzzzq").code, 3)
        for bad in (("",), ("a", "--limit", "0"), ("a", "--limit", "101"), ("x" * 321,)):
            r = sstpipe("suggest", self.en, *bad)
            self.assertEqual(r.code, 2, r.describe())

    def test_ltgwiki_accents(self):
        ltg = self.path("ltg.sst")
        self.build(LTGWIKI, ltg, "-q")
        r = sstpipe("suggest", ltg, "adolfs")
        self.assertOk(r)
        self.assertIn("Adoļfs Hitlers", r.stdout.decode().splitlines())


    def test_serve_get_and_suggest(self):
        import json
        server = Server(self.en)
        server.start(self.path("serve.err"))
        self.addCleanup(server.stop)
        c = server.client()
        self.addCleanup(c.close)
        st, h, body = c.request("/v1/get?key=AbacuS")
        self.assertEqual((st, h.get("x-sstpipe-redirect-from"), h.get("x-sstpipe-redirect-to")),
                         (200, "AbacuS", "Abacus"))
        self.assertEqual(body + b"\n", self.text_of("Abacus"))
        st, h, body = c.request("/v1/get?key=AssistiveTechnology")
        self.assertEqual(h.get("x-sstpipe-redirect-to"), "Assistive%20technology")
        st, h, body = c.request("/v1/get?key=abraham_Lincoln")
        self.assertEqual((st, h.get("x-sstpipe-redirect-from")), (200, None))
        self.assertEqual(body + b"\n", self.text_of("Abraham Lincoln"))
        st, h, body = c.request("/v1/get?key=AbacuS&raw=1")
        self.assertEqual((st, h.get("x-sstpipe-redirect-from")), (200, None))
        self.assertTrue(body.startswith(b"#REDIRECT [[Abacus]]"), body)
        st, _, body = c.request("/v1/suggest?q=ANARCH&limit=2")
        self.assertEqual(st, 200)
        self.assertEqual(json.loads(body), {"query": "ANARCH", "suggestions": [
            {"title": "Anarchism", "redirect": False}, {"title": "AnarchY", "redirect": True}]})
        for bad in ("q=", "limit=3", "q=a&limit=0", "q=a&limit=101", "q=a&limit=x", "q=%FF",
                    "q=" + "x" * 321, "q=a&bogus=1"):
            st, _, body = c.request("/v1/suggest?" + bad)
            self.assertEqual(st, 400, (bad, body))


class Rules(E2ETest):
    def build_xml(self, name, xml):
        src = self.write_file(name + ".xml", xml.encode())
        out = self.path(name + ".sst")
        self.build(src, out, "-q")
        return out

    def test_case_sensitive_main_namespace(self):
        t = self.build_xml("wikt", dump_xml(
            [_page("aardvark", ["an animal"]), _page("Aardvark", ["a surname"]),
             _page("User:Ann", ["a user"]), _page("word", ["lower only"])],
            case="case-sensitive",
            namespaces=[(0, "case-sensitive", ""), (2, "first-letter", "User")]))
        for typed, want in (("aardvark", b"an animal\n"), ("Aardvark", b"a surname\n"),
                            ("user:ann", b"a user\n"), ("User_:_ann", b"a user\n"),
                            ("word_", b"lower only\n")):
            r = sstpipe("get", t, typed)
            self.assertOk(r)
            self.assertEqual(r.stdout, want, typed)
        # Never upper-cased in a case-sensitive namespace.
        self.assertEqual(sstpipe("get", t, "Word").code, 3)

    def test_compressed_table_small_blocks(self):
        """A table in format version 2 with blocks that just hold its own
        records still gets its title index (compressed as the table is, so
        that it stays a small part of it, its block size chosen to hold the
        index's longer records)."""
        src = self.write_file("z.xml", dump_xml(
            [_page("Ångström", ["unit"]), _page("Angstrom", ["#REDIRECT [[Ångström]]"])]).encode())
        t = self.path("z.sst")
        self.build(src, t, "-q", "--block-size", "1K", "--cluster-size", "512", "--max-bytes",
                   "250", "--set", "sst.compression=zstd", "--set", "sst.dictionary_size=0")
        r = sstpipe("get", t, "angstrom")
        self.assertOk(r)
        self.assertEqual(r.stdout, b"unit\n")
        r = sstpipe("suggest", t, "angs")
        self.assertOk(r)
        self.assertIn(b"\xc3\x85ngstr\xc3\xb6m", r.stdout)
        r = sstpipe("info", t + ".titles")
        self.assertOk(r)
        self.assertRegex(r.stdout, rb"format version: +2\n")
        self.assertOk(sstpipe("verify", t + ".titles"))

    def test_compressed_index_trains_on_its_titles(self):
        """A compressed index's dictionary is trained on its keys, the
        titles, since its values are a byte each: most of what its groups
        of a few short records compress by."""
        t = self.path("ltg.sst")
        self.build(LTGWIKI, t, "-q", "--set", "sst.compression=zstd")
        r = sstpipe("info", t + ".titles")
        self.assertOk(r)
        self.assertRegex(r.stdout, rb"\ndictionary: +[1-9][0-9]* bytes\n")
        self.assertOk(sstpipe("verify", t + ".titles"))
        self.assertIn("Adoļfs Hitlers".encode(), sstpipe("suggest", t, "adolfs").stdout)

    def test_first_letter_unicode(self):
        t = self.build_xml("wiki", dump_xml(
            [_page("Ångström", ["unit"]), _page("Émile", ["name"]), _page("Ελλάδα", ["Greece"]),
             _page("Москва", ["Moscow"]), _page("Ёлка", ["tree"]),
             _page("Angstrom", ["#REDIRECT [[ångström#History]]"]),
             _page("Loop", ["#REDIRECT [[Loop2]]"]), _page("Loop2", ["#REDIRECT [[loop]]"]),
             _page("Gone", ["#REDIRECT [[Nowhere]]"]), _page("Talk:Aardvark", ["talk"])],
            namespaces=[(0, "first-letter", ""), (1, "first-letter", "Talk")]))
        for typed, want in (("ångström", b"unit\n"), ("émile", b"name\n"),
                            ("ελλάδα", b"Greece\n"), ("москва", b"Moscow\n"),
                            ("talk:aardvark", b"talk\n"), ("Angstrom", b"unit\n")):
            r = sstpipe("get", t, typed)
            self.assertOk(r)
            self.assertEqual(r.stdout, want, typed)
        r = sstpipe("get", t, "Gone")
        self.assertEqual(r.code, 3)
        self.assertEqual(r.stderr.decode().splitlines()[0],
                         "sstpipe: not found: Gone redirects to Nowhere, which is not in the table")
        # A loop stops at the redirect that closes it.
        r = sstpipe("get", t, "Loop")
        self.assertOk(r)
        self.assertEqual(r.stdout, b"#REDIRECT [[loop]]\n")
        for typed, want in (("angst", "Ångström"), ("ANGSTRÖM", "Ångström"),
                            ("ελλαδα", "Ελλάδα"), ("ΕΛΛΆΔΑ", "Ελλάδα"), ("моск", "Москва"),
                            ("елка", "Ёлка"), ("emile", "Émile")):
            r = sstpipe("suggest", t, typed)
            self.assertOk(r)
            self.assertEqual(r.stdout.decode().splitlines()[0], want, typed)
        # The title the text would be looked up as first (here a redirect),
        # else articles before redirects.
        r = sstpipe("suggest", t, "angstrom")
        self.assertEqual(r.stdout.decode().splitlines(), ["Angstrom\t(a redirect)", "Ångström"])
        r = sstpipe("suggest", t, "ångström")
        self.assertEqual(r.stdout.decode().splitlines(), ["Ångström", "Angstrom\t(a redirect)"])
        r = sstpipe("suggest", t, "an")
        self.assertEqual(r.stdout.decode().splitlines(), ["Ångström", "Angstrom\t(a redirect)"])

    def test_no_title_index_works_as_before(self):
        t = self.build_xml("old", dump_xml([_page("Abc", ["x"]), _page("R", ["#REDIRECT [[Abc]]"])]))
        os.unlink(t + ".titles")
        self.assertEqual(sstpipe("get", t, "abc").code, 3)
        r = sstpipe("get", t, "R")
        self.assertOk(r)
        self.assertEqual(r.stdout, b"#REDIRECT [[Abc]]\n")
        r = sstpipe("suggest", t, "ab")
        self.assertEqual(r.code, 1)
        self.assertIn(b"no title index", r.stderr)



class Pair(E2ETest):
    def build_xml(self, name, xml):
        return self.write_file(name + ".xml", xml.encode())

    def held_build(self, sig):
        """The old dump's table built into out/t.sst, then the new dump's
        build sent sig while its table's rename is held (its index already
        in place). Returns the table's path, the old table's and index's
        sha and the build's exit code and stderr."""
        old = self.build_xml("old", dump_xml([_page("Abc", ["x"]), _page("R", ["#REDIRECT [[Abc]]"])]))
        self.new = self.build_xml(
            "new", dump_xml([_page("Xyz", ["y"]), _page("Q", ["#REDIRECT [[Xyz]]"])]))
        self.out_dir = self.path("out")
        os.mkdir(self.out_dir)
        t = os.path.join(self.out_dir, "t.sst")
        argv = [sstpipe_bin(), "build", self.new, "-o", t, "-q"]
        # The table's rename, counted on a build of the same over the same
        # earlier output in a copy (the index replaces its earlier one by
        # an exchange, a call of its own).
        copy = self.path("copy")
        os.mkdir(copy)
        self.build(old, os.path.join(copy, "t.sst"), "-q")
        traced = faultlib.run(argv[:4] + [os.path.join(copy, "t.sst"), "-q"], fault_dir=copy,
                              trace=True)
        self.assertEqual(traced.code, 0, traced.describe())
        renames = [(op, n) for op, n, path in traced.calls
                   if op.startswith("rename") and os.path.basename(path).startswith("t.sst.tmp.")]
        self.assertEqual(len(renames), 1, f"the table's renames: {traced.calls}")
        self.build(old, t, "-q")
        old_table, old_index = sha(t), sha(t + ".titles")
        self.assertOk(sstpipe("get", t, "abc"))
        proc = []
        with faultlib.Held("%s:%d" % renames[0], self.out_dir,
                           lambda path: os.kill(proc[0].pid, sig)) as held:
            proc.append(subprocess.Popen(argv, env=held.env, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE))
            _, err = proc[0].communicate(timeout=faultlib.PATIENCE)
        self.assertTrue(os.path.basename(held.path).startswith("t.sst.tmp."), held.path)
        self.assertEqual(sha(t), old_table, "the old table was replaced")
        return t, old_index, proc[0].returncode, err.decode(errors="replace")

    def test_sigterm_between_the_publishes(self):
        """SIGTERM there: the handler takes the new index back with the
        table's temporary; the old table is left, with no index."""
        t, _, code, err = self.held_build(signal.SIGTERM)
        self.assertEqual(code, 128 + signal.SIGTERM, err)
        self.assertEqual(os.listdir(self.out_dir), ["t.sst"])
        r = sstpipe("get", t, "Abc")
        self.assertOk(r)
        self.assertEqual(r.stdout, b"x\n")

    def test_kill_between_the_publishes(self):
        """SIGKILL there: the old table reads as before, with the new index
        beside it ignored; verify names the index; the next build mends the
        pair."""
        t, old_index, code, err = self.held_build(signal.SIGKILL)
        self.assertEqual(code, -signal.SIGKILL, err)
        self.assertNotEqual(sha(t + ".titles"), old_index, "the new index was not published")
        # The old table's exact keys, as a table without an index answers.
        r = sstpipe("get", t, "Abc")
        self.assertOk(r)
        self.assertEqual(r.stdout, b"x\n")
        r = sstpipe("get", t, "R")
        self.assertOk(r)
        self.assertEqual(r.stdout, b"#REDIRECT [[Abc]]\n")
        r = sstpipe("get", t, "abc")
        self.assertEqual(r.code, 3, r.describe())
        self.assertEqual(sstpipe("get", t, "Xyz").code, 3)
        r = sstpipe("suggest", t, "ab")
        self.assertEqual(r.code, 1, r.describe())
        self.assertIn(b"no title index", r.stderr)
        self.assertOk(sstpipe("verify", t))
        r = sstpipe("verify", t + ".titles")
        self.assertEqual(r.code, 3, r.describe())
        self.assertIn("title index built for another table than " + t,
                      r.stdout.decode() + r.stderr.decode())
        # The next build mends the pair (the killed one's named temporary,
        # which no build sweeps, aside).
        self.build(self.new, t, "-q")
        self.assertEqual(sorted(n for n in os.listdir(self.out_dir) if ".tmp." not in n),
                         ["t.sst", "t.sst.titles"])
        self.assertOk(sstpipe("verify", t + ".titles"))
        r = sstpipe("get", t, "xyz")
        self.assertOk(r)
        self.assertEqual(r.stdout, b"y\n")


if __name__ == "__main__":
    unittest.main()
