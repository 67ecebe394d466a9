"""tests/python/test_sstpipe_set.py: the `sstpipe` Python module on a table set
(stages/sst/TABLESET.md): a table built from a corpus dump, split into a set of
four shards at keys of the table and a prefix of one (tests/make_tableset.c),
answers as the table does: every key and misses (one by one and in a batch,
get_many), len, iteration, prefix and
range scans that cross shard boundaries, info (the sums, is_set, shards), the
shard list with its bounds; opening the directory or its tableset.json; a
missing shard raises sstpipe.Error naming the manifest and the file.
"""
import json
import os
import subprocess

import pytest

import sstpipe

SSTPIPE = os.environ["SSTPIPE"]
MAKE_TABLESET = os.environ["MAKE_TABLESET"]
CORPORA = os.environ["SSTPIPE_CORPORA"]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("sstpipe-py-set")
    one = str(d / "one.sst")
    subprocess.run([SSTPIPE, "build", os.path.join(CORPORA, "enwiki-206pages.xml.bz2"), "-o",
                    one, "--block-size", "4K"], check=True)
    out = subprocess.run([SSTPIPE, "dump", one], check=True, capture_output=True).stdout
    keys = [json.loads(line)["key"].encode() for line in out.decode().splitlines()]
    # A key, the shortest prefix of a key that still sorts after the key
    # before it (a split inside a run of keys sharing it), and a key.
    n = next(n for n in range(1, len(keys[100]) + 1) if keys[100][:n] > keys[99])
    splits = [keys[40], keys[100][:n], keys[150]]
    assert splits == sorted(splits) and len(set(splits)) == 3
    s = str(d / "set")
    subprocess.run([MAKE_TABLESET, one, s] + [k.hex() for k in splits], check=True)
    return one, s, keys, splits


def test_set_reads_as_the_table(pair):
    one, s, keys, splits = pair
    with sstpipe.open(one) as t, sstpipe.open(s) as u:
        assert len(u) == len(t) == len(keys)
        assert list(u.items()) == list(t.items())
        assert list(u) == keys
        asked = keys + [k + b"\x00" for k in keys] + keys[::7]
        assert u.get_many(asked) == t.get_many(asked) == [t.get(k) for k in asked]
        for k in keys:
            assert u[k] == t[k]
            assert k in u
            assert u.get(k + b"\x00") is None
            assert (k[:-1] in u) == (k[:-1] in t)
        for p in [b"A", b"Al", splits[1], splits[1][:-1], keys[150][:1], keys[40][:2], b"", b"\xff"]:
            assert list(u.prefix(p)) == list(t.prefix(p))
        for lo, hi in [(None, None), (keys[30], keys[160]), (splits[1], None), (None, splits[0]),
                       (splits[0], splits[2])]:
            assert list(u.range(lo, hi)) == list(t.range(lo, hi))
        for name in ["records", "key_bytes", "value_bytes", "block_size", "max_value_bytes"]:
            assert u.info[name] == t.info[name]
        assert u.info["is_set"] is True and u.info["shards"] == 4
        assert t.info["is_set"] is False and t.info["shards"] == 1
        # Its shards have no title index beside them (make_tableset without --titles).
        assert t.has_titles is True and u.has_titles is False
        shards = u.shards
        assert [sh["lo"] for sh in shards] == [None] + splits
        assert [sh["hi"] for sh in shards] == splits + [None]
        assert sum(sh["records"] for sh in shards) == len(keys)
        assert [os.path.basename(sh["path"]) for sh in shards] == [
            "shard-%04d.sst" % i for i in range(4)]
        assert t.shards == [{"path": one, "lo": None, "hi": None, "records": len(keys),
                             "file_size": os.path.getsize(one)}]
    with sstpipe.open(os.path.join(s, "tableset.json"), decode=True) as u:
        assert len(u) == len(keys)
        assert u[keys[100].decode()] is not None


def test_missing_shard(pair, tmp_path):
    one, s, keys, splits = pair
    broken = str(tmp_path / "broken")
    subprocess.run([MAKE_TABLESET, one, broken, splits[0].hex()], check=True)
    os.unlink(os.path.join(broken, "shard-0001.sst"))
    with pytest.raises(sstpipe.Error) as e:
        sstpipe.open(broken)
    assert "tableset.json: shard 1: " in str(e.value)
    assert "shard-0001.sst: missing or unreadable" in str(e.value)
