"""sstpipe_e2e.py: what the end-to-end tests share.

Running the binaries (exit code, stdout, stderr, wall time and the child's own
peak RSS), per-test temp dirs, the corpora, wikigen's outputs (each generated
once for every test and both suites), recompression into every input
form the issue names, parsers for `dump --jsonl`, `info --json`, `-v` stats
lines and the record-stream format, and the failure checks every bad-input
case repeats. Standard library only; zstd goes through the `zstd` CLI.
"""

import bz2
import functools
import glob
import gzip
import hashlib
import json
import lzma
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------- environment

# Set by tests/CMakeLists.txt in a build with -DSSTPIPE_SANITIZE=ON.
SANITIZED = os.environ.get("SSTPIPE_SANITIZED") == "1"


def every_form_of(name):
    """Whether the dump of sources() named name goes through every input
    form here: always in the plain suite; in a sanitized build only the
    largest corpus (many buffer refills) and the edge-case dump (every edge
    case), the others as plain XML, as the sanitizers look for memory errors
    on each decoder's paths, which those two take."""
    return not SANITIZED or name in ("enwiki_206pages", "edge")


def env_path(name):
    """The value of env var name; skips the test (clearly) when it is unset."""
    value = os.environ.get(name)
    if not value:
        raise unittest.SkipTest(f"environment variable {name} is not set")
    return value


def sstpipe_bin():
    return env_path("SSTPIPE")


def wikigen_bin():
    return env_path("WIKIGEN")


def corpora_dir():
    """$SSTPIPE_CORPORA (ctest and tests/run always set it). Set but missing
    or without a dump, the test fails: a test over no corpus would pass
    having checked nothing."""
    directory = env_path("SSTPIPE_CORPORA")
    if not corpus_files(directory):
        raise AssertionError(f"SSTPIPE_CORPORA={directory}: no *.xml or *.xml.bz2 dump there "
                             "(the real corpora are ../shared/corpora beside the checkout)")
    return directory


def corpus_files(directory=None):
    """Every dump in the corpora dir (*.xml, *.xml.bz2), sorted by name;
    never empty for the corpora dir itself (see corpora_dir)."""
    if directory is None:
        directory = corpora_dir()
    files = glob.glob(os.path.join(directory, "*.xml")) + glob.glob(
        os.path.join(directory, "*.xml.bz2"))
    return sorted(files)


def corpus_name(path):
    """A short identifier for a corpus file: 'enwiki_206pages'."""
    base = os.path.basename(path)
    for suffix in (".xml.bz2", ".xml"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    return re.sub(r"[^A-Za-z0-9]+", "_", base)


@functools.lru_cache(maxsize=None)
def load_xml(path):
    """The XML bytes of a corpus file (decompressed by its name: the test
    knows what it put there; the binary must go by content). Read once per
    test process: a module's cases each ask for their dump's XML again, and a
    bz2 corpus is dear to decompress each time."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".bz2"):
        data = bz2.decompress(data)
    return data


# ---------------------------------------------------------------- processes


class Result:
    """What one run of a program did."""

    def __init__(self, args, code, stdout, stderr, seconds, maxrss_kib):
        self.args = args
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds
        self.maxrss_kib = maxrss_kib

    @property
    def err_text(self):
        return self.stderr.decode("utf-8", "replace")

    def describe(self):
        """For assertion messages: the command and what it said."""
        out = self.stdout[:400].decode("utf-8", "replace")
        cmd = " ".join(a.decode("utf-8", "replace") if isinstance(a, bytes) else a
                       for a in self.args)
        return (f"\n  command: {cmd}\n  exit: {self.code}"
                f"\n  stderr: {self.err_text[:2000]!r}\n  stdout[:400]: {out!r}")


# Runs argv[2:] as a child and writes its peak RSS (KiB) to the file argv[1].
# A forked child's ru_maxrss starts from its parent's RSS at fork time, so the
# peak of a program forked straight from this (large) test process would be
# hidden below the test's own; this small `python3 -S` middleman keeps that
# floor at a few MiB.
_RSS_WRAPPER = """
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(ru.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""


def run(args, stdin=None, input_bytes=None, timeout=600, cwd=None, measure_rss=False):
    """Runs args; stdin is a path (or None), input_bytes is fed through a pipe.

    stdout/stderr go to anonymous files (no pipe deadlock on big outputs).
    With measure_rss, result.maxrss_kib is the program's own peak RSS (see
    _RSS_WRAPPER; a few MiB at least), otherwise None.
    """
    args = [a if isinstance(a, bytes) else str(a) for a in args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as rss:
        argv = ([sys.executable, "-S", "-c", _RSS_WRAPPER, rss.name] + args
                if measure_rss else args)
        stdin_f = open(stdin, "rb") if stdin is not None else None
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv, cwd=cwd, stdout=out, stderr=err,
                stdin=(subprocess.PIPE if input_bytes is not None
                       else stdin_f if stdin_f else subprocess.DEVNULL))
            if input_bytes is not None:
                try:
                    proc.stdin.write(input_bytes)
                except BrokenPipeError:
                    pass
                proc.stdin.close()
            code = _wait(proc, timeout, args)
        finally:
            if stdin_f:
                stdin_f.close()
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        maxrss = int(rss.read() or 0) if measure_rss else None
        return Result(args, code, out.read(), err.read(), seconds, maxrss)


def _wait(proc, timeout, args):
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"timed out after {timeout}s: {args}")


def sstpipe(*args, **kw):
    return run([sstpipe_bin()] + list(args), **kw)


def shell(script, timeout=600, cwd=None):
    """Runs a bash script with pipefail (for real shell pipelines)."""
    return run(["bash", "-c", "set -euo pipefail\n" + script], timeout=timeout, cwd=cwd)


def q(s):
    """Shell-quotes a path."""
    return "'" + str(s).replace("'", "'\\''") + "'"


@functools.lru_cache(maxsize=None)
def _wikigen_sources_digest():
    """What wikigen's output depends on besides its arguments: the sources it
    is built from, its own (data/) and those of the one library it links
    (stages/common/). The plain and the sanitized build make it from the same
    sources, and it writes the same bytes for the same arguments, so both
    suites share what either generated."""
    top = env_path("SSTPIPE_SOURCE")
    h = hashlib.sha256()
    for folder in ("data", os.path.join("stages", "common")):
        for root, dirs, files in os.walk(os.path.join(top, folder)):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(root, name)
                h.update(os.path.relpath(path, top).encode() + b"\0")
                with open(path, "rb") as f:
                    h.update(f.read() + b"\0")
    return h.hexdigest()


def generate(out_path, *args, timeout=300):
    """Writes to out_path what `wikigen ARGS -o FILE` writes (one file).

    Where tests/CMakeLists.txt names a cache ($SSTPIPE_WIKIGEN_CACHE), the
    output is generated once for every test and both suites, in a file named
    by a digest of the arguments and of wikigen's sources, and copied to
    out_path: a test may change its copy, never the cached file. The cached
    file is written under a name of this process's and renamed into place,
    so tests that ask for the same output at once each see a whole file."""
    args = [str(a) for a in args]
    cache = os.environ.get("SSTPIPE_WIKIGEN_CACHE")
    if not cache:
        r = run([wikigen_bin(), *args, "-o", out_path], timeout=timeout)
        if r.code != 0:
            raise AssertionError("wikigen failed:" + r.describe())
        return out_path
    key = hashlib.sha256("\0".join([_wikigen_sources_digest()] + args).encode()).hexdigest()
    cached = os.path.join(cache, key)
    if not os.path.exists(cached):
        os.makedirs(cache, exist_ok=True)
        part = f"{cached}.{os.getpid()}.part"
        r = run([wikigen_bin(), *args, "-o", part], timeout=timeout)
        if r.code != 0:
            if os.path.exists(part):
                os.unlink(part)
            raise AssertionError("wikigen failed:" + r.describe())
        os.replace(part, cached)
    shutil.copyfile(cached, out_path)
    return out_path


def wikigen(out_path, size, seed, fmt, profile="enwiki"):
    """Generates a synthetic dump with the data/ generator (profile: its
    page sizes, enwiki or wiktionary)."""
    return generate(out_path, "--size", size, "--seed", seed, "--format", fmt, "--profile",
                    profile)


def multistream_reference(directory, size, seed):
    """The input the cluster tests shard: a multistream .bz2 dump of SIZE
    with duplicate titles (so the later page must win across tasks), its
    one-machine build and that table's `dump --jsonl`, which every sharded
    build must equal. Returns (dump, table, jsonl)."""
    src = os.path.join(directory, "gen.xml.bz2")
    generate(src, "--size", size, "--seed", seed, "--format", "bz2-multistream", "--duplicates",
             "8", timeout=600)
    ref = os.path.join(directory, "ref.sst")
    r = sstpipe("build", src, "-o", ref)
    assert r.code == 0, r.describe()
    return src, ref, sstpipe("dump", ref, "--jsonl").stdout


# ---------------------------------------------------------------- test base


class E2ETest(unittest.TestCase):
    """A test case with a fresh temp dir (self.tmp) removed afterwards."""

    maxDiff = 4000

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sstpipe-e2e-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def write_file(self, name, data):
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def assertOk(self, r):
        self.assertEqual(r.code, 0, "command failed:" + r.describe())

    def build(self, src, out, *opts):
        r = sstpipe("build", src, "-o", out, *opts)
        self.assertOk(r)
        return r

    def dump(self, sst):
        r = sstpipe("dump", sst, "--jsonl")
        self.assertOk(r)
        return parse_dump(self, r.stdout)

    def assertRecordsEqual(self, got, expected, what):
        """got/expected: lists of (key bytes, value bytes). Reports the first difference."""
        if got == expected:
            return
        gk = [k for k, _ in got]
        ek = [k for k, _ in expected]
        missing = sorted(set(ek) - set(gk))[:5]
        extra = sorted(set(gk) - set(ek))[:5]
        msg = [f"{what}: {len(got)} records, reference has {len(expected)}"]
        if missing:
            msg.append(f"missing keys (first 5): {missing}")
        if extra:
            msg.append(f"unexpected keys (first 5): {extra}")
        for i, (g, e) in enumerate(zip(got, expected)):
            if g != e:
                msg.append(f"first difference at record {i}: key {g[0]!r} vs {e[0]!r}")
                if g[0] == e[0]:
                    msg.append(f"  value ({len(g[1])} bytes) {g[1][:160]!r}...")
                    msg.append(f"  expected ({len(e[1])} bytes) {e[1][:160]!r}...")
                break
        self.fail("\n".join(msg))

    def assertMemcmpOrder(self, keys, what):
        for i in range(1, len(keys)):
            if not keys[i - 1] < keys[i]:
                self.fail(f"{what}: keys not strictly increasing (memcmp) at {i}: "
                          f"{keys[i - 1]!r} then {keys[i]!r}")


# ---------------------------------------------------------------- output parsers


def wait_older(*paths, seconds=2.5, bound=30):
    """Waits until each file's ctime is more than `seconds` in the past
    (bounded): the incremental nightly records a dump's checksum only for a
    file unchanged for 2 s before it was hashed (pipeline/nightly/nightly_sums.h)."""
    deadline = time.monotonic() + bound
    while any(time.time_ns() - os.stat(p).st_ctime_ns <= seconds * 1e9 for p in paths):
        if time.monotonic() > deadline:
            raise AssertionError(f"{paths}: the clock did not move on")
        time.sleep(0.1)


def parse_dump(test, stdout):
    """`dump --jsonl` output -> [(key bytes, value bytes)]; every line must be
    a JSON object with exactly "key" and "value" strings."""
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError as e:
        test.fail(f"dump output is not UTF-8: {e}")
    if text and not text.endswith("\n"):
        test.fail("dump output does not end with a newline")
    records = []
    for n, line in enumerate(text.split("\n")[:-1], 1):
        try:
            obj = json.loads(line)
        except ValueError as e:
            test.fail(f"dump line {n} is not JSON ({e}): {line[:200]!r}")
        if not isinstance(obj, dict) or set(obj) != {"key", "value"} or not all(
                isinstance(v, str) for v in obj.values()):
            test.fail(f"dump line {n} is not {{\"key\": str, \"value\": str}}: {line[:200]!r}")
        records.append((obj["key"].encode("utf-8"), obj["value"].encode("utf-8")))
    return records


def parse_info(test, sst):
    """`info --json` -> dict."""
    r = sstpipe("info", sst, "--json")
    test.assertOk(r)
    try:
        info = json.loads(r.stdout)
    except ValueError as e:
        test.fail(f"info --json is not JSON ({e}): {r.stdout[:300]!r}")
    test.assertIsInstance(info, dict, "info --json is not an object")
    return info


STATS_RE = re.compile(r"([A-Za-z_]+)=(\d+(?:\.\d+)?)")


def parse_stats(test, stderr, stage):
    """The `-v` line of one stage: '<stage>: key=N key=N ...' -> {key: N}, N an
    int, or a float where the line has a fraction (seconds)."""
    lines = [l for l in stderr.decode("utf-8", "replace").splitlines()
             if l.startswith(stage + ": ")]
    test.assertEqual(len(lines), 1, f"expected one '{stage}: ...' stats line on stderr, "
                     f"got: {stderr.decode('utf-8', 'replace')!r}")
    return {k: float(v) if "." in v else int(v) for k, v in STATS_RE.findall(lines[0])}


def assert_manifest_measures(test, m, r, stages=None, peak=None):
    """A nightly manifest's time and memory figures against outside measures
    (r: the nightly run with measure_rss): every stage took some time, the
    stages together no more than the run, the run no more than it took from
    outside, and peak_rss_bytes at least `peak` within an eighth, by default
    the largest peak among the run's processes (the wrapper's wait4: the
    nightly and every task it reaped). That default suits a run whose largest
    process is a task; for a run without tasks pass the peak of a plain
    `sstpipe build` of the same input measured the same way (the nightly runs
    that build in its own process). stages: the manifest's stage list, or the
    figures a page shows of it."""
    stages = m["stages"] if stages is None else stages
    # Matched within an eighth: the nightly's own peak goes on growing a
    # little after its manifest is written (the pages, retention), and
    # another process's peak (a plain build's) differs from run to run as the
    # parse threads' allocations do (a few percent apart on a loaded
    # machine), while a figure that left the build or the tasks out would be
    # the nightly's own few MiB.
    peak = (r.maxrss_kib * 1024 if peak is None else peak) * 7 // 8
    test.assertTrue(stages, "no stage")
    for s in stages:
        test.assertGreater(s["wall_seconds"], 0, f"stage {s['name']}: no wall time")
    # The stages are disjoint parts of the run, which is inside what the
    # test measured: the one chain catches a stage counted twice.
    total = sum(s["wall_seconds"] for s in stages)
    test.assertLessEqual(total, m["wall_seconds"],
                         f"the stages took {total:.3f} s, the run {m['wall_seconds']:.3f} s")
    test.assertLessEqual(m["wall_seconds"], r.seconds,
                         f"the run took {r.seconds:.3f} s from outside")
    if SANITIZED:
        # AddressSanitizer holds freed memory in quarantine: the nightly's
        # own resident memory goes on growing after its manifest, with what
        # it frees, past any task's; the plain suite compares the peaks.
        return
    test.assertGreaterEqual(m["peak_rss_bytes"], peak,
                            "peak_rss_bytes is below the peak measured from outside")


# ---------------------------------------------------------------- record streams

RS_MAGIC = b"SSTPRS01"


def rs_encode(records, flags, max_value_bytes, count=None):
    """A record stream (recstream.h) holding records [(key, value) bytes]."""
    out = [RS_MAGIC, struct.pack("<IIII", 1, flags, max_value_bytes, 0)]
    for k, v in records:
        out.append(b"R" + struct.pack("<II", len(k), len(v)) + k + v)
    out.append(b"E" + struct.pack("<Q", len(records) if count is None else count))
    return b"".join(out)


def rs_decode(test, data):
    """A record stream -> (flags, max_value_bytes, [(key, value)]); checks its framing."""
    test.assertEqual(data[:8], RS_MAGIC, "record stream magic")
    version, flags, max_value, reserved = struct.unpack_from("<IIII", data, 8)
    test.assertEqual((version, reserved), (1, 0), "record stream version/reserved")
    pos, records = 24, []
    while True:
        test.assertLess(pos, len(data), "record stream has no end marker")
        tag = data[pos:pos + 1]
        if tag == b"E":
            (count,) = struct.unpack_from("<Q", data, pos + 1)
            test.assertEqual(count, len(records), "end marker count")
            test.assertEqual(pos + 9, len(data), "bytes after the end marker")
            return flags, max_value, records
        test.assertEqual(tag, b"R", f"record tag at byte {pos}")
        klen, vlen = struct.unpack_from("<II", data, pos + 1)
        pos += 9
        records.append((data[pos:pos + klen], data[pos + klen:pos + klen + vlen]))
        pos += klen + vlen


# ---------------------------------------------------------------- input forms


def to_gz(xml):
    return gzip.compress(xml, compresslevel=6, mtime=0)


def to_bz2(xml):
    return bz2.compress(xml, 9)


def to_bz2_multistream(xml, pieces=5, seed=1):
    """Splits xml at arbitrary byte positions (mid-tag, mid-character) and
    compresses each piece as its own bz2 stream, concatenated, as the public
    multistream dumps are (but with cuts anywhere)."""
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(xml)), min(pieces - 1, max(len(xml) - 1, 0))))
    bounds = [0] + cuts + [len(xml)]
    return b"".join(bz2.compress(xml[a:b], 9) for a, b in zip(bounds, bounds[1:]))


def to_xz(xml):
    return lzma.compress(xml, preset=1)


def to_zst(xml):
    r = subprocess.run(["zstd", "-q", "-c", "-3"], input=xml, stdout=subprocess.PIPE,
                       check=True)
    return r.stdout


XML_DECL_RE = re.compile(rb"^\s*<\?xml[^>]*\?>")


def to_utf16(xml):
    """The same document re-encoded as UTF-16 LE with a byte-order mark; the
    XML declaration (added if absent) says so."""
    body = XML_DECL_RE.sub(b"", xml, count=1).decode("utf-8")
    text = '<?xml version="1.0" encoding="UTF-16"?>\n' + body
    return b"\xff\xfe" + text.encode("utf-16-le")


# name -> (file suffix, encoder)
FORMS = {
    "plain": (".xml", lambda x: x),
    "gz": (".xml.gz", to_gz),
    "bz2": (".xml.bz2", to_bz2),
    "bz2_multistream": (".xml.bz2", to_bz2_multistream),
    "xz": (".xml.xz", to_xz),
    "zst": (".xml.zst", to_zst),
    "utf16": (".xml", to_utf16),
}


# ---------------------------------------------------------------- failure checks

LOCATION_RE = re.compile(r"(byte|offset|line|position|pos)\D{0,24}\d+", re.IGNORECASE)


def leftover_temps(*dirs):
    """Files that a failed run must not leave: *.tmp.* beside outputs, anything in --tmp."""
    found = []
    for d in dirs:
        for name in os.listdir(d):
            found.append(os.path.join(d, name))
    return found


def check_error_line(test, r, names=(), location=False, what=""):
    """stderr is exactly one line starting 'sstpipe', mentioning one of names
    (when given) and, for data errors, a byte offset or line number."""
    text = r.err_text
    lines = text.splitlines()
    test.assertEqual(len(lines), 1, f"{what}: expected exactly one stderr line" + r.describe())
    line = lines[0]
    test.assertTrue(line.startswith("sstpipe"), f"{what}: stderr must start 'sstpipe'" +
                    r.describe())
    if names:
        test.assertTrue(any(n in line for n in names),
                        f"{what}: stderr must name one of {list(names)}" + r.describe())
    if location:
        named = [n for n in names if n]
        test.assertTrue(
            LOCATION_RE.search(line) or any(re.search(re.escape(n) + r":\d+", line)
                                            for n in named),
            f"{what}: stderr must give a byte offset or line number" + r.describe())


# ---------------------------------------------------------------- an edge-case dump


def _page(title, revisions, ns=0, redirect=None):
    """One <page>; revisions: list of text fragments (already XML) or None for
    a revision without <text>."""
    out = [f"  <page>\n    <title>{title}</title>\n    <ns>{ns}</ns>\n    <id>1</id>\n"]
    if redirect:
        out.append(f'    <redirect title="{redirect}" />\n')
    for i, text in enumerate(revisions):
        out.append(f"    <revision>\n      <id>{i + 1}</id>\n"
                   "      <timestamp>2024-01-01T00:00:00Z</timestamp>\n"
                   "      <model>wikitext</model>\n      <format>text/x-wiki</format>\n")
        if text is not None:
            out.append(text if text.lstrip().startswith("<text") else
                       f'      <text bytes="0" xml:space="preserve">{text}</text>\n')
        out.append("    </revision>\n")
    out.append("  </page>\n")
    return "".join(out)


def edge_dump_xml():
    """A small export (schema 0.11) built to hit every record rule: several
    revisions, absent and deleted text, entities and character references in
    titles and text, CDATA, CR characters, Unicode (astral too) titles whose
    memcmp order differs from naive orders, a duplicate title, multi-byte
    characters straddling the 100/1024/4096 cuts, and one 3 MB page."""
    pages = [
        _page("Alpha", ["first text", "second text"]),
        _page("Zeta", [None]),
        _page("Deleted page", ["was here", '      <text bytes="0" deleted="deleted" />\n']),
        _page("Empty text", ['      <text bytes="0" xml:space="preserve" />\n']),
        _page("AT&amp;T &lt;x&gt; &#233;t&#xE9; &quot;q&quot; &apos;a&apos;",
              ["&lt;b&gt;bold&lt;/b&gt; &amp;amp; &#x1F600; &#65;"]),
        _page("\u00dcn\u00efc\u00f6d\u00e9", ["caf\u00e9 " * 10]),
        _page("\u65e5\u672c\u8a9e", ["\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8" * 300]),
        _page("\U0001F600 emoji", ["\U0001F600" * 500]),
        _page("\uff21 fullwidth", ["x"]),
        _page("Talk:Foo", ["talk"], ns=1),
        _page("talk:foo", ["lower"]),
        _page("Redirect to Alpha", ["#REDIRECT [[Alpha]]"], redirect="Alpha"),
        _page("_underscore", ["u"]),
        _page("\U0010FFFD last plane", ["p"]),
        _page("Straddle", ["x" * 99 + "\u00e9" * 2500]),
        _page("Straddle 3", ["y" * 1022 + "\u20ac" * 1500]),
        _page("Straddle 4", ["z" * 4093 + "\U0001F600" * 10]),
        _page("Exact 1024", ["b" * 1024]),
        _page("CDATA", ["<![CDATA[<not a tag> & ]]> after"]),
        _page("CR", ["line1\r\nline2&#13;\nline3\ttab"]),
        _page("Whitespace", ["   \n  "]),
        _page("Big page", ["\u00e9\u20ac\U0001F600 " * 300000]),
        _page("Alpha", ["replaced text"]),
    ]
    head = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" '
            'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" version="0.11" '
            'xml:lang="en">\n  <siteinfo>\n    <sitename>Edge</sitename>\n'
            '    <namespaces>\n      <namespace key="0" case="first-letter" />\n'
            '      <namespace key="1" case="first-letter">Talk</namespace>\n'
            '    </namespaces>\n  </siteinfo>\n')
    return (head + "".join(pages) + "</mediawiki>\n").encode("utf-8")


def sources():
    """Every dump the round trip covers: (name, function giving its XML bytes,
    original file or None)."""
    out = [(corpus_name(p), (lambda p=p: load_xml(p)), p) for p in corpus_files()]
    out.append(("edge", edge_dump_xml, None))
    return out

# ---------------------------------------------------------------- a Slurm cluster


class SlurmCluster:
    """A real single-node Slurm cluster for a test module. tests/run starts one
    for the whole suite (tests/cluster/slurm-up) and names its slurm.conf in
    SSTPIPE_TEST_SLURM_CONF: then that one is used and stop() leaves it to
    tests/run. Run alone (ctest -R, python3 test_x.py), the module starts its
    own with slurm-up in a fresh directory and stop() runs slurm-down. Either
    way SLURM_CONF is in os.environ (for sstpipe and the clients the test
    runs) while it is up. A cluster that cannot start fails the test with
    slurm-up's message (which quotes the failing daemon's log).

    Other tests may share the cluster, so a test tags its jobs with
    `slurm_args` (--comment=TAG) and looks only at those: queue() and jobs()."""

    SHARED_ENV = "SSTPIPE_TEST_SLURM_CONF"

    def __init__(self):
        self.dir = None
        self.tool_dir = os.path.join(env_path("SSTPIPE_SOURCE"), "tests", "cluster")
        self.partition = "test"
        self.tag = "sstpipe-test-%d" % os.getpid()
        self.slurm_args = "--comment=" + self.tag
        shared = os.environ.get(self.SHARED_ENV)
        if shared:
            self.conf = shared
        else:
            self.dir = tempfile.mkdtemp(prefix="sstpipe-slurm.")
            # munged wants every ancestor of its socket searchable by all.
            os.chmod(self.dir, 0o755)
            self.top = os.path.join(self.dir, "cluster")
            r = subprocess.run([os.path.join(self.tool_dir, "slurm-up"), self.top],
                               capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                shutil.rmtree(self.dir, ignore_errors=True)
                raise AssertionError("tests/cluster/slurm-up failed:\n" + r.stderr)
            self.conf = os.path.join(self.top, "slurm.conf")
        self._saved = os.environ.get("SLURM_CONF")
        os.environ["SLURM_CONF"] = self.conf

    def jobs(self, states="pending,running,completing"):
        """{job id: name} of this test's jobs (tagged with self.slurm_args) in
        those states ("all": finished ones too, while the controller keeps them)."""
        r = subprocess.run(["squeue", "--noheader", "--states=" + states, "--format=%i %k %j"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError("squeue failed: " + r.stderr)
        found = {}
        for line in r.stdout.splitlines():
            parts = line.split(None, 2)
            if len(parts) == 3 and parts[1] == self.tag:
                found[parts[0]] = parts[2]
        return found

    def queue(self):
        """The ids of this test's jobs squeue shows pending or running."""
        return sorted(self.jobs())

    def stop(self):
        if self.dir:
            subprocess.run([os.path.join(self.tool_dir, "slurm-down"), self.top], timeout=300)
        if self._saved is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = self._saved
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
