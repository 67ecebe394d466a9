"""test_parallel_parse.py: the parse on several threads ([build] threads,
[build] chunk_size) gives what the single-threaded parse gives.

For every corpus, the edge-case dump and generated dumps of both page-size
profiles, in one form of each way bytes reach the parse pool, the table (build) and the record stream
(extract, no value cap) are byte for byte the ones of `build.threads=1`, at
2 and 8 threads and chunk sizes from 4K (a cut every few pages) up to the
default; chunks cut at guessed page start tags (every input but multistream
bz2), among them guesses that are no cut points, give the same. Bad inputs (cut short, malformed in a later chunk, a page too big
for a chunk, markup the cutter does not follow, a byte not UTF-8 in a CDATA
section, open or closed, damaged compressed data)
fail with the same exit code and the same message (line, offset) as with
one thread. [sort] threads, the old name of [build] threads, is refused
with the new name offered. Each parsing thread sorts
its records into runs under its share of the budget (sorter.h): with a
small budget and many repeated titles the table and the sort's counts are
still one thread's, and peak RSS stays within the budget plus a fixed
amount per thread. The default thread count is every core the process may
run on (as many threads in /proc/PID/task while it parses as with that
many set; with one core allowed, as with one).

It is one of the suite's longest tests: every input, of
which a difference may show in any one (each corpus in every pool form,
generated dumps, each bad input and each cut that is no cut point), is
built and extracted at every setting. The one-thread reference is made
once for each XML: the forms of a dump, and the stream cuts of one, hold
the same XML, which one thread builds into the same table (test_roundtrip
checks every form), so they share it; a bad input's reference is its own,
its error naming where it failed. The sanitized pass compares the
reference with one setting only (SETTINGS).
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import array
import fcntl
import hashlib
import os
import subprocess
import tempfile
import termios
import time
import unittest

from sstpipe_e2e import (FORMS, SANITIZED, E2ETest, every_form_of, generate, parse_stats, run,
                         sources, sstpipe, sstpipe_bin, to_bz2, to_bz2_multistream, to_gz, to_zst,
                         wikigen)

# (threads, chunk size); the first is the reference. The plain suite
# compares each thread count and each chunk size against it: the most
# threads with the smallest chunks (a cut every few pages, each thread
# taking many), and the fewest with larger ones. In a sanitized build the
# one-thread reference and the setting with the most chunks and the most
# threads: the sanitizers look for memory errors on the paths a chunk takes,
# which every setting takes, and 4K chunks cut most often.
SETTINGS = ([("1", "1M"), ("8", "4K")] if SANITIZED else
            [("1", "1M"), ("8", "4K"), ("2", "64K")])


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def knobs(threads, chunk):
    return ["--set", f"build.threads={threads}", "--set", f"build.chunk_size={chunk}"]


class SameOutputsTest(E2ETest):
    """What every test here compares: each setting against the first."""

    def outputs(self, src, settings=SETTINGS, extract=True):
        """{setting: (build result, table sha or None, extract result)}."""
        got = {}
        for threads, chunk in settings:
            out = self.path(f"t{threads}-{chunk}.sst")
            b = sstpipe("build", src, "-o", out, *knobs(threads, chunk))
            table = sha256(out) if b.code == 0 else None
            e = sstpipe("extract", src, *knobs(threads, chunk)) if extract else None
            got[(threads, chunk)] = (b, table, e)
        return got

    def reference(self, src, extract=True):
        """The first setting's outputs of src: (build result, table sha,
        extract result)."""
        return self.outputs(src, SETTINGS[:1], extract)[SETTINGS[0]]

    def assertSameOutputs(self, src, what, settings=SETTINGS, extract=True, ref=None):
        """Each setting's outputs of src are the first's; with ref (that
        setting's outputs, from reference() of another form of the same
        dump, which builds the same table and extracts the same records)
        the others only are run."""
        got = self.outputs(src, settings if ref is None else settings[1:], extract)
        ref_b, ref_table, ref_e = got[settings[0]] if ref is None else ref
        for key, (b, table, e) in got.items():
            label = f"{what}, threads={key[0]} chunk_size={key[1]}"
            self.assertEqual((b.code, b.err_text), (ref_b.code, ref_b.err_text),
                             f"{label}: build differs from one thread" + b.describe())
            self.assertEqual(table, ref_table, f"{label}: table differs from one thread")
            if extract:
                self.assertEqual((e.code, e.err_text), (ref_e.code, ref_e.err_text),
                                 f"{label}: extract differs from one thread" + e.describe())
                self.assertTrue(e.stdout == ref_e.stdout,
                                f"{label}: extract's record stream differs from one thread")
        return ref_b


# One input form of each way its bytes reach the parse pool
# (stages/extract/source.c): our bz2 decoder, one stream and many, zlib, and
# libarchive (plain XML; xz and zst take the same path), plus UTF-16 for the
# parser's encoding switch. test_roundtrip.py builds every form.
POOL_FORMS = ("plain", "gz", "bz2", "bz2_multistream", "utf16")
# In a sanitized build only some dumps take every form (every_form_of) and
# each generated format is one profile's: the plain suite judges every
# combination.


class ParallelParseTest(SameOutputsTest):
    def test_corpora_and_edge_dump_every_form(self):
        # The one-thread reference once a dump, from its plain XML: every
        # form of a dump builds the same table (test_roundtrip.py), so each
        # form's settings are compared with it.
        for name, xml_of, _ in sources():
            xml = xml_of()
            ref = None
            for form in POOL_FORMS if every_form_of(name) else ("plain",):
                suffix, encode = FORMS[form]
                src = self.write_file(f"{name}-{form}{suffix}", encode(xml))
                if ref is None:
                    ref = self.reference(src)
                r = self.assertSameOutputs(src, f"{name} ({form})",
                                           extract=form in ("plain", "bz2_multistream"), ref=ref)
                self.assertEqual(r.code, 0, f"{name} ({form})" + r.describe())

    def test_generated_dumps_both_profiles(self):
        formats = (("xml", ".xml"), ("zst", ".xml.zst"), ("bz2", ".xml.bz2"),
                   ("bz2-multistream", ".xml.bz2"))
        # A profile's formats hold the same XML (wikigen writes the same
        # pages for a seed in each): its one-thread reference is made once.
        for i, profile in enumerate(("enwiki", "wiktionary")):
            ref = None
            for fmt, suffix in formats[i::2] if SANITIZED else formats:
                src = wikigen(self.path(f"{profile}-{fmt}{suffix}"), "3M", "5", fmt, profile)
                if ref is None:
                    ref = self.reference(src, extract=fmt == "xml")
                r = self.assertSameOutputs(src, f"{profile} {fmt}", extract=fmt == "xml", ref=ref)
                self.assertEqual(r.code, 0, r.describe())

    def test_chunk_size_is_honoured(self):
        # A plain file reads 1 MiB at a time; chunks must still be about
        # chunk_size, or the small settings above would test 1 MiB chunks.
        src = wikigen(self.path("c.xml"), "3M", "7", "xml", "wiktionary")
        for threads, chunk in (("2", 4096), ("8", 65536)):
            r = sstpipe("build", src, "-o", self.path("c.sst"), "-v", *knobs(threads, chunk))
            self.assertOk(r)
            xml = parse_stats(self, r.stderr, "extract")["xml_bytes"]
            chunks = parse_stats(self, r.stderr, "build")["parse_chunks"]
            # Pages are ~1.1 KB: a chunk ends within a page of chunk_size.
            self.assertGreaterEqual(chunks, xml // (chunk + 4096),
                                    f"threads={threads} chunk_size={chunk}: {chunks} chunks "
                                    f"for {xml} bytes")
            self.assertLessEqual(chunks, parse_stats(self, r.stderr, "extract")["pages"])

    def test_runs_built_on_every_thread(self):
        # 20% repeated titles, spread over chunks of different threads and
        # over runs (1 MiB budget: many runs a thread, chunks split by a
        # spill, several merge passes at fan-in 2): the later page wins.
        src = generate(self.path("dup.xml"), "--size", "6M", "--seed", "13", "--duplicates", "20",
                       "--profile", "wiktionary")
        ref = None
        for threads, chunk in (("1", "1M"), ("2", "4K"), ("3", "64K"), ("8", "4K")):
            for extra in ((), ("--fan-in", "2")):
                out = self.path("dup.sst")
                b = sstpipe("build", src, "-o", out, "--memory", "1M", "-v", *extra,
                            *knobs(threads, chunk))
                self.assertOk(b)
                so = parse_stats(self, b.stderr, "sort")
                got = (sha256(out), so["records_in"], so["records_out"],
                       so["duplicates_replaced"], parse_stats(self, b.stderr, "truncate"))
                label = f"threads={threads} chunk_size={chunk} {' '.join(extra)}"
                self.assertGreater(so["runs"], int(threads), label)
                if ref is None:
                    ref = got
                    self.assertGreater(so["duplicates_replaced"], 1000)
                self.assertEqual(got, ref, f"{label}: table or counts differ from one thread")

    @unittest.skipIf("ASAN_OPTIONS" in os.environ, "the binary under test is the sanitized one")
    def test_memory_is_the_budget_plus_a_fixed_amount_per_thread(self):
        # Per thread: its two read-ahead slots (each max(2 x chunk_size,
        # 1 MiB) of XML, parse_pool.h), its parser and stack; the sort's
        # parts share the budget (a part with a budget of its own would
        # add up to the budget a thread: test_sort_parts checks that).
        src = wikigen(self.path("m.xml"), "64M", "5", "xml", "wiktionary")
        budget = 8 << 20
        for threads in (1, 8, 2):
            b = sstpipe("build", src, "-o", self.path("m.sst"), "--memory", "8M", "-v",
                        *knobs(threads, "64K"), measure_rss=True)
            self.assertOk(b)
            peak = b.maxrss_kib * 1024
            bound = budget + (20 << 20) + threads * (5 << 19)
            print(f"threads={threads}: peak RSS {peak / 2**20:.1f} MiB, bound "
                  f"{bound / 2**20:.1f} MiB")
            self.assertLessEqual(peak, bound, f"threads={threads}: peak RSS {peak} bytes")
            self.assertGreater(parse_stats(self, b.stderr, "sort")["runs"], threads)

    def test_threads_key_and_its_old_name(self):
        src = wikigen(self.path("k.xml"), "256K", "3", "xml", "wiktionary")
        cases = [((), None), (("--set", "build.threads=3"), 3), (("--set", "build.threads=2"), 2)]
        for args, want in cases:
            r = sstpipe("build", src, "-o", self.path("k.sst"), "-v", *args)
            self.assertOk(r)
            threads = parse_stats(self, r.stderr, "extract")["threads"]
            if want is None:
                self.assertGreaterEqual(threads, 1)
            else:
                self.assertEqual(threads, want, f"{args}: threads used")
        # The old name is refused, in a file (at its line) and by --set, the
        # new one offered, and nothing is built.
        ini = self.path("old.ini")
        with open(ini, "w") as f:
            f.write("[sort]\nmemory = 8M\nthreads = 5\n")
        for args, where in [(("-c", ini), f"{ini}:3: "), (("--set", "sort.threads=5"),
                                                          "--set sort.threads=5: ")]:
            out = self.path("old.sst")
            r = sstpipe("build", src, "-o", out, *args)
            self.assertEqual(r.code, 2, r.describe())
            self.assertEqual(r.stderr.decode().strip().count("\n"), 0, r.describe())
            self.assertIn(where + "unknown key [sort] threads (did you mean [build] threads?)",
                          r.stderr.decode())
            self.assertFalse(os.path.exists(out))

    def threads_while_parsing(self, xml, *args, cpus=None):
        """The threads of `build -` (its tasks in /proc/PID/task, the
        kernel's count, not the program's own) once it has parsed the first
        4 MiB of xml from a pipe and waits for more: the pipe empty and
        every thread asleep, for several polls in a row. By then the parse
        pool's workers are all started (parse_pool_run starts them before
        its first read), and they live until the input ends. cpus: the
        cores the process may run on (as taskset sets them)."""
        head = 4 << 20
        self.assertGreater(len(xml), head)
        with tempfile.TemporaryFile() as err:
            p = subprocess.Popen(
                [sstpipe_bin(), "build", "-", "-o", self.path("p.sst"), *args],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err,
                preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
            try:
                p.stdin.write(xml[:head])
                p.stdin.flush()
                steady, seen, deadline = 0, None, time.monotonic() + 60
                while steady < 5:
                    self.assertLess(time.monotonic(), deadline, f"{args}: never waited for input")
                    self.assertIsNone(p.poll(), f"{args}: exited before its input ended")
                    tasks = task_states(p.pid)
                    idle = (pipe_pending(p.stdin) == 0 and
                            all(state == "S" for state in tasks.values()))
                    steady = steady + 1 if idle and set(tasks) == seen else 0
                    seen = set(tasks)
                    time.sleep(0.01)
                p.stdin.write(xml[head:])
                p.stdin.close()
                code = p.wait(120)
            finally:
                p.kill()
                p.wait()
            err.seek(0)
            self.assertEqual(code, 0, f"{args}: {err.read().decode(errors='replace')}")
        return len(seen)

    def test_default_threads_are_every_usable_core(self):
        # threads = 0, the default, parses on every core the process may
        # run on: as many threads as an explicit build.threads of that many,
        # and with one core allowed, as many as build.threads=1.
        cores = len(os.sched_getaffinity(0))
        if cores < 2:
            self.skipTest("one usable core: the default and one thread are the same")
        with open(wikigen(self.path("d.xml"), "6M", "3", "xml", "wiktionary"), "rb") as f:
            xml = f.read()
        one = self.threads_while_parsing(xml, "--set", "build.threads=1")
        every = self.threads_while_parsing(xml, "--set", f"build.threads={cores}")
        default = self.threads_while_parsing(xml)
        print(f"threads while parsing: build.threads=1: {one}, ={cores}: {every}, "
              f"default: {default}")
        self.assertGreaterEqual(every - one, cores, "a parsing thread per core")
        self.assertEqual(default, every, f"the default parses on all {cores} usable cores")
        pinned = self.threads_while_parsing(xml, cpus={min(os.sched_getaffinity(0))})
        self.assertEqual(pinned, one, "the default, allowed one core, parses on one thread")


def task_states(pid):
    """{thread id: its state letter} of process pid, from /proc."""
    states = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                states[tid] = f.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:  # the thread ended meanwhile
            pass
    return states


def pipe_pending(pipe):
    """Bytes written to pipe that its reader has not read yet."""
    n = array.array("i", [0])
    fcntl.ioctl(pipe.fileno(), termios.FIONREAD, n)
    return n[0]


def streams(xml, cuts):
    """xml compressed as one bz2 stream per piece between the cuts."""
    import bz2
    bounds = [0] + sorted(cuts) + [len(xml)]
    return b"".join(bz2.compress(xml[a:b], 9) for a, b in zip(bounds, bounds[1:]))


class StreamCutsTest(SameOutputsTest):
    """Multistream bz2: chunks are cut at stream starts, which each chunk's
    worker checks; a stream start that is no cut point (inside a page, a
    tag, a comment holding a page, an entity or character reference, a
    UTF-8 character) must not change a byte of the outputs or errors."""

    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-e2e-streams-")
        path = wikigen(os.path.join(cls.classtmp, "base.xml"), "300K", "17", "xml", "wiktionary")
        with open(path, "rb") as f:
            x = f.read()
        # Text directly inside the root between two pages (legal, if not
        # what dumps hold): a comment holding a page, an entity reference
        # and a two-byte character, and a page of its own after them.
        mid = x.find(b"  <page>", len(x) // 2)
        extra = (b"  <!-- <page><title>Fake</title><ns>0</ns><revision><text>fake</text>"
                 b"</revision></page> -->\n  &amp; \xc3\xa9\n  <page><title>After</title><ns>0</ns>"
                 b"<revision><text>after</text></revision></page>\n")
        cls.xml = x[:mid] + extra + x[mid:]
        cls.mid = mid

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.classtmp, True)

    def page_cuts(self, spacing=9000):
        """Stream starts at page starts, at least spacing bytes apart."""
        cuts, at = [], 0
        while True:
            at = self.xml.find(b"  <page>", at + spacing)
            if at < 0:
                return cuts
            cuts.append(at)

    def with_bad_cut(self, bad):
        """The page cuts, one near bad replaced by bad."""
        cuts = [c for c in self.page_cuts() if abs(c - bad) > 9000]
        return cuts + [bad]

    def test_stream_starts_on_pages_are_cut_points(self):
        src = self.write_file("good.xml.bz2", streams(self.xml, self.page_cuts()))
        r = self.assertSameOutputs(src, "streams on pages")
        self.assertEqual(r.code, 0, r.describe())
        b = sstpipe("build", src, "-o", self.path("g.sst"), "-v", *knobs("2", "4K"))
        self.assertOk(b)
        st = parse_stats(self, b.stderr, "build")
        self.assertGreater(st["stream_cuts"], 20, "chunks are cut at stream starts")
        self.assertLessEqual(st["stream_cuts"], st["parse_chunks"])

    def test_stream_starts_that_are_no_cut_points(self):
        x, mid = self.xml, self.mid
        text = x.find(b"<text", mid + 20000)
        places = {
            "inside a page's text": x.find(b">", text) + 40,
            "inside a start tag": x.find(b"<title", mid + 30000) + 3,
            "inside an end tag": x.find(b"</page", mid + 40000) + 4,
            "inside a comment holding a page": x.find(b"<page><title>Fake", mid),
            "inside an entity reference": x.find(b"&amp;", mid) + 3,
            "inside a UTF-8 character": x.find(b"\xc3\xa9", mid) + 1,
            "inside the head": x.find(b"<mediawiki") + 5,
            "inside the root's end tag": x.rfind(b"</mediawiki>") + 5,
            "after the root's end": x.rfind(b"</mediawiki>") + len(b"</mediawiki>"),
            "before the root's end": x.rfind(b"</mediawiki>"),
        }
        # In a sanitized build each place is cut one way, taking turns, so
        # that each way meets half the places: the plain suite cuts each both.
        # Every cut holds the same XML, which one thread parses to the same
        # outputs wherever the streams start: the first cut's reference
        # serves them all.
        ref = None
        for i, (what, at) in enumerate(places.items()):
            self.assertGreater(at, 0, what)
            kinds = (("alone", [at]), ("among page cuts", self.with_bad_cut(at)))
            for cut_kind, cuts in kinds[i % 2:i % 2 + 1] if SANITIZED else kinds:
                src = self.write_file("bad.xml.bz2", streams(x, cuts))
                if ref is None:
                    ref = self.reference(src)
                r = self.assertSameOutputs(src, f"stream start {what} ({cut_kind})", ref=ref)
                self.assertEqual(r.code, 0, f"{what}: " + r.describe())
        # And bad XML behind such cuts fails as with one thread.
        bad = mutate_after(x, b"<page>", 0.8, b"</title>", b"</titel>")
        src = self.write_file("badxml.xml.bz2", streams(bad, self.with_bad_cut(
            bad.find(b"<page><title>Fake", mid))))
        r = self.assertSameOutputs(src, "tag mismatch after a stream start in a comment")
        self.assertNotEqual(r.code, 0, r.describe())


class GuessedCutsTest(SameOutputsTest):
    """Every input but multistream bz2: chunks are cut at the last page start
    tag of their bytes, found by a search back from the end and checked by
    the chunk's worker. A guess that is no cut point (a page start tag in a
    comment, a CDATA section or a processing instruction, long enough that
    chunks end inside it) must not change a byte of the outputs or errors."""

    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-e2e-guess-")
        path = wikigen(os.path.join(cls.classtmp, "base.xml"), "512K", "23", "xml", "wiktionary")
        with open(path, "rb") as f:
            cls.xml = f.read()

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.classtmp, True)

    def test_every_input_is_cut_by_guesses(self):
        for fmt, suffix in (("xml", ".xml"), ("zst", ".xml.zst"), ("bz2", ".xml.bz2"),
                            ("bz2-multistream", ".xml.bz2")):
            src = wikigen(self.path(f"g-{fmt}{suffix}"), "2M", "5", fmt, "wiktionary")
            b = sstpipe("build", src, "-o", self.path("g.sst"), "-v", *knobs("2", "4K"))
            self.assertOk(b)
            st = parse_stats(self, b.stderr, "build")
            if fmt == "bz2-multistream":
                self.assertGreater(st["stream_cuts"], 10, fmt)
            else:
                self.assertEqual(st["stream_cuts"], 0, fmt)
                self.assertGreater(st["guessed_cuts"], 200, f"{fmt}: chunks are cut at guesses")
            self.assertLessEqual(st["stream_cuts"] + st["guessed_cuts"], st["parse_chunks"])

    def fake_pages(self):
        """The dump with a page start tag in markup that is not a page,
        followed by 40 KB inside it, at a page boundary past the middle."""
        x = self.xml
        mid = x.find(b"  <page>", len(x) // 2)
        fill = b"filler <page> text\n" * 2000
        text = x.find(b"<text", mid)
        text = x.find(b">", text) + 1
        return {
            "in a comment in the root": x[:mid] + b"  <!-- <page>\n" + fill + b" -->\n" + x[mid:],
            "in a PI in the root": x[:mid] + b"  <?pi <page>\n" + fill + b" ?>\n" + x[mid:],
            "in a CDATA section in a text": x[:text] + b"<![CDATA[<page>\n" + fill + b"]]>" +
                                            x[text:],
            "in a comment in a text": x[:text] + b"<!-- <page> " + fill + b"-->" + x[text:],
        }

    def test_guesses_that_are_no_cut_points(self):
        # Each dump's compressed forms are compared with its plain XML's
        # one-thread reference (the same table whatever the form).
        for what, data in self.fake_pages().items():
            src = self.write_file("fake.xml", data)
            ref = self.reference(src)
            r = self.assertSameOutputs(src, f"page start tag {what}", ref=ref)
            self.assertEqual(r.code, 0, f"{what}: " + r.describe())
            for form, blob in (("zst", to_zst(data)), ("bz2", to_bz2(data))):
                src = self.write_file(f"fake-{form}.bin", blob)
                r = self.assertSameOutputs(src, f"page start tag {what} ({form})", extract=False,
                                           ref=ref)
                self.assertEqual(r.code, 0, f"{what} ({form}): " + r.describe())
        # And bad XML behind such a guess fails as with one thread.
        bad = mutate_after(self.fake_pages()["in a comment in the root"], b"<page>", 0.8,
                           b"</title>", b"</titel>")
        src = self.write_file("fake-bad.xml", bad)
        r = self.assertSameOutputs(src, "tag mismatch after a page start tag in a comment")
        self.assertNotEqual(r.code, 0, r.describe())


def mutate_after(xml, marker, frac, old, new):
    """xml with the first `old` at or after the first `marker` past frac of it
    replaced by `new`."""
    at = xml.find(marker, int(len(xml) * frac))
    at = xml.find(old, at)
    assert at >= 0, (marker, old)
    return xml[:at] + new + xml[at + len(old):]


class ParallelParseErrorsTest(SameOutputsTest):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-e2e-pp-")
        # A thousand pages: hundreds of 4K chunks before a late error, many
        # 64K chunks for each of two threads. The sanitized pass cuts 4K
        # chunks only (SETTINGS): half of it still gives a hundred before a
        # late error, for half the bytes each of its runs decodes.
        path = wikigen(os.path.join(cls.classtmp, "base.xml"), "512K" if SANITIZED else "1M", "9",
                       "xml", "wiktionary")
        with open(path, "rb") as f:
            cls.xml = f.read()

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.classtmp, True)

    def bad_inputs(self):
        x = self.xml
        big_page = (b"  <page>\n    <title>Huge</title>\n    <ns>0</ns>\n    <revision>\n"
                    b"      <text>" + b"long line of text\n" * 20000 + b"</text>\n"
                    b"    </revision>\n  </page>\n")
        mid = x.find(b"  <page>", len(x) // 2)

        def cdata(lines):
            """A page whose text opens a CDATA section holding a byte that is
            not UTF-8 after `lines` lines of it."""
            return (b"  <page>\n    <title>CDATA</title>\n    <ns>0</ns>\n    <revision>\n"
                    b"      <text><![CDATA[" + b"a line inside the section\n" * lines +
                    b"a byte \xae that is not UTF-8\n")
        return {
            "truncated": x[:len(x) * 2 // 3],
            "tag mismatch late": mutate_after(x, b"<page>", 0.8, b"</title>", b"</titel>"),
            "unclosed page": mutate_after(x, b"<page>", 0.6, b"</page>", b""),
            "nested page": mutate_after(x, b"<page>", 0.4, b"<page>", b"<page><page>"),
            "bad entity late": mutate_after(x, b"<text", 0.9, b">", b">&bogus;"),
            "bad ns": mutate_after(x, b"<page>", 0.7, b"<ns>", b"<ns>x"),
            "page without title": x[:mid] + b"  <page><revision><text>a</text></revision>"
                                  b"</page>\n" + x[mid:],
            "lt in text": mutate_after(x, b"<text", 0.5, b">", b">a < b"),
            "second root": x + b"<page/>\n",
            "huge page then error": x[:mid] + big_page + x[mid:len(x) * 3 // 4],
            "comments and CDATA with tags": x[:mid] + b"<!-- <page> --><?pi <page> ?>"
                                            b"<![CDATA[ <page> ]]>\n" + x[mid:len(x) * 3 // 4],
            "doctype": b"<!DOCTYPE mediawiki>\n" + x,
            "lone CRs": x.replace(b"\n", b"\r", 3000)[:len(x) * 3 // 4],
            "CRLF": x.replace(b"\n", b"\r\n")[:len(x) * 3 // 4],
            "latin-1 declared": (b'<?xml version="1.0" encoding="ISO-8859-1"?>\n' +
                                 x.replace("\u00e9".encode(), b"\xe9"))[:len(x) * 3 // 4],
            "empty": b"",
            # libxml2 checks a CDATA section 300 bytes a parse call while it
            # is open, and names the line its last block began on.
            "byte not UTF-8 in an open CDATA": x[:mid] + cdata(50) + x[mid:],
            "byte not UTF-8 in a closed CDATA": x[:mid] + cdata(12000) +
            b"]]></text>\n    </revision>\n  </page>\n" + x[mid:],
        }

    def test_same_error_as_one_thread(self):
        # Three of them in every compressed form too; in a sanitized build
        # each in multistream bz2 (cut at stream starts) and in one of the
        # decoders whose output is cut at guesses, taking turns, so that
        # every decoder meets one of the three errors.
        compressed = ("truncated", "tag mismatch late", "huge page then error")
        encoders = {"bz2": to_bz2, "bz2_multistream": to_bz2_multistream, "gz": to_gz,
                    "zst": to_zst}
        for name, data in self.bad_inputs().items():
            forms = {"plain": data}
            if name in compressed:
                turn = ("bz2", "gz", "zst")[compressed.index(name)]
                forms.update((form, encode(data)) for form, encode in encoders.items()
                             if not SANITIZED or form in ("bz2_multistream", turn))
            for form, blob in forms.items():
                src = self.write_file(f"bad-{form}.xml", blob)
                r = self.assertSameOutputs(src, f"{name} ({form})")
                if name not in ("lone CRs", "CRLF", "latin-1 declared"):
                    self.assertNotEqual(r.code, 0, f"{name} ({form}) must fail" + r.describe())

    def test_damaged_compressed_data_same_error(self):
        # Each form damaged at its end and early or in the middle, taking
        # turns, so that each place is damaged in two forms, each decoder at
        # its end and inside; in a sanitized build with one setting.
        for i, (form, blob) in enumerate((("bz2", to_bz2(self.xml)),
                                          ("bz2_multistream", to_bz2_multistream(self.xml)),
                                          ("gz", to_gz(self.xml)), ("zst", to_zst(self.xml)))):
            for frac in ((0.3, 0.7)[i % 2], 1.0):
                cut = blob[:int(len(blob) * frac) - 5]
                damaged = bytearray(blob)
                at = int(len(blob) * min(frac, 0.9))
                damaged[at] ^= 0x55
                for what, data in (("cut", cut), ("flipped", bytes(damaged))):
                    src = self.write_file(f"dmg-{form}.bin", data)
                    r = self.assertSameOutputs(src, f"{form} {what} at {frac}")
                    self.assertNotEqual(r.code, 0, f"{form} {what} at {frac}" + r.describe())


if __name__ == "__main__":
    unittest.main(verbosity=2)
