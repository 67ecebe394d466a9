"""small_machine.py: issue 31's small-machine case, called from
format2_bench.py: `sstpipe serve` of a table at least five times larger
than the memory it is given, version 1 against version 2 of the same
records.

The memory is a memory cgroup (cgroup v2's memory.max, else cgroup v1's
memory.limit_in_bytes) of a fifth of the version 1 table's bytes, which
charges serve's own memory and the page cache it faults in alike, as a
small VM's RAM does. serve joins the cgroup before it execs; each table
is dropped from the page cache first (what other processes left cached is
charged elsewhere and would be read for free), and serve's block cache of
decompressed groups ([serve] block_cache, version 2's only) is off: in a
memory smaller than the table, the page cache holds several compressed
blocks in the memory one decompressed block would take (measured: a cache
of a quarter of the memory read the disk more often than none), which is
what README's small-machine advice says to set.

Keys are drawn uniformly from the table's own (`dump --keys-only`, fixed
seed), the same sequence for both versions; wrk walks them at one
connection over 127.0.0.1 (serve_bench's Lua script) for WARM_SECONDS,
which fills the memory, then for SECONDS, which are measured: p50 and p99
from wrk, and serve's reads of the disk during them, counted by the kernel: its major
page faults (it reads the table through a mapping) and its bytes read from
storage (/proc/PID/io's read_bytes), per request.
Per repetition, version 1 then version 2, back to back. The cgroup's peak
usage is kept as the proof that the limit was reached.
"""
import json
import os
import random
import subprocess
import sys
import time
import urllib.parse

sys.dont_write_bytecode = True  # keep the source tree clean

import serve_bench  # noqa: E402

SHARE = 5  # the table's bytes over the memory's
WARM_SECONDS = 5
SECONDS = 10
KEYS = 20000
MIB = 1 << 20


class MemoryCgroup:
    """A memory cgroup of its own, limited to limit bytes; join() is for a
    child's preexec_fn."""

    def __init__(self, limit):
        name = f"sstpipe-bench-{os.getpid()}"
        v2 = "/sys/fs/cgroup"
        if os.path.exists(f"{v2}/cgroup.controllers") and "memory" in open(
                f"{v2}/cgroup.subtree_control").read().split():
            self.path, self.limit_file, self.peak_file = (f"{v2}/{name}", "memory.max",
                                                          "memory.peak")
        elif os.path.isdir("/sys/fs/cgroup/memory"):
            self.path, self.limit_file, self.peak_file = (
                f"/sys/fs/cgroup/memory/{name}", "memory.limit_in_bytes",
                "memory.max_usage_in_bytes")
        else:
            sys.exit("bench: the small-machine case needs a memory cgroup (v2 with the memory "
                     "controller in /sys/fs/cgroup's subtree_control, or v1's "
                     "/sys/fs/cgroup/memory), writable by this user")
        os.mkdir(self.path)
        with open(os.path.join(self.path, self.limit_file), "w") as f:
            f.write(str(limit))
        self.procs = os.path.join(self.path, "cgroup.procs")

    def join(self):
        with open(self.procs, "w") as f:
            f.write(str(os.getpid()))

    def peak(self):
        try:
            with open(os.path.join(self.path, self.peak_file)) as f:
                return int(f.read())
        except OSError:
            return None

    def remove(self):
        for _ in range(100):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.05)  # the last process of the cgroup is still leaving


def disk_reads(pid):
    """serve's reads of the disk so far: the major page faults of its
    threads (it reads a table through a mapping, so a block not in memory is
    a major fault) and its bytes read from storage (/proc/PID/io's
    read_bytes), both counted by the kernel."""
    with open(f"/proc/{pid}/stat") as f:
        majflt = int(f.read().rsplit(")", 1)[1].split()[9])
    with open(f"/proc/{pid}/io") as f:
        return majflt, int(dict(x.split(": ") for x in f.read().splitlines())["read_bytes"])


def draw_keys(sstpipe, table, n, seed):
    """n keys drawn uniformly from the table's (with repeats)."""
    out = subprocess.run([sstpipe, "dump", table, "--keys-only"], capture_output=True,
                         check=True, text=True).stdout
    keys = [json.loads(line)["key"] for line in out.splitlines()]
    rng = random.Random(seed)
    return [rng.choice(keys) for _ in range(n)]


def one(run, sstpipe, table, limit, cache, paths, lua):
    """One version's measurement: serve in a fresh cgroup, warmed, then
    measured."""
    resident = run.drop_cache(table)
    cg = MemoryCgroup(limit)
    port = serve_bench.free_port()
    proc = subprocess.Popen([sstpipe, "serve", table, "--listen", f"127.0.0.1:{port}",
                             "--set", f"serve.block_cache={cache}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=cg.join)
    try:
        line = proc.stdout.readline().decode()
        if not line.startswith("listening on"):
            proc.wait(60)
            sys.exit(f"bench: serve in a {limit >> 20} MiB cgroup did not start: "
                     f"{proc.stderr.read().decode(errors='replace').strip()}")
        serve_bench.wrk(port, paths, lua, 1, 1, WARM_SECONDS)
        faults, nbytes = disk_reads(proc.pid)
        r = serve_bench.wrk(port, paths, lua, 1, 1, SECONDS)
        after = disk_reads(proc.pid)
        r["disk_reads"], r["disk_bytes"] = after[0] - faults, after[1] - nbytes
    finally:
        proc.terminate()
        code = proc.wait(60)
        proc.stdout.close()
        proc.stderr.close()
    r["cgroup_peak"] = cg.peak()
    cg.remove()
    if code != 0:
        sys.exit(f"bench: serve in a {limit >> 20} MiB cgroup exited {code} on SIGTERM "
                 "(killed by the limit?)")
    r["resident_before"] = resident
    return r


def measure(run, a, sstpipe, work, v1, v2):
    """The case on the version 1 and 2 tables of the same records."""
    limit = os.path.getsize(v1) // SHARE // MIB * MIB
    cache = 0
    block = json.loads(subprocess.run([sstpipe, "info", v2, "--json"], capture_output=True,
                                      check=True, text=True).stdout)["block_size"]
    keys = draw_keys(sstpipe, v1, KEYS, 31)
    paths = os.path.join(work, "small.paths")
    with open(paths, "w") as f:
        f.writelines(f"/v1/get?raw=1&key={urllib.parse.quote(k, safe='')}\n" for k in keys)
    lua = os.path.join(work, "small.lua")
    with open(lua, "w") as f:
        f.write(serve_bench.LUA)
    out = {"memory": limit, "block_cache": cache, "block_size": block, "keys": len(keys),
           "table_bytes": {"v1": os.path.getsize(v1), "v2": os.path.getsize(v2)},
           "seconds": SECONDS, "warm_seconds": WARM_SECONDS, "v1": [], "v2": []}
    for rep in range(a.reps):
        for version, table in (("v1", v1), ("v2", v2)):
            run.log(f"rep {rep + 1}/{a.reps}: small machine, format {version[1]} in "
                    f"{limit >> 20} MiB")
            out[version].append(one(run, sstpipe, table, limit, cache, paths, lua))
    os.unlink(paths)
    os.unlink(lua)
    return out




def rows(r, row, run, prefix):
    """The case's rows."""
    med, paired = run.med, run.paired
    mem = r["memory"]
    where = (f"memory cgroup {mem >> 20} MiB, table {r['table_bytes']['v1'] / mem:.1f}x (v1), "
             f"{r['table_bytes']['v2'] / mem:.1f}x (v2)")
    v1 = [x["disk_reads"] / x["requests"] for x in r["v1"]]
    v2 = [x["disk_reads"] / x["requests"] for x in r["v2"]]
    row(f"{prefix}small machine: disk reads per request, v2 vs v1 ({where})", med(v2), med(v1),
        paired(v2, v1), "<= 0.9", None)
    v1 = [x["disk_bytes"] / x["requests"] / 1024 for x in r["v1"]]
    v2 = [x["disk_bytes"] / x["requests"] / 1024 for x in r["v2"]]
    row(f"{prefix}  small machine: KiB read from the disk per request, v2 vs v1", med(v2),
        med(v1), paired(v2, v1), "(info)", None)
    for q in ("p50", "p99"):
        o = [x[f"{q}_us"] for x in r["v2"]]
        p = [x[f"{q}_us"] for x in r["v1"]]
        row(f"{prefix}  small machine: {q} latency, 1 connection, v2 vs v1 (us)", med(o),
            med(p), paired(o, p), "(info)", None)
    peaks = [x["cgroup_peak"] for x in r["v1"] + r["v2"] if x["cgroup_peak"] is not None]
    if peaks:
        row(f"{prefix}  small machine: the cgroup's least peak usage vs its limit (MiB)",
            min(peaks) / MIB, mem / MIB, min(peaks) / mem, "(info)", None)
