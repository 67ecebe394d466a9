#!/usr/bin/env python3
"""bench_merge.py: the benchmark of `sstpipe merge` (issue 15), called from tests/bench/run.

A 1% delta (wikigen --increment-of: 1% of the base dump's pages edited,
no new pages) is merged into the table built from the run's .bz2 dump, and
timed against its peers in the same run, back to back in each repetition:
`cp` of that table on the same file system (target: merge <= 1.2x), `cp`
followed by `sync` of the copy (a copy as durable as merge's output, which
is fsynced before its rename, as every output of sstpipe is: the cost of
that durability, shown apart) and the full rebuild from the .bz2 dump the
run already timed (target <= 0.1x).
Peak RSS of the merge must stay under 64 MiB. The merged table is checked
once with verify (not timed). The rebuild times are those of run's .bz2
builds, taken earlier in the same run (not back to back with the merges).

Alone, for a quick check at a small size (it builds its own base from a
generated .bz2 and times one rebuild per repetition):

    tests/bench/bench_merge.py 64M --reps 1 --build-dir build

or from a .bz2 dump already made with the same size and seed 1 (tests/bench/run
keeps its inputs; the delta is generated from the size and seed):

    tests/bench/bench_merge.py 1G --reps 5 --dump DIR/dump-1024M.xml.bz2
"""

import os
import subprocess

MIB = 1 << 20


def measure(sstpipe, wikigen, data, size, base_table, reps, timed, log):
    """Runs the merges and copies; returns what rows() needs."""
    tag = f"{size >> 20}M"
    incr_dir = os.path.join(data, f"merge-delta-{tag}")
    delta = os.path.join(data, f"merge-delta-{tag}.sst")
    if not os.path.exists(delta):
        os.makedirs(incr_dir, exist_ok=True)
        log(f"generating the 1% delta of {tag}")
        subprocess.run([wikigen, "--size", str(size), "--seed", "1", "--increment-of",
                        "20261101", "--days", "1", "--edits", "1", "--new-pages", "0",
                        "-o", incr_dir], check=True)
        (name,) = os.listdir(incr_dir)
        subprocess.run([sstpipe, "build", os.path.join(incr_dir, name), "-o", delta + ".tmp"],
                       check=True)
        os.replace(delta + ".tmp", delta)
    merged = os.path.join(data, "merged.sst")
    copied = os.path.join(data, "copied.sst")
    out = {"merge": [], "cp": [], "cp_sync": [], "stats": None, "delta_records": None}
    for rep in range(reps):
        log(f"rep {rep + 1}/{reps}: merge of a 1% delta and cp")
        c = timed(["cp", base_table, copied])
        cs = timed(["sh", "-c", 'cp "$0" "$1" && sync "$1"', base_table, copied])
        m = timed([sstpipe, "merge", "-v", "-o", merged, base_table, delta])
        out["cp"].append(c.summary())
        out["cp_sync"].append(cs.summary())
        out["merge"].append(m.summary())
        out["stats"] = m.stderr.decode().strip()
    subprocess.run([sstpipe, "verify", merged], check=True, stdout=subprocess.DEVNULL)
    info = subprocess.run([sstpipe, "info", delta], capture_output=True, text=True, check=True)
    out["delta_info"] = info.stdout
    out["table_bytes"] = os.path.getsize(base_table)
    for p in (merged, copied):
        os.unlink(p)
    return out


def rows(res, rebuild_walls, row, med, paired):
    """The table rows: merge vs cp, merge vs the full .bz2 rebuild, peak RSS."""
    mw = [r["wall"] for r in res["merge"]]
    cw = [r["wall"] for r in res["cp"]]
    cr = paired(mw, cw)
    row("merge 1% delta vs cp of the table (s)", med(mw), med(cw), cr, "<= 1.2", cr <= 1.2)
    if res.get("cp_sync"):
        sw = [r["wall"] for r in res["cp_sync"]]
        sr = paired(mw, sw)
        row("merge 1% delta vs cp + sync of the copy (s)", med(mw), med(sw), sr, "<= 1.2",
            sr <= 1.2)
    rr = paired(mw, rebuild_walls)
    row("merge 1% delta vs rebuild from .bz2 (s)", med(mw), med(rebuild_walls), rr, "<= 0.1",
        rr <= 0.1)
    rss = max(r["rss"] for r in res["merge"]) / MIB
    row("peak RSS of merge (MiB)", rss, 64, rss / 64, "< 64", rss < 64)


def main():
    import argparse
    import statistics
    import sys
    import tempfile
    from importlib.machinery import SourceFileLoader
    from importlib.util import module_from_spec, spec_from_loader

    ap = argparse.ArgumentParser()
    ap.add_argument("size", help="XML to generate, e.g. 64M")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--dump", help="a .bz2 dump of SIZE made with --seed 1 (else generated)")
    a = ap.parse_args()
    size = int(a.size[:-1]) << {"K": 10, "M": 20, "G": 30}[a.size[-1]]
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    loader = SourceFileLoader("benchrun", os.path.join(here, "run"))
    run = module_from_spec(spec_from_loader("benchrun", loader))
    loader.exec_module(run)
    sstpipe = os.path.abspath(os.path.join(a.build_dir, "sstpipe"))
    wikigen = os.path.abspath(os.path.join(a.build_dir, "wikigen"))
    with tempfile.TemporaryDirectory(prefix="sstpipe-bench-merge-", dir=a.build_dir) as data:
        dump = os.path.abspath(a.dump) if a.dump else os.path.join(data, "dump.xml.bz2")
        if not a.dump:
            subprocess.run([wikigen, "--size", str(size), "--seed", "1", "--format", "bz2",
                            "-o", dump], check=True)
        base = os.path.join(data, "base.sst")
        rebuild = [run.timed([sstpipe, "build", dump, "-o", base]).wall for _ in range(a.reps)]
        res = measure(sstpipe, wikigen, data, size, base, a.reps, run.timed, run.log)
        table = []
        rows(res, rebuild, lambda *r: table.append(r), statistics.median,
             lambda x, y: statistics.median(p / q for p, q in zip(x, y)))
        print(res["stats"])
        for r in table:
            print(f"{r[0]}: ours {r[1]:.3f} other {r[2]:.3f} ratio {r[3]:.3f} target {r[4]} "
                  f"met {r[5]}")


if __name__ == "__main__":
    main()
