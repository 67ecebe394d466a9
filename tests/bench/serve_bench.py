#!/usr/bin/env python3
"""serve_bench.py: `sstpipe serve` against nginx serving the same values, by wrk.

    tests/bench/serve_bench.py SSTPIPE TABLE [--reps N] [--seconds S] [--keys N]
                               [--data-dir DIR] [--json PATH]

Also called from tests/bench/run (measure()), whose table gets its rows.

The peer is Debian's nginx-light serving each looked-up value as a static
file (one worker per core, open_file_cache on, access_log off, keep-alive),
the floor for answering an HTTP request with bytes already in memory. Both
listen on 127.0.0.1 and are driven by wrk with one Lua script walking the
same key sequence (KEYS keys drawn from the table with a fixed seed: the
first key at or after a random string, through /v1/prefix), as
/v1/get?raw=1&key=K for serve (the stored value, as nginx serves it, not a
redirect's target) and /v/<hex of K> for nginx. Per repetition, back
to back: 1 connection (p50, p99 from wrk's latency record) and 16
connections (requests per second), nginx then serve; then serve --cold at 1
connection, with its read syscalls counted from /proc/PID/io (the network
is recv(), not counted there; the table is given through a directory of
its own, so the publish watcher reads no events), and fio's 8K random O_DIRECT reads at queue
depth 1 on the same file. A ratio is the median of the per-repetition
ratios. The cold target is serve --cold's p50 against fio's QD1 p50 plus
nginx's 1-connection p50: the disk read and the HTTP round trip, each at
its floor.
"""
import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import http.client

LUA = r"""
-- Walks the paths in PATHS in order, one per request, per wrk thread from
-- a different start; reports wrk's latency percentiles as one JSON line.
local paths = {}
for line in io.lines(os.getenv("PATHS")) do paths[#paths + 1] = line end
local counter = 0
function setup(thread)
  thread:set("start", counter * 7919)
  counter = counter + 1
end
local i = 0
function init(args) i = start end
function request()
  i = i + 1
  return wrk.format("GET", paths[(i % #paths) + 1])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests": %d, "seconds": %.6f, "p50_us": %.3f, "p99_us": %.3f, ' ..
    '"errors": %d}\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50),
    latency:percentile(99), e.connect + e.read + e.write + e.status + e.timeout))
end
"""

NGINX_CONF = """
worker_processes {workers};
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
daemon off;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    default_type text/plain;
    charset utf-8;
    sendfile on;
    tcp_nodelay on;
    keepalive_requests 100000000;
    keepalive_timeout 60s;
    open_file_cache max=200000 inactive=300s;
    open_file_cache_valid 300s;
    open_file_cache_errors on;
    client_body_temp_path {dir}/tmp;
    proxy_temp_path {dir}/tmp;
    fastcgi_temp_path {dir}/tmp;
    uwsgi_temp_path {dir}/tmp;
    scgi_temp_path {dir}/tmp;
    server {{
        listen 127.0.0.1:{port};
        root {dir}/root;
    }}
}}
"""


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] serve bench: {msg}", file=sys.stderr, flush=True)


def med(xs):
    return statistics.median(xs)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"serve bench: {what} exited {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"serve bench: {what} did not listen on {port} in {seconds}s")


class Serve:
    def __init__(self, sstpipe, table, *args):
        self.port = free_port()
        self.proc = subprocess.Popen([sstpipe, "serve", table, "--listen",
                                      f"127.0.0.1:{self.port}", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("listening on"):
            sys.exit(f"serve bench: sstpipe serve did not start ({self.proc.wait()})")

    def read_syscalls(self):
        with open(f"/proc/{self.proc.pid}/io") as f:
            return int(dict(l.split(": ") for l in f.read().splitlines())["syscr"])

    def stop(self):
        self.proc.terminate()
        if self.proc.wait(60) != 0:
            sys.exit(f"serve bench: serve exited {self.proc.returncode} on SIGTERM")
        self.proc.stdout.close()


class Nginx:
    def __init__(self, workdir, workers):
        self.port = free_port()
        conf = os.path.join(workdir, "nginx.conf")
        os.makedirs(os.path.join(workdir, "tmp"), exist_ok=True)
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(workers=workers, dir=workdir, port=self.port))
        self.proc = subprocess.Popen(["nginx", "-c", conf, "-p", workdir],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc, "nginx")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)


def draw_keys(port, n, seed):
    """n keys of the table (with repeats where the table is small): for
    each, the first key at or after a random string."""
    rng = random.Random(seed)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    keys = []
    while len(keys) < n:
        start = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
        conn.request("GET", "/v1/prefix?prefix=&limit=1&from=" + urllib.parse.quote(start))
        r = conn.getresponse()
        page = json.loads(r.read())["records"]
        if page:
            keys.append(page[0]["key"].encode())
    conn.close()
    return keys


def fetch_values(port, keys):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    values = {}
    for k in set(keys):
        conn.request("GET", "/v1/get?raw=1&key=" + urllib.parse.quote(k, safe=""))
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            sys.exit(f"serve bench: /v1/get of a drawn key answered {r.status}")
        values[k] = body
    conn.close()
    return values


def wrk(port, paths_file, lua, conns, threads, seconds, errors_fail=True):
    """wrk's figures for one run; a failed request ends the bench unless
    errors_fail is False (the result's `errors` then counts them)."""
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{conns}", f"-d{seconds}s", "-s", lua,
                          f"http://127.0.0.1:{port}/"], capture_output=True, text=True,
                         env=dict(os.environ, PATHS=paths_file), check=True).stdout
    res = json.loads(out[out.rindex("{"):])
    if res["errors"] and errors_fail:
        sys.exit(f"serve bench: wrk saw {res['errors']} errors on port {port}: {out}")
    res["rps"] = res["requests"] / res["seconds"]
    return res


def fio_qd1(table, block_size, ios):
    fj = subprocess.run(["fio", "--name=randread", f"--filename={table}", "--readonly",
                         "--direct=1", "--rw=randread", f"--bs={block_size}", "--iodepth=1",
                         "--ioengine=psync", f"--number_ios={ios}", "--output-format=json"],
                        capture_output=True, check=True, text=True).stdout
    clat = json.loads(fj[fj.index("{"):])["jobs"][0]["read"]["clat_ns"]["percentile"]
    return clat["50.000000"] / 1e3


def measure(sstpipe, table, data_dir, reps=3, seconds=5, nkeys=10000, seed=1):
    """Runs the comparison; returns the raw results (rows() makes the table's rows)."""
    cores = os.cpu_count()
    work = tempfile.mkdtemp(prefix="serve-bench-", dir=data_dir)
    # nginx's workers (nobody, when started by root) read the files.
    os.chmod(work, 0o755)
    try:
        return _measure(sstpipe, table, work, reps, seconds, nkeys, seed, cores)
    finally:
        shutil.rmtree(work, True)


def _measure(sstpipe, table, work, reps, seconds, nkeys, seed, cores):
    # serve watches the directory of the path it is given; in a directory of
    # its own nothing else happens there, so its read syscalls are lookups.
    quiet = os.path.join(work, "table")
    os.mkdir(quiet)
    os.symlink(os.path.abspath(table), os.path.join(quiet, "table.sst"))
    table = os.path.join(quiet, "table.sst")
    info = json.loads(subprocess.run([sstpipe, "info", table, "--json"], capture_output=True,
                                     check=True, text=True).stdout)
    s = Serve(sstpipe, table)
    try:
        keys = draw_keys(s.port, nkeys, seed)
        values = fetch_values(s.port, keys)
    finally:
        s.stop()
    root = os.path.join(work, "root", "v")
    os.makedirs(root)
    for k, v in values.items():
        with open(os.path.join(root, k.hex()), "wb") as f:
            f.write(v)
    serve_paths = os.path.join(work, "serve.paths")
    nginx_paths = os.path.join(work, "nginx.paths")
    with open(serve_paths, "w") as f:
        f.writelines(f"/v1/get?raw=1&key={urllib.parse.quote(k, safe='')}\n" for k in keys)
    with open(nginx_paths, "w") as f:
        f.writelines(f"/v/{k.hex()}\n" for k in keys)
    lua = os.path.join(work, "keys.lua")
    with open(lua, "w") as f:
        f.write(LUA)
    wrk_threads = min(cores, 16)
    r = {"keys": len(keys), "distinct_keys": len(values), "seconds": seconds, "cores": cores,
         "nginx_c1": [], "serve_c1": [], "nginx_c16": [], "serve_c16": [], "cold_c1": [],
         "cold_reads_per_lookup": [], "fio_p50_us": []}
    for rep in range(reps):
        log(f"rep {rep + 1}/{reps}: nginx and serve, 1 and 16 connections")
        n = Nginx(work, cores)
        try:
            r["nginx_c1"].append(wrk(n.port, nginx_paths, lua, 1, 1, seconds))
            r["nginx_c16"].append(wrk(n.port, nginx_paths, lua, 16, wrk_threads, seconds))
        finally:
            n.stop()
        s = Serve(sstpipe, table)
        try:
            r["serve_c1"].append(wrk(s.port, serve_paths, lua, 1, 1, seconds))
            r["serve_c16"].append(wrk(s.port, serve_paths, lua, 16, wrk_threads, seconds))
        finally:
            s.stop()
        log(f"rep {rep + 1}/{reps}: serve --cold and fio")
        s = Serve(sstpipe, table, "--cold")
        try:
            before = s.read_syscalls()
            c = wrk(s.port, serve_paths, lua, 1, 1, seconds)
            c["read_syscalls"] = s.read_syscalls() - before
        finally:
            s.stop()
        r["cold_c1"].append(c)
        r["cold_reads_per_lookup"].append(c["read_syscalls"] / c["requests"])
        r["fio_p50_us"].append(fio_qd1(table, info["block_size"], 5000))
    return r


def rows(r, row, paired):
    """The table rows of measure()'s results r; paired is tests/bench/run's
    (report's), which keeps the per-run ratios."""
    for q, target in (("p50", "<= 1.3"), ("p99", "<= 1.5")):
        ours = [x[f"{q}_us"] for x in r["serve_c1"]]
        peer = [x[f"{q}_us"] for x in r["nginx_c1"]]
        row(f"serve warm 1-conn {q} vs nginx (us)", med(ours), med(peer), paired(ours, peer),
            target, None)
    ours = [x["rps"] for x in r["serve_c16"]]
    peer = [x["rps"] for x in r["nginx_c16"]]
    row("serve warm 16-conn req/s vs nginx", med(ours), med(peer), paired(ours, peer), ">= 0.8",
        None)
    rpl = r["cold_reads_per_lookup"]
    row("serve --cold reads per lookup (min..max)", f"{min(rpl):.3f}..{max(rpl):.3f}", 1, None,
        "exactly 1", all(abs(x - 1) < 0.001 for x in rpl))
    ours = [x["p50_us"] for x in r["cold_c1"]]
    floor = [f + n["p50_us"] for f, n in zip(r["fio_p50_us"], r["nginx_c1"])]
    row("serve --cold 1-conn p50 vs fio QD1 p50 + nginx 1-conn p50 (us)", med(ours), med(floor),
        paired(ours, floor), "<= 1.2", None)


def print_rows(raw, rows_of, json_path, key):
    """Alone (not from tests/bench/run): prints the rows that rows_of (a
    bench module's rows()) makes of its results raw, through
    tests/bench/report as tests/bench/run does, and writes both, raw under
    key, to json_path when given."""
    from importlib.machinery import SourceFileLoader
    from importlib.util import module_from_spec, spec_from_loader
    loader = SourceFileLoader("report", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "report"))
    report = module_from_spec(spec_from_loader("report", loader))
    loader.exec_module(report)
    table = []
    rows_of(raw, lambda *x: table.append(report.make_row(*x)), report.paired)
    print("\n".join(report.table_lines(table)))
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"table_rows": table, key: raw}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sstpipe")
    ap.add_argument("table")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5, help="seconds of each wrk run")
    ap.add_argument("--keys", type=int, default=10000, help="keys in the sequence")
    ap.add_argument("--data-dir", default=None, help="scratch space (default: beside TABLE)")
    ap.add_argument("--json", help="write rows and raw results here")
    a = ap.parse_args()
    raw = measure(a.sstpipe, a.table, a.data_dir or os.path.dirname(
        os.path.abspath(a.table)), a.reps, a.seconds, a.keys)
    print_rows(raw, rows, a.json, "serve")


if __name__ == "__main__":
    main()
