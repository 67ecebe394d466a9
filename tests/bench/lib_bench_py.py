#!/usr/bin/python3
"""lib_bench_py.py: the Python side of lib_bench.py, run by Debian's python3
(the interpreter the sstpipe module is built for, and the one python3-plyvel
installs into) with the build's python/ directory on PYTHONPATH.

    lib_bench_py.py TABLE KEYS LEVELDB_DIR N

Opens TABLE with the sstpipe module and, from a walk of it, a dict of the
same records and (when plyvel imports) a LevelDB of them in LEVELDB_DIR
(rebuilt each time, not timed). For each of the three, on the keys in KEYS
(bench_keys' output, all present): one untimed pass, then each lookup
timed alone with perf_counter_ns (the p50), then N lookups (the keys
repeated) in one timed loop (lookups per second). Every value looked up
is compared with the table's once, so the three answer the same. Prints
JSON.
"""

import json
import os
import shutil
import statistics
import sys
import time

import sstpipe


def load_keys(path):
    raw = open(path, "rb").read()
    keys, pos = [], 0
    while pos + 4 <= len(raw):
        n = int.from_bytes(raw[pos:pos + 4], "little")
        keys.append(raw[pos + 4:pos + 4 + n])
        pos += 4 + n
    return keys


def time_one(lookup, keys, n):
    for k in keys:
        lookup(k)
    lat = []
    clock = time.perf_counter_ns
    for k in keys:
        t0 = clock()
        lookup(k)
        lat.append(clock() - t0)
    many = (keys * (n // len(keys) + 1))[:n]
    t0 = time.perf_counter()
    for k in many:
        lookup(k)
    s = time.perf_counter() - t0
    return {"p50_ns": statistics.median(lat), "lookups": n, "seconds": s,
            "lookups_per_sec": n / s}


def main():
    table, keys_path, ldb_dir, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    keys = load_keys(keys_path)
    out = {"keys": len(keys)}
    with sstpipe.open(table) as t:
        d = dict(t.items())
        out["records"] = len(d)
        want = [d[k] for k in keys]
        if [t[k] for k in keys] != want:
            sys.exit("lib_bench_py: the table and the dict disagree")
        out["sstpipe"] = time_one(t.__getitem__, keys, n)
        out["dict"] = time_one(d.__getitem__, keys, n)
        try:
            import plyvel
        except ImportError:
            out["plyvel"] = None
        else:
            shutil.rmtree(ldb_dir, ignore_errors=True)
            db = plyvel.DB(ldb_dir, create_if_missing=True)
            with db.write_batch() as wb:
                for k, v in d.items():
                    wb.put(k, v)
            db.compact_range()
            if [db.get(k) for k in keys] != want:
                sys.exit("lib_bench_py: LevelDB and the table disagree")
            out["plyvel"] = time_one(db.get, keys, n)
            out["plyvel"]["version"] = plyvel.__version__
            out["plyvel"]["leveldb_bytes"] = sum(
                os.path.getsize(os.path.join(ldb_dir, f)) for f in os.listdir(ldb_dir))
            db.close()
            shutil.rmtree(ldb_dir, ignore_errors=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
