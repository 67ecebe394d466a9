"""test_titles_tables.py: the title index (FILE.titles) of every table that is
published, not only build's (issue 32), through the command line.

- merge: the output's index is merged from the inputs' (the later input's
  record of a title wins, as in the table), so it holds what the index of a
  build of the inputs' dumps concatenated holds, and names the output;
  titles are looked up as typed and suggested in the merged table.
- SIGTERM between the index's publish and the table's (held by the fault
  shim at the table's rename): the new index is taken back, the old table
  left without one, as for build (test_titles' Pair).
- An input without an index: the output gets none, and merge says so on
  stderr; an index left beside the output's path by an earlier table is
  removed with the table it was for, never left beside the new one.
- get of several keys, or keys from stdin ("-"), follows titles as get of
  one does (typed titles, redirects, named in the JSON line by
  "redirect_from" and "redirect_to"); --raw keeps the exact keys' records;
  serve's POST /v1/get_many answers the same items.
- A table set whose shards each have their title index (tests/make_tableset.c
  --titles, as a sharded build's): get, get of several keys, suggest and
  serve's /v1/suggest answer as on the one table, a redirect followed
  across shards and suggestions of every shard ranked as one; a shard
  without its index: the set answers exact keys alone.
- write (the stage pipeline, which has no dump's rules) publishes its table
  without an index, and removes one left there by an earlier build.
- An index in layout 1, as main 341be5e wrote them (title_rules.h; remade
  at test time by tests/make_old_titles.c from one in the current layout):
  get, suggest (titles of one fold ranked in title order as before) and
  verify answer as with the current layout, on a table and on a set's
  shards; merge reads it into an output index in the current layout.
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

from sstpipe_e2e import E2ETest, _page, env_path, run, sstpipe, sstpipe_bin  # noqa: E402
from serve_client import Server  # noqa: E402
from test_titles import dump_xml  # noqa: E402

OLD = [_page("Abc", ["x"]), _page("R", ["#REDIRECT [[Abc]]"]), _page("Zeta", ["z"])]
# Overrides R (now an article) and adds a redirect to Zeta.
NEW = [_page("R", ["now an article"]), _page("Ålesund", ["#REDIRECT [[zeta]]"])]


def index_records(t):
    """The title index's records: the rules record's lines but its first
    (the table it names), then the page records."""
    recs = [json.loads(line) for line in
            sstpipe("dump", t + ".titles", "--jsonl").stdout.decode().splitlines()]
    rules = recs[0]["value"].split("\n")
    return rules[1:], recs[1:]


class Merge(E2ETest):
    def dump(self, name, pages):
        return self.write_file(name + ".xml", dump_xml(pages).encode())

    def built(self, name, pages):
        t = self.path(name + ".sst")
        self.build(self.dump(name, pages), t, "-q")
        return t

    def test_merged_index_is_the_concatenated_build_s(self):
        a, b = self.built("a", OLD), self.built("b", NEW)
        both = self.built("both", OLD + NEW)
        out = self.path("m.sst")
        r = sstpipe("merge", "-o", out, a, b)
        self.assertOk(r)
        self.assertEqual(r.stderr, b"")
        self.assertEqual(index_records(out), index_records(both))
        self.assertOk(sstpipe("verify", out + ".titles"))
        # It names the merged table: typed titles and redirects work there.
        r = sstpipe("get", out, "alesund")
        self.assertEqual(r.code, 3, r.describe())
        r = sstpipe("get", out, "Ålesund")
        self.assertOk(r)
        self.assertEqual(r.stdout, b"z\n")
        self.assertIn(b"redirects to Zeta", r.stderr)
        r = sstpipe("get", out, "r")
        self.assertOk(r)
        self.assertEqual(r.stdout, b"now an article\n")
        r = sstpipe("suggest", out, "ale")
        self.assertOk(r)
        self.assertEqual(r.stdout, "Ålesund\t(a redirect)\n".encode())

    def test_sigterm_between_the_publishes(self):
        a, b = self.built("a", OLD), self.built("b", NEW)
        out_dir, copy = self.path("out"), self.path("copy")
        os.mkdir(out_dir)
        os.mkdir(copy)
        t = os.path.join(out_dir, "t.sst")
        for d in (out_dir, copy):
            self.build(self.dump("c", [_page("Omega", ["o"])]), os.path.join(d, "t.sst"), "-q")
        argv = [sstpipe_bin(), "merge", "-o", t, a, b]
        traced = faultlib.run(argv[:3] + [os.path.join(copy, "t.sst"), a, b], fault_dir=copy,
                              trace=True)
        self.assertEqual(traced.code, 0, traced.describe())
        renames = [(op, n) for op, n, path in traced.calls
                   if op.startswith("rename") and os.path.basename(path).startswith("t.sst.tmp.")]
        self.assertEqual(len(renames), 1, f"the table's renames: {traced.calls}")
        old_table = faultlib.sha(t)
        proc = []
        with faultlib.Held("%s:%d" % renames[0], out_dir,
                           lambda path: os.kill(proc[0].pid, signal.SIGTERM)) as held:
            proc.append(subprocess.Popen(argv, env=held.env, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE))
            _, err = proc[0].communicate(timeout=faultlib.PATIENCE)
        self.assertEqual(proc[0].returncode, 128 + signal.SIGTERM, err)
        self.assertEqual(faultlib.sha(t), old_table)
        self.assertEqual(os.listdir(out_dir), ["t.sst"])
        self.assertEqual(sstpipe("get", t, "Omega").stdout, b"o\n")

    def test_input_without_index(self):
        """The output gets none, with a note; the index the output's path
        had (built for the table merged over) is gone, not left beside a
        table it was not built for."""
        a, b = self.built("a", OLD), self.built("b", NEW)
        os.unlink(b + ".titles")
        out = self.built("out", OLD)
        r = sstpipe("merge", "-o", out, a, b)
        self.assertOk(r)
        self.assertIn(("sstpipe merge: note: %s has no title index built for it" % b).encode(),
                      r.stderr)
        self.assertFalse(os.path.exists(out + ".titles"))
        r = sstpipe("suggest", out, "ab")
        self.assertEqual(r.code, 1, r.describe())
        self.assertIn(b"no title index", r.stderr)
        # An index built for another table is none either.
        os.rename(self.built("c", OLD) + ".titles", b + ".titles")
        r = sstpipe("merge", "-o", out, a, b)
        self.assertOk(r)
        self.assertIn(b"note: ", r.stderr)
        self.assertFalse(os.path.exists(out + ".titles"))

    def test_merge_over_a_built_table(self):
        """T built, then something else merged into T's name: T.titles is
        the merged table's."""
        t = self.built("t", OLD)
        b = self.built("b", NEW)
        c = self.built("c", [_page("Omega", ["o"])])
        r = sstpipe("merge", "-o", t, b, c)
        self.assertOk(r)
        self.assertOk(sstpipe("verify", t + ".titles"))
        self.assertEqual(index_records(t), index_records(self.built("bc", NEW + [_page(
            "Omega", ["o"])])))
        self.assertEqual(sstpipe("get", t, "omega").stdout, b"o\n")


class GetMany(E2ETest):
    WANT = [{"key": "abc", "value": "x"},
            {"key": "R", "value": "x", "redirect_from": "R", "redirect_to": "Abc"},
            {"key": "nope", "value": None},
            {"key": "Zeta", "value": "z"},
            {"key": "dangling", "value": None, "redirect_from": "Dangling",
             "redirect_to": "Nowhere"}]

    RAW = [{"key": "abc", "value": None}, {"key": "R", "value": "#REDIRECT [[Abc]]"},
           {"key": "nope", "value": None}, {"key": "Zeta", "value": "z"},
           {"key": "dangling", "value": None}]

    def setUp(self):
        super().setUp()
        pages = OLD + [_page("Dangling", ["#REDIRECT [[Nowhere]]"])]
        self.t = self.path("t.sst")
        self.build(self.write_file("d.xml", dump_xml(pages).encode()), self.t, "-q")
        self.keys = [w["key"] for w in self.WANT]

    def lines(self, r):
        self.assertEqual(r.code, 3, r.describe())
        return [json.loads(line) for line in r.stdout.decode().splitlines()]

    def test_cli(self):
        self.assertEqual(self.lines(sstpipe("get", self.t, *self.keys)), self.WANT)
        stdin = ("\n".join(self.keys) + "\n").encode()
        self.assertEqual(self.lines(sstpipe("get", self.t, "-", input_bytes=stdin)), self.WANT)
        self.assertEqual(self.lines(sstpipe("get", "--raw", self.t, *self.keys)), self.RAW)

    def test_serve(self):
        server = Server(self.t)
        server.start(self.path("serve.err"))
        self.addCleanup(server.stop)
        c = server.client()
        self.addCleanup(c.close)
        st, _, body = c.request("/v1/get_many", method="POST",
                                body=json.dumps(self.keys).encode(),
                                headers={"Content-Type": "application/json"})
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body), self.WANT)
        st, _, body = c.request("/v1/get_many?raw=1", method="POST",
                                body=json.dumps(self.keys).encode(),
                                headers={"Content-Type": "application/json"})
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body), self.RAW)


class Sets(E2ETest):
    PAGES = OLD + [_page("Mid", ["m"]), _page("Ålesund", ["#REDIRECT [[zeta]]"]),
                   _page("Alpha", ["#REDIRECT [[Zeta]]"]), _page("Ab", ["#REDIRECT [[Abc]]"])]

    def setUp(self):
        super().setUp()
        self.t = self.path("t.sst")
        self.build(self.write_file("d.xml", dump_xml(self.PAGES).encode()), self.t, "-q")
        self.set = self.path("set")
        # Shard 0 below "M", shard 1 from it: R redirects across them.
        r = run([env_path("MAKE_TABLESET"), "--titles", self.t, self.set, b"M".hex()])
        self.assertOk(r)
        self.assertEqual(sorted(os.listdir(self.set)),
                         ["shard-0000.sst", "shard-0000.sst.titles", "shard-0001.sst",
                          "shard-0001.sst.titles", "tableset.json"])

    def same(self, *args):
        a, b = sstpipe(*args[:1], self.t, *args[1:]), sstpipe(*args[:1], self.set, *args[1:])
        self.assertEqual((b.code, b.stdout, b.stderr.replace(self.set.encode(), b"T")),
                         (a.code, a.stdout, a.stderr.replace(self.t.encode(), b"T")), args)
        return b

    def test_as_the_table(self):
        self.assertEqual(self.same("get", "r").stdout, b"x\n")
        self.assertIn(b"R redirects to Abc", self.same("get", "r").stderr)
        self.same("get", "ålesund")
        self.same("get", "--raw", "R")
        self.same("get", "abz")
        self.same("get", "abc", "r", "mid", "Ålesund", "nope")
        self.assertEqual(self.same("suggest", "a").stdout.decode().splitlines(),
                         ["Abc", "Ab\t(a redirect)", "Alpha\t(a redirect)",
                          "Ålesund\t(a redirect)"])
        self.same("suggest", "al", "--limit", "1")
        self.same("suggest", "m")
        server = Server(self.set)
        server.start(self.path("serve.err"))
        self.addCleanup(server.stop)
        c = server.client()
        self.addCleanup(c.close)
        st, _, body = c.request("/v1/suggest?q=A&limit=3")
        self.assertEqual((st, json.loads(body)["suggestions"]),
                         (200, [{"title": "Abc", "redirect": False},
                                {"title": "Ab", "redirect": True},
                                {"title": "Alpha", "redirect": True}]))
        st, h, body = c.request("/v1/get?key=r")
        self.assertEqual((st, h.get("x-sstpipe-redirect-to"), body), (200, "Abc", b"x"))

    def test_a_shard_without_its_index(self):
        os.unlink(os.path.join(self.set, "shard-0001.sst.titles"))
        self.assertEqual(sstpipe("get", self.set, "abc").code, 3)
        r = sstpipe("get", self.set, "R")
        self.assertOk(r)
        self.assertEqual(r.stdout, b"#REDIRECT [[Abc]]\n")
        r = sstpipe("suggest", self.set, "a")
        self.assertEqual(r.code, 1, r.describe())
        self.assertIn(b"has no title index", r.stderr)


def make_old_titles(t):
    """Rewrites t's title index in layout 1."""
    r = run([env_path("MAKE_OLD_TITLES"), t])
    if r.code != 0:
        raise AssertionError(r.describe())


class OldLayout(E2ETest):
    # ABc, AbC and Abc fold alike: layout 2's keys sort them otherwise.
    PAGES = Sets.PAGES + [_page("ABc", ["t"]), _page("AbC", ["u"])]
    ARGS = [("get", "r"), ("get", "ålesund"), ("get", "abz"), ("get", "ABC"),
            ("get", "abc", "r", "mid", "Ålesund", "nope"), ("suggest", "a"), ("suggest", "ab"),
            ("suggest", "al", "--limit", "1"), ("suggest", "abc", "--limit", "2")]

    def setUp(self):
        super().setUp()
        xml = self.write_file("d.xml", dump_xml(self.PAGES).encode())
        self.new, self.old = self.path("new.sst"), self.path("old.sst")
        self.build(xml, self.new, "-q")
        self.build(xml, self.old, "-q")
        make_old_titles(self.old)

    def answers(self, t):
        out = []
        for args in self.ARGS:
            r = sstpipe(*args[:1], t, *args[1:])
            out.append((args, r.code, r.stdout, r.stderr.replace(t.encode(), b"T")))
        return out

    def test_reads_as_the_current_layout(self):
        old_rules, old_recs = index_records(self.old)
        new_rules, new_recs = index_records(self.new)
        self.assertNotIn("layout=", old_rules)
        self.assertIn("layout=4", new_rules)
        self.assertIn({"key": "abc\u0000ABc", "value": "a"}, old_recs)
        # A redirect's target: in an old index's record, in the table's
        # text alone in the current layout.
        self.assertIn({"key": "r\u0000R", "value": "rAbc"}, old_recs)
        self.assertIn({"key": "r\u0000\u0001\u0001", "value": "r"}, new_recs)
        self.assertNotEqual(old_recs, new_recs)
        self.assertEqual(self.answers(self.old), self.answers(self.new))
        self.assertEqual(sstpipe("suggest", self.old, "ab").stdout.decode().splitlines(),
                         ["Ab\t(a redirect)", "ABc", "AbC", "Abc"])
        self.assertOk(sstpipe("verify", self.old + ".titles"))

    def test_merged_into_the_current_layout(self):
        a, b = self.path("a.sst"), self.path("b.sst")
        self.build(self.write_file("a.xml", dump_xml(OLD).encode()), a, "-q")
        self.build(self.write_file("b.xml", dump_xml(NEW).encode()), b, "-q")
        both = self.path("both.sst")
        self.build(self.write_file("both.xml", dump_xml(OLD + NEW).encode()), both, "-q")
        make_old_titles(a)
        out = self.path("m.sst")
        self.assertOk(sstpipe("merge", "-o", out, a, b))
        self.assertEqual(index_records(out), index_records(both))

    def test_a_set_of_old_indexes(self):
        s = self.path("set")
        self.assertOk(run([env_path("MAKE_TABLESET"), "--titles", self.new, s, b"M".hex()]))
        for shard in ("shard-0000.sst", "shard-0001.sst"):
            make_old_titles(os.path.join(s, shard))
        self.assertEqual(self.answers(s), self.answers(self.new))


class Write(E2ETest):
    def test_write_removes_a_stale_index(self):
        xml = self.write_file("d.xml", dump_xml([_page("Abc", ["x"])]).encode())
        t = self.path("t.sst")
        self.build(xml, t, "-q")
        self.assertTrue(os.path.exists(t + ".titles"))
        stream = self.path("s.rec")
        self.assertOk(sstpipe("extract", xml, "-o", stream))
        cut = self.path("cut.rec")
        self.assertOk(sstpipe("truncate", stream, "-o", cut))
        sorted_stream = self.path("sorted.rec")
        self.assertOk(sstpipe("sort", cut, "-o", sorted_stream))
        self.assertOk(sstpipe("write", sorted_stream, "-o", t))
        self.assertEqual(sorted(os.listdir(self.tmp)), ["cut.rec", "d.xml", "s.rec", "sorted.rec", "t.sst"])
        self.assertEqual(sstpipe("get", t, "Abc").stdout, b"x\n")
        self.assertEqual(sstpipe("get", t, "abc").code, 3)


if __name__ == "__main__":
    unittest.main()
