"""test_cluster.py: the cluster build (`sstpipe build` with a [cluster] section).

Its defining property: cut into map and reduce tasks, a build holds exactly
the records of one `sstpipe build` of the same input, and with one shard it
is that build byte for byte. Checked on a real corpus re-compressed in
Wikimedia's multistream layout (the header and <siteinfo> in one stream,
then a stream per few pages, then </mediawiki>), planned from its
-multistream-index.txt.bz2 and, without it, from the stream headers found
in the bytes (the same cuts either way), and on wikigen multistream dumps
with repeated titles spread over the tasks (the later page must win across
tasks as within one). Sharded, the shards hold disjoint, contiguous key
ranges of near-equal size whose records, in order, are the single build's;
the published table's title index is build's byte for byte, and a set's
shards' indexes hold build's index's titles between them. The generated
dump and both one-machine builds are made once for the class; the
sanitized build takes the real corpus's first pages only.
Also: a map task killed (SIGKILL) mid-write, or as it publishes a shard's
title index, leaves nothing that looks done, a re-run of it removes the dead attempt's files, and the build run
again resumes (finished tasks skipped) to the same bytes; a corrupt stream
fails the build with one line naming the map task, its byte range and its
log, nothing at OUT and no temporary file in the shared directory; the
plan is the same for the same build (its id), and tasks = N cuts N tasks.
And: with the index beside the dump the split points come from its titles
(no stream decoded to sample them); tasks = 0 sizes tasks from the input
(64 to 256 MiB); a shard damaged after its reduce task committed fails the
finish's verify, one line naming it, nothing at OUT.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import bz2
import json
import os
import re
import shutil
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from sstpipe_e2e import (SANITIZED, E2ETest, assert_manifest_measures, corpora_dir,  # noqa: E402
                         parse_info, run, sstpipe, sstpipe_bin, wikigen_bin)
from test_merge import split_dump  # noqa: E402


def wikimedia_multistream(xml, pages_per_stream):
    """(dump bytes, index text) in the layout of the public -multistream
    dumps: header stream, streams of pages_per_stream pages, tail stream;
    the index lists "offset:page id:title" for every page."""
    head, pages, tail = split_dump(xml)
    out = [bz2.compress(head, 9)]
    offset = len(out[0])
    index = []
    for i in range(0, len(pages), pages_per_stream):
        group = pages[i:i + pages_per_stream]
        for page in group:
            title = re.search(rb"<title>(.*?)</title>", page, re.S).group(1)
            pid = re.search(rb"<id>(\d+)</id>", page).group(1)
            title = (title.replace(b"&quot;", b'"').replace(b"&lt;", b"<").replace(b"&gt;", b">")
                     .replace(b"&amp;", b"&"))
            index.append(b"%d:%s:%s\n" % (offset, pid, title))
        stream = bz2.compress(b"".join(group), 9)
        out.append(stream)
        offset += len(stream)
    out.append(bz2.compress(tail, 9))
    return b"".join(out), b"".join(index)


def stream_offsets(data):
    """Where each bz2 stream of data starts (decoding them one by one)."""
    offsets, pos = [], 0
    while pos < len(data):
        offsets.append(pos)
        d = bz2.BZ2Decompressor()
        d.decompress(data[pos:])
        pos = len(data) - len(d.unused_data)
    return offsets


def index_of(dump):
    """The -multistream-index.txt.bz2 that goes with a -multistream.xml.bz2."""
    return dump.replace(".xml.bz2", "-index.txt.bz2")


REAL_NAME = "enwiki-20261201-pages-articles-multistream.xml.bz2"
# The dump generated for the cases that need no real text.
GEN_NAME = "gen-multistream.xml.bz2"
# The real corpus's pages the sanitized build takes (sstpipe_e2e.SANITIZED):
# streams enough for the plans of up to 5 tasks; the sanitizers look at the
# same code paths, not at volume.
SANITIZED_REAL_PAGES = 100
# The tasks of the sanitized build's cases of a plan's cuts and cost (the
# plain suite's cut four or six): two cuts take the paths five do, with
# fewer task processes, each paying the sanitizers' start and exit.
SANITIZED_TASKS = 3 if SANITIZED else None


class ClusterBuild(E2ETest):
    @classmethod
    def setUpClass(cls):
        # The real corpus in Wikimedia's layout, the generated dump, and
        # their one-machine builds, made on first use and shared by the
        # cases that build from them.
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-cluster-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.real = None
        cls.refs = {}

    def setUp(self):
        super().setUp()
        self.shared = self.path("shared")

    def config(self, name="cluster.ini", **keys):
        keys.setdefault("shared_dir", self.shared)
        lines = ["[cluster]"] + [f"{k} = {v}" for k, v in keys.items()]
        return self.write_file(name, ("\n".join(lines) + "\n").encode())

    def wikigen(self, name, seed, dup_pct="8", index=False):
        """A wikigen multistream dump (name: in the case's directory, or a
        whole path); with index, its -multistream-index.txt.bz2
        beside it (name must then end in -multistream.xml.bz2). Wiktionary's
        short pages: the streams and titles the plans need (a stream per
        100 pages, titles sampled a shard) in few bytes for the tasks to
        decode: what these cases check is the cuts and the records, not
        volume."""
        out = self.path(name)
        extra = ["--index", index_of(out)] if index else []
        r = run([wikigen_bin(), "--size", "1M", "--seed", seed, "--format", "bz2-multistream",
                 "--profile", "wiktionary", "--duplicates", dup_pct, "-o", out] + extra,
                timeout=300)
        self.assertOk(r)
        return out

    def class_generated(self):
        """The class's GEN_NAME and its index, made on first use."""
        gen = os.path.join(type(self).classtmp, GEN_NAME)
        if not os.path.exists(gen):
            self.wikigen(gen, "23", index=True)
        return gen

    def generated(self, index=False):
        """GEN_NAME in the case's directory, with its index beside it when
        asked: a copy of the dump the class made once (and builds once, in
        reference())."""
        gen = self.class_generated()
        src = self.path(GEN_NAME)
        shutil.copy(gen, src)
        if index:
            shutil.copy(index_of(gen), index_of(src))
        elif os.path.exists(index_of(src)):
            os.unlink(index_of(src))
        return src

    def real_bytes(self):
        """(dump, compressed index) of the real corpus in that layout. The
        sanitized build takes its first pages: the same code paths, a
        fraction of the bytes to decode."""
        cls = type(self)
        if cls.real is None:
            with open(os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2"), "rb") as f:
                xml = bz2.decompress(f.read())
            if SANITIZED:
                head, pages, tail = split_dump(xml)
                xml = head + b"".join(pages[:SANITIZED_REAL_PAGES]) + tail
            dump, index = wikimedia_multistream(xml, 10)
            cls.real = (dump, bz2.compress(index, 9))
        return cls.real

    def real_multistream(self, with_index):
        dump, index = self.real_bytes()
        path = self.write_file(REAL_NAME, dump)
        if with_index:
            self.write_file(index_of(REAL_NAME), index)
        return path, dump

    def reference(self, name):
        """`sstpipe build` of REAL_NAME (the real corpus in that layout) or
        GEN_NAME (the generated dump), built once."""
        cls = type(self)
        if name not in cls.refs:
            src = os.path.join(cls.classtmp, name)
            if name == REAL_NAME:
                with open(src, "wb") as f:
                    f.write(self.real_bytes()[0])
            else:
                self.class_generated()
            table = os.path.join(cls.classtmp, name + ".sst")
            self.build(src, table)
            cls.refs[name] = table
        return cls.refs[name]

    def plan_of(self, r):
        text = r.err_text if hasattr(r, "err_text") else r.stderr
        m = re.search(r"cluster: plan=(\S+) maps=(\d+) shards=(\d+) resumed=(\d) maps_done=(\d+)",
                      text)
        self.assertIsNotNone(m, "no cluster -v line" + r.describe())
        return {"plan": m.group(1), "maps": int(m.group(2)), "shards": int(m.group(3)),
                "resumed": int(m.group(4)), "maps_done": int(m.group(5))}

    def cluster_build(self, cfg, inputs, out, *extra):
        r = sstpipe("build", "-c", cfg, *inputs, "-o", out, "-v", *extra)
        return r, (self.plan_of(r) if "cluster: plan=" in r.err_text else None)

    def no_temps(self):
        """Nothing temporary anywhere in the shared directory."""
        left = []
        for root, dirs, files in os.walk(self.shared):
            left += [os.path.join(root, n) for n in dirs + files if ".tmp" in n]
        return left

    def assert_same_as_build(self, src, cfg, what):
        """The cluster build of src (REAL_NAME or GEN_NAME) is `sstpipe
        build`'s, byte for byte."""
        ref = self.reference(os.path.basename(src))
        out = self.path("cluster.sst")
        r, plan = self.cluster_build(cfg, [src], out)
        self.assertOk(r)
        with open(ref, "rb") as a, open(out, "rb") as b:
            self.assertTrue(a.read() == b.read(), f"{what}: not build's bytes")
        # Its title index too: the maps' shard indexes merged by the reduce.
        with open(ref + ".titles", "rb") as a, open(out + ".titles", "rb") as b:
            self.assertTrue(a.read() == b.read(), f"{what}: not build's title index")
        self.assertEqual(os.listdir(self.shared), [], f"{what}: the build's directory is left")
        return plan

    # ------------------------------------------------------------ one shard

    def test_real_corpus_one_shard_is_build(self):
        src, dump = self.real_multistream(with_index=True)
        plan = self.assert_same_as_build(src, self.config(tasks=4), "real, index")
        self.assertEqual(plan["maps"], 4)
        # Without the index the streams are found in the bytes: the same cuts.
        os.unlink(index_of(src))
        os.unlink(self.path("cluster.sst"))
        plan2 = self.assert_same_as_build(src, self.config(tasks=4), "real, scanned")
        self.assertEqual(plan2["maps"], 4)

    def test_cuts_are_stream_starts(self):
        src, dump = self.real_multistream(with_index=False)
        cfg = self.config(tasks=5, shards=1)
        r, plan = self.cluster_build(cfg, [src], self.path("x.sst"), "--set",
                                     "sst.block_size=3000")
        # A bad option is refused before any plan is made.
        self.assertEqual(r.code, 2, r.describe())
        self.assertFalse(os.path.exists(self.shared))
        starts = set(stream_offsets(dump))
        # Plan it, and read plan.json before the finish removes it: a corrupt
        # last stream stops the build after the plan is written.
        bad = bytearray(dump)
        last = max(starts)
        bad[last + 20] ^= 0xFF
        with open(src, "wb") as f:
            f.write(bad)
        r, plan = self.cluster_build(cfg, [src], self.path("x.sst"))
        self.assertEqual(r.code, 1, r.describe())
        with open(plan["plan"]) as f:
            p = json.load(f)
        # At most the tasks asked for: a fifth of this small file may hold no
        # stream start.
        self.assertIn(len(p["maps"]), (3, 4, 5))
        self.assertEqual(p["maps"][0]["start"], 0)
        self.assertEqual(p["maps"][-1]["end"], len(dump))
        for a, b in zip(p["maps"], p["maps"][1:]):
            self.assertEqual(a["end"], b["start"])
            self.assertIn(b["start"], starts, "a cut that is not a stream start")
        # The header stream is never a task's start.
        self.assertNotIn(0, [m["start"] for m in p["maps"][1:]])

    def test_generated_one_shard_is_build(self):
        src = self.generated(index=True)
        tasks = SANITIZED_TASKS or 6
        plan = self.assert_same_as_build(src, self.config(tasks=tasks), "wikigen, index")
        self.assertEqual(plan["maps"], tasks)
        os.unlink(index_of(src))
        os.unlink(self.path("cluster.sst"))
        plan = self.assert_same_as_build(src, self.config(tasks=tasks), "wikigen, scanned")
        self.assertEqual(plan["maps"], tasks)
        # tasks = 0: a small input still makes several tasks.
        os.unlink(self.path("cluster.sst"))
        plan = self.assert_same_as_build(src, self.config(), "wikigen, tasks 0")
        self.assertGreater(plan["maps"], 1)

    def test_compressed_one_shard_is_build_and_set(self):
        """With [sst] compression = zstd the cluster build writes format
        version 2 everywhere: one shard is the compressed build's table byte
        for byte (reduce trains its dictionary as build does), and a set's
        shards and manifest are version 2 and verify."""
        src, _ = self.real_multistream(with_index=True)
        ref = self.path("zref.sst")
        # Not the default level or dictionary size: the reduce must be told them.
        zstd = ("sst.compression=zstd", "sst.compression_level=6", "sst.dictionary_size=8K")
        self.build(src, ref, *[a for z in zstd for a in ("--set", z)])
        for shards in (1, 2):
            cfg = self.write_file(f"z{shards}.ini", (
                "[sst]\ncompression = zstd\ncompression_level = 6\ndictionary_size = 8K\n"
                f"[cluster]\nshared_dir = {self.shared}\n"
                f"tasks = 3\nshards = {shards}\n").encode())
            out = self.path(f"z{shards}")
            r, _ = self.cluster_build(cfg, [src], out)
            self.assertOk(r)
            self.assertOk(sstpipe("verify", out))
            if shards == 1:
                self.assertEqual(parse_info(self, out)["format_version"], 2)
                with open(ref, "rb") as a, open(out, "rb") as b:
                    self.assertTrue(a.read() == b.read(), "compressed: not build's bytes")
                continue
            with open(os.path.join(out, "tableset.json")) as f:
                manifest = json.load(f)
            self.assertEqual(manifest["options"]["format_version"], 2)
            for s in manifest["shards"]:
                self.assertEqual(parse_info(self, os.path.join(out, s["file"]))["format_version"],
                                 2)
            self.assertRecordsEqual(self.dump(out), self.dump(ref), "compressed set")

    def test_plan_cost_and_local_threads(self):
        """What keeps the local 2-task build near build's time (issue 17):
        a plan of one shard decodes only its cut points (one probe a cut,
        no titles sampled for split points it does not have), one of S
        shards samples 8 points a shard; the local runner's map tasks
        parse on their share of the cores, not each on all of them."""
        src = self.generated()
        cores = len(os.sched_getaffinity(0))

        def line(r):
            self.assertOk(r)
            return {k: float(v) for k, v in re.findall(r" (\w+)=([\d.]+)", r.err_text.split(
                "cluster: ")[1].split("\n")[0])}

        tasks = SANITIZED_TASKS or 4
        for jobs in (1, 2):
            r, _ = self.cluster_build(self.config(tasks=tasks, jobs=jobs), [src],
                                      self.path("a.sst"))
            v = line(r)
            self.assertEqual(v["maps"], tasks)
            self.assertEqual(v["plan_probes"], tasks - 1,
                             "one shard: one probe per cut, no samples")
            self.assertEqual(v["map_threads"], max(1, cores // jobs),
                             f"jobs {jobs} on {cores} cores" + r.describe())
            for k in ("plan_seconds", "run_seconds", "map_seconds", "reduce_seconds",
                      "finish_seconds"):
                self.assertGreater(v[k], 0, k)
            self.assertLessEqual(v["map_seconds"] + v["reduce_seconds"], v["run_seconds"])
        r, _ = self.cluster_build(self.config(tasks=tasks, shards=3), [src], self.path("b"))
        v = line(r)
        self.assertGreaterEqual(v["plan_probes"], tasks - 1 + 3 * 8,
                                "shards 3: 8 sample points a shard")
        # [build] threads set: the plan's, whatever the runner.
        cfg = self.config(tasks=tasks, jobs=1)
        with open(cfg, "a") as f:
            f.write("[build]\nthreads = 1\n")
        r, _ = self.cluster_build(cfg, [src], self.path("c.sst"))
        self.assertEqual(line(r)["map_threads"], 1)

    def test_many_files_whole(self):
        """Several dumps, one task each, the later file winning a title."""
        a = self.wikigen("a.xml.bz2", "5")
        b = self.wikigen("b.xml.bz2", "5", dup_pct="0")  # same titles, other order
        cat = self.path("cat.xml")
        with open(a, "rb") as f:
            ha, pa, ta = split_dump(bz2.decompress(f.read()))
        with open(b, "rb") as f:
            hb, pb, tb = split_dump(bz2.decompress(f.read()))
        with open(cat, "wb") as f:
            f.write(ha + b"".join(pa) + b"".join(pb) + ta)
        ref = self.path("ref.sst")
        self.build(cat, ref)
        out = self.path("c.sst")
        r, plan = self.cluster_build(self.config(tasks=2), [a, b], out)
        self.assertOk(r)
        self.assertEqual(plan["maps"], 2)
        self.assertRecordsEqual(self.dump(out), self.dump(ref), "two files")

    # ------------------------------------------------------------ shards

    def test_shards_hold_the_build_records(self):
        src = self.generated()
        ref = self.reference(GEN_NAME)
        expected = self.dump(ref)
        cfg = self.config(tasks=5, shards=4)
        out = self.path("set")
        os.mkdir(out)
        self.write_file("set/old-file", b"an earlier output, replaced whole")
        r, plan = self.cluster_build(cfg, [src], out)
        self.assertOk(r)
        self.assertEqual(plan["shards"], 4)
        with open(os.path.join(out, "tableset.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["format"], "sstpipe-tableset")
        # The options and the inputs (issue 17: "the options; the inputs"),
        # and the set verifies against it (each shard's checksum included).
        info = json.loads(sstpipe("info", ref, "--json").stdout)
        self.assertEqual({k: manifest["options"][k] for k in ("block_size", "max_value_bytes")},
                         {k: info[k] for k in ("block_size", "max_value_bytes")})
        self.assertEqual(manifest["inputs"],
                         [{"path": os.path.realpath(src), "size": os.path.getsize(src)}])
        self.assertOk(sstpipe("verify", out))
        self.assertEqual(sorted(os.listdir(out)),
                         sorted([s["file"] + e for s in manifest["shards"] for e in ("", ".titles")]
                                + ["tableset.json"]))
        shards = manifest["shards"]
        self.assertEqual(len(shards), 4)
        self.assertIsNone(shards[0]["lo"])
        self.assertIsNone(shards[-1]["hi"])
        got, sizes = [], []
        for i, s in enumerate(shards):
            path = os.path.join(out, s["file"])
            recs = self.dump(path)
            self.assertEqual(s["records"], len(recs))
            self.assertEqual(s["bytes"], os.path.getsize(path))
            if i:
                self.assertEqual(s["lo"], shards[i - 1]["hi"])
            lo = bytes.fromhex(s["lo"]) if s["lo"] else None
            hi = bytes.fromhex(s["hi"]) if s["hi"] else None
            self.assertTrue(all((lo is None or k >= lo) and (hi is None or k < hi)
                                for k, _ in recs), f"{s['file']}: a key outside its range")
            self.assertOk(sstpipe("verify", path))
            sizes.append(len(recs))
            got += recs
        self.assertRecordsEqual(got, expected, "shards concatenated")
        # Each shard's title index: together, build's index's records (each
        # index's rules record, naming its own table, aside), and the set
        # suggests as the table does.
        def titles(path):
            return [r for r in self.dump(path + ".titles") if r[0] != b"\0"]
        self.assertEqual(sorted(r for s in shards for r in titles(os.path.join(out, s["file"]))),
                         sorted(titles(ref)))
        a, b = sstpipe("suggest", out, "a", "--limit", "20"), sstpipe("suggest", ref, "a",
                                                                         "--limit", "20")
        self.assertOk(a)
        self.assertEqual(a.stdout, b.stdout)
        # Through the table set reader: `dump --jsonl` of the set is build's, byte for byte.
        a, b = sstpipe("dump", out, "--jsonl"), sstpipe("dump", ref, "--jsonl")
        self.assertOk(a)
        self.assertTrue(a.stdout == b.stdout, "dump of the set is not build's dump")
        # Near-equal: no shard holds more than twice its share.
        self.assertLessEqual(max(sizes), 2 * len(expected) / 4, f"shard sizes {sizes}")
        self.assertEqual(os.listdir(self.shared), [])
        self.assertEqual([n for n in os.listdir(self.tmp) if ".tmp" in n], [])

    def test_shards_from_the_index_titles(self):
        """With the -multistream-index.txt.bz2 beside the dump, the split
        points are quantiles of the index's titles: no stream is decoded to
        sample titles (the plan's probes are its cuts alone, one each), and
        the shards hold build's records in near-equal ranges."""
        src, _ = self.real_multistream(with_index=True)
        ref = self.reference(REAL_NAME)
        out = self.path("set")
        r, plan = self.cluster_build(self.config(tasks=4, shards=3), [src], out)
        self.assertOk(r)
        self.assertEqual((plan["maps"], plan["shards"]), (4, 3))
        probes = int(re.search(r" plan_probes=(\d+)", r.err_text).group(1))
        self.assertEqual(probes, 3, "titles sampled from the streams, not taken from the index")
        a, b = sstpipe("dump", out, "--jsonl"), sstpipe("dump", ref, "--jsonl")
        self.assertOk(a)
        self.assertTrue(a.stdout == b.stdout, "dump of the set is not build's dump")
        with open(os.path.join(out, "tableset.json")) as f:
            sizes = [s["records"] for s in json.load(f)["shards"]]
        self.assertLessEqual(max(sizes), 2 * sum(sizes) / 3, f"shard sizes {sizes}")

    def test_tasks_from_the_input_size(self):
        """tasks = 0: a task is total / 128 of the compressed input held
        between 64 and 256 MiB, and an input under 4 x 64 MiB still gets 4
        tasks (`task plan --input-size` prints what such a plan makes)."""
        mib = 1 << 20

        def picks(size):
            r = sstpipe("task", "plan", "--input-size", size)
            self.assertOk(r)
            m = re.fullmatch(r"tasks=(\d+) task_bytes=(\d+)\n", r.stdout.decode())
            self.assertIsNotNone(m, r.describe())
            return int(m.group(1)), int(m.group(2))

        self.assertEqual(picks("100M")[0], 4)
        self.assertEqual(picks("2G"), (32, 64 * mib))  # the lower bound
        self.assertEqual(picks("22G"), (128, 22 * 1024 * mib // 128))  # enwiki: 176 MiB each
        self.assertEqual(picks("1T"), (4096, 256 * mib))  # the upper bound

    def test_shard_that_fails_verify_is_not_published(self):
        """The finish verifies every shard before it publishes: a reduce
        task's committed shard damaged afterwards (a bad disk in the shared
        directory) fails the resumed build with one line naming the shard,
        its file and the problem, and nothing is written at OUT."""
        src = self.generated()
        cfg = self.config(tasks=3, shards=2, retries=0)
        outdir = self.path("out")
        os.mkdir(outdir)
        out = os.path.join(outdir, "set")
        # Stopped at its publish (EIO at the mkdir of the set's temporary
        # directory beside OUT), so the shards stay in the shared directory.
        r = faultlib.run([sstpipe_bin(), "build", "-c", cfg, src, "-o", out, "-v"],
                         fault="mkdir:1:EIO", fault_dir=outdir)
        self.assertEqual(r.code, 1, r.describe())
        plan = self.plan_of(r)
        shard = os.path.join(os.path.dirname(plan["plan"]), "reduce", "shard-0001.sst")
        with open(shard, "r+b") as f:  # a byte of block 0 flipped
            f.seek(100)
            b = f.read(1)
            f.seek(100)
            f.write(bytes([b[0] ^ 0x55]))
        r, plan2 = self.cluster_build(cfg, [src], out)
        self.assertEqual(r.code, 1, r.describe())
        self.assertEqual((plan2["plan"], plan2["resumed"]), (plan["plan"], 1))
        lines = [ln for ln in r.err_text.strip().splitlines() if not ln.startswith("cluster: ")]
        self.assertEqual(len(lines), 1, r.describe())
        self.assertRegex(lines[0], r"^sstpipe: .*shard 1 \(" + re.escape(shard) +
                         r"\): verify found \d+ problems?, the first: .*checksum")
        self.assertEqual(os.listdir(outdir), [], "something is at OUT")
        self.assertEqual(self.no_temps(), [])

    # ------------------------------------------------------------ nightly

    def test_nightly_through_the_cluster(self):
        """A nightly with [cluster] builds through it: a map task killed
        makes a failed night with nothing published; the next night publishes
        build's table. (shards > 1, a table set: test_nightly_set.py.)"""
        src, _ = self.real_multistream(with_index=True)
        ref = self.reference(REAL_NAME)
        out = self.path("nightly")
        ini = self.write_file("nightly.ini", (
            f"[output]\ndir = {out}\nname = t.sst\n[profile]\nlookups = 50\n"
            f"[cluster]\nshared_dir = {self.shared}\ntasks = 3\nretries = 0\njobs = 1\n").encode())
        os.makedirs(self.shared, exist_ok=True)
        r = faultlib.run([sstpipe_bin(), "nightly", "-c", ini, src], fault="rename:2:SIGKILL",
                         fault_dir=self.shared)
        self.assertEqual(r.code, 1, r.describe())
        self.assertRegex(r.stderr, r"map task 0 \(.*(killed|signal|SIGKILL)")
        self.assertEqual(len(os.listdir(os.path.join(out, "failed"))), 1)
        self.assertFalse(os.path.exists(os.path.join(out, "current")))
        r = sstpipe("nightly", "-c", ini, src, measure_rss=True)
        self.assertOk(r)
        with open(ref, "rb") as a, open(os.path.join(out, "current", "t.sst"), "rb") as b:
            self.assertTrue(a.read() == b.read(), "the nightly's table is not build's")
        (build,) = os.listdir(os.path.join(out, "builds"))
        with open(os.path.join(out, "builds", build, "nightly.log")) as f:
            self.assertRegex(f.read(), r"cluster: 3 map tasks \(\d+ already done\)")
        self.assertEqual(os.listdir(self.shared), [])
        with open(os.path.join(out, "builds", build, "manifest.json")) as f:
            assert_manifest_measures(self, json.load(f), r)

    # ------------------------------------------------------------ faults

    def test_kill_map_task_then_resume(self):
        src = self.generated()
        ref = self.reference(GEN_NAME)
        out = self.path("c.sst")
        cfg = self.config(tasks=4, retries=0, jobs=1)
        # The plan is made by a build whose first map task is killed as it
        # commits (SIGKILL at its third rename in the shared directory, its
        # directory's, after its shard's title index's and table's; the shim
        # is inherited by every task, and the build itself renames only
        # plan.json there).
        os.mkdir(self.shared)
        r = faultlib.run([sstpipe_bin(), "build", "-c", cfg, src, "-o", out, "-v"],
                         fault="rename:3:SIGKILL", fault_dir=self.shared)
        self.assertEqual(r.code, 1, r.describe())
        line = r.stderr.strip().splitlines()[-1]
        self.assertRegex(line, r"^sstpipe: map task 0 \(gen-multistream\.xml\.bz2 bytes 0-\d+\): .*"
                               r"(killed|signal|SIGKILL).* \(log: \S+/logs/map-0\.\d+\.log\)$")
        self.assertFalse(os.path.exists(out))
        plan = self.plan_of(r)
        task = [sstpipe_bin(), "task", "map", "--plan", plan["plan"]]
        maps = os.path.join(os.path.dirname(plan["plan"]), "map")
        self.assertEqual([n[:11] for n in os.listdir(maps)], [".tmp-00000-"])
        # Task 0 by hand (its dead attempt removed), then task 1 killed while
        # it writes its tables.
        self.assertOk(sstpipe("task", "map", "--plan", plan["plan"], "--task", "0"))
        self.assertEqual(os.listdir(maps), ["00000"])
        again = sstpipe("task", "map", "--plan", plan["plan"], "--task", "0", "-v")
        self.assertOk(again)
        self.assertIn("skipped=1", again.err_text, "a finished task ran again")
        counts = faultlib.count_calls(self, task + ["--task", "1"], self.shared)
        shutil.rmtree(os.path.join(maps, "00001"))
        r = faultlib.run(task + ["--task", "1"], fault=f"write:{max(1, counts['write'] // 2)}"
                         ":SIGKILL", fault_dir=self.shared)
        self.assertEqual(r.code, -9, r.describe())
        self.assertFalse(os.path.exists(os.path.join(maps, "00001")), "a killed task looks done")
        self.assertTrue([n for n in os.listdir(maps) if n.startswith(".tmp-00001-")],
                        "the kill left no attempt behind: nothing tested")
        # Run again: the dead attempt's directory is removed.
        self.assertOk(sstpipe("task", "map", "--plan", plan["plan"], "--task", "1"))
        self.assertEqual([n for n in os.listdir(maps) if n.startswith(".tmp-")], [])
        # Killed as it publishes its shard's title index (its first rename in
        # the shared directory: the index goes in before its table): nothing
        # looks done, and the next run leaves no temporary file and the shard
        # with its index.
        shutil.rmtree(os.path.join(maps, "00001"))
        r = faultlib.run(task + ["--task", "1"], fault="rename:1:SIGKILL", fault_dir=self.shared)
        self.assertEqual(r.code, -9, r.describe())
        self.assertFalse(os.path.exists(os.path.join(maps, "00001")), "a killed task looks done")
        (dead,) = [n for n in os.listdir(maps) if n.startswith(".tmp-00001-")]
        self.assertEqual([n[:len("shard-0000.sst.titles.tmp.")]
                          for n in os.listdir(os.path.join(maps, dead))],
                         ["shard-0000.sst.titles.tmp."], "not killed at the index's rename")
        self.assertOk(sstpipe("task", "map", "--plan", plan["plan"], "--task", "1"))
        self.assertEqual([n for n in os.listdir(maps) if n.startswith(".tmp-")], [])
        self.assertEqual(sorted(os.listdir(os.path.join(maps, "00001"))),
                         ["shard-0000.sst", "shard-0000.sst.titles"])
        # The build resumes: the same plan, two tasks done, the same bytes.
        r, plan2 = self.cluster_build(cfg, [src], out)
        self.assertOk(r)
        self.assertEqual((plan2["plan"], plan2["resumed"], plan2["maps_done"]),
                         (plan["plan"], 1, 2))
        with open(ref, "rb") as a, open(out, "rb") as b:
            self.assertTrue(a.read() == b.read(), "resumed build: not build's bytes")
        self.assertFalse(os.path.exists(os.path.dirname(plan["plan"])))

    def test_corrupt_stream(self):
        src, dump = self.real_multistream(with_index=True)
        starts = stream_offsets(dump)
        victim = starts[len(starts) // 2] + 40
        bad = bytearray(dump)
        bad[victim] ^= 0x55
        with open(src, "wb") as f:
            f.write(bad)
        out = self.path("c.sst")
        r, plan = self.cluster_build(self.config(tasks=4, retries=1), [src], out)
        self.assertEqual(r.code, 1, r.describe())
        lines = r.err_text.strip().splitlines()
        self.assertEqual(len([ln for ln in lines if not ln.startswith("cluster: ")]), 1,
                         r.describe())
        line = [ln for ln in lines if not ln.startswith("cluster: ")][0]
        m = re.match(r"sstpipe: map task (\d+) \(enwiki-20261201-pages-articles-multistream"
                     r"\.xml\.bz2 bytes (\d+)-(\d+)\): .*near compressed byte (\d+).*"
                     r"\(log: (\S+)\)$", line)
        self.assertIsNotNone(m, line)
        lo, hi, near = int(m.group(2)), int(m.group(3)), int(m.group(4))
        self.assertTrue(lo <= victim < hi, f"the range {lo}-{hi} misses byte {victim}")
        self.assertTrue(lo <= near <= hi, line)
        self.assertTrue(os.path.exists(m.group(5)), "the log named is not there")
        self.assertFalse(os.path.exists(out))
        self.assertEqual(self.no_temps(), [])
        # Retried once, as configured: two logs of that task.
        logs = os.listdir(os.path.dirname(m.group(5)))
        self.assertEqual(len([n for n in logs if n.startswith(f"map-{m.group(1)}.")]), 2, logs)

    def test_flags_without_config(self):
        """The [cluster] keys as build's flags: --shared-dir alone is a one-shard
        cluster build (build's bytes), --shards N a set of N, a flag overrides
        -c's key, and --shards without --shared-dir is a usage error."""
        src = self.generated()
        ref = self.reference(GEN_NAME)
        one = self.path("one.sst")
        r = sstpipe("build", src, "-o", one, "--shared-dir", self.shared, "--tasks", "3", "-v")
        self.assertOk(r)
        self.assertEqual(self.plan_of(r)["maps"], 3)
        with open(ref, "rb") as a, open(one, "rb") as b:
            self.assertTrue(a.read() == b.read(), "--shared-dir: not build's bytes")
        out = self.path("set")
        r = sstpipe("build", "-c", self.config(shards=2), src, "-o", out, "--shards", "3", "-v")
        self.assertOk(r)
        self.assertEqual(self.plan_of(r)["shards"], 3)
        a, b = sstpipe("dump", out, "--jsonl"), sstpipe("dump", ref, "--jsonl")
        self.assertOk(a)
        self.assertTrue(a.stdout == b.stdout, "dump of the set is not build's dump")
        r = sstpipe("build", src, "-o", self.path("o"), "--shards", "2")
        self.assertEqual(r.code, 2, r.describe())
        self.assertIn("shared_dir is required", r.err_text)
        r = sstpipe("build", src, "-o", self.path("o"), "--shared-dir", self.shared, "--runner",
                    "pbs")
        self.assertEqual(r.code, 2, r.describe())
        self.assertIn("local, parallel or slurm", r.err_text)
        self.assertEqual(os.listdir(self.shared), [])

    def test_usage(self):
        src = self.generated()
        r = sstpipe("build", "-c", self.config(shared_dir="", shards=2), src, "-o",
                    self.path("o.sst"))
        self.assertEqual(r.code, 2, r.describe())
        self.assertIn("shared_dir", r.err_text)
        r = sstpipe("build", src, src, "-o", self.path("o.sst"))
        self.assertEqual(r.code, 2, r.describe())
        # default.ini lists [cluster] at its defaults: a plain build.
        r = sstpipe("build", "-c", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config",
                                                "default.ini"),
                    src, "-o", self.path("plain.sst"), "-v")
        self.assertOk(r)
        self.assertNotIn("cluster:", r.err_text)
        r = sstpipe("build", "--set", f"cluster.shared_dir={self.shared}", "--set",
                    "cluster.runner=pbs", src, "-o", self.path("o.sst"))
        self.assertEqual(r.code, 2, r.describe())
        self.assertIn("local, parallel or slurm", r.err_text)
        # Too many shards for the titles sampled: refused, naming why.
        r, _ = self.cluster_build(self.config(shards=100000), [src], self.path("o"))
        self.assertEqual(r.code, 2, r.describe())
        r, _ = self.cluster_build(self.config(shards=5000), [src], self.path("o"))
        self.assertEqual(r.code, 1, r.describe())
        self.assertIn("5000 shards", r.err_text)
        r = sstpipe("task", "map", "--plan", self.path("nope.json"), "--task", "0")
        self.assertEqual(r.code, 1, r.describe())
        listed = sstpipe("--help").stdout.decode().split("commands:")[1].split()
        self.assertIn("build", listed)
        self.assertNotIn("task", listed)


if __name__ == "__main__":
    unittest.main()
