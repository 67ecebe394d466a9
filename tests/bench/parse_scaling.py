"""parse_scaling.py: the benchmark section of issue 16 (parse on every core),
called from tests/bench/run (`run SIZE --only parse-scaling` runs it alone).

For each page shape, enwiki-like (wikigen's default) and short pages
(`wikigen --profile wiktionary`, ~1.1 KB of XML a page), on the same SIZE of
XML, each repetition runs back to back:
  - build from .zst, and the mtbl peer on the same file (target: 3x faster);
  - build from plain XML in tmpfs under `taskset -c 0` and `taskset -c 0,1`
    (target: 2 cores at least 1.8x one core), and the same two with the
    table and the sort's spill in tmpfs too (for information: the speed-up
    without the disk, for whose wait at the end, as the table's bytes reach
    it, a second core does nothing);
  - build from single-stream and multistream .bz2, and `lbzip2 -dc -n THREADS`
    to /dev/null on the same file (target: at most 1.0x);
and every table of a shape must be byte-identical. Peak RSS of every build is
held against the sort budget + 64 MiB. The machine's own ceiling for the
2-core target is measured beside it: two one-core builds at once (`taskset
-c 0` and `-c 1`, each on its own copy of the work) against one alone, so
2 x alone / pair is the speed-up that perfectly parallel work of this kind
gets from this machine's second core (a VM's second core may be less than
a whole one).

The scaling model comes from the builds' own `-v` figures (`build:` line):
per GiB of XML, the CPU seconds of decoding (the read phase's process CPU less
the parsing workers' and the calling thread's), of parsing (the workers: the
parse, truncation and sorting their records into runs), of the calling thread
(reading and cutting the document: serial), and of the write phase (merge and
table writer), of which the table writer's background thread writes the full
batches (write_background) beside the merge on 2 cores or more. With
N cores the read phase takes max(caller, (decode + parse + caller) / N), or
at least the decode itself where one thread decodes (.zst, plain XML), and
the write phase adds its own time (on one core all of it, on more the larger
of the merging thread's share and the background thread's), which predicts the build's wall time and
speed-up at 8, 16 and 64 cores. These go into the run's JSON (`parse_scaling`:
`stage_cpu_seconds_per_gib`, `model_seconds_per_gib`), from which
tests/bench/report writes the results-scaling table of RESULTS.md. Each
missed target gets a sentence in `explanations`, written here from the
run's own figures (for the 2-core target, each phase's time on one core
and on two, from the builds' `-v` lines, kept in the JSON as `phases`; for
the others, what the CPU seconds allow; the machine's ceiling; and the next
step), which report puts under that table.
"""

import os
import re
import shutil
import statistics
import subprocess

MIB = 1 << 20
GIB = 1 << 30
CORES = (1, 2, 8, 16, 64)
FIGURE_RE = re.compile(r"([a-z_]+)=([0-9.]+)")


def figures(stderr):
    """The numbers of a build's -v lines ('extract: ...', 'build: ...')."""
    out = {}
    for line in stderr.decode(errors="replace").splitlines():
        stage = line.split(":", 1)[0]
        if stage in ("extract", "write", "build"):
            for k, v in FIGURE_RE.findall(line):
                out[f"{stage}.{k}"] = float(v)
    return out


def stage_costs(run):
    """CPU seconds per GiB of XML of each stage, from one build's -v lines."""
    f = figures(run.stderr)
    gib = f["extract.xml_bytes"] / GIB
    parse, caller = f["build.parse_cpu_seconds"], f["build.caller_cpu_seconds"]
    decode = max(f["build.read_cpu_seconds"] - parse - caller, 0.0)
    return {"decode": decode / gib, "parse": parse / gib, "caller": caller / gib,
            "write": f["build.write_cpu_seconds"] / gib,
            "write_background": f.get("build.write_background_cpu_seconds", 0.0) / gib,
            "threads": f["extract.threads"]}


# Inputs decoded on one thread (libarchive's zstd, plain reads); bz2 is
# decoded on every core.
SERIAL_DECODE = ("zst", "xml")


def write_path(write, bg):
    """The write phase's critical path on more than one core: the merging
    thread's share or the background thread's writes, whichever is larger."""
    return max(write - bg, bg)


def model(costs, cores, src):
    """Predicted seconds per GiB of a build from src on `cores` cores."""
    work = costs["decode"] + costs["parse"] + costs["caller"]
    serial = max(costs["caller"], costs["decode"] if src in SERIAL_DECODE else 0.0)
    write, bg = costs["write"], costs["write_background"]
    return max(serial, work / cores) + (write if cores == 1 else write_path(write, bg))


def phases(runs):
    """Medians of a build's two phases from its -v lines: wall and CPU seconds
    of the read phase (decode, parse, runs) and of the write phase (merge,
    table, commit), the write phase's critical path on its CPU (the merging
    thread's share or the background thread's, whichever is larger), the
    commit's wait for the disk (fsync, rename, the directory's fsync) and the
    table's MiB."""
    fs = [figures(r.stderr) for r in runs]

    def med(f):
        return statistics.median(f(x) for x in fs)

    def path(x):
        return write_path(x["build.write_cpu_seconds"],
                          x.get("build.write_background_cpu_seconds", 0.0))

    return {"read": med(lambda x: x["build.read_seconds"]),
            "read_cpu": med(lambda x: x["build.read_cpu_seconds"]),
            "write": med(lambda x: x["build.write_seconds"]),
            "write_path": med(path),
            "commit": med(lambda x: x.get("build.write_commit_seconds", 0.0)),
            "table_mib": med(lambda x: x["write.file_size"]) / MIB}


def explain(label, key, runs, costs, ceiling, gib, threads, mem_sp=None):
    """A sentence on why a target of this section is missed, from the run's
    own figures, with the next step; None when nothing is to be said. mem_sp:
    the 2-core speed-up with the table and spill in tmpfs (None when not
    measured)."""
    if key == "xml":
        p1, p2 = phases(runs["xml1"]), phases(runs["xml2"])
        t1 = statistics.median(r.wall for r in runs["xml1"])
        need = t1 / 1.8 - p2["write"]
        if need > 0:
            needed = (f"with that write phase, 1.8x needs the read phase in {need:.2f} s, "
                      f"{p1['read'] / need:.2f}x its one-core time")
        else:
            needed = "that write phase alone leaves no room for 1.8x"
        if mem_sp is not None:
            needed += (f"; with the table and spill in tmpfs too, the same builds' speed-up is "
                       f"{mem_sp:.2f}x")
        return (f"[{label}] 2 cores vs 1: the read phase (decoding, parsing, sorting into runs) "
                f"takes {p2['read']:.2f} s against {p1['read']:.2f} s on one core "
                f"({p1['read'] / p2['read']:.2f}x; its CPU {p2['read_cpu']:.2f} s against "
                f"{p1['read_cpu']:.2f}), and the write phase (merge, table, commit) "
                f"{p2['write']:.2f} s against {p1['write']:.2f} s: its CPU's critical path is "
                f"{p2['write_path']:.2f} s, the commit's wait for the disk to take the "
                f"{p2['table_mib']:.0f} MiB table {p2['commit']:.2f} s. Medians of the builds' "
                f"own -v figures; {needed}, and this machine gives perfectly parallel one-core "
                f"builds {ceiling:.2f}x from its second core. Next step: " + (
                    "the disk, as without it the same builds reach the target: a write phase "
                    "that waits less for the table's bytes to reach it at its end."
                    if mem_sp is not None and mem_sp >= 1.8 else
                    "find where the read phase's extra CPU on two cores goes (each chunk is read "
                    "on the calling thread's core and parsed on another; this VM has no hardware "
                    "counters to count cache misses with), and a write phase that waits less on "
                    "the disk at its end."))
    if key in ("bz2", "bz2ms"):
        ours = statistics.median(r.cpu for r in runs[key])
        peer = statistics.median(r.cpu for r in runs[key + "_lbzip2"])
        c = costs[key]
        return (f"[{label}] .{key} vs lbzip2 -n{threads}: on {threads} busy cores wall time follows "
                f"CPU time, and the build takes {ours / gib:.2f} CPU-s per GiB (decode "
                f"{c['decode']:.2f}, parse {c['parse']:.2f}, caller {c['caller']:.2f}, write "
                f"{c['write']:.2f}) against lbzip2's {peer / gib:.2f} for decoding alone; at most "
                f"1.0x needs the decode to cost less than lbzip2's by the parse's share. Next step: "
                f"a cheaper block decoder or, on more cores "
                f"than this machine has, nothing: the parse then runs beside the decoding.")
    if key == "zst":
        ours = statistics.median(r.cpu for r in runs["zst"])
        peer = statistics.median(r.cpu for r in runs["peer"])
        c = costs["zst"]
        biggest = max(("decode", "parse", "write"), key=lambda k: c[k])
        return (f"[{label}] .zst vs the mtbl peer: the peer takes {peer / gib:.2f} CPU-s per GiB, "
                f"ours {ours / gib:.2f} (decode on one thread {c['decode']:.2f}, parse "
                f"{c['parse']:.2f}, caller {c['caller']:.2f}, write {c['write']:.2f}); 3x faster "
                f"on {threads} cores needs the work below {int(threads) * peer / 3 / gib:.2f} CPU-s per GiB "
                f"with the single zstd thread hidden. Next step: its largest share, the "
                f"{biggest} ({c[biggest]:.2f} CPU-s per GiB), and the zstd thread's core shared "
                f"with the workers.")
    if key == "bound":
        c = costs["bz2"]
        work = c["decode"] + c["parse"] + c["caller"]
        return (f"[{label}] .bz2 at 64 cores: the calling thread takes {c['caller']:.2f} CPU-s "
                f"per GiB, above (decode + parse + caller) / 64 = {work / 64:.2f}. Next step: "
                f"hand the reading of the decoded bytes to the workers too.")
    return None


def median_costs(runs):
    cs = [stage_costs(r) for r in runs]
    return {k: statistics.median(c[k] for c in cs) for k in cs[0]}


def plain_copy(zst, name, size):
    """The XML of zst in tmpfs (/dev/shm) when it fits, else beside it."""
    shm = "/dev/shm"
    room = shutil.disk_usage(shm).free if os.path.isdir(shm) else 0
    where = shm if room > size * 1.2 + 256 * MIB else os.path.dirname(zst)
    path = os.path.join(where, f"sstpipe-bench-{name}-{os.getpid()}.xml")
    with open(path, "wb") as out:
        subprocess.run(["zstd", "-dc", zst], stdout=out, check=True)
    return path, where == shm


def measure(ctx):
    """ctx: sstpipe, peer, data, reps, memory, threads, timed, row, med, paired,
    median_of_runs (both keep the per-run ratios for the row), log, shapes
    ({name: {"zst", "bz2", "bz2ms": path}}). Adds rows; returns the section's
    JSON."""
    # What the figures cover, for report's text: the build at hand.
    res = {"shapes": {}, "stage_work": {
        "parse": "the check of each chunk's cut, the parse, truncation and sorting their "
                 "records into runs",
        "caller": "reading the document and cutting it at stream starts or at page start tags "
                  "found by a search back from each chunk's end"}}
    res["date"], res["reps"], res["size"] = ctx.date, ctx.reps, ctx.size
    res["explanations"] = []
    mem = str(ctx.memory)
    budget = ctx.memory / MIB
    for shape, files in ctx.shapes.items():
        plain, tmpfs = plain_copy(files["zst"], shape, ctx.size)
        runs = {k: [] for k in ("zst", "peer", "xml1", "xml2", "xml1_mem", "xml2_mem", "pair",
                                "bz2", "bz2_lbzip2", "bz2ms", "bz2ms_lbzip2")}
        tables = set()
        try:
            for rep in range(ctx.reps):
                ctx.log(f"rep {rep + 1}/{ctx.reps}: parse scaling, {shape} pages")
                out = os.path.join(ctx.data, f"ps-{shape}.sst")

                def ours(inp, *prefix, where=ctx.data):
                    to = os.path.join(where, os.path.basename(out))
                    r = ctx.timed(list(prefix) + [ctx.sstpipe, "build", inp, "-o", to, "--memory",
                                                  mem, "--tmp", where, "-v"])
                    tables.add(ctx.sha256(to))
                    if where != ctx.data:
                        os.unlink(to)
                    return r

                runs["zst"].append(ours(files["zst"]))
                runs["peer"].append(ctx.timed([ctx.peer, "build", files["zst"], "-o",
                                               os.path.join(ctx.data, f"ps-{shape}.mtbl"),
                                               "--memory", mem, "--block-size", "8192",
                                               "--max-bytes", "1024", "--tmp", ctx.data]))
                runs["xml1"].append(ours(plain, "taskset", "-c", "0"))
                runs["xml2"].append(ours(plain, "taskset", "-c", "0,1"))
                if tmpfs:
                    mem_dir = os.path.dirname(plain)
                    runs["xml1_mem"].append(ours(plain, "taskset", "-c", "0", where=mem_dir))
                    runs["xml2_mem"].append(ours(plain, "taskset", "-c", "0,1", where=mem_dir))
                # The ceiling: the one-core build twice at once, one per core.
                one = [ctx.sstpipe, "build", plain, "--memory", mem, "--tmp", ctx.data, "-o"]
                runs["pair"].append(ctx.timed(["sh", "-c", 'taskset -c 0 "$@" "$0.a" & '
                                               'taskset -c 1 "$@" "$0.b" && wait $!',
                                               out] + one))
                for half in (".a", ".b"):
                    tables.add(ctx.sha256(out + half))
                    os.unlink(out + half)
                for kind in ("bz2", "bz2ms"):
                    runs[kind].append(ours(files[kind]))
                    with open(files[kind], "rb") as f:
                        runs[kind + "_lbzip2"].append(
                            ctx.timed(["lbzip2", "-dc", "-n", ctx.threads], stdin=f))
        finally:
            os.unlink(plain)

        def wall(k):
            return ctx.med([r.wall for r in runs[k]])

        def ratio(k, j):
            return ctx.paired([r.wall for r in runs[k]], [r.wall for r in runs[j]])

        label = {"enwiki": "enwiki-like", "wiktionary": "short pages"}[shape]
        zr = ratio("zst", "peer")
        ctx.row(f"[{label}] build .zst vs mtbl peer (s)", wall("zst"), wall("peer"), zr,
                "<= 0.333 (3x faster)", None)
        sp = ratio("xml1", "xml2")
        ctx.row(f"[{label}] plain XML{'' if tmpfs else ' (no tmpfs room)'}: taskset -c 0 vs "
                f"-c 0,1 (s)", wall("xml1"), wall("xml2"), sp, ">= 1.8 (2 cores' speed-up)", None)
        mem_sp = ratio("xml1_mem", "xml2_mem") if tmpfs else None
        if tmpfs:
            ctx.row(f"[{label}]   the same with the table and spill in tmpfs too (s)",
                    wall("xml1_mem"), wall("xml2_mem"), mem_sp,
                    "(info: the speed-up without the disk)", None)
        ceiling = ctx.median_of_runs([2 * a.wall / b.wall
                                      for a, b in zip(runs["xml1"], runs["pair"])])
        ctx.row(f"[{label}]   machine ceiling: 2 x one-core build alone / two at once, one a "
                f"core (s)", wall("pair"), wall("xml1"), ceiling, "(info: what 2 cores can give)",
                None)
        for kind, what in (("bz2", "single-stream"), ("bz2ms", "multistream")):
            br = ratio(kind, kind + "_lbzip2")
            ctx.row(f"[{label}] build .bz2 {what} vs lbzip2 -dc -n{ctx.threads} (s)", wall(kind),
                    wall(kind + "_lbzip2"), br, "<= 1.0", None)
        ours_runs = [r for k in ("zst", "xml1", "xml2", "xml1_mem", "xml2_mem", "bz2", "bz2ms")
                     for r in runs[k]]
        rss = max(r.rss for r in ours_runs) / MIB
        ctx.row(f"[{label}] peak RSS of these builds vs budget (MiB)", rss, budget, rss / budget,
                f"<= budget + 64 = {budget + 64:.0f}", rss <= budget + 64)

        costs = {"zst": median_costs(runs["zst"]), "bz2": median_costs(runs["bz2"]),
                 "bz2ms": median_costs(runs["bz2ms"]), "xml": median_costs(runs["xml2"])}
        gib = figures(runs["zst"][0].stderr)["extract.xml_bytes"] / GIB
        missed = [k for k, miss in (("zst", zr > 1 / 3), ("xml", sp < 1.8),
                                    ("bz2", ratio("bz2", "bz2_lbzip2") > 1.0),
                                    ("bz2ms", ratio("bz2ms", "bz2ms_lbzip2") > 1.0)) if miss]
        for src in ("bz2", "zst"):
            c = costs[src]
            ctx.row(f"[{label}] .{src} CPU-s per GiB: decode / parse / serial caller / serial "
                    f"write", f"{c['decode']:.2f} / {c['parse']:.2f} / {c['caller']:.2f} / "
                    f"{c['write']:.2f}", None, None, "(model input)", None)
            pred = {n: model(c, n, src) for n in CORES}
            ctx.row(f"[{label}] .{src} model: speed-up at 8 / 16 / 64 cores",
                    " / ".join(f"{pred[1] / pred[n]:.1f}" for n in (8, 16, 64)), None, None,
                    "(prediction)", None)
        c = costs["bz2"]
        bound = c["caller"] <= (c["decode"] + c["parse"] + c["caller"]) / 64
        ctx.row(f"[{label}] .bz2 read phase still parallel-bound at 64 cores (serial caller "
                f"CPU-s/GiB vs work/64)", round(c["caller"], 3),
                round((c["decode"] + c["parse"] + c["caller"]) / 64, 3), None,
                "caller <= work / 64", bound)
        if not bound:
            missed.append("bound")
        for k in missed:
            res["explanations"].append(explain(label, k, runs, costs, ceiling, gib, ctx.threads,
                                               mem_sp))
        res["shapes"][shape] = {
            "tmpfs": tmpfs, "tables_identical": len(tables) == 1,
            "two_core_ceiling": float(ceiling),
            "runs": {k: [r.summary() for r in v] for k, v in runs.items()},
            "stage_cpu_seconds_per_gib": costs,
            "phases": {"xml1": phases(runs["xml1"]), "xml2": phases(runs["xml2"])},
            "model_seconds_per_gib": {src: {n: model(c, n, src) for n in CORES}
                                      for src, c in costs.items()},
        }
        if len(tables) != 1:
            ctx.row(f"[{label}] tables identical across formats and cores", len(tables), 1, None,
                    "1 distinct table", False)
    return res
