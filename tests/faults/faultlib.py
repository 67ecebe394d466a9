"""faultlib.py: what the fault, signal and load tests share.

Finding (or building) the LD_PRELOAD shim (faultshim.c), running sstpipe
under it to count the I/O calls a run makes and then to fail one of them,
choosing which call indices to hit, the brief/long switch, and the checks
every faulted run repeats: one clear error line, nothing published, no
temporary file left anywhere. Used by tests/e2e/test_faults*.py,
test_signals*.py and test_load*.py, which put this folder on sys.path.
"""

import atexit
import errno
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))

from sstpipe_e2e import SANITIZED, sstpipe_bin  # noqa: E402

# tests/faults/run sets this: every call index, both errnos, more
# iterations and longer load. ctest runs the brief version.
LONG = os.environ.get("SSTPIPE_FAULTS_LONG") == "1"
# In a build with -DSSTPIPE_SANITIZE=ON (sstpipe_e2e.SANITIZED) the brief
# version is smaller again (brief(), errnos_at(), kill_indices()): every
# call index, errno and iteration was judged by the plain suite, and the
# sanitizers look for memory errors on the same paths, which the first and
# last calls of each kind (where files are created, committed and renamed)
# and a few between still take, each failing with one errno or the other,
# and one kill of each kind.


def brief(n):
    """A brief run's count (call indices, kills, iterations, seconds), as the
    sanitized build runs it: a third, at least 2."""
    return max(2, n // 3) if SANITIZED and not LONG else n

# Every call faultshim.c counts and fails (its op names, in its order).
OPS = ("write", "pwrite", "fsync", "fdatasync", "rename", "renameat", "ftruncate", "close",
       "open", "linkat", "symlink", "mkdir", "sync_file_range", "stdio", "clone")
# The calls a reader makes (serve, get, profile): a table's block reads
# without the map, opening an existing file, reads through an io_uring.
# Apart from OPS, whose sweeps are of what a run writes.
READ_OPS = ("pread", "open_read", "uring_read")
# What SSTPIPE_NO_O_TMPFILE=1 gives a run: the named temporary files of a file
# system without O_TMPFILE (stages/common/fileio.h), so their cleanup is tested.
NAMED_TEMPS = {"SSTPIPE_NO_O_TMPFILE": "1"}
ERRNOS = ("ENOSPC", "EIO")


def errnos_at(i, alternate=False):
    """The errnos a sweep injects at the i-th call index it picked: every
    one, or one, taking turns, in a brief run that alternates and in every
    brief run of a sanitized build (an errno changes the message, not the
    path the failure takes)."""
    return (ERRNOS[i % 2],) if (alternate or SANITIZED) and not LONG else ERRNOS

_built_shim = None


def shim_path():
    """The shim: $SSTPIPE_FAULTSHIM, the CMake-built one beside the binary,
    or, when this build tree does not include tests/faults, one compiled now
    from faultshim.c (so the tests never silently skip fault injection)."""
    global _built_shim
    given = os.environ.get("SSTPIPE_FAULTSHIM")
    if given:
        return given
    bindir = os.path.dirname(os.path.abspath(sstpipe_bin()))
    built = os.path.join(bindir, "tests", "faults", "libsstpipe_faultshim.so")
    if os.path.exists(built):
        return built
    if _built_shim is None:
        where = tempfile.mkdtemp(prefix="sstpipe-faultshim-")
        atexit.register(shutil.rmtree, where, True)
        out = os.path.join(where, "libsstpipe_faultshim.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-D_GNU_SOURCE", "-o", out, os.path.join(HERE, "faultshim.c"), "-ldl",
                        "-lpthread"], check=True)
        _built_shim = out
    return _built_shim


class Run:
    """One finished run: exit code, stdout, stderr, and the shim's log."""

    def __init__(self, argv, code, stdout, stderr, fired, counts, threads, direct, calls):
        self.argv = argv
        self.code = code
        self.stdout = stdout
        self.stderr = stderr.decode("utf-8", "replace")
        self.fired = fired      # [(op, n, path)] of injected faults
        self.counts = counts    # {op: calls} at a normal exit, else {}
        self.threads = threads  # {op: those made off the process's first thread}
        self.direct = direct    # {op: those on O_DIRECT descriptors}
        self.calls = calls      # [(op, n, path)] of every call, when traced

    def sstpipe_lines(self):
        return [l for l in self.stderr.splitlines() if l.startswith("sstpipe")]

    def describe(self):
        return (f"\n  command: {' '.join(map(str, self.argv))}\n  exit: {self.code}"
                f"\n  fired: {self.fired}\n  stderr: {self.stderr[-2000:]!r}")


def shim_env(base, fault=None, fault_dir=None, log=None, trace=False):
    """base (an environment) with the shim preloaded; faultshim.c describes
    each variable."""
    e = dict(base)
    e["LD_PRELOAD"] = shim_path()
    # A sanitizer build wants its runtime first; the shim is not instrumented.
    e["ASAN_OPTIONS"] = (e.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")
    if log:
        e["SSTPIPE_FAULT_LOG"] = log
        if trace:
            e["SSTPIPE_FAULT_TRACE"] = "1"
    if fault_dir:
        e["SSTPIPE_FAULT_DIR"] = str(fault_dir)
    if fault:
        e["SSTPIPE_FAULT"] = fault
    return e


# Bound of a wait for a run to reach a point: only a hung run reaches it,
# however loaded the machine (2 cores shared, under ASan).
PATIENCE = 600


def wait_stopped(test, proc):
    """Waits until proc is stopped (state T: a fault's SIGSTOP reached),
    failing if it ends first."""
    end = time.monotonic() + PATIENCE
    while time.monotonic() < end:
        test.assertIsNone(proc.poll(), "the run ended before it reached its stop")
        with open(f"/proc/{proc.pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return
        time.sleep(0.01)
    test.fail(f"the run did not stop in {PATIENCE} s")


class Held:
    """The run's call fault ("open_read:2") under fault_dir is held, that
    thread alone, while on_hold(the call's path) runs; then the run goes
    on. Use: with Held(...) as h: run with h.env (the shim's variables over
    base); afterwards h.path is the path held ("" if the run never got
    there). An exception in on_hold is raised again at the with's end."""

    def __init__(self, fault, fault_dir, on_hold, base=os.environ):
        self.where = tempfile.mkdtemp(prefix="sstpipe-held-")
        self.fifo, self.log = os.path.join(self.where, "hold"), os.path.join(self.where, "log")
        os.mkfifo(self.fifo)
        self.env = shim_env(base, f"{fault}:HOLD", fault_dir, self.log)
        self.env["SSTPIPE_FAULT_HOLD"] = self.fifo
        self.on_hold, self.path, self.error = on_hold, "", None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        shutil.rmtree(self.where, True)
        if self.error and not exc[0]:
            raise self.error

    def fired(self):
        try:
            with open(self.log) as f:
                for line in f:
                    if line.startswith("fired "):
                        return line.rstrip("\n").split(" ", 3)[3]
        except FileNotFoundError:  # the shim writes it when the process starts
            pass
        return ""

    def watch(self):
        while not self.done.is_set() and not self.path:
            self.path = self.fired()
            time.sleep(0.01)
        if not self.path:
            return
        try:
            self.on_hold(self.path)
        except BaseException as e:  # noqa: B902 (raised again in the test's thread)
            self.error = e
        # Lets the held thread go: a writer that opens and closes the FIFO
        # (not blocking, so a run killed while held leaves no hung test).
        while not self.done.is_set():
            try:
                os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))
                return
            except OSError as e:
                if e.errno != errno.ENXIO:  # ENXIO: the held thread has not opened it yet
                    raise
            time.sleep(0.01)


def flip_byte(path, offset):
    """Inverts the byte at offset (modulo the file's size) of path, in place;
    returns the offset flipped."""
    with open(path, "r+b") as f:
        off = offset % os.fstat(f.fileno()).st_size
        f.seek(off)
        b = f.read(1)[0]
        f.seek(off)
        f.write(bytes([b ^ 0xFF]))
    return off


def run(argv, fault=None, fault_dir=None, env=None, timeout=300, preload=True, trace=False):
    """Runs argv with the shim preloaded (counting calls under fault_dir and,
    with fault = "op:n:ACTION[:sticky]", failing one; with trace, listing
    every call in Run.calls)."""
    argv = [str(a) for a in argv]
    with tempfile.NamedTemporaryFile(prefix="sstpipe-faultlog-", delete=False) as f:
        log = f.name
    e = dict(os.environ)
    e.update(env or {})
    if preload:
        e = shim_env(e, fault, fault_dir, log, trace)
    try:
        p = subprocess.run(argv, capture_output=True, env=e, timeout=timeout)
        fired, counts, threads, direct, calls = [], {}, {}, {}, []
        with open(log) as f:
            for line in f:
                parts = line.rstrip("\n").split(" ", 3)
                if parts[0] == "fired":
                    fired.append((parts[1], int(parts[2]), parts[3]))
                elif parts[0] == "call":
                    calls.append((parts[1], int(parts[2]), parts[3]))
                elif parts[0] in ("count", "threads", "direct"):
                    {"count": counts, "threads": threads,
                     "direct": direct}[parts[0]][parts[1]] = int(parts[2])
    finally:
        os.unlink(log)
    return Run(argv, p.returncode, p.stdout, p.stderr, fired, counts, threads, direct, calls)


def sstpipe_run(*args, **kw):
    return run([sstpipe_bin()] + list(args), **kw)


def count_calls(test, argv, fault_dir, env=None, only=None):
    """The calls per op a fault-free run of argv makes under fault_dir:
    {op: how many}; with only, a function from the run's calls in order,
    [(op, n, path)], to those a sweep is to hit, {op: [their indices]}: a
    sweep narrowed to the calls that no other sweep reaches."""
    r = run(argv, fault_dir=fault_dir, env=env, trace=only is not None)
    test.assertEqual(r.code, 0, "the counting run failed:" + r.describe())
    test.assertEqual(set(r.counts), set(OPS) | set(READ_OPS),
                     "the shim wrote no counts:" + r.describe())
    if only is None:
        return r.counts
    test.assertEqual(len(r.calls), sum(r.counts.values()), "the shim traced no calls")
    picked = {op: [] for op in r.counts}
    for op, n, _ in only(r.calls):
        picked[op].append(n)
    return picked


def window(first, last, after=0, leave=None):
    """An only for count_calls: the calls from the first that first(op, path)
    accepts through the next that last(op, path) accepts and `after` more,
    less those leave(op, path) accepts."""
    def pick(calls):
        i = next(k for k, (op, _, path) in enumerate(calls) if first(op, path))
        j = next(k for k in range(i, len(calls)) if last(calls[k][0], calls[k][2]))
        return [c for c in calls[i:j + 1 + after] if not (leave and leave(c[0], c[2]))]
    return pick


def indices(total, brief_limit, long_limit=None):
    """Which call indices (1-based) of total to hit: all of them when few,
    else every one of the first and last few (where files are created,
    committed and renamed) and an even spread between. total may also be a
    list of call indices (count_calls with only): the same choice among
    them."""
    if isinstance(total, list):
        return [total[i - 1] for i in indices(len(total), brief_limit, long_limit)]
    limit = long_limit if LONG and long_limit else brief(brief_limit)
    if LONG and long_limit is None:
        return list(range(1, total + 1))
    if total <= limit:
        return list(range(1, total + 1))
    edge = max(1, limit // 4)
    picked = set(range(1, edge + 1)) | set(range(total - edge + 1, total + 1))
    middle = limit - len(picked)
    step = (total - 2 * edge) / (middle + 1)
    picked |= {edge + 1 + int(step * (i + 1)) for i in range(middle)}
    return sorted(picked)


def kill_indices(total, brief_limit, turn):
    """Which call indices of total a sweep of SIGKILLs hits: indices(); in a
    brief run of a sanitized build one, the first or the last, taking turns
    (turn: the op's place in the sweep). A process killed is not checked at
    its exit (no leak check): the sanitizers see the path to its kill,
    which the counting run took whole, and the next run's clean-up of what
    it left, which one kill of each kind of call still varies; the plain
    suite judges every call picked."""
    if SANITIZED and not LONG:
        picked = indices(total, brief_limit)
        return picked[-(turn % 2):][:1] if picked else []
    return indices(total, brief_limit)


def errno_text(name):
    return os.strerror(getattr(errno, name))


def sha(path):
    """Hex digest of a file, or None when it does not exist."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return None


# What a build publishes beside its table: the title index, FILE.titles.
# The two are published together, both or neither; `write` and `merge`
# publish the table alone.
TITLES = ".titles"


def output_sha(table):
    """A run's output as a whole: the digests of the table and of its title
    index (None for a file not there)."""
    return (sha(table), sha(table + TITLES))


def output_names(table, titles=True):
    """The names a run leaves in its output directory: the table's, and its
    title index's when it has one."""
    name = os.path.basename(table)
    return [name, name + TITLES] if titles else [name]


def temp_leftovers(*dirs):
    """Temporary files sstpipe must not leave: *.tmp.* output names, named
    scratch files (sstpipe-scratch.*) and nightly's .staging-*, at any
    depth under dirs."""
    found = []
    for d in dirs:
        for root, subdirs, files in os.walk(d):
            for name in subdirs + files:
                if (".tmp." in name or name.startswith(".staging-")
                        or name.startswith("sstpipe-scratch.")):
                    found.append(os.path.join(root, name))
    return found


def check_error_line(test, r, action, what):
    """Exactly one 'sstpipe...' line on stderr, naming the error (its
    strerror text) and a file (an absolute path or a path with a slash)."""
    lines = r.sstpipe_lines()
    test.assertEqual(len(lines), 1, f"{what}: want exactly one 'sstpipe' error line" +
                     r.describe())
    test.assertIn(errno_text(action), lines[0], f"{what}: the error must say why" + r.describe())
    test.assertIn("/", lines[0], f"{what}: the error must name the file" + r.describe())


class Tally:
    """Counts of what a sweep did, printed for the README's figures."""

    def __init__(self, area):
        self.area = area
        self.failed_cleanly = 0   # fault hit: non-zero exit, nothing published
        self.absorbed = 0         # fault hit on a call whose failure does not matter
        self.not_reached = 0      # the run made fewer calls of that op
        self.killed = 0           # SIGKILL at that call, then recovery checked
        self.completed = 0        # a random kill's run that finished first, checked as whole

    def total(self):
        return self.failed_cleanly + self.absorbed + self.killed

    def report(self):
        """One greppable line (tests/faults/run collects them)."""
        return (f"FAULTS {self.area}: injected={self.total()} failed_cleanly={self.failed_cleanly}"
                f" absorbed={self.absorbed} killed={self.killed} not_reached={self.not_reached}"
                f" completed={self.completed}")


def sweep_one_output(test, area, argv, fault_dir, counts, brief_limit, *, out, ref, reset,
                     check_after, absorbable, env=None, alternate=False):
    """Fails each counted call of a run that writes one table, in turn, and
    judges every run alike (the writer, merge, spill and parallel-parse
    sweeps): the run makes the call fail, then either it exits 1 with one
    error line and out is what it was before (or, when the directory fsync
    after the rename failed, the finished table, with an error saying so),
    or the call was one whose failure changes nothing (absorbable(op, path))
    and out holds the reference's bytes. out is judged with its title index
    (output_sha): ref is output_sha of the reference. reset() puts the
    earlier output back and returns its output_sha; check_after(what, r)
    checks what every run
    must leave (no temporary file, the inputs unchanged). The errnos of
    each call index: errnos_at(alternate). Returns the Tally."""
    out_dir = os.path.dirname(out)
    tally = Tally(area)
    for op in OPS:
        for i, n in enumerate(indices(counts[op], brief_limit)):
            for action in errnos_at(i, alternate):
                prev = reset()
                what = f"{area} {op}:{n}:{action}"
                r = run(argv, fault=f"{op}:{n}:{action}", fault_dir=fault_dir, env=env)
                check_after(what, r)
                if not r.fired:
                    tally.not_reached += 1
                    test.assertEqual(r.code, 0, what + r.describe())
                    continue
                path = r.fired[0][2]
                if r.code == 0:
                    test.assertTrue(absorbable(op, path),
                                    what + ": a failed call went unnoticed" + r.describe())
                    test.assertEqual(output_sha(out), ref, what + r.describe())
                    tally.absorbed += 1
                    continue
                test.assertEqual(r.code, 1, what + r.describe())
                check_error_line(test, r, action, what)
                allowed = {prev}
                if op == "fsync" and path == out_dir and output_sha(out) != prev:
                    # Renamed into place, the rename not yet durable (the
                    # table's: a title index's is undone, the run failing
                    # as at its rename).
                    allowed.add(ref)
                    test.assertIn("complete and in place", r.sstpipe_lines()[0],
                                  what + r.describe())
                test.assertIn(output_sha(out), allowed, what + ": output changed" + r.describe())
                tally.failed_cleanly += 1
    print(tally.report())
    return tally


# What a nightly killed at any point may leave under its [output] dir, all
# of which the next night removes: its staging directory (with whatever
# it held), its temporary `current` symlink, and a page killed between
# its link and its rename (complete, under a temporary name).
NIGHTLY_KILL_LEFTOVERS = (".staging-", "current.tmp.", "report.html.tmp.", "index.html.tmp.")


def sweep_nightly(test, area, argv, out_dir, counts, brief_limit, *, kill, current, sound,
                  published=None, publish=None, restore=None):
    """Fails each counted call under out_dir of a nightly run (argv), in
    turn, and judges every run alike (test_faults_nightly*.py: a table or a
    table set published, a full or an incremental night). current() is the
    target `current` names; sound(before, what) judges it after each run
    (it verifies, and is the new build when it moved from before).
    restore(), when given, puts out_dir back before every run, so that each
    run makes the counted calls (a night that must find work to do).

    Without kill: one errno a call index (taking turns; both with LONG); no
    temporary file is ever left; a run whose fault fired either exits 1
    with one error line and `current` unchanged, or exits 0 having moved
    `current`, when published(r, op, action, what) accepts the build (a
    call whose failure may be absorbed) and returns why (counted by reason
    in the printed report); then publish(what), when given, runs the next
    night. With kill: SIGKILL just before the call (those kill_indices
    picks; exit -9, nothing left but NIGHTLY_KILL_LEFTOVERS, `current`
    sound), then publish(what) runs the next night, which must move
    `current` and leave no staging directory. Returns the Tally."""
    tally = Tally(area)
    absorbed = {}
    for turn, op in enumerate(op for op in OPS if counts[op]):
        picked = (kill_indices(counts[op], brief_limit, turn) if kill else
                  indices(counts[op], brief_limit))
        for i, n in enumerate(picked):
            for action in ("SIGKILL",) if kill else errnos_at(i, alternate=True):
                what = f"{area} {op}:{n}:{action}"
                if restore:
                    restore()
                before = current()
                r = run(argv, fault=f"{op}:{n}:{action}", fault_dir=out_dir)
                if not kill or not r.fired:
                    test.assertEqual(temp_leftovers(out_dir), [], what + r.describe())
                if not r.fired:
                    # It never reached the call: a whole run like any other.
                    tally.not_reached += 1
                    test.assertEqual(r.code, 0, what + ": the fault never fired" + r.describe())
                    sound(before, what)
                    continue
                if kill:
                    test.assertEqual(r.code, -9, what + r.describe())
                    test.assertEqual([p for p in temp_leftovers(out_dir)
                                      if not any(k in p for k in NIGHTLY_KILL_LEFTOVERS)], [],
                                     what + r.describe())
                    sound(before, what)
                    after = publish(what + ", then")
                    test.assertNotEqual(current(), before, what)
                    test.assertFalse(any(name.startswith(".staging-")
                                         for name in os.listdir(out_dir)),
                                     what + ": staging left after the next run" + after.describe())
                    tally.killed += 1
                elif r.code == 0:
                    test.assertNotEqual(current(), before, what + r.describe())
                    sound(before, what)
                    why = published(r, op, action, what)
                    absorbed[why] = absorbed.get(why, 0) + 1
                    tally.absorbed += 1
                else:
                    test.assertEqual(r.code, 1, what + r.describe())
                    check_error_line(test, r, action, what)
                    test.assertEqual(current(), before, what + ": current moved")
                    sound(before, what)
                    tally.failed_cleanly += 1
                if publish and not kill:
                    publish(what + ", then")
    print(tally.report())
    if absorbed:
        print(f"FAULTS {area} absorbed, by call: " +
              " ".join(f"{k}={v}" for k, v in sorted(absorbed.items())))
    return tally


def content_digest(table):
    """What a reader of table sees of it: a table's bytes and its title
    index's, or, for a table set's directory, every file's under it by
    name."""
    if os.path.isdir(table):
        return tuple(sorted((os.path.relpath(os.path.join(root, n), table),
                             sha(os.path.join(root, n)))
                            for root, _, files in os.walk(table) for n in files))
    return output_sha(os.path.realpath(table))


from sstpipe_e2e import sstpipe as _sstpipe  # noqa: E402

_read_results = {}


def read_once(*args, table):
    """sstpipe args, a command that only reads table (verify, dump), run once
    for each content of table: a later call with the same args on the same
    bytes gets the first run's Result. Such a command's result is a function
    of those bytes, and so are the paths it takes under the sanitizers; the
    sweeps judge the same few tables after each of their many runs, and
    under ASan each process costs its leak check at exit."""
    key = (args, content_digest(table))
    if key not in _read_results:
        _read_results[key] = _sstpipe(*args)
    return _read_results[key]


_earlier = {}


def put_earlier(out, dump, titles=True):
    """Puts at out the table `sstpipe build dump` makes, with its title
    index (or, without titles, alone, as `write` and `merge` leave a
    table), and returns its output_sha: the earlier output a sweep's failed
    run must leave in place. The build runs once for each dump; each later
    call copies its files, each under a name of its own renamed over out's,
    as a publish puts them there: a build of the same dump gives the same
    bytes, and the sweeps put the earlier output back before each of their
    many runs (under the sanitizers a build is a process paying their start
    and leak check)."""
    if dump not in _earlier:
        where = tempfile.mkdtemp(prefix="sstpipe-earlier-")
        atexit.register(shutil.rmtree, where, True)
        table = os.path.join(where, "earlier.sst")
        r = _sstpipe("build", dump, "-o", table)
        if r.code != 0:
            raise AssertionError("the earlier output's build failed:" + r.describe())
        _earlier[dump] = table
    table = _earlier[dump]
    for src, dst in ((table, out), (table + TITLES, out + TITLES)):
        if dst == out or titles:
            shutil.copyfile(src, dst + ".earlier")
            os.replace(dst + ".earlier", dst)
        elif os.path.exists(dst):
            os.unlink(dst)
    return output_sha(out)
