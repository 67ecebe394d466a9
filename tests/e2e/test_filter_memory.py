"""test_filter_memory.py: a compressed table's writer holds no memory a key.

Format version 2's filter for absent keys (stages/sst/FORMAT.md, "The
filter") is sized by the count of keys, known only at the end, so the writer
keeps each key's 8-byte hash until then: in a small buffer, the rest on a
scratch file beside the output (stages/sst/table_writer.c), not in memory,
where at English Wikipedia's 22.8 M records they were 180 MB outside any
budget. `sstpipe write` of 100,000 and of 800,000 tiny records (without a
dictionary, whose held first values would grow too) must peak within
7 MiB of each other: the 5.6 MB of the larger table's hashes in memory do
not fit beside the filter's own 10 bits a key and the rest. With a
dictionary, trained by `write` on the first records, held until their keys
and values fill 100 times its size, the larger write peaks within 12 MiB
of its peak without (the held records and ZDICT's training; counting the
values alone held several times the bound, since these records' keys are
twice their values). The tables are checked to hold their records, and no
scratch file is left.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import struct
import unittest

from sstpipe_e2e import RS_MAGIC, E2ETest, sstpipe

MIB = 1 << 20


def record_stream(n):
    """A sorted record stream (recstream.h) of n records, 8-byte keys and values of a few bytes."""
    out = [RS_MAGIC + struct.pack("<IIII", 1, 1, 100, 0)]
    for i in range(n):
        k, v = b"%08d" % i, b"v%d" % (i * 7919 % 1000)
        out.append(b"R" + struct.pack("<II", len(k), len(v)) + k + v)
    out.append(b"E" + struct.pack("<Q", n))
    return b"".join(out)


class FilterMemoryTest(E2ETest):
    def write(self, n, dictionary="0"):
        out_dir = self.path(f"out-{n}-{dictionary}")
        os.makedirs(out_dir, exist_ok=True)
        out = os.path.join(out_dir, "t.sst")
        r = sstpipe("write", "-o", out, "--set", "sst.compression=zstd", "--set",
                    f"sst.dictionary_size={dictionary}", input_bytes=record_stream(n),
                    measure_rss=True)
        self.assertOk(r)
        self.assertEqual(os.listdir(out_dir), ["t.sst"], "a scratch file was left")
        info = sstpipe("info", out)
        self.assertOk(info)
        self.assertRegex(info.stdout.decode(), rf"(?m)^records: +{n}$")
        return r.maxrss_kib * 1024

    def test_writer_memory_does_not_grow_a_key(self):
        if "ASAN_OPTIONS" in os.environ:
            self.skipTest("the sanitizers' shadow memory and quarantine are in RSS")
        small, large = self.write(100000), self.write(800000)
        what = (f"peak RSS of write: {small / MIB:.1f} MiB at 100,000 records, "
                f"{large / MIB:.1f} MiB at 800,000")
        print(what)
        self.assertLess(large - small, 7 * MIB, what)
        # The first records, held for the dictionary, are bounded by their
        # keys' and values' bytes, not by their values' alone.
        trained = self.write(800000, "16K")
        what = (f"peak RSS of write of 800,000 records: {large / MIB:.1f} MiB without a "
                f"dictionary, {trained / MIB:.1f} MiB with one")
        print(what)
        self.assertLess(trained - large, 12 * MIB, what)


if __name__ == "__main__":
    unittest.main()
