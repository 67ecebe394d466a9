"""tests/e2e/test_tableset.py: table sets (stages/sst/TABLESET.md) through every command
that reads a table.

Each corpus dump in ../shared/corpora and a generated multistream dump is built into one
table; tests/make_tableset.c splits that table into a set at keys of it, at a prefix of a
key (a split inside a run of keys sharing it) and past the last key (an empty shard),
through the manifest writer the cluster build calls. The set must answer as the table
does: `get` of every key and of misses beside them, `dump --jsonl` byte for byte, `info`
(the sums; --json says it is a set and lists the shards), `verify` clean with a report
naming each shard, `profile` (every drawn key found, misses missed), `serve` (every key,
prefix pages across shard boundaries, /v1/info; a set given directly, and a nightly
directory whose current names a set), and `merge` (a set into one table: same dump,
verify clean, every block copied, --canonical the build's bytes).

And the broken sets, each a one-line error naming the file: a missing shard, overlapping
and non-contiguous ranges, a bad hex bound, a key outside its shard's range, a damaged
shard block (get of a key in it fails naming the shard, others still answer; verify
names the shard and block), a truncated manifest, a directory without a manifest.
"""
import json
import os
import shutil
import unittest

from serve_client import Server, quote
import tempfile

from sstpipe_e2e import (SANITIZED, E2ETest, check_error_line, corpora_dir, env_path,
                         parse_info, run, sstpipe, sstpipe_bin, wikigen)


def checked(r):
    if r.code != 0:
        raise AssertionError("command failed:" + r.describe())
    return r


def make_set(table, out, splits):
    """Splits table into a set under out at splits (bytes keys, increasing)."""
    checked(run([env_path("MAKE_TABLESET"), table, out] + [k.hex() for k in splits]))
    return out


def utf8(key):
    """Whether key is valid UTF-8."""
    try:
        key.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def splits_for(keys):
    """A key, the shortest prefix of a key sorting after the key before it, another key,
    and a key past the last (an empty last shard)."""
    n = len(keys)
    a, b, c = keys[n // 4], keys[n // 2], keys[3 * n // 4]
    p = next(b[:i] for i in range(1, len(b) + 1) if b[:i] > keys[n // 2 - 1])
    out = sorted({a, p, c, b"\xff\xff"})
    return out


class TableSetTest(E2ETest):
    @classmethod
    def setUpClass(cls):
        """The tables and their sets, made once for every test (which only read them, or
        copy one to break it)."""
        cls.shared = tempfile.mkdtemp(prefix="sstpipe-e2e-tableset-")
        cls.cases = []
        srcs = [os.path.join(corpora_dir(), f) for f in
                ("enwiki-206pages.xml.bz2", "simplewiki-7pages.xml.bz2", "enwiki-11pages.xml")]
        gen = os.path.join(cls.shared, "gen.xml.bz2")
        wikigen(gen, "400K", "5", "bz2-multistream")
        srcs.append(gen)
        for i, src in enumerate(srcs):
            one = os.path.join(cls.shared, f"one{i}.sst")
            checked(sstpipe("build", src, "-o", one, "--block-size", "2K", "--max-bytes", "600"))
            dump = checked(sstpipe("dump", one, "--jsonl"))
            keys = [json.loads(line)["key"].encode() for line in dump.stdout.decode().splitlines()]
            s = make_set(one, os.path.join(cls.shared, f"set{i}"), splits_for(keys))
            cls.cases.append((one, s, keys, dump.stdout))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shared, True)

    def test_get_many(self):
        """get of several keys and of '-' (stdin): one JSON line a key in their order, null
        when absent (exit 3, as get's), the same from a table and its set, over more keys than
        one batch holds; an empty or over-long key refused (exit 2, saying why)."""
        for one, s, keys, dump in self.cases:
            values = {o["key"]: o["value"] for o in map(json.loads, dump.decode().splitlines())}
            some = [k for k in keys[::max(1, len(keys) // 20)] if not k.startswith(b"-")]
            asked = some + [some[0], some[-1] + b" ~", some[0]]

            def want(ks):
                return b"".join(json.dumps({"key": k.decode(), "value": values.get(k.decode())},
                                           ensure_ascii=False).encode() + b"\n" for k in ks)

            for target in (one, s):
                r = sstpipe("get", target, *asked)
                self.assertEqual((r.code, r.stdout), (3, want(asked)), r.describe())
                r = sstpipe("get", target, *some)
                self.assertEqual((r.code, r.stdout), (0, want(some)), r.describe())
                many = (keys * (1 + 1100 // len(keys)))[:1100] + [b"no such key"]
                r = run([sstpipe_bin(), "get", target, "-"], input_bytes=b"\n".join(many))
                self.assertEqual((r.code, r.stdout), (3, want(many)), r.describe())
                r = run([sstpipe_bin(), "get", target, some[0], "-"], input_bytes=some[1] + b"\n")
                self.assertEqual((r.code, r.stdout), (0, want(some[:2])), r.describe())
            for bad, why in (([b""], b"empty"), ([b"x" * 321], b"321 bytes"),
                             ([some[0], b""], b"key 2 is empty")):
                r = sstpipe("get", one, *bad)
                self.assertEqual(r.code, 2, r.describe())
                self.assertIn(why, r.stderr)
            r = run([sstpipe_bin(), "get", one, "-"], input_bytes=some[0] + b"\n\n")
            self.assertEqual(r.code, 2, r.describe())
            self.assertIn(b"key 2 is empty", r.stderr)

    def test_get_dump_info_verify(self):
        for one, s, keys, dump in self.cases:
            # dump, byte for byte, of the directory and of its manifest.
            for target in (s, os.path.join(s, "tableset.json")):
                r = sstpipe("dump", target, "--jsonl")
                self.assertOk(r)
                self.assertEqual(r.stdout, dump, target)
            # get: every key and a miss beside each, as the table answers,
            # in one process a target (the keys on stdin, looked up in
            # batches over the shards); and one process a probe, of the keys
            # where a lookup changes shard (each shard's first and last key)
            # and the first and last key of all, and of the probes not valid
            # UTF-8 (a key cut inside a character), which get takes only
            # alone (several keys are answered in JSON, which cannot hold
            # them).
            # Exact keys on both sides: a set's shards have no title index
            # (README, Titles), so the table's is put aside for this.
            if os.path.exists(one + ".titles"):
                os.rename(one + ".titles", one + ".titles.aside")
            probes = [p for k in keys for p in (k, k + b" ~", k[:-1]) if p]
            singles = [p for p in probes if not utf8(p)]
            probes = [p for p in probes if utf8(p)]
            a, b = (run([sstpipe_bin(), "get", "--raw", t, "-"], input_bytes=b"\n".join(probes))
                    for t in (one, s))
            self.assertEqual(a.code, 3, a.describe())
            self.assertEqual((a.code, a.stdout), (b.code, b.stdout), "the probes on stdin")
            edges = {0, len(keys) - 1}
            for split in splits_for(keys):
                first = next((i for i, k in enumerate(keys) if k >= split), len(keys))
                edges.update(i for i in (first - 1, first) if 0 <= i < len(keys))
            # Under the sanitizers each edge takes one of the three probes in
            # turn (every process pays LeakSanitizer's scan at exit): every
            # edge and every kind of probe is still looked up alone.
            for n, i in enumerate(sorted(edges)):
                kinds = (keys[i], keys[i] + b" ~", keys[i][:-1])
                singles += [kinds[n % 3]] if SANITIZED else kinds
            for probe in singles:
                if not probe.startswith(b"-") and probe:
                    a, b = sstpipe("get", "--raw", one, probe), sstpipe("get", "--raw", s, probe)
                    self.assertEqual((a.code, a.stdout), (b.code, b.stdout), probe)
            # info: the sums; --json lists the shards.
            i1 = json.loads(sstpipe("info", one, "--json").stdout)
            i2 = json.loads(sstpipe("info", s, "--json").stdout)
            for f in ("records", "key_bytes", "value_bytes", "block_size", "max_value_bytes"):
                self.assertEqual(i1[f], i2[f], f)
            self.assertFalse(i1["table_set"])
            self.assertTrue(i2["table_set"])
            self.assertEqual(len(i2["shards"]), 5)
            self.assertEqual(sum(sh["records"] for sh in i2["shards"]), i1["records"])
            self.assertEqual(i2["shards"][0]["lo"], None)
            self.assertEqual(i2["shards"][-1]["hi"], None)
            self.assertEqual(i2["shards"][-1]["records"], 0)  # past the last key
            text = sstpipe("info", s)
            self.assertOk(text)
            self.assertIn("table set:        5 shards", text.stdout.decode())
            # verify: clean, the report names every shard and the manifest.
            r = sstpipe("verify", s, "--json", self.path("v.json"))
            self.assertOk(r)
            with open(self.path("v.json")) as f:
                v = json.load(f)
            self.assertEqual(v["problems"], 0)
            self.assertEqual([os.path.basename(x["file"]) for x in v["files"]],
                             ["shard-%04d.sst" % i for i in range(5)])
            self.assertTrue(all(x["tableset"] == os.path.join(s, "tableset.json")
                                for x in v["files"]))
            self.assertEqual(sum(x["records"] for x in v["files"]), len(keys))

    def test_profile(self):
        one, s, keys, _ = self.cases[0]
        for extra in ([], ["--misses", "25"], ["--cold"], ["--threads", "2", "--queue-depth", "4"]):
            r = sstpipe("profile", s, "3000", "--seed", "7", "--json", self.path("p.json"), *extra)
            if "--cold" in extra and r.code != 0 and "direct" in r.err_text.lower():
                continue  # a file system without O_DIRECT (tmpfs)
            self.assertOk(r)
            with open(self.path("p.json")) as f:
                p = json.load(f)
            self.assertEqual(p["shards"], 5)
            self.assertEqual(p["records"], len(keys))
            self.assertEqual(p["hits"] + p["misses"], 3000)
            self.assertEqual(p["misses"], p["misses_requested"])
            self.assertIn("table set:   5 shards", r.stdout.decode())

    def test_merge_into_one_table(self):
        for one, s, keys, dump in self.cases:
            out = self.path("merged.sst")
            r = sstpipe("merge", "-v", "-o", out, s)
            self.assertOk(r)
            self.assertIn("blocks_rebuilt=0", r.err_text)
            self.assertEqual(sstpipe("dump", out, "--jsonl").stdout, dump)
            self.assertOk(sstpipe("verify", out))
            canon = self.path("canonical.sst")
            self.assertOk(sstpipe("merge", "--canonical", "-o", canon, s))
            with open(canon, "rb") as a, open(one, "rb") as b:
                self.assertEqual(a.read(), b.read(), "canonical merge of a set != build")
            # A set among other inputs: the table over it wins, same records.
            both = self.path("both.sst")
            self.assertOk(sstpipe("merge", "-o", both, s, one))
            self.assertEqual(sstpipe("dump", both, "--jsonl").stdout, dump)

    def test_compressed_set(self):
        """A set split from a format version 2 table has version 2 shards (each its own
        dictionary) and a version 2 manifest, reads and verifies as the table does, and
        merges back into a version 2 table, alone or beside the table (its blocks rebuilt:
        one dictionary cannot serve the shards' blocks)."""
        src = os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2")
        one = self.path("z.sst")
        checked(sstpipe("build", src, "-o", one, "--block-size", "2K", "--max-bytes", "600",
                        "--set", "sst.compression=zstd"))
        dump = checked(sstpipe("dump", one, "--jsonl")).stdout
        keys = [json.loads(line)["key"].encode() for line in dump.decode().splitlines()]
        s = make_set(one, self.path("zset"), splits_for(keys))
        with open(os.path.join(s, "tableset.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["options"]["format_version"], 2)
        for sh in manifest["shards"]:
            self.assertEqual(parse_info(self, os.path.join(s, sh["file"]))["format_version"], 2)
        self.assertOk(sstpipe("verify", s))
        self.assertEqual(sstpipe("dump", s, "--jsonl").stdout, dump)
        for inputs in ((s,), (s, one)):
            out = self.path("zmerged.sst")
            r = sstpipe("merge", "-v", "-o", out, *inputs)
            self.assertOk(r)
            self.assertEqual(parse_info(self, out)["format_version"], 2)
            self.assertIn("blocks_copied=0", r.err_text)
            self.assertEqual(sstpipe("dump", out, "--jsonl").stdout, dump)
            self.assertOk(sstpipe("verify", out))

    def test_serve(self):
        one, s, keys, dump = self.cases[0]
        recs = [(json.loads(line)["key"].encode(), json.loads(line)["value"].encode())
                for line in dump.decode().splitlines()]
        # A nightly directory whose current build's table is a set.
        nightly = self.path("nightly")
        os.makedirs(os.path.join(nightly, "builds", "b1"))
        shutil.copytree(s, os.path.join(nightly, "builds", "b1", "table.sst"))
        os.symlink("builds/b1", os.path.join(nightly, "current"))
        for target in (s, nightly):
            srv = Server(target).start(self.path("serve.err"))
            try:
                c = srv.client()
                for k, v in recs:
                    status, _, body = c.get(k)
                    self.assertEqual((status, body), (200, v), k)
                    self.assertEqual(c.get(k + b"\x00")[0], 404)
                # Prefix pages of every key, and prefixes around the splits.
                got, start = [], None
                while True:
                    status, _, page = c.prefix(b"", limit=9, start=start)
                    self.assertEqual(status, 200)
                    got += [(r["key"].encode(), r["value"].encode()) for r in page["records"]]
                    if not page["more"]:
                        break
                    start = page["next"].encode()
                self.assertEqual(got, recs)
                for p in {k[:n] for k in splits_for(keys)[:3] for n in (1, 2, 3)}:
                    want = [(k, v) for k, v in recs if k.startswith(p)][:50]
                    status, _, page = c.prefix(p, limit=50)
                    self.assertEqual([(r["key"].encode(), r["value"].encode())
                                      for r in page["records"]], want, p)
                status, _, body = c.request("/v1/info")
                info = json.loads(body)
                self.assertTrue(info["table_set"])
                self.assertEqual(info["records"], len(recs))
                self.assertEqual(len(info["shards"]), 5)
                # Names only: the server's directories are not the client's business.
                name = os.path.basename(os.path.realpath(s if target == s else os.path.join(
                    nightly, "current", "table.sst")))
                self.assertEqual(info["path"], name)
                for shard in info["shards"]:
                    self.assertTrue(shard["path"].startswith(name + "/"), shard)
                    self.assertEqual(shard["path"].count("/"), 1, shard)
                c.conn.close()
            finally:
                self.assertEqual(srv.stop(), 0, srv.stderr())

    # ---------------------------------------------------------------- broken sets

    def broken(self, name):
        one, s, keys, _ = self.cases[0]
        d = self.path(name)
        shutil.copytree(s, d)
        return d, keys

    def edit(self, d, fn):
        p = os.path.join(d, "tableset.json")
        with open(p) as f:
            m = json.load(f)
        fn(m)
        with open(p, "w") as f:
            json.dump(m, f)

    def refused(self, d, names, what, commands=("get", "dump", "info", "profile")):
        for cmd in commands:
            args = {"get": ["get", d, "Anarchism"], "dump": ["dump", d],
                    "info": ["info", d], "profile": ["profile", d, "10"]}[cmd]
            r = sstpipe(*args)
            self.assertNotEqual(r.code, 0, f"{what}: {cmd} accepted it")
            check_error_line(self, r, names, what=f"{what}: {cmd}")
            self.assertIn(what, r.err_text, cmd)
            self.assertEqual(r.stdout, b"", cmd)

    def test_missing_shard(self):
        d, _ = self.broken("missing")
        os.unlink(os.path.join(d, "shard-0002.sst"))
        self.refused(d, ["shard-0002.sst"], "missing or unreadable")
        r = sstpipe("verify", d)
        self.assertEqual(r.code, 1, r.describe())
        self.assertIn("shard-0002.sst", r.err_text)

    def test_bad_ranges(self):
        def overlap(m):
            m["shards"][2]["lo"] = m["shards"][1]["lo"]
        d, _ = self.broken("overlap")
        self.edit(d, overlap)
        self.refused(d, ["tableset.json"], "ranges not contiguous: its lo is below (overlap)")

        def gap(m):
            m["shards"][2]["lo"] = m["shards"][2]["lo"] + "00"
        d, _ = self.broken("gap")
        self.edit(d, gap)
        self.refused(d, ["tableset.json"], "ranges not contiguous: its lo is above (gap)")

        def badhex(m):
            m["shards"][1]["hi"] = "4G"
            m["shards"][2]["lo"] = "4G"
        d, _ = self.broken("badhex")
        self.edit(d, badhex)
        self.refused(d, ["tableset.json"], "\"hi\" is not lowercase hex")
        r = sstpipe("verify", d)
        self.assertEqual(r.code, 1)
        check_error_line(self, r, ["tableset.json"], what="verify of a bad manifest")

    def test_key_outside_its_range(self):
        # Both bounds between shards 1 and 2 moved up past shard 2's first keys: the
        # manifest is consistent, shard 2 holds keys below its lo.
        d, keys = self.broken("outside")
        with open(os.path.join(d, "tableset.json")) as f:
            lo = bytes.fromhex(json.load(f)["shards"][2]["lo"])
        above = [k for k in keys if k >= lo][3]

        def move(m):
            m["shards"][1]["hi"] = above.hex()
            m["shards"][2]["lo"] = above.hex()
        self.edit(d, move)
        self.refused(d, ["shard-0002.sst"], "lies outside its range")
        r = sstpipe("verify", d)
        self.assertEqual(r.code, 3, r.describe())
        out = r.stdout.decode()
        self.assertIn("shard-0002.sst: block 0 at byte", out)
        self.assertIn("lies outside the shard's range", out)
        self.assertEqual(out.count("lies outside the shard's range"), 3)

    def test_merge_refuses_a_broken_set(self):
        """merge opens a set's shards one at a time, each held against the
        manifest as it opens and as its first and last blocks are read: a
        broken shard fails the merge naming it, and nothing is written."""
        d, keys = self.broken("merge-outside")
        with open(os.path.join(d, "tableset.json")) as f:
            lo = bytes.fromhex(json.load(f)["shards"][2]["lo"])
        above = [k for k in keys if k >= lo][3]

        def move(m):
            m["shards"][1]["hi"] = above.hex()
            m["shards"][2]["lo"] = above.hex()
        self.edit(d, move)

        def miscount(m):
            m["shards"][3]["records"] += 1
        m, _ = self.broken("merge-miscount")
        self.edit(m, miscount)
        for s, names, what in ((d, ["shard-0002.sst"], "its first key"),
                               (m, ["shard-0003.sst"], "its footer says")):
            out = self.path("merged.sst")
            r = sstpipe("merge", "-o", out, s)
            self.assertEqual(r.code, 1, r.describe())
            check_error_line(self, r, names, what="merge of a broken set")
            self.assertIn(what, r.err_text)
            self.assertFalse(os.path.exists(out), "merge wrote an output")
            self.assertEqual([n for n in os.listdir(self.tmp) if ".tmp." in n], [])

    def test_damaged_block(self):
        d, keys = self.broken("damaged")
        shard = os.path.join(d, "shard-0001.sst")
        info = json.loads(sstpipe("info", shard, "--json").stdout)
        self.assertGreaterEqual(info["data_blocks"], 3)
        with open(shard, "r+b") as f:
            f.seek(info["block_size"] + 10)  # block 1: neither the first nor the last
            b = f.read(1)
            f.seek(info["block_size"] + 10)
            f.write(bytes([b[0] ^ 0x20]))
        r = sstpipe("dump", d)
        self.assertEqual(r.code, 1)
        check_error_line(self, r, ["shard-0001.sst: block 1 at byte"], what="dump")
        # The keys of that block fail naming it; every other key still answers.
        bad = sstpipe("verify", d)
        self.assertEqual(bad.code, 3)
        self.assertIn("shard-0001.sst: block 1 at byte", bad.stdout.decode())
        self.assertIn("file checksum mismatch", bad.stdout.decode())
        # Every key of the damaged shard is asked for; of the other shards
        # every key, or a tenth in a sanitized build, where each get costs
        # many times more and their gets take test_get_dump_info_verify's
        # paths.
        with open(os.path.join(d, "tableset.json")) as f:
            shard = json.load(f)["shards"][1]
        lo, hi = bytes.fromhex(shard["lo"]), bytes.fromhex(shard["hi"])
        step = 10 if SANITIZED else 1
        failed = 0
        for k in [k for i, k in enumerate(keys) if lo <= k < hi or i % step == 0]:
            r = sstpipe("get", d, "--", k)
            if r.code == 1:  # get: could not answer (a found/absent answer is 0/3)
                check_error_line(self, r, ["shard-0001.sst: block 1 at byte"], what="get")
                failed += 1
            else:
                self.assertEqual(r.code, 0, r.describe())
        self.assertGreater(failed, 0)
        self.assertLess(failed, len(keys) // 4)

    def test_truncated_manifest_and_no_manifest(self):
        d, _ = self.broken("truncated")
        p = os.path.join(d, "tableset.json")
        with open(p, "rb") as f:
            data = f.read()
        with open(p, "wb") as f:
            f.write(data[: len(data) // 2])
        self.refused(d, ["tableset.json"], "not valid JSON")
        os.unlink(p)
        r = sstpipe("get", d, "Anarchism")
        self.assertNotEqual(r.code, 0)
        check_error_line(self, r, [d], what="no manifest")
        self.assertIn("not a table set", r.err_text)


if __name__ == "__main__":
    unittest.main()
