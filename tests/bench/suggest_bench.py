#!/usr/bin/env python3
"""suggest_bench.py: serve's /v1/suggest against its /v1/get and against
kiwix-serve's /suggest on the same titles, by wrk; and the title index's
size against its table's (issue 32's targets).

    tests/bench/suggest_bench.py SSTPIPE TABLE [--reps N] [--seconds S]
                                 [--prefixes N] [--data-dir DIR] [--json PATH]

Also called from tests/bench/run (`--only suggest`, and the full run's
tables section), whose table gets its rows.

The prefixes are real ones: PREFIXES titles of TABLE's articles (records
that are no redirect) drawn with a fixed seed, each cut to 1 to 6 characters (drawn too), surrounding spaces
dropped, every other one lower-cased as people type. serve answers
/v1/suggest?q=PREFIX and, for the comparison of one lookup with one
suggestion, /v1/get?key=TITLE of the title each prefix was cut from (a
redirect followed, as a user's get is). wrk walks each list with
serve_bench.py's Lua script. Per repetition, back to back on one serve: get
and suggest at 1 connection (p50), at 16 (requests per second), and
suggest at 4 (failed requests).

The peer is Debian's kiwix-serve (kiwix-tools), the server people use for
Wikipedia offline, over a ZIM that zim-tools' zimwriterfs makes of the same
records: one HTML page per record, its title the record's key and its body
the value (a redirect's stored text too, as a page: the titles are the
same set), with zimwriterfs's title index and without its full-text one,
which /suggest does not read. It gets the same prefixes as
/suggest?content=NAME&term=PREFIX, started afresh (with its default
threads) for each connection count, 1, 4 and 16, so that a crash at one
does not hide the next; its failed requests (wrk's connect, read, write,
timeout and non-2xx counts) and whether it was still running afterwards are
recorded, not treated as the bench's failure. Every server listens on
127.0.0.1 and is started and stopped by its pid.

The index size is the FILE.titles beside each table against the table,
both in bytes: the run's table (enwiki-like), a table of wikigen's
short-page profile, and one of each real corpus (../shared/corpora, or
$SSTPIPE_CORPORA).
"""
import argparse
import glob
import hashlib
import html
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zlib

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_bench  # noqa: E402  (its servers, wrk and Lua script)

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ZIM_NAME = "sstpipe-bench"


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] suggest bench: {msg}", file=sys.stderr, flush=True)


def png(width, height):
    """An opaque grey PNG: zimwriterfs requires a 48x48 illustration."""
    raw = b"".join(b"\0" + b"\x80\x80\x80" * width for _ in range(height))

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body +
                struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n" +
            chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def page(title, body):
    return ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>'
            f'{html.escape(title)}</title></head><body><pre>{html.escape(body)}</pre>'
            '</body></html>')


def records(sstpipe, table):
    """(key, value) of every record, in key order, through `sstpipe dump`."""
    p = subprocess.Popen([sstpipe, "dump", table], stdout=subprocess.PIPE)
    for line in p.stdout:
        r = json.loads(line)
        yield r["key"], r["value"]
    if p.wait() != 0:
        sys.exit(f"suggest bench: sstpipe dump {table} exited {p.returncode}")


def make_zim(sstpipe, table, work):
    """The peer's ZIM of table's records and the titles of its articles
    (the records that are no redirect: a get of a redirect to a page not in
    the table is a 404, not a lookup's answer). The ZIM is kept in work
    with a stamp naming the table's bytes (their SHA-256), so a rerun on
    the same table, even one built again, does not make it again."""
    zim = os.path.join(work, ZIM_NAME + ".zim")
    titles_file = zim + ".titles"
    digest = hashlib.sha256()
    with open(table, "rb") as f:
        while chunk := f.read(1 << 23):
            digest.update(chunk)
    stamp = digest.hexdigest() + "\n"
    if os.path.exists(zim + ".stamp") and open(zim + ".stamp").read() == stamp:
        with open(titles_file) as f:
            return zim, f.read().split("\n")[:-1]
    # The stamp goes first: a run stopped while the ZIM is made leaves none.
    if os.path.exists(zim + ".stamp"):
        os.unlink(zim + ".stamp")
    pages = tempfile.mkdtemp(prefix="zim-pages-", dir=work)
    try:
        titles = []
        with open(os.path.join(pages, "illustration.png"), "wb") as f:
            f.write(png(48, 48))
        with open(os.path.join(pages, "index.html"), "w") as f:
            f.write(page("sstpipe bench", "the bench's ZIM"))
        for key, value in records(sstpipe, table):
            # Titles may hold any character; a file's name must not.
            with open(os.path.join(pages, key.encode().hex() + ".html"), "w") as f:
                f.write(page(key, value))
            if not value.startswith("#"):
                titles.append(key)
        log(f"zimwriterfs: the pages of {len(titles)} articles and their redirects")
        t0 = time.monotonic()
        subprocess.run(["zimwriterfs", "--welcome=index.html",
                        "--illustration=illustration.png", "--language=eng",
                        f"--title={ZIM_NAME}", "--description=sstpipe bench",
                        "--creator=sstpipe", "--publisher=sstpipe", f"--name={ZIM_NAME}",
                        "--withoutFTIndex", pages, zim + ".tmp"], check=True,
                       stdout=subprocess.DEVNULL)
        os.replace(zim + ".tmp", zim)
        log(f"zimwriterfs: {time.monotonic() - t0:.1f} s")
    finally:
        shutil.rmtree(pages, True)
    with open(titles_file, "w") as f:
        f.writelines(t + "\n" for t in titles)
    with open(zim + ".stamp", "w") as f:
        f.write(stamp)
    return zim, titles


class Kiwix:
    """kiwix-serve on 127.0.0.1, stopped by its pid; alive() says whether it
    is still running (it may die under load)."""

    def __init__(self, zim):
        self.port = serve_bench.free_port()
        self.proc = subprocess.Popen(["kiwix-serve", "--address", "127.0.0.1", "--port",
                                      str(self.port), zim], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        serve_bench.wait_port(self.port, self.proc, "kiwix-serve")

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def draw_prefixes(titles, n, seed):
    """n (prefix, title) pairs: a title drawn, cut to 1..6 characters."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        title = rng.choice(titles)
        prefix = title[:rng.randint(1, 6)].strip()
        if not prefix:
            continue
        out.append((prefix.lower() if len(out) % 2 else prefix, title))
    return out


def write_paths(path, paths):
    with open(path, "w") as f:
        f.writelines(p + "\n" for p in paths)
    return path


def quote(text):
    return urllib.parse.quote(text, safe="")


def measure(sstpipe, table, data_dir, reps=3, seconds=5, nprefixes=10000, seed=1):
    """Runs the comparison on table (with its FILE.titles); returns the raw
    results (rows() makes the table's rows). The ZIM is kept in data_dir."""
    work = tempfile.mkdtemp(prefix="suggest-bench-", dir=data_dir)
    try:
        return _measure(sstpipe, table, data_dir, work, reps, seconds, nprefixes, seed)
    finally:
        shutil.rmtree(work, True)


def _measure(sstpipe, table, data_dir, work, reps, seconds, nprefixes, seed):
    if not os.path.exists(table + ".titles"):
        sys.exit(f"suggest bench: {table} has no title index beside it")
    # serve watches its table's directory: one of its own, as serve_bench's.
    quiet = os.path.join(work, "table")
    os.mkdir(quiet)
    for suffix in ("", ".titles"):
        os.symlink(os.path.abspath(table + suffix), os.path.join(quiet, "table.sst" + suffix))
    served = os.path.join(quiet, "table.sst")
    zim, titles = make_zim(sstpipe, table, data_dir)
    pairs = draw_prefixes(titles, nprefixes, seed)
    get_paths = write_paths(os.path.join(work, "get.paths"),
                            [f"/v1/get?key={quote(t)}" for _, t in pairs])
    sug_paths = write_paths(os.path.join(work, "suggest.paths"),
                            [f"/v1/suggest?q={quote(p)}" for p, _ in pairs])
    kiwix_paths = write_paths(os.path.join(work, "kiwix.paths"),
                              [f"/suggest?content={ZIM_NAME}&term={quote(p)}" for p, _ in pairs])
    lua = os.path.join(work, "paths.lua")
    with open(lua, "w") as f:
        f.write(serve_bench.LUA)
    threads = min(os.cpu_count(), 16)
    r = {"prefixes": len(pairs), "articles": len(titles), "zim_bytes": os.path.getsize(zim),
         "seconds": seconds, "sample": [p for p, _ in pairs[:20]]}
    for k in ("get_c1", "suggest_c1", "get_c16", "suggest_c16", "suggest_c4", "kiwix_c1",
              "kiwix_c4", "kiwix_c16"):
        r[k] = []
    for rep in range(reps):
        log(f"rep {rep + 1}/{reps}: serve get and suggest, 1, 16 and 4 connections")
        s = serve_bench.Serve(sstpipe, served)
        try:
            for conns, t in ((1, 1), (16, threads)):
                r[f"get_c{conns}"].append(serve_bench.wrk(s.port, get_paths, lua, conns, t,
                                                          seconds))
                r[f"suggest_c{conns}"].append(serve_bench.wrk(s.port, sug_paths, lua, conns, t,
                                                              seconds, errors_fail=False))
            r["suggest_c4"].append(serve_bench.wrk(s.port, sug_paths, lua, 4, min(threads, 4),
                                                   seconds, errors_fail=False))
        finally:
            s.stop()
        for conns in (1, 4, 16):
            log(f"rep {rep + 1}/{reps}: kiwix-serve, {conns} connections")
            k = Kiwix(zim)
            try:
                res = serve_bench.wrk(k.port, kiwix_paths, lua, conns, min(threads, conns),
                                      seconds, errors_fail=False)
                res["survived"] = k.alive()
            finally:
                k.stop()
            r[f"kiwix_c{conns}"].append(res)
    return r


def build_table(sstpipe, dump, out, work):
    subprocess.run([sstpipe, "build", dump, "-o", out, "--tmp", work], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def sizes(table):
    return {"table": os.path.basename(table), "table_bytes": os.path.getsize(table),
            "titles_bytes": os.path.getsize(table + ".titles")}


def measure_sizes(sstpipe, tables, short_dump, work, corpora=None):
    """The title index's bytes against its table's, for the tables given
    ({label: path}, each built with its index), a table of the short-page
    dump short_dump, and one of each real corpus; by label."""
    out = {label: sizes(t) for label, t in tables.items()}
    corpora = corpora or os.environ.get("SSTPIPE_CORPORA") or os.path.join(SRC, "..", "shared",
                                                                            "corpora")
    scratch = tempfile.mkdtemp(prefix="title-sizes-", dir=work)
    try:
        out["short pages"] = sizes(build_table(sstpipe, short_dump,
                                               os.path.join(scratch, "short.sst"), scratch))
        for dump in sorted(glob.glob(os.path.join(corpora, "*.xml")) +
                           glob.glob(os.path.join(corpora, "*.xml.bz2"))):
            name = os.path.basename(dump).split(".")[0]
            out[name] = sizes(build_table(sstpipe, dump, os.path.join(scratch, name + ".sst"),
                                          scratch))
    finally:
        shutil.rmtree(scratch, True)
    return out


def failed(runs):
    return sum(x["errors"] for x in runs)


def kiwix_text(runs):
    """What kiwix-serve did at one connection count, over the repetitions:
    its failed requests (of the responses, the non-2xx; then the
    connections refused, reset or timed out) and whether it kept running."""
    died = sum(not x["survived"] for x in runs)
    return (f"{failed(runs)} failed, {sum(x['requests'] for x in runs)} answered; " +
            (f"died in {died} of {len(runs)} runs" if died else "survived"))


def rows(r, row, paired):
    """The table rows of measure()'s results r; paired is tests/bench/run's
    (report's), which keeps the per-run ratios."""
    med = serve_bench.med
    ours = [x["p50_us"] for x in r["suggest_c1"]]
    get = [x["p50_us"] for x in r["get_c1"]]
    row("serve /v1/suggest 1-conn p50 vs /v1/get (us)", med(ours), med(get), paired(ours, get),
        "<= 1.5", None)
    ours16 = [x["rps"] for x in r["suggest_c16"]]
    get16 = [x["rps"] for x in r["get_c16"]]
    row("serve /v1/suggest 16-conn req/s vs /v1/get", med(ours16), med(get16),
        paired(ours16, get16), ">= 0.7", None)
    total = failed(r["suggest_c1"] + r["suggest_c4"] + r["suggest_c16"])
    row("serve /v1/suggest failed requests at 1, 4, 16 conns", total, None, None,
        "exactly 0", total == 0)
    peer = [x["p50_us"] for x in r["kiwix_c1"]]
    row("serve /v1/suggest 1-conn p50 vs kiwix-serve /suggest (us)", med(ours), med(peer),
        paired(ours, peer), "<= 0.1", None)
    for conns in (4, 16):
        row(f"  kiwix-serve /suggest at {conns} conns (ours: failed)",
            failed(r[f"suggest_c{conns}"]), kiwix_text(r[f"kiwix_c{conns}"]), None, "(info)",
            None)


def size_rows(s, row):
    """A row per table of measure_sizes(): the target is on the
    enwiki-like table's, the others are information."""
    for label, x in s.items():
        ratio = x["titles_bytes"] / x["table_bytes"]
        enwiki = label == "enwiki-like"
        row(f"title index vs table bytes, {label} ({x['table']})", x["titles_bytes"],
            x["table_bytes"], ratio, "<= 0.1" if enwiki else "(info)",
            ratio <= 0.1 if enwiki else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sstpipe")
    ap.add_argument("table")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5, help="seconds of each wrk run")
    ap.add_argument("--prefixes", type=int, default=10000, help="prefixes in the sequence")
    ap.add_argument("--data-dir", default=None, help="scratch space (default: beside TABLE)")
    ap.add_argument("--json", help="write rows and raw results here")
    a = ap.parse_args()
    raw = measure(a.sstpipe, a.table, a.data_dir or os.path.dirname(os.path.abspath(a.table)),
                  a.reps, a.seconds, a.prefixes)
    serve_bench.print_rows(raw, rows, a.json, "suggest")


if __name__ == "__main__":
    main()
