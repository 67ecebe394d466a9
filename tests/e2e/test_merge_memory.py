"""test_merge_memory.py: `sstpipe merge`'s memory does not grow with the table.

Issue 15 asks for a peak RSS under 64 MiB at any table size. The inputs are
read with streamed readers (their indexes checked at open and then read
entry after entry through a fixed buffer, stages/sst/table_check.h) and the
output's index goes on to a scratch file beside the output once 256 KiB of
it are written (table_options.index_memory), so what a merge holds is its
buffers alone.

The tables here have 512-byte blocks and keys of 299 bytes, so each block
holds one record and its index entry takes 301 bytes: 100,000 blocks (a
78 MiB table) have an index of 29 MiB, as large as that of about a million
blocks of ordinary titles, and a merge that held its inputs' and its
output's indexes (as merge did before) peaks at about 77 MiB. The test
merges a 1% delta into such a table and into one a quarter of its size:
the peak RSS stays under 64 MiB and grows by less than 4 MiB between them
(under AddressSanitizer, whose shadow memory and quarantine are in RSS,
only the growth is checked, with more room). The output is also checked
against the records it must hold: with --canonical it is byte for byte the
table `sstpipe write` makes of the merged records (the spilled index copied
back exactly), without it it verifies and dumps the same records.

The same holds with the base as a table set (tests/make_tableset.c cuts it
into four shards): merge reads a set's shards one at a time, each streamed
and closed before the next opens, so the peak is that of a table merge and
does not grow with the set (a merge that opened the set through the
library, which holds every shard's index, grew by 13 MiB from 25,000 to
100,000 blocks here), and the output holds the same records.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import shutil
import struct
import tempfile
import unittest

from sstpipe_e2e import RS_MAGIC, E2ETest, env_path, run, sstpipe

MIB = 1 << 20
KEY_PAD = 290  # keys of 9 digits and 290 bytes: 299 bytes, one record a 512-byte block


def key(i, fill=b"k"):
    return b"%09d" % i + fill * KEY_PAD


def write_rs(path, records, max_value_bytes=100):
    """Writes a sorted record stream (recstream.h) of records, an iterable."""
    n = 0
    with open(path, "wb") as f:
        f.write(RS_MAGIC + struct.pack("<IIII", 1, 1, max_value_bytes, 0))
        for k, v in records:
            f.write(b"R" + struct.pack("<II", len(k), len(v)) + k + v)
            n += 1
        f.write(b"E" + struct.pack("<Q", n))


def long_key_tables(d, n, every=100):
    """Writes into d a base table of n long-key records (512-byte blocks, one
    record a block), a delta changing every `every`th of its records and
    adding one new record after each of those, and the table of the merged
    records; returns their paths (base, delta, merged)."""

    def base():
        return ((key(i), b"v%07d" % i) for i in range(n))

    def delta():
        for i in range(0, n, every):
            yield key(i), b"w%07d" % i
            yield key(i, b"l"), b"new%05d" % i

    def merged():
        for i in range(n):
            if i % every == 0:
                yield key(i), b"w%07d" % i
                yield key(i, b"l"), b"new%05d" % i
            else:
                yield key(i), b"v%07d" % i

    paths = []
    for name, recs in (("base", base()), ("delta", delta()), ("merged", merged())):
        rs = os.path.join(d, name + ".rs")
        write_rs(rs, recs)
        sst = os.path.join(d, f"{name}.sst")
        r = sstpipe("write", "--block-size", "512", rs, "-o", sst)
        if r.code != 0:
            raise AssertionError("write failed:" + r.describe())
        os.unlink(rs)
        paths.append(sst)
    return paths


def as_set(table, n, shards=4):
    """Cuts table (of long_key_tables' n keys) into a set of shards of
    near-equal key ranges beside it; returns the set's directory."""
    out = table[:-len(".sst")] + ".set"
    splits = [key(n * i // shards).hex() for i in range(1, shards)]
    r = run([env_path("MAKE_TABLESET"), table, out] + splits)
    if r.code != 0:
        raise AssertionError("make_tableset failed:" + r.describe())
    return out


class MergeMemory(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-merge-memory-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.tables = {}
        cls.sets = {}
        for n in (25000, 100000):
            d = os.path.join(cls.classtmp, str(n))
            os.mkdir(d)
            cls.tables[n] = long_key_tables(d, n)
            cls.sets[n] = as_set(cls.tables[n][0], n)

    def merge(self, n, *opts, base_set=False):
        base, delta, _ = self.tables[n]
        if base_set:
            base = self.sets[n]
        out_dir = self.path(f"out-{n}")
        os.makedirs(out_dir, exist_ok=True)
        out = os.path.join(out_dir, "merged.sst")
        r = sstpipe("merge", "-v", *opts, "-o", out, base, delta, measure_rss=True)
        self.assertOk(r)
        self.assertEqual(os.listdir(out_dir), ["merged.sst"], "a scratch file was left")
        return out, r

    def test_peak_rss_does_not_grow_with_the_table(self):
        rss = {}
        for n in self.tables:
            _, r = self.merge(n)
            rss[n] = r.maxrss_kib * 1024
        small, large = rss[25000], rss[100000]
        asan = "ASAN_OPTIONS" in os.environ
        what = (f"peak RSS of merge: {small / MIB:.1f} MiB at 25,000 blocks, "
                f"{large / MIB:.1f} MiB at 100,000")
        print(what)
        self.assertLess(large - small, (16 if asan else 4) * MIB, what)
        if not asan:
            self.assertLess(large, 64 * MIB, what)

    def test_set_input_peak_rss_does_not_grow_with_the_set(self):
        rss = {}
        for n in self.tables:
            _, r = self.merge(n, base_set=True)
            rss[n] = r.maxrss_kib * 1024
        small, large = rss[25000], rss[100000]
        asan = "ASAN_OPTIONS" in os.environ
        what = (f"peak RSS of merge of a 4-shard set: {small / MIB:.1f} MiB at 25,000 blocks, "
                f"{large / MIB:.1f} MiB at 100,000")
        print(what)
        self.assertLess(large - small, (16 if asan else 4) * MIB, what)
        if not asan:
            self.assertLess(large, 64 * MIB, what)
        out, r = self.merge(100000, base_set=True)
        self.assertOk(sstpipe("verify", out))
        got = sstpipe("dump", out)
        want = sstpipe("dump", self.tables[100000][2])
        self.assertOk(got)
        self.assertTrue(got.stdout == want.stdout, "merge of the set holds other records")

    def test_spilled_index_gives_the_same_table(self):
        base, _, merged = self.tables[100000]
        canon, _ = self.merge(100000, "--canonical")
        with open(canon, "rb") as a, open(merged, "rb") as b:
            self.assertTrue(a.read() == b.read(),
                            "merge --canonical differs from `write` of the merged records")
        out, r = self.merge(100000)
        self.assertIn("blocks_copied=", r.err_text)
        self.assertOk(sstpipe("verify", out))
        got = sstpipe("dump", out)
        want = sstpipe("dump", merged)
        self.assertOk(got)
        self.assertTrue(got.stdout == want.stdout, "merge holds other records than expected")


if __name__ == "__main__":
    unittest.main()
