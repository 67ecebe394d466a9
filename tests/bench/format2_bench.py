"""format2_bench.py: table format version 2 (compressed blocks, issue 31)
against its compressed peers and against version 1, called from
tests/bench/run (the full run, and `--only format2`).

Sizes, on the same records at the same block size (our table's): our table
in version 1 (`[sst] compression = none`) and version 2 (zstd, level 3, a
dictionary of up to 64 KiB: sstpipe's defaults, set explicitly so that a
run says what it measured), mtbl with
zstd level 3 (mtbl_peer.c --zstd 3) and RocksDB's SstFileWriter with zstd
level 3 and a 16 KiB trained dictionary (rocksdb_peer.c, fed the mtbl
peer's records), on each real corpus of issue 31 (CORPORA, in
../shared/corpora or $SSTPIPE_CORPORA; a .bz2 one given to the peer
decompressed, since mtbl_peer reads plain XML or zstd) and on the run's enwiki-like and
short-page dumps. Each table's record count and bytes are checked equal to
ours. A size is the same on any machine, however loaded.

Build speed: on both dumps, each repetition builds version 1 and version 2
back to back (the sort budget of the run), MB of XML per second.

Lookups, on the enwiki-like version 2 table and the mtbl zstd peer's of
the same dump, reusing the tables section's machinery (tests/bench/run):
per repetition, warm p50 as `sstpipe profile` times sstpipe_get against
`mtbl_peer lookup` on the same keys (bench_keys), the cold lookups'
p50 against fio at queue depth 1 and their reads counted from outside
(run.cold_reads_seen: exactly one O_DIRECT read per hit), and the block
reads of absent keys (`profile --misses 100 --cold`) counted the same way.
And the small-machine case (small_machine.py): serve of the enwiki-like
version 1 and version 2 tables in a memory cgroup of a fifth of the
version 1 table, disk reads per request and latency side by side.
The results go into the JSON's `format2`, its rows (each named
"[format 2] ...") into `table_rows`, and tests/bench/report renders
RESULTS.md's results-compression block (every table's bytes) from it.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean

import small_machine  # noqa: E402

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREFIX = "[format 2] "
LEVEL = 3
DICT = "64K"  # ours, the largest [sst] dictionary_size (the writer's may be smaller or none)
PEER_DICT = "16K"  # RocksDB's, issue 31's peer
# What the table names its format 2 settings as (`sstpipe build --set`).
V1 = ["--set", "sst.compression=none"]
V2 = ["--set", "sst.compression=zstd", "--set", f"sst.compression_level={LEVEL}",
      "--set", f"sst.dictionary_size={DICT}"]
MAX_BYTES = "1024"  # the value cap of every build, ours and the peers' (as the run's peer)


# The real corpora of issue 31's targets: the others in the directory hold a
# handful of pages, whose tables are a few blocks whatever the format.
CORPORA = ("enwiki-206pages.xml.bz2", "ltgwiki-2004pages.xml")


def corpora():
    """The real corpora: {name: path}."""
    d = os.environ.get("SSTPIPE_CORPORA") or os.path.join(SRC, "..", "shared", "corpora")
    return {f.split(".")[0]: os.path.join(d, f) for f in CORPORA}


def info(sstpipe, table):
    return json.loads(subprocess.run([sstpipe, "info", table, "--json"], capture_output=True,
                                     check=True, text=True).stdout)


def tables(run, a, progs, work, name, dump):
    """Every table of one dump: ours in both versions, the two peers; their
    bytes, and whether all hold the same records."""
    sstpipe, mem = progs["sstpipe"], str(a.memory)
    base = os.path.join(work, name)
    for version, flags in (("v1", V1), ("v2", V2)):
        run.timed([sstpipe, "build", dump, "-o", f"{base}.{version}.sst", "--memory", mem,
                   "--tmp", work, *flags])
    ours = {v: info(sstpipe, f"{base}.{v}.sst") for v in ("v1", "v2")}
    block = str(ours["v2"]["block_size"])
    plain = dump
    if dump.endswith(".bz2"):
        plain = base + ".xml"
        with open(dump, "rb") as src, open(plain, "wb") as out:
            run.sh(["bzip2", "-dc"], stdin=src, stdout=out)
    mtbl = base + ".zstd.mtbl"
    printed = base + ".json"  # what each peer prints: its records
    with open(printed, "w") as out:
        run.timed([progs["peer"], "build", plain, "-o", mtbl, "--memory", mem, "--block-size",
                   block, "--max-bytes", MAX_BYTES, "--tmp", work, "--zstd", str(LEVEL)],
                  stdout=out)
    peer = json.load(open(printed))
    with open(printed, "w") as out:
        run.timed([progs["rocks"], mtbl, base + ".rocksdb.sst", "--block-size", block, "--zstd",
                   str(LEVEL), "--dict", PEER_DICT], stdout=out)
    rocks = json.load(open(printed))
    os.unlink(printed)
    if plain != dump:
        os.unlink(plain)
    records = (ours["v2"]["records"], ours["v2"]["key_bytes"], ours["v2"]["value_bytes"])
    same = all((x["records"], x["key_bytes"], x["value_bytes"]) == records
               for x in (ours["v1"], peer, rocks))
    return {"dump": os.path.basename(dump), "block_size": int(block), "records": records[0],
            "record_bytes": records[1] + records[2], "same_records": same,
            "bytes": {"v1": ours["v1"]["file_size"], "v2": ours["v2"]["file_size"],
                      "mtbl_zstd": os.path.getsize(mtbl),
                      "rocksdb_zstd_dict": rocks["file_size"]}}


def builds(run, a, sstpipe, work, dump):
    """reps builds of dump, version 1 then version 2 back to back: each
    one's run summary."""
    out = {"v1": [], "v2": [], "input_bytes": os.path.getsize(dump)}
    for rep in range(a.reps):
        run.log(f"rep {rep + 1}/{a.reps}: format 1 and 2 builds of {os.path.basename(dump)}")
        for version, flags in (("v1", V1), ("v2", V2)):
            out[version].append(run.timed(
                [sstpipe, "build", dump, "-o", os.path.join(work, f"speed.{version}.sst"),
                 "--memory", str(a.memory), "--tmp", work, *flags]).summary())
    return out


def lookups(run, a, progs, work, sst, mtbl):
    """Warm against the mtbl zstd peer, cold against fio and counted, absent
    keys counted: per repetition."""
    sstpipe = progs["sstpipe"]
    lk = {"warm": [], "peer": [], "cold": [], "fio": [], "cold_seen": [], "misses_seen": []}
    pj, keys = os.path.join(work, "profile.json"), os.path.join(work, "keys.bin")
    block = info(sstpipe, sst)["block_size"]
    for rep in range(a.reps):
        run.log(f"rep {rep + 1}/{a.reps}: format 2 lookups")
        seed = 1000 + rep
        run.warm_cache(sst)
        run.warm_cache(mtbl)
        run.sh([sstpipe, "profile", sst, str(a.lookups), "--seed", str(seed), "--json", pj],
               stdout=subprocess.DEVNULL)
        lk["warm"].append(json.load(open(pj)))
        h = subprocess.run([progs["keysgen"], sst, str(a.lookups), str(seed), keys],
                           capture_output=True, check=True, text=True).stdout.strip()
        if h != lk["warm"][-1]["key_sequence_hash"]:
            sys.exit(f"bench: bench_keys drew other keys than sstpipe profile ({h})")
        lk["peer"].append(json.loads(subprocess.run(
            [progs["peer"], "lookup", mtbl, keys], capture_output=True, check=True,
            text=True).stdout))
        run.sh([sstpipe, "profile", sst, str(a.cold_lookups), "--cold", "--seed", str(seed),
                "--json", pj], stdout=subprocess.DEVNULL)
        lk["cold"].append(json.load(open(pj)))
        clat = run.fio(sst, block, a.cold_lookups, 1)["clat_ns"]["percentile"]
        lk["fio"].append({"p50_ns": clat["50.000000"], "p99_ns": clat["99.000000"]})
        lk["cold_seen"].append(run.cold_reads_seen(sstpipe, sst, a.cold_lookups, seed))
        lk["misses_seen"].append(run.cold_reads_seen(sstpipe, sst, a.cold_lookups, seed,
                                                     "--misses", "100"))
    os.unlink(keys)
    os.unlink(pj)
    return lk


def measure(run, a, progs, data, enwiki, short):
    """The section: enwiki and short are the run's enwiki-like and
    short-page .zst dumps; run is tests/bench/run's module."""
    work = tempfile.mkdtemp(prefix="format2-", dir=data)
    try:
        dumps = dict(corpora(), **{"enwiki-like": enwiki, "short pages": short})
        out = {"sizes": {}, "settings": {
            "ours": f"zstd level {LEVEL}, a dictionary of up to {DICT[:-1]} KiB",
            "peer": f"a {PEER_DICT[:-1]} KiB trained dictionary"}}
        for name, dump in dumps.items():
            run.log(f"format 2: the tables of {name}")
            out["sizes"][name] = tables(run, a, progs, work, name.replace(" ", "-"), dump)
        out["builds"] = {"enwiki-like": builds(run, a, progs["sstpipe"], work, enwiki),
                         "short pages": builds(run, a, progs["sstpipe"], work, short)}
        out["lookups"] = lookups(run, a, progs, work, os.path.join(work, "enwiki-like.v2.sst"),
                                 os.path.join(work, "enwiki-like.zstd.mtbl"))
        out["small_machine"] = small_machine.measure(
            run, a, progs["sstpipe"], work, os.path.join(work, "enwiki-like.v1.sst"),
            os.path.join(work, "enwiki-like.v2.sst"))
    finally:
        shutil.rmtree(work, True)
    return out


def rows(r, row, run):
    """The section's rows, from measure()'s results r; run is
    tests/bench/run's module."""
    med, paired = run.med, run.paired
    for name, s in r["sizes"].items():
        b = s["bytes"]
        peer = min(b["mtbl_zstd"], b["rocksdb_zstd_dict"])
        row(f"{PREFIX}table bytes (defaults: level {LEVEL}, dictionary up to {DICT}) vs smallest "
            f"zstd-{LEVEL} peer, {name}", b["v2"], peer,
            b["v2"] / peer, "<= 1.0", b["v2"] <= peer and s["same_records"])
    e = r["sizes"]["enwiki-like"]["bytes"]
    row(f"{PREFIX}table bytes vs format 1, enwiki-like", e["v2"], e["v1"], e["v2"] / e["v1"],
        "<= 0.5", e["v2"] <= 0.5 * e["v1"])
    lk = r["lookups"]
    ours = [x["latency_ns"]["p50"] for x in lk["warm"]]
    peer = [x["p50_ns"] for x in lk["peer"]]
    row(f"{PREFIX}warm lookup p50 vs mtbl zstd-{LEVEL} (us)", med(ours) / 1e3, med(peer) / 1e3,
        paired(ours, peer), "<= 0.2", None)
    row(f"{PREFIX}warm lookup p50, every run (us)", max(ours) / 1e3, None, None, "<= 2 us",
        max(ours) <= 2000)
    run.cold_reads_row(lk, row, f"{PREFIX}cold reads per lookup, counted outside (min..max)")
    cold = [x["latency_ns"]["p50"] for x in lk["cold"]]
    fio = [x["p50_ns"] for x in lk["fio"]]
    row(f"{PREFIX}cold lookup p50 vs fio (us)", med(cold) / 1e3, med(fio) / 1e3,
        paired(cold, fio), "<= 1.1", None)
    miss = [(x["thread_preads"] + x["thread_uring_reads"]) / x["lookups"]
            for x in lk["misses_seen"]]
    row(f"{PREFIX}absent keys' block reads per lookup, counted outside (worst run)", max(miss),
        None, None, "<= 0.02", max(miss) <= 0.02)
    if "small_machine" in r:
        small_machine.rows(r["small_machine"], row, run, PREFIX)
    for name, b in r["builds"].items():
        mb = b["input_bytes"] / 1e6
        v2 = [mb / x["wall"] for x in b["v2"]]
        v1 = [mb / x["wall"] for x in b["v1"]]
        row(f"{PREFIX}build speed vs format 1, {name} (MB of XML/s)", med(v2), med(v1),
            paired(v2, v1), ">= 0.85", None)
        cpu2, cpu1 = [x["cpu"] for x in b["v2"]], [x["cpu"] for x in b["v1"]]
        row(f"{PREFIX}  same, CPU seconds", med(cpu2), med(cpu1), paired(cpu2, cpu1), "(info)",
            None)


def section_row(row):
    """Whether a row of table_rows is this section's."""
    return row["measure"].startswith(PREFIX)


def only(a, run, progs, data, files):
    """`tests/bench/run SIZE --only format2`: this section alone, into the
    full run's JSON at a.json (its `format2` and rows replaced, the rerun
    recorded in `reruns`)."""
    if not run.is_full_run(a.json, a.size):
        sys.exit(f"bench: --only format2 updates a full run's JSON; {a.json} is no full run "
                 f"of {a.size >> 20} MiB")
    import datetime
    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    load0 = os.getloadavg()
    short = run.generate(progs["wikigen"], data, a.size, a.threads, False, "wiktionary",
                         ("zst",))["zst"]
    section = measure(run, a, progs, data, files["zst"], short)
    new = []
    rows(section, lambda *x: new.append(run.report.make_row(*x)), run)
    with open(a.json) as f:
        res = json.load(f)
    res["format2"] = section
    res["table_rows"] = [x for x in res["table_rows"] if not section_row(x)] + new
    res.setdefault("reruns", []).append({
        "sections": "format 2 (sizes against the compressed peers and format 1, lookups, "
                    "builds; issue 31)", "date": started, "command": " ".join(sys.argv),
        "reps": a.reps, "load_at_start": load0, "load_at_end": os.getloadavg(),
        "machine": run.machine(data)})
    print("\n".join(run.report.table_lines(new)))
    run.write_json(a, res)
