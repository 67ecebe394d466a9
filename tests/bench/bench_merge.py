#!/usr/bin/env python3
"""bench_merge.py: the benchmark of `sstpipe merge` (issue 15), called from tests/bench/run.

A 1% delta (wikigen --increment-of: 1% of the base dump's pages edited,
no new pages) is merged into the table built from the run's .bz2 dump, and
timed against its peers in the same run, back to back in each repetition:
`cp` of that table on the same file system (target: merge <= 1.2x), `cp`
followed by `sync` of the copy (a copy as durable as merge's output, which
is fsynced before its rename, as every output of sstpipe is: the cost of
that durability, shown apart) and the full rebuild from the .bz2 dump the
run already timed (target <= 0.1x). Each of them writes a new file: the
previous output is removed (untimed) before each timed command.
Peak RSS of the merge must stay under 64 MiB. The merged table is checked
once with verify (not timed). The rebuild times are those of run's .bz2
builds, taken earlier in the same run (not back to back with the merges).

Where the merge's time goes: each merge's `-v` line gives its phases
(table_merge.h: opening the inputs, the copied and the rebuilt runs of
blocks, the rest of the file, and the commit: fsync, link, rename and the
directory's fsync), kept per repetition in the JSON (`phases_us`) and shown
as info rows: their medians, and the merge's wall time less its commit
against cp (what the merge costs before it makes its output durable, which
cp does not do).

On a file system with reflinks (`reflink` in the JSON, an info row): the
same merge and `cp` (coreutils' default --reflink=auto, a clone of the
whole file) on an XFS image with reflinks loop-mounted in the data
directory (skipped, saying why, without root or xfsprogs), where the
merge shares the base's copied runs (blocks_cloned in its stats line).

Peak RSS at any table size (its own section, `big` in the JSON): a table of
BIG_BLOCKS blocks of 512 bytes (two records of short keys a block; records
streamed from here into `sstpipe write`, so nothing but the table is kept
on disk) and a 1% delta of it are merged once under /usr/bin/time; the
peak RSS must stay under 64 MiB there too, whose index alone (a few bytes a
block) passes that bound.

Alone, for a quick check at a small size (it builds its own base from a
generated .bz2 and times one rebuild per repetition):

    tests/bench/bench_merge.py 64M --reps 1 --build-dir build

or from a .bz2 dump already made with the same size and seed 1 (tests/bench/run
keeps its inputs; the delta is generated from the size and seed):

    tests/bench/bench_merge.py 1G --reps 5 --dump DIR/dump-1024M.xml.bz2
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys

MIB = 1 << 20


def remove(path):
    if os.path.exists(path):
        os.unlink(path)


def measure(sstpipe, wikigen, data, size, base_table, reps, timed, log):
    """Runs the merges and copies; returns what rows() needs."""
    tag = f"{size >> 20}M"
    incr_dir = os.path.join(data, f"merge-delta-{tag}")
    delta = os.path.join(data, f"merge-delta-{tag}.sst")
    if not os.path.isdir(incr_dir) or not os.listdir(incr_dir):
        os.makedirs(incr_dir, exist_ok=True)
        log(f"generating the 1% delta of {tag}")
        subprocess.run([wikigen, "--size", str(size), "--seed", "1", "--increment-of",
                        "20261101", "--days", "1", "--edits", "1", "--new-pages", "0",
                        "-o", incr_dir], check=True)
    (name,) = os.listdir(incr_dir)
    # The delta's table is built by the programs measured, every run, as the
    # base's is: one kept from an older run would lack what the current
    # build writes beside it (a table of before title indexes gave merge no
    # index to merge). build publishes the table and its title index
    # together: merge then merges the indexes too, as a user's merge of two
    # built tables does.
    subprocess.run([sstpipe, "build", os.path.join(incr_dir, name), "-o", delta], check=True,
                   stdout=subprocess.DEVNULL)
    merged = os.path.join(data, "merged.sst")
    copied = os.path.join(data, "copied.sst")
    out = {"merge": [], "cp": [], "cp_sync": [], "stats": None, "delta_records": None}
    for rep in range(reps):
        log(f"rep {rep + 1}/{reps}: merge of a 1% delta and cp")
        # Each command writes a new file: the output of the one before is
        # removed first, untimed, so that none of them pays in its timed
        # run for freeing an older file it replaces (a rename over the
        # merge's last output freed 114 MB of synced extents, ~38 ms, where
        # cp + sync replaced the copy cp had just made). cp names its output
        # without -o, so it is removed here; timed() removes merge's (-o).
        remove(copied)
        c = timed(["cp", base_table, copied])
        remove(copied)
        cs = timed(["sh", "-c", 'cp "$0" "$1" && sync "$1"', base_table, copied])
        m = timed([sstpipe, "merge", "-v", "-o", merged, base_table, delta])
        out["cp"].append(c.summary())
        out["cp_sync"].append(cs.summary())
        out["merge"].append(m.summary())
        out["stats"] = m.stderr.decode().strip()
        out.setdefault("phases_us", []).append(phases(out["stats"]))
    subprocess.run([sstpipe, "verify", merged], check=True, stdout=subprocess.DEVNULL)
    info = subprocess.run([sstpipe, "info", delta], capture_output=True, text=True, check=True)
    out["delta_info"] = info.stdout
    out["table_bytes"] = os.path.getsize(base_table)
    for p in (merged, copied):
        os.unlink(p)
    out["big"] = measure_big(sstpipe, data, timed, log)
    out["reflink"] = measure_reflink(sstpipe, data, base_table, delta, reps, timed, log)
    return out


def measure_reflink(sstpipe, data, base_table, delta, reps, timed, log):
    """The same merge and cp (coreutils' default --reflink=auto: a clone) on
    an XFS image with reflinks, loop-mounted in data (root and xfsprogs
    needed; else the reason it was skipped)."""
    if not shutil.which("mkfs.xfs"):
        return {"skipped": "no mkfs.xfs (xfsprogs)"}
    image, mnt = os.path.join(data, "reflink.img"), os.path.join(data, "reflink-mnt")
    os.makedirs(mnt, exist_ok=True)
    with open(image, "wb") as f:
        f.truncate(3 * os.path.getsize(base_table) + (256 << 20))
    p = subprocess.run(["mkfs.xfs", "-q", "-f", "-m", "reflink=1", image], capture_output=True,
                       text=True)
    if p.returncode == 0:
        p = subprocess.run(["mount", "-o", "loop", image, mnt], capture_output=True, text=True)
    if p.returncode != 0:
        os.unlink(image)
        return {"skipped": "cannot make or loop-mount an XFS image: " + p.stderr.strip()}
    out = {"merge": [], "cp": [], "stats": None}
    try:
        base, d = os.path.join(mnt, "base.sst"), os.path.join(mnt, "delta.sst")
        for src, dst in ((base_table, base), (delta, d)):
            subprocess.run(["cp", "--reflink=never", src, dst], check=True)
        merged, copied = os.path.join(mnt, "merged.sst"), os.path.join(mnt, "copied.sst")
        for rep in range(reps):
            log(f"rep {rep + 1}/{reps}: merge and cp on XFS with reflinks")
            out["cp"].append(timed(["cp", base, copied]).summary())
            m = timed([sstpipe, "merge", "-v", "-o", merged, base, d])
            out["merge"].append(m.summary())
            out["stats"] = m.stderr.decode().strip()
    finally:
        subprocess.run(["umount", mnt], check=True)
        os.unlink(image)
    return out


PHASES = ("open", "copy", "rebuild", "finish", "commit")
BIG_BLOCKS = 3_000_000


def phases(stats_line):
    """The phase times of a `merge -v` line, in microseconds."""
    got = dict(re.findall(r"\bus_(\w+)=(\d+)", stats_line))
    return {p: int(got[p]) for p in PHASES}


def write_records(sstpipe, path, records, max_value_bytes):
    """Streams records (an iterable of (key, value) bytes, in key order) as a
    sorted record stream (stages/common/recstream.h) into `sstpipe write`
    with 512-byte blocks."""
    p = subprocess.Popen([sstpipe, "write", "--block-size", "512", "-", "-o", path],
                         stdin=subprocess.PIPE)
    w = p.stdin
    w.write(b"SSTPRS01" + struct.pack("<IIII", 1, 1, max_value_bytes, 0))
    n = 0
    buf = []
    for k, v in records:
        buf.append(b"R" + struct.pack("<II", len(k), len(v)) + k + v)
        n += 1
        if len(buf) == 4096:
            w.write(b"".join(buf))
            buf = []
    w.write(b"".join(buf) + b"E" + struct.pack("<Q", n))
    w.close()
    if p.wait() != 0:
        sys.exit(f"bench: sstpipe write {path} failed")


def measure_big(sstpipe, data, timed, log):
    """The peak RSS of merging a 1% delta into a table of BIG_BLOCKS blocks."""
    base = os.path.join(data, "merge-big-base.sst")
    delta = os.path.join(data, "merge-big-delta.sst")
    # Two records a 512-byte block: a 21-byte title and 160 bytes of value.
    value = b"v" * 160
    n = 2 * BIG_BLOCKS
    if not os.path.exists(base):
        log(f"writing a table of {BIG_BLOCKS} blocks of 512 bytes for merge's peak RSS")
        write_records(sstpipe, base + ".tmp",
                      ((b"Page title %010d" % i, value) for i in range(n)), 163)
        os.replace(base + ".tmp", base)
    if not os.path.exists(delta):
        write_records(sstpipe, delta + ".tmp",
                      ((b"Page title %010d" % i, b"w" * 160) for i in range(0, n, 100)), 163)
        os.replace(delta + ".tmp", delta)
    merged = os.path.join(data, "merge-big-merged.sst")
    m = timed([sstpipe, "merge", "-v", "-o", merged, base, delta])
    info = json.loads(subprocess.run([sstpipe, "info", "--json", base], capture_output=True,
                                     text=True, check=True).stdout)
    os.unlink(merged)
    return {"merge": m.summary(), "stats": m.stderr.decode().strip(),
            "data_blocks": info["data_blocks"], "index_bytes": info["index_bytes"],
            "table_bytes": os.path.getsize(base)}


def rows(res, rebuild_walls, row, med, paired):
    """The table rows: merge vs cp, merge vs the full .bz2 rebuild, peak RSS."""
    mw = [r["wall"] for r in res["merge"]]
    cw = [r["wall"] for r in res["cp"]]
    cr = paired(mw, cw)
    row("merge 1% delta vs cp of the table (s)", med(mw), med(cw), cr, "<= 1.2", None)
    if res.get("cp_sync"):
        sw = [r["wall"] for r in res["cp_sync"]]
        sr = paired(mw, sw)
        row("merge 1% delta vs cp + sync of the copy (s)", med(mw), med(sw), sr, "<= 1.2", None)
    rr = paired(mw, rebuild_walls)
    row("merge 1% delta vs rebuild from .bz2 (s)", med(mw), med(rebuild_walls), rr, "<= 0.1",
        None)
    rss = max(r["rss"] for r in res["merge"]) / MIB
    row("peak RSS of merge (MiB)", rss, 64, rss / 64, "< 64", rss < 64)
    if res.get("phases_us"):
        ph = {p: med([x[p] for x in res["phases_us"]]) / 1000 for p in PHASES}
        row("  merge phases: open / copy / rebuild / finish / commit (ms)",
            " / ".join(f"{ph[p]:.1f}" for p in PHASES), None, None, "(info)", None)
        less = [r["wall"] - x["commit"] / 1e6 for r, x in zip(res["merge"], res["phases_us"])]
        lr = paired(less, cw)
        row("  merge less its commit (fsync, rename) vs cp (s)", med(less), med(cw), lr,
            "(info: before durability)", None)
    ref = res.get("reflink")
    if ref and ref.get("merge"):
        mw = [r["wall"] for r in ref["merge"]]
        cw = [r["wall"] for r in ref["cp"]]
        rr = paired(mw, cw)
        row("merge 1% delta vs cp (a clone), XFS with reflinks (s)", med(mw), med(cw), rr,
            "(info: loop-mounted image)", None)
    big = res.get("big")
    if big:
        rss = big["merge"]["rss"] / MIB
        row(f"peak RSS of merge, {big['data_blocks']:,} blocks of 512 B, "
            f"index {big['index_bytes'] / MIB:.0f} MiB (MiB)", rss, 64, rss / 64, "< 64",
            rss < 64)


def main():
    import argparse
    import contextlib
    import statistics
    import tempfile
    from importlib.machinery import SourceFileLoader
    from importlib.util import module_from_spec, spec_from_loader

    ap = argparse.ArgumentParser()
    ap.add_argument("size", help="XML to generate, e.g. 64M")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--dump", help="a .bz2 dump of SIZE made with --seed 1 (else generated)")
    ap.add_argument("--data-dir", help="keep the inputs here (the delta, the big tables) "
                    "and reuse them on the next run (default: a temporary directory)")
    ap.add_argument("--json", help="write the results and rows there")
    a = ap.parse_args()
    size = int(a.size[:-1]) << {"K": 10, "M": 20, "G": 30}[a.size[-1]]
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    loader = SourceFileLoader("benchrun", os.path.join(here, "run"))
    run = module_from_spec(spec_from_loader("benchrun", loader))
    loader.exec_module(run)
    sstpipe = os.path.abspath(os.path.join(a.build_dir, "sstpipe"))
    wikigen = os.path.abspath(os.path.join(a.build_dir, "wikigen"))
    if a.data_dir:
        os.makedirs(a.data_dir, exist_ok=True)
    keep = contextlib.nullcontext(os.path.abspath(a.data_dir)) if a.data_dir else \
        tempfile.TemporaryDirectory(prefix="sstpipe-bench-merge-", dir=a.build_dir)
    with keep as data:
        dump = os.path.abspath(a.dump) if a.dump else os.path.join(data, "dump.xml.bz2")
        if not os.path.exists(dump):
            subprocess.run([wikigen, "--size", str(size), "--seed", "1", "--format", "bz2",
                            "-o", dump], check=True)
        base = os.path.join(data, "base.sst")
        rebuild = [run.timed([sstpipe, "build", dump, "-o", base]).wall for _ in range(a.reps)]
        res = measure(sstpipe, wikigen, data, size, base, a.reps, run.timed, run.log)
        table = []
        rows(res, rebuild, lambda *r: table.append(run.report.make_row(*r)), statistics.median,
             run.paired)
        print(res["stats"])
        print("\n".join(run.report.table_lines(table)))
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"command": " ".join(sys.argv), "merge": res, "rows": table}, f,
                          indent=1)


if __name__ == "__main__":
    main()
