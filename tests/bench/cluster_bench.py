#!/usr/bin/env python3
"""cluster_bench.py: the benchmark of the cluster build (issue 17), called from tests/bench/run.

In each repetition, back to back on the run's multistream .bz2 dump: `sstpipe
build` and the cluster build with the local runner and 2 map tasks (one
shard: the output must be build's bytes, checked), target within 1.1x of
build's wall time. The cluster build's `-v` line gives the tasks' own
figures (each task's CPU seconds, the XML it parsed, the bytes it wrote into
the shared directory), from which come the per-task costs: map and reduce
CPU seconds per GiB of XML, and bytes through the shared directory per GiB.

From those, a model of building every Wikipedia (ASSUMED_ALL_WIKIPEDIAS_XML_GIB
of XML, an assumption stated in the JSON and RESULTS.md, not a measurement) on
4, 16 and 64 nodes like this machine (its core count): map wall = total map
CPU / (nodes x cores), reduce wall = total reduce CPU / (nodes x cores) (one
shard per core), against one machine's build (its measured CPU seconds per GiB over
the same cores: the wall time of this shared machine carries others' load); the finishing step (verify and publish on one machine) is left out
and said to be. And what the planner picks for an enwiki-sized dump
(`sstpipe task plan --input-size`). All of it goes into the JSON's `cluster`
section; tests/bench/report renders RESULTS.md's results-cluster block from it.

`tests/bench/run SIZE --only cluster` (only() below) measures this section
alone and writes it into the full run's JSON in place of that run's: the
`cluster` section and its table rows replaced, `reruns` saying when, the
README's and RESULTS.md's tables rewritten from it.

Alone, for a quick check at a small size (JSON in BUILD_DIR/bench-data):

    tests/bench/cluster_bench.py 128M --reps 1 --build-dir build
"""

import json
import os
import re
import shutil
import subprocess
import sys

MIB = 1 << 20
GIB = 1 << 30
# The XML of every Wikipedia's pages-articles dump (about 330 wikis), an
# assumption for the model: English is about a third of it.
ASSUMED_ALL_WIKIPEDIAS_XML_GIB = 300
# The compressed size of enwiki's pages-articles-multistream dump, for the
# planner's picks (Wikimedia's listing, 2024: about 22 GB).
ENWIKI_BZ2_BYTES = 22 * 10**9
NODES = (4, 16, 64)

# The driver's phases (cluster_build.h): the plan and the finish in the
# build process, the runner's stages, the longest task of each stage.
PHASE = re.compile(r" (plan_seconds|plan_cpu_seconds|run_seconds|map_seconds|reduce_seconds|"
                   r"finish_seconds|finish_cpu_seconds)=([\d.]+)")
CLUSTER_LINE = re.compile(r"cluster: plan=\S+ maps=(\d+) shards=(\d+) resumed=\d maps_done=\d+ "
                          r"map_cpu_seconds=([\d.]+) reduce_cpu_seconds=([\d.]+) "
                          r"input_bytes=(\d+) xml_bytes=(\d+) shared_bytes=(\d+)")


def measure(sstpipe, dump, data, reps, memory, timed, log, sha256):
    """Runs build and the 2-task cluster build back to back, reps times."""
    shared = os.path.join(data, "cluster-shared")
    ini = os.path.join(data, "cluster-bench.ini")
    with open(ini, "w") as f:
        f.write(f"[cluster]\nrunner = local\ntasks = 2\nshards = 1\njobs = 2\n"
                f"shared_dir = {shared}\n")
    single = os.path.join(data, "cluster-bench-build.sst")
    clustered = os.path.join(data, "cluster-bench-cluster.sst")
    out = {"build": [], "cluster": [], "tasks": [], "same_bytes": True}
    mem = ["--memory", str(memory), "--tmp", data]
    for rep in range(reps):
        log(f"rep {rep + 1}/{reps}: build and the 2-task cluster build")
        b = timed([sstpipe, "build", dump, "-o", single] + mem)
        shutil.rmtree(shared, True)
        c = timed([sstpipe, "build", "-c", ini, dump, "-o", clustered, "-v"] + mem)
        m = CLUSTER_LINE.search(c.stderr.decode())
        if not m:
            sys.exit("bench: the cluster build printed no cluster line:\n" + c.stderr.decode())
        out["build"].append(b.summary())
        out["cluster"].append(c.summary())
        out["tasks"].append({"maps": int(m.group(1)), "shards": int(m.group(2)),
                             "map_cpu_seconds": float(m.group(3)),
                             "reduce_cpu_seconds": float(m.group(4)),
                             "input_bytes": int(m.group(5)), "xml_bytes": int(m.group(6)),
                             "shared_bytes": int(m.group(7)),
                             "phases": {k: float(v) for k, v in PHASE.findall(m.string[m.start():].split("\n")[0])}})
        out["same_bytes"] &= sha256(single) == sha256(clustered)
    plan = subprocess.run([sstpipe, "task", "plan", "--input-size", str(ENWIKI_BZ2_BYTES)],
                          capture_output=True, text=True, check=True).stdout
    picks = dict(kv.split("=") for kv in plan.split())
    out["enwiki_plan"] = {"input_bytes": ENWIKI_BZ2_BYTES, "tasks": int(picks["tasks"]),
                          "task_bytes": int(picks["task_bytes"]), "shards": 1,
                          "shards_note": "[cluster] shards as configured (default 1, one table)"}
    out["model"] = model(out, os.cpu_count())
    for p in (single, clustered):
        os.unlink(p)
    return out


def med(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def model(res, cores):
    """Per-GiB costs from the runs, and the all-Wikipedias model they give."""
    t = res["tasks"]
    xml_gib = [x["xml_bytes"] / GIB for x in t]
    map_cpu = med([x["map_cpu_seconds"] / g for x, g in zip(t, xml_gib)])
    reduce_cpu = med([x["reduce_cpu_seconds"] / g for x, g in zip(t, xml_gib)])
    shared = med([x["shared_bytes"] / g for x, g in zip(t, xml_gib)])
    # One machine on the same basis as the nodes: CPU seconds over its cores
    # (wall seconds on this shared machine carry everyone else's load).
    build_cpu = med([b["cpu"] / g for b, g in zip(res["build"], xml_gib)])
    total = ASSUMED_ALL_WIKIPEDIAS_XML_GIB
    nodes = {}
    for n in NODES:
        workers = n * cores
        mw = total * map_cpu / workers
        rw = total * reduce_cpu / workers
        nodes[str(n)] = {"map_seconds": mw, "reduce_seconds": rw, "seconds": mw + rw,
                         "speedup_vs_one_machine": total * build_cpu / cores / (mw + rw),
                         "shared_bytes_per_node": total * shared / n}
    return {"cores_per_node": cores, "map_cpu_seconds_per_gib": map_cpu,
            "reduce_cpu_seconds_per_gib": reduce_cpu, "shared_bytes_per_gib": shared,
            "build_cpu_seconds_per_gib": build_cpu, "assumed_total_xml_gib": total,
            "one_machine_seconds": total * build_cpu / cores, "nodes": nodes}


# The first and the last of rows()'s rows: the section's block in a full
# run's table_rows, which only() replaces.
FIRST_ROW = "cluster build, local, 2 tasks vs build (s)"
LAST_ROW = "bytes through the shared dir per GiB of XML (MiB)"


def rows(res, row, paired):
    """The table rows: the 2-task cluster build against build, and the costs."""
    cw = [r["wall"] for r in res["cluster"]]
    bw = [r["wall"] for r in res["build"]]
    row(FIRST_ROW, med(cw), med(bw), paired(cw, bw), "<= 1.1", None)
    cc = [r["cpu"] for r in res["cluster"]]
    bc = [r["cpu"] for r in res["build"]]
    row("  same, CPU seconds", med(cc), med(bc), paired(cc, bc), "(info)", None)
    # Where the cluster build's wall time goes (the phases it printed), so a
    # miss of the target is explained by measured numbers.
    t = res["tasks"]
    if all("phases" in x for x in t):
        for key, name in (("plan_seconds", "plan (driver)"),
                          ("map_seconds", "map (longest task)"),
                          ("reduce_seconds", "reduce (longest task)"),
                          ("finish_seconds", "finish: verify + publish (driver)")):
            row(f"  cluster phase: {name} (s)", med([x["phases"][key] for x in t]), None, None,
                "(info)", None)
        row("  cluster phase: runner's stages minus their longest tasks (s)",
            med([x["phases"]["run_seconds"] - x["phases"]["map_seconds"] -
                 x["phases"]["reduce_seconds"] for x in t]), None, None, "(info)", None)
    row("  cluster output is build's bytes", "yes" if res["same_bytes"] else "NO", "yes", None,
        "identical", res["same_bytes"])
    m = res["model"]
    row("cluster map CPU-s per GiB of XML vs build's", m["map_cpu_seconds_per_gib"],
        med([b["cpu"] / (t["xml_bytes"] / GIB) for b, t in zip(res["build"], res["tasks"])]),
        None, "(info)", None)
    row("cluster reduce CPU-s per GiB of XML", m["reduce_cpu_seconds_per_gib"], None, None,
        "(info)", None)
    row(LAST_ROW, m["shared_bytes_per_gib"] / MIB, None, None, "(info)", None)


def replace_rows(table, new):
    """table (a full run's table_rows) with its cluster block replaced by
    new; a run without one gets new at the end."""
    names = [r["measure"] for r in table]
    if FIRST_ROW in names and LAST_ROW in names[names.index(FIRST_ROW):]:
        i = names.index(FIRST_ROW)
        j = names.index(LAST_ROW, i)
        return table[:i] + new + table[j + 1:]
    return table + new


def only(a, run, sstpipe, data, files):
    """`tests/bench/run SIZE --only cluster`: this section alone, into the
    full run's JSON at a.json (its cluster section and rows replaced, the
    rerun recorded in `reruns`); run is tests/bench/run's module."""
    if not os.path.exists(a.json):
        sys.exit(f"bench: --only cluster updates a full run's JSON; {a.json} does not exist")
    with open(a.json) as f:
        res = json.load(f)
    if res.get("size") != a.size or "runs" not in res:
        sys.exit(f"bench: {a.json} is not a full run of {a.size >> 20} MiB")
    import datetime
    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    load0 = os.getloadavg()
    res["cluster"] = measure(sstpipe, files["bz2ms"], data, a.reps, a.memory, run.timed, run.log,
                             run.sha256)
    new = []

    def row(*args):
        new.append(run.report.make_row(*args))

    rows(res["cluster"], row, run.paired)
    res["table_rows"] = replace_rows(res["table_rows"], new)
    res.setdefault("reruns", []).append({
        "sections": "cluster (the local 2-task cluster build against build, per-task costs, "
                    "the all-Wikipedias model, the planner's picks)", "date": started,
        "command": " ".join(sys.argv), "reps": a.reps, "load_at_start": load0,
        "load_at_end": os.getloadavg(), "machine": run.machine(data)})
    res["cluster"]["date"] = started
    print("\n".join(run.report.table_lines(new)))
    run.write_json(a, res)


def main():
    import argparse
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("bench_run", os.path.join(here, "run"))
    run = importlib.util.module_from_spec(importlib.util.spec_from_loader("bench_run", loader))
    loader.exec_module(run)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("size", type=run.parse_size)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--memory", type=run.parse_size, default=64 * MIB)
    ap.add_argument("--build-dir", default=os.path.join(run.SRC, "build"))
    a = ap.parse_args()
    data = os.path.join(a.build_dir, "bench-data")
    os.makedirs(data, exist_ok=True)
    sstpipe = os.path.join(a.build_dir, "sstpipe")
    files = run.generate(os.path.join(a.build_dir, "wikigen"), data, a.size, os.cpu_count(),
                         False)
    res = measure(sstpipe, files["bz2ms"], data, a.reps, a.memory, run.timed, run.log,
                  run.sha256)
    table = []

    def row(*args):
        table.append(run.report.make_row(*args))

    rows(res, row, run.paired)
    print("\n".join(run.report.table_lines(table)))
    print("\n".join(run.report.results_cluster({"cluster": res})))
    path = os.path.join(data, "cluster-bench.json")
    with open(path, "w") as f:
        json.dump({"cluster": res, "table_rows": table}, f, indent=1)
    print(f"JSON: {path}")


if __name__ == "__main__":
    main()
