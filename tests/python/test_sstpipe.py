"""tests/python/test_sstpipe.py: the `sstpipe` Python module (stages/sst/python/sstpipe_py.c)
on a table built from a corpus dump, against `sstpipe dump` of the same
table: every key and value, iteration order, len, `in`, get with a default,
KeyError, str and bytes keys, decode=True, prefix and range scans against
the records filtered in Python, the context manager, closing with an
iterator open, get_many (mapped and direct: values in the keys' order, None
for absent, duplicates, str and bytes keys, a generator of keys; closing
from another thread during a batch), lookup_many (titles as lookup answers
them; a key over 320 bytes and too many keys refused, as get_many does), and errors (a missing file, a corrupt block: sstpipe.Error
carrying the library's message with file, block and offset; an OSError, with
errno and FileNotFoundError for a missing table), __version__ and
library_version(), repr naming the path, the collections.abc.Mapping
views (keys, values, items), and prefix taking str and bytes as get does.

Run by ctest (python.test_sstpipe) with the build's module on PYTHONPATH,
under the interpreter the module was built for (SSTPIPE_PYTHON).
"""
import collections.abc
import errno
import json
import os
import re
import subprocess
import threading
import time

import pytest

import sstpipe

SSTPIPE = os.environ["SSTPIPE"]
CORPORA = os.environ["SSTPIPE_CORPORA"]


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A table of the 206-page enwiki excerpt and its records per dump."""
    d = tmp_path_factory.mktemp("sstpipe-py")
    path = str(d / "enwiki.sst")
    subprocess.run(
        [SSTPIPE, "build", os.path.join(CORPORA, "enwiki-206pages.xml.bz2"), "-o", path,
         "--block-size", "4K"],
        check=True)
    out = subprocess.run([SSTPIPE, "dump", path], check=True, capture_output=True).stdout
    recs = []
    for line in out.decode().splitlines():
        o = json.loads(line)
        recs.append((o["key"].encode(), o["value"].encode()))
    assert len(recs) > 100
    return path, recs


def test_every_key_and_value(table):
    path, recs = table
    with sstpipe.open(path) as t:
        assert len(t) == len(recs)
        for k, v in recs:
            assert t[k] == v
            assert t[k.decode()] == v  # str keys are UTF-8
            assert k in t and k.decode() in t
            assert t.get(k) == v
        assert t.info["records"] == len(recs)
        assert t.info["path"] == path


def test_absent_keys(table):
    path, recs = table
    with sstpipe.open(path) as t:
        for k, _ in recs[::10]:
            with pytest.raises(KeyError):
                t[k + b"\0"]
            assert t.get(k + b"\0") is None
            assert t.get(k + b"\0", 42) == 42
            assert (k + b"\0") not in t
        assert b"" not in t
        assert t.get("x" * 1000) is None
        with pytest.raises(TypeError):
            t[17]


def test_iteration_in_key_order(table):
    path, recs = table
    with sstpipe.open(path) as t:
        assert list(t) == [k for k, _ in recs]
        assert list(t.items()) == recs
        assert list(t.range()) == recs


def test_decode(table):
    path, recs = table
    with sstpipe.open(path, decode=True) as t:
        k, v = recs[5]
        assert t[k] == v.decode()
        assert t[k.decode()] == v.decode()
        assert next(iter(t)) == recs[0][0].decode()
        assert next(iter(t.items())) == (recs[0][0].decode(), recs[0][1].decode())


def test_prefix(table):
    path, recs = table
    with sstpipe.open(path) as t:
        firsts = sorted({k[:1] for k, _ in recs}) + [b"\x01", b"\xff", b"Zzzzz"]
        for p in firsts + [k[:3] for k, _ in recs[::17]] + [k for k, _ in recs[::31]]:
            assert list(t.prefix(p)) == [(k, v) for k, v in recs if k.startswith(p)], p
        assert list(t.prefix("A")) == [(k, v) for k, v in recs if k.startswith(b"A")]
        assert list(t.prefix(b"")) == recs


def test_range(table):
    path, recs = table
    keys = [k for k, _ in recs]
    with sstpipe.open(path) as t:
        bounds = [None, b"", b"\x01", b"\xff", keys[0], keys[-1], keys[len(keys) // 2],
                  keys[7] + b"\0", b"M", "Mo"]
        for lo in bounds:
            for hi in bounds:
                lb = lo.encode() if isinstance(lo, str) else lo
                hb = hi.encode() if isinstance(hi, str) else hi
                want = [(k, v) for k, v in recs
                        if (lb is None or k >= lb) and (hb is None or k < hb)]
                assert list(t.range(lo, hi)) == want, (lo, hi)


def test_context_manager_and_close(table):
    path, recs = table
    with sstpipe.open(path) as t:
        it = iter(t.items())
        assert next(it) == recs[0]
    with pytest.raises(ValueError):
        t[recs[0][0]]
    with pytest.raises(ValueError):
        next(it)  # the table closed under an open iterator
    with pytest.raises(ValueError):
        len(t)
    t.close()  # idempotent
    del it  # the last reference: the library's table goes now


def test_threads_share_a_table(table):
    path, recs = table
    t = sstpipe.open(path)
    bad = []

    def run(i):
        for k, v in recs[i::4]:
            if t[k] != v:
                bad.append(k)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert bad == []
    t.close()


def test_direct_io(table):
    path, recs = table
    with sstpipe.open(path, direct_io=True) as t:
        for k, v in recs[::3]:
            assert t[k] == v


def test_get_many(table):
    path, recs = table
    keys = [k for k, _ in recs[::3]]
    asked = keys + [k + b"\0" for k in keys[::5]] + keys[:7] + [b"", b"x" * 320]
    asked = asked[1::2] + asked[::2]  # not in key order
    values = dict(recs)
    for direct in (False, True):
        with sstpipe.open(path, direct_io=direct) as t:
            want = [t.get(k) for k in asked]
            assert want == [values.get(k) for k in asked]
            assert t.get_many(asked) == want
            assert t.get_many(k.decode() for k in keys) == [values[k] for k in keys]
            assert t.get_many([]) == []
            with pytest.raises(TypeError):
                t.get_many([keys[0], 17])
            with pytest.raises(TypeError):
                t.get_many(17)
            refused(t.get_many)
    with sstpipe.open(path, decode=True) as t:
        assert t.get_many([keys[0], b"\x01"]) == [values[keys[0]].decode(), None]
    t = sstpipe.open(path)
    t.close()
    with pytest.raises(ValueError):
        t.get_many(keys)


def refused(call):
    """A batch call (get_many, lookup_many) refuses a key over 320 bytes and
    more keys than one call takes, naming the limit."""
    with pytest.raises(ValueError, match="key 1 is 321 bytes, over the 320"):
        call([b"A", "\u00e9" * 160 + "x"])
    with pytest.raises(ValueError, match="65537 keys, over the 65536"):
        call([b"A"] * 65537)


def test_lookup_many(table):
    """lookup_many: each title as lookup answers it, in the titles' order,
    redirects followed (or not, raw=True), None when absent; over more
    titles than the module hands the library at once, mapped and direct
    (issue 30's t.get_many with issue 32's titles)."""
    path, recs = table
    typed = ["anarchism", "Abraham_Lincoln", "AbacuS", b"AssistiveTechnology",
             "no such title at all", "Anarchism "]
    asked = typed + [k for k, _ in recs] * 6 + typed
    assert len(asked) > 1024
    for direct in (False, True):
        with sstpipe.open(path, direct_io=direct, decode=True) as t:
            got = t.lookup_many(asked)
            assert got == [t.lookup(x) for x in asked]
            assert got[2] == t.lookup("AbacuS") and got[2].redirect_from == "AbacuS"
            assert got[4] is None
            raw = t.lookup_many(typed, raw=True)
            assert raw == [t.lookup(x, raw=True) for x in typed]
            assert raw[2].value.startswith("#REDIRECT [[Abacus]]")
            assert t.lookup_many(x for x in typed) == got[:len(typed)]
            assert t.lookup_many([]) == []
            for bad in (17, [b"A", 17], [None]):
                with pytest.raises(TypeError):
                    t.lookup_many(bad)
            refused(t.lookup_many)
    t = sstpipe.open(path)
    t.close()
    with pytest.raises(ValueError):
        t.lookup_many(typed)


def test_get_many_while_another_thread_closes(table):
    """A close() during a batch (the GIL released) waits for it: the batch answers.
    Tried until the close has landed inside a batch a few times (on a loaded
    machine the timer may fire before the batch begins: then it is refused)."""
    path, recs = table
    keys = [k for k, _ in recs] * 50
    want = [v for _, v in recs] * 50
    inside = 0
    for _ in range(100):
        t = sstpipe.open(path)
        closed_at = []
        closer = threading.Timer(0.001, lambda: (t.close(), closed_at.append(time.monotonic())))
        start = time.monotonic()
        closer.start()
        try:
            got = t.get_many(keys)
        except ValueError:  # closed before the batch began
            closer.join()
            continue
        end = time.monotonic()
        closer.join()
        assert got == want
        with pytest.raises(ValueError):
            t.get_many(keys[:1])
        inside += start < closed_at[0] < end
        if inside == 3:
            break
    assert inside > 0


def test_errors_carry_the_library_message(table, tmp_path):
    path, recs = table
    missing = str(tmp_path / "missing.sst")
    with pytest.raises(sstpipe.Error, match="missing.sst: cannot open"):
        sstpipe.open(missing)
    with pytest.raises(sstpipe.Error, match="too short for an SSTable"):
        (tmp_path / "short.sst").write_bytes(b"x" * 100)
        sstpipe.open(str(tmp_path / "short.sst"))
    # A flipped byte in block 0: its lookups and a scan fail naming it.
    data = bytearray(open(path, "rb").read())
    data[100] ^= 0x20
    bad = tmp_path / "bad.sst"
    bad.write_bytes(bytes(data))
    with sstpipe.open(str(bad)) as t:
        with pytest.raises(sstpipe.Error, match=r"bad.sst: block 0 at byte 0: block checksum"):
            t[recs[0][0]]
        with pytest.raises(sstpipe.Error, match=r"block 0 at byte 0"):
            list(t)
        assert t[recs[-1][0]] == recs[-1][1]  # other blocks still answer


def test_errors_are_os_errors_with_errno(tmp_path):
    """A missing table is an OSError with errno ENOENT: `except FileNotFoundError`
    and `except sstpipe.Error` both catch it; an error with no system error
    behind it has no errno."""
    missing = str(tmp_path / "missing.sst")
    with pytest.raises(FileNotFoundError) as e:
        sstpipe.open(missing)
    assert isinstance(e.value, sstpipe.Error) and isinstance(e.value, OSError)
    assert e.value.errno == errno.ENOENT
    assert str(e.value).startswith(missing + ": cannot open")
    (tmp_path / "short.sst").write_bytes(b"x" * 100)
    with pytest.raises(sstpipe.Error) as e:
        sstpipe.open(str(tmp_path / "short.sst"))
    assert type(e.value) is sstpipe.Error and e.value.errno is None


def test_versions_and_repr(table):
    """__version__ (the library version the module was built with) and
    library_version() (the loaded library's, a function as in C) are both
    MAJOR.MINOR.PATCH; repr names the table's path."""
    assert re.fullmatch(r"\d+\.\d+\.\d+", sstpipe.__version__)
    assert callable(sstpipe.library_version)
    assert sstpipe.library_version() == sstpipe.__version__
    # The docstring tells the library's version from the program's.
    assert "ABI" in sstpipe.__doc__ and "sstpipe --version" in sstpipe.__doc__
    path, _ = table
    t = sstpipe.open(path)
    assert repr(t) == "<sstpipe.Table %r>" % path
    t.close()
    assert repr(t) == "<sstpipe.Table (closed)>"


def test_a_mapping(table):
    """The table is a collections.abc.Mapping: keys(), values() and items()
    are its views, in key order, and agree with a dict of the records."""
    path, recs = table
    want = dict(recs)
    with sstpipe.open(path) as t:
        assert isinstance(t, collections.abc.Mapping)
        keys, values, items = t.keys(), t.values(), t.items()
        assert isinstance(keys, collections.abc.KeysView)
        assert isinstance(values, collections.abc.ValuesView)
        assert isinstance(items, collections.abc.ItemsView)
        assert list(keys) == [k for k, _ in recs] and len(keys) == len(recs)
        assert list(values) == [v for _, v in recs] and len(values) == len(recs)
        assert list(items) == recs and len(items) == len(recs)
        k, v = recs[3]
        assert k in keys and (k, v) in items and (k, v + b"x") not in items
        assert v in values
        assert keys == want.keys() and items == want.items()
        assert dict(t) == want


def test_prefix_takes_str_and_bytes_as_get(table):
    """prefix's p is a key as get's: str (UTF-8) or bytes, never None; what it
    yields is bytes, or str with decode=True, as get's values."""
    path, recs = table
    p = recs[len(recs) // 2][0][:2]
    want = [(k, v) for k, v in recs if k.startswith(p)]
    assert want
    with sstpipe.open(path) as t:
        assert list(t.prefix(p.decode())) == list(t.prefix(p)) == want
        assert all(type(k) is bytes and type(v) is bytes for k, v in t.prefix(p.decode()))
        assert type(t.get(want[0][0].decode())) is bytes
        for bad in (None, 17):
            with pytest.raises(TypeError):
                t.get(bad)
            with pytest.raises(TypeError):
                t.prefix(bad)
    with sstpipe.open(path, decode=True) as t:
        decoded = [(k.decode(), v.decode()) for k, v in want]
        assert list(t.prefix(p)) == list(t.prefix(p.decode())) == decoded
        assert type(t.get(want[0][0])) is str


def test_lookup_titles_as_typed(table):
    """lookup: the exact key, else the title as MediaWiki stores it, a
    redirect followed (its source an attribute), raw=True the record itself,
    None when absent (issue 32)."""
    path, recs = table
    values = dict(recs)
    with sstpipe.open(path, decode=True) as t:
        for typed in ("anarchism", "Anarchism ", "Anarchism"):
            r = t.lookup(typed)
            assert (r.title, r.redirect_from) == ("Anarchism", None), typed
            assert r.value.encode() == values[b"Anarchism"]
        for typed in ("Abraham_Lincoln", "abraham Lincoln"):
            assert t.lookup(typed).title == "Abraham Lincoln"
        r = t.lookup("AbacuS")
        assert (r.title, r.redirect_from) == ("Abacus", "AbacuS")
        assert r.value.encode() == values[b"Abacus"]
        r = t.lookup(b"AssistiveTechnology")
        assert (r.title, r.redirect_from) == ("Assistive technology", "AssistiveTechnology")
        assert t.lookup("AbacuS", raw=True).value.startswith("#REDIRECT [[Abacus]]")
        assert t.lookup("no such title at all") is None
    with sstpipe.open(path) as t:
        assert t.lookup("abacus").title == b"Abacus"


def test_suggest(table):
    path, _ = table
    with sstpipe.open(path, decode=True) as t:
        s = t.suggest("anarch", limit=3)
        assert s[0] == ("Anarchism", False)
        assert s[0].title == "Anarchism" and not s[0].redirect
        assert len(s) == 3 and all(x.redirect for x in s[1:])
        assert [x.title for x in t.suggest("ABACUS")] == ["Abacus", "AbacuS"]
        assert t.suggest("zzzzq") == []
        assert t.has_titles is True
        for bad in ("", "x" * 321, b"\xff"):
            with pytest.raises(sstpipe.Error):
                t.suggest(bad)
        for limit in (0, 101):
            with pytest.raises(ValueError):
                t.suggest("a", limit=limit)
