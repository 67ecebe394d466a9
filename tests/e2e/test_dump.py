"""tests/e2e/test_dump.py: `dump`'s listing flags, --prefix, --from, --to, --limit and
--keys-only, on tables of the corpora and on a table set of each.

Each selection is held against the whole dump filtered in Python by the flags' documented
meaning (a prefix; --from inclusive, --to exclusive, as the library's ranges; the first N;
{"key": ...} alone), byte for byte in the line format, so a bound off by one, a prefix that
ends a key early or late, a limit one short or over, and a value left in --keys-only each
show. The bounds are keys of the table (found and excluded or included exactly), strings
between keys, a multi-byte character's prefix, and bounds across the set's shard splits.
Bad values are refused before any work: exit 2, one line naming the flag.
"""
import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import shutil
import tempfile
import unittest

from sstpipe_e2e import E2ETest, check_error_line, corpora_dir, env_path, parse_dump, run, sstpipe

CORPORA = ["enwiki-206pages.xml.bz2", "ltgwiki-2004pages.xml"]


def line(key, value=None):
    """One line of dump's output, as dump_cmd.c writes it (UTF-8 as is)."""
    text = json.dumps(key.decode(), ensure_ascii=False)
    if value is not None:
        text += ", \"value\": " + json.dumps(value.decode(), ensure_ascii=False)
    return ("{\"key\": " + text + "}\n").encode()


def expected(records, prefix=None, start=None, stop=None, limit=None, keys_only=False):
    """What dump prints for the flags, from the whole table's records."""
    chosen = [(k, v) for k, v in records
              if (prefix is None or k.startswith(prefix)) and (start is None or k >= start)
              and (stop is None or k < stop)]
    if limit is not None:
        chosen = chosen[:limit]
    return b"".join(line(k, None if keys_only else v) for k, v in chosen)


def flags(prefix=None, start=None, stop=None, limit=None, keys_only=False):
    args = []
    for name, v in (("--prefix", prefix), ("--from", start), ("--to", stop)):
        if v is not None:
            args += [name, v]
    if limit is not None:
        args += ["--limit", str(limit)]
    if keys_only:
        args.append("--keys-only")
    return args


def selections(keys):
    """Flag sets over the sorted keys: bounds at, between and around keys."""
    n = len(keys)
    a, b, c = keys[n // 5], keys[n // 2], keys[4 * n // 5]
    after_a = a + b"\x01"  # between a and the key after it (argv holds no NUL)
    out = [
        dict(start=a), dict(stop=a), dict(start=a, stop=b), dict(start=after_a, stop=c),
        dict(start=keys[0], stop=keys[-1]), dict(start=keys[-1]), dict(stop=keys[0]),
        dict(start=keys[-1] + b"\xff"), dict(limit=1), dict(limit=7), dict(limit=n),
        dict(limit=n + 1), dict(keys_only=True), dict(start=b, limit=3, keys_only=True),
        dict(prefix=b"\xff"), dict(prefix=b[:1]), dict(prefix=b[:2], limit=2), dict(prefix=c),
        dict(prefix=b[:1], start=b, stop=c), dict(prefix=b[:1], start=a, stop=b + b"\x01"),
    ]
    multi = next((k for k in keys if k[0] >= 0xc0), None)
    if multi:  # the lead byte of a multi-byte character, and the whole character
        width = 2 if multi[0] < 0xe0 else 3 if multi[0] < 0xf0 else 4
        out += [dict(prefix=multi[:1]), dict(prefix=multi[:width], keys_only=True)]
    return out


class DumpSelectTest(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.shared = tempfile.mkdtemp(prefix="sstpipe-e2e-dump-")
        cls.cases = []
        for name in CORPORA:
            src = os.path.join(corpora_dir(), name)
            if not os.path.exists(src):
                continue
            table = os.path.join(cls.shared, name + ".sst")
            r = sstpipe("build", src, "-o", table, "-q")
            assert r.code == 0, r.describe()
            whole = sstpipe("dump", table)
            assert whole.code == 0, whole.describe()
            cls.cases.append((name, table, whole.stdout))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shared, True)

    def setUp(self):
        super().setUp()
        if not self.cases:
            self.skipTest("no corpus in " + corpora_dir())

    def check(self, path, records, what, **sel):
        r = sstpipe("dump", path, *flags(**sel))
        self.assertOk(r)
        self.assertEqual(r.stdout, expected(records, **sel), f"{what}: {sel}" + r.describe())

    def test_selections(self):
        for name, table, whole in self.cases:
            records = parse_dump(self, whole)
            self.assertEqual(whole, expected(records), name)
            keys = [k for k, _ in records]
            for sel in selections(keys):
                with self.subTest(corpus=name, **{k: repr(v) for k, v in sel.items()}):
                    self.check(table, records, name, **sel)

    def test_table_set(self):
        """A set split at three keys answers every selection as the one table does; the
        bounds at the splits cross from one shard into the next."""
        for name, table, whole in self.cases:
            records = parse_dump(self, whole)
            keys = [k for k, _ in records]
            n = len(keys)
            splits = [keys[n // 4], keys[n // 2], keys[3 * n // 4]]
            out = self.path(name + ".set")
            r = run([env_path("MAKE_TABLESET"), table, out] + [k.hex() for k in splits])
            self.assertOk(r)
            at_splits = [dict(start=splits[0], stop=splits[1]),
                         dict(start=keys[n // 4 - 1], stop=keys[n // 2 + 1], keys_only=True),
                         dict(start=keys[n // 2 - 2], limit=5), dict(prefix=splits[1][:1])]
            for sel in selections(keys) + at_splits:
                with self.subTest(corpus=name, **{k: repr(v) for k, v in sel.items()}):
                    self.check(out, records, name + " as a set", **sel)

    def test_refused(self):
        """Each bad value: exit 2, one line naming the flag, nothing on stdout."""
        name, table, whole = self.cases[0]
        first = parse_dump(self, whole)[0][0]
        long_key = b"k" * 321
        for args, flag in (
                (["--limit", "0"], "--limit"), (["--limit", "-1"], "--limit"),
                (["--limit", "x"], "--limit"), (["--limit", "5000000000"], "--limit"),
                (["--limit", ""], "--limit"), (["--limit", "1", "--limit", "2"], "--limit"),
                (["--prefix", ""], "--prefix"), (["--from", ""], "--from"), (["--to", ""], "--to"),
                (["--prefix", long_key], "--prefix"), (["--to", long_key], "--to"),
                (["--from", "A", "--from", "B"], "--from"),
                (["--from", "B", "--to", "A"], "--from"), (["--from", first, "--to", first], "--to"),
                (["--limit"], "--limit"), (["--keys-only=1"], "--keys-only")):
            with self.subTest(args=args):
                r = sstpipe("dump", table, *args)
                self.assertEqual(r.code, 2, r.describe())
                self.assertEqual(r.stdout, b"", r.describe())
                check_error_line(self, r, names=[flag], what=" ".join(map(str, args)))


if __name__ == "__main__":
    unittest.main()
