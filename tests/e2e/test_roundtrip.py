"""test_roundtrip.py: every dump, in every input form, round-trips exactly.

For each corpus in SSTPIPE_CORPORA (and a generated edge-case dump) and each
input form (plain, gz, bz2, bz2 multistream, xz, zst, UTF-16), `sstpipe build`
then `sstpipe dump --jsonl` must give exactly the records the independent
reader (reference.py) computes, keys in memcmp order; `get` must find sampled
keys with exactly their value and report absent keys (exit 3), all of them
asked in one process (`get -`, the lookups batched) and the first and last
key, one between, one not ASCII and the absent ones each alone; `info` must
count the same records. Then the same with --max-bytes 100 and 4096 and with
block sizes 512, 4K, 64K and 1M. The forms of a dump build byte-identical
tables: dump, info and the gets run once per table's bytes and the options
it was built with, as the same commands on the same bytes give the same
answers (a form whose table differs by a byte is checked in full, and so is
a table built with other options, should they leave its bytes alone).

In a sanitized build every dump still round-trips as plain XML, the other
forms run on the largest corpus and the edge-case dump, and the option sets
on the edge-case dump: the plain suite judges every combination, and the
sanitizers look for memory errors on each decoder's paths, which those two
take (many buffer refills, and every edge case), and on the writer's, which
the edge cases take at each option set (blocks filled at the small sizes,
one left partial at the largest); a table's gets there are those of a
key alone.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import hashlib
import json
import os
import random
import re
import unittest

import reference
from sstpipe_e2e import (FORMS, SANITIZED, E2ETest, every_form_of, parse_info, run, sources, sstpipe,
                         sstpipe_bin)

_refs = {}
# {(sha256 of a table's bytes, the block size, cluster size and value cap
# it was built with): the reference it was checked against}.
_checked = {}


def expected(name, xml_fn, max_bytes):
    """The reference records of a source, computed once per (source, max_bytes)."""
    key = (name, max_bytes)
    if key not in _refs:
        import io

        _refs[key] = reference.read_records(io.BytesIO(xml_fn()), max_bytes)
    return _refs[key]


def _norm(name):
    return re.sub(r"[^a-z0-9]", "", name.lower())


def info_field(test, info, name):
    """An info --json field by its name in any spelling (block_size, blockSize)."""
    for k, v in info.items():
        if _norm(k) == _norm(name):
            return v
    test.fail(f"info --json has no '{name}' field: {info}")


class RoundTrip(E2ETest):
    def roundtrip(self, src, ref, opts=(), block_size=8192, cluster_size=4096,
                  max_bytes=1024, what=""):
        out = self.path("out.sst")
        self.build(src, out, *opts)
        with open(out, "rb") as f:
            checked = (hashlib.sha256(f.read()).hexdigest(), block_size, cluster_size, max_bytes)
        if _checked.get(checked) is ref:
            return  # these bytes, built as asked, were checked against ref
        got = self.dump(out)
        self.assertMemcmpOrder([k for k, _ in got], what)
        self.assertRecordsEqual(got, ref.records, what)

        info = parse_info(self, out)
        self.assertEqual(info_field(self, info, "records"), len(ref.records), what)
        self.assertEqual(info_field(self, info, "block_size"), block_size, what)
        self.assertEqual(info_field(self, info, "cluster_size"), cluster_size, what)
        self.assertEqual(info_field(self, info, "max_value_bytes"), max_bytes, what)
        size = os.path.getsize(out)
        self.assertEqual(info_field(self, info, "file_size"), size, f"{what}: info file_size")
        blocks = info_field(self, info, "data_blocks")
        self.assertGreaterEqual(blocks, 1 if ref.records else 0, what)
        self.assertLessEqual(blocks * block_size, size, f"{what}: data blocks exceed the file")
        self.assertEqual(size % cluster_size, 0,
                         f"{what}: file size {size} is not a multiple of the cluster size")
        text = sstpipe("info", out)
        self.assertOk(text)
        self.assertIn(str(len(ref.records)).encode(), text.stdout, "info (text) record count")
        self.check_gets(out, ref, what)
        _checked[checked] = ref

    def check_gets(self, sst, ref, what):
        records = ref.records
        rng = random.Random(len(records))
        sample = {0, len(records) - 1}
        sample.update(rng.sample(range(len(records)), min(8, len(records))))
        sample.update(i for i, (k, _) in enumerate(records) if max(k) > 0x7F)
        picked = sorted(sample)[:40]
        keys = {k for k, _ in records}
        absent = [b"!!! absent (sorts first)", records[0][0] + b" (absent)",
                  records[len(records) // 2][0] + b"\xc2\xa0absent",
                  "\U0010FFFF absent (sorts last)".encode()]
        if not SANITIZED:
            # Every picked key and the absent ones in one process (`get -`:
            # their lookups batched, one JSON line a key in their order, the
            # value null for an absent one), each answer checked.
            asked = [records[i][0] for i in picked] + absent
            values = dict(records)
            r = run([sstpipe_bin(), "get", "--raw", sst, "-"], input_bytes=b"\n".join(asked))
            want = [{"key": k.decode(), "value": values[k].decode() if k in values else None}
                    for k in asked]
            self.assertEqual(r.code, 3, f"{what}: get of {len(asked)} keys" + r.describe())
            self.assertEqual([json.loads(line) for line in r.stdout.split(b"\n")[:-1]], want,
                             f"{what}: get of {len(asked)} keys" + r.describe())
        # A key alone is a process of its own (and dear under the
        # sanitizers): the first and the last key, one between them and one
        # not ASCII, and the absent ones.
        wide = [i for i in picked if max(records[i][0]) > 0x7F]
        picked = sorted({0, picked[len(picked) // 2], len(records) - 1, *wide[:1]})
        for i in picked:
            key, value = records[i]
            r = sstpipe("get", "--raw", sst, "--", key)
            self.assertEqual((r.code, r.stdout), (0, value + b"\n"),
                             f"{what}: get {key!r}" + r.describe())
        for key in absent:
            self.assertNotIn(key, keys)
            r = sstpipe("get", "--raw", sst, "--", key)
            self.assertEqual((r.code, r.stdout), (3, b""),
                             f"{what}: get of absent key {key!r}" + r.describe())


def _add_tests():
    """One test per (source, form) and per (source, option set), so -v shows
    exactly which combination fails."""
    try:
        srcs = sources()
    except unittest.SkipTest as e:
        reason = str(e)

        def test_skipped(self):
            self.skipTest(reason)

        RoundTrip.test_skipped = test_skipped
        return

    for name, xml_fn, orig in srcs:
        full = every_form_of(name)
        for form, (suffix, encode) in FORMS.items():
            if not full and form != "plain":
                continue
            def test(self, name=name, xml_fn=xml_fn, form=form, suffix=suffix, encode=encode):
                src = self.write_file("input" + suffix, encode(xml_fn()))
                self.roundtrip(src, expected(name, xml_fn, 1024), what=f"{name} as {form}")

            setattr(RoundTrip, f"test_{name}__{form}", test)

        variants = [
            ("max_bytes_100", ["--max-bytes", "100"], 100, 8192, 4096),
            ("max_bytes_4096", ["--max-bytes", "4096"], 4096, 8192, 4096),
            ("block_512", ["--block-size", "512", "--max-bytes", "16"], 16, 512, 4096),
            ("block_4K", ["--block-size", "4K"], 1024, 4096, 4096),
            ("block_64K", ["--block-size", "64K"], 1024, 65536, 4096),
            ("block_1M", ["--block-size", "1M", "--max-bytes", "4096"], 4096, 1 << 20, 4096),
            ("block_4K_cluster_64K", ["--block-size", "4K", "--cluster-size", "64K"], 1024,
             4096, 65536),
        ]
        with_options = full and (not SANITIZED or name == "edge")
        for vname, opts, max_bytes, block, cluster in variants if with_options else []:
            def test(self, name=name, xml_fn=xml_fn, orig=orig, opts=opts, max_bytes=max_bytes,
                     block=block, cluster=cluster, vname=vname):
                src = orig or self.write_file("input.xml", xml_fn())
                self.roundtrip(src, expected(name, xml_fn, max_bytes), opts, block, cluster,
                               max_bytes, what=f"{name} with {' '.join(opts)}")

            setattr(RoundTrip, f"test_{name}__{vname}", test)


_add_tests()

if __name__ == "__main__":
    unittest.main()
