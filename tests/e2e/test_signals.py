"""test_signals.py: SIGKILL, SIGINT and SIGTERM at random points of real runs.

- SIGKILL at a random moment of a nightly build (a generated dump whose
  build spills several runs under the run's sort budget: checksum, build
  with spills, verify, profile, publish), many times: after each, `current` names the previous build (or,
  when the kill came after the swap, the new one) and verifies clean, the
  earlier builds are byte-identical, and the next run cleans up after the
  dead one and publishes.
- SIGINT and SIGTERM during build, sort and nightly: exit 130 and 143, no
  temporary file beside the output, nothing in --tmp, the previous output
  byte-identical (or the complete new one, when the signal came after the
  rename). A nightly keeps its lock only while it lives, and the
  staging directory of an interrupted run is removed by the next run,
  which must succeed.
- SIGTERM at one fixed point: a nightly held (the fault shim's HOLD) at the
  rename that swaps `current`, its new link made: the link goes with it.

A signal's moment is drawn over the CPU time a whole run uses, and sent once
the process has used that much (read from /proc): a point of the work done,
which a loaded machine stretches in wall time but does not move. Every wait
is for an event (a handler installed, CPU used, the exit), bounded only
against a hang. A run that ends before its signal is judged as any completed
run: exit 0, its whole output in place, no temporary file left.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import random
import resource
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import TITLES, output_names, output_sha, sha, temp_leftovers  # noqa: E402
from sstpipe_e2e import E2ETest, sstpipe, sstpipe_bin, wikigen  # noqa: E402

KILL_ITERATIONS = 60 if faultlib.LONG else faultlib.brief(15)
SIGNAL_TRIES = 8 if faultlib.LONG else 2
# Bounds of the waits below, in wall seconds: only a hung process reaches
# them, however loaded the machine (2 cores shared, under ASan).
PATIENCE = 600


def cpu_run(argv):
    """Runs argv to completion (it must succeed); returns the CPU seconds
    (user + system, every thread) it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(argv, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise AssertionError(f"{argv} failed: {p.stderr.decode(errors='replace')}")
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def cpu_seconds(pid):
    """CPU seconds process pid has used so far (every thread); None once it
    is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_caught(p, sig):
    """Waits until process p has a handler for sig (SigCgt in its status),
    or has ended; a process that does neither within PATIENCE fails."""
    end = time.monotonic() + PATIENCE
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                caught = next(int(l.split()[1], 16) for l in f if l.startswith("SigCgt:"))
        except (OSError, StopIteration):
            return
        if caught & (1 << (sig - 1)):
            return
        if time.monotonic() > end:
            raise AssertionError(f"pid {p.pid} installed no {sig.name} handler in {PATIENCE} s")
        time.sleep(0.001)


def wait_for_cpu(p, cpu):
    """Waits until process p has used cpu CPU-seconds, or has ended. A point
    of the run chosen by the work done, not by wall time, lands at the same
    place of the run however loaded the machine is."""
    end = time.monotonic() + PATIENCE
    while p.poll() is None:
        used = cpu_seconds(p.pid)
        if used is None or used >= cpu:
            return
        if time.monotonic() > end:
            raise AssertionError(f"pid {p.pid} used {used:.2f} of {cpu:.2f} CPU-s "
                                 f"in {PATIENCE} s")
        time.sleep(0.002)


def interrupt(test, argv, sig, cpu, what):
    """Starts argv and sends sig once it has used cpu CPU-seconds; returns
    (completed, stderr). A run must end as sig ends sstpipe (killed by
    SIGKILL; exit 128 + sig for a signal it handles), or, when it finished
    before the signal was sent (or exited 0 as the signal reached it), like
    any run: exit 0. Then completed is True and the caller checks it as a
    completed run (its whole output, no temporary file): a run that fails
    on its own, early or late, fails the test."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if sig != signal.SIGKILL:
        # sstpipe must handle the signal by then; before that, the default
        # action would end it without its cleanup.
        wait_until_caught(p, sig)
    wait_for_cpu(p, cpu)
    sent = p.poll() is None
    if sent:
        p.send_signal(sig)
    _, err = p.communicate(timeout=PATIENCE)
    err = err.decode(errors="replace")
    if not sent or p.returncode == 0:
        test.assertEqual(p.returncode, 0, f"{what}: ended on its own before the signal: {err}")
        return True, err
    test.assertEqual(p.returncode, -sig if sig == signal.SIGKILL else 128 + sig, what + ": " + err)
    return False, err


class Signals(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-signals-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.big = wikigen(os.path.join(cls.classtmp, "big.xml.zst"), "32M", "41", "zst")
        cls.small = wikigen(os.path.join(cls.classtmp, "small.xml.zst"), "1M", "42", "zst")
        cls.rng = random.Random(int(os.environ.get("SSTPIPE_FAULTS_SEED", "6")))

    # ------------------------------------------------------------ nightly

    def nightly_setup(self):
        self.out = self.path("out")
        self.ini = self.write_file("nightly.ini", (
            f"[output]\ndir = {self.out}\nkeep = 3\n[profile]\nlookups = 2000\n"
            "[sort]\nmemory = 2M\n").encode())

    def nightly_argv(self, dump):
        # Forced: a run of the dump current was published from is a whole
        # build too, not "up to date".
        return [sstpipe_bin(), "nightly", "-c", self.ini, "--force", dump]

    def current(self):
        return os.readlink(os.path.join(self.out, "current"))

    def builds(self):
        return sorted(os.listdir(os.path.join(self.out, "builds")))

    def assertVerifies(self, what):
        r = sstpipe("verify", os.path.join(self.out, "current", "table.sst"))
        self.assertEqual(r.code, 0, what + ": current does not verify" + r.describe())

    def next_run_succeeds(self, dump, what):
        p = subprocess.run(self.nightly_argv(dump), capture_output=True)
        self.assertEqual(p.returncode, 0, f"{what}: the next run failed: {p.stderr.decode()}")
        self.assertEqual(temp_leftovers(self.out), [], what + ": left after the next run")

    def test_sigkill_random_points_of_nightly(self):
        self.nightly_setup()
        # Kills are drawn over the CPU time of a whole run (the less of two:
        # the first also warms the page cache).
        full = min(cpu_run(self.nightly_argv(self.big)), cpu_run(self.nightly_argv(self.big)))
        ref = os.path.join(self.out, "current", "table.sst")
        ref_sha = sha(ref)
        killed = completed = 0
        for i in range(KILL_ITERATIONS):
            before = self.current()
            sums = {b: sha(os.path.join(self.out, "builds", b, "table.sst")) for b in self.builds()}
            delay = self.rng.uniform(0.02, full * 1.05)
            what = f"iteration {i}: SIGKILL after {delay:.2f} of {full:.2f} CPU-s"
            done, err = interrupt(self, self.nightly_argv(self.big), signal.SIGKILL, delay, what)
            if done:
                completed += 1
                self.assertNotEqual(self.current(), before, what + ": finished, not published")
                self.assertEqual(sha(os.path.join(self.out, "current", "table.sst")), ref_sha,
                                 what + ": finished, current names a different table")
                self.assertEqual(temp_leftovers(self.out), [], what + ": finished, left")
            else:
                killed += 1
                if self.current() != before:  # killed after the swap
                    self.assertEqual(sha(os.path.join(self.out, "current", "table.sst")),
                                     ref_sha, what + ": current names a different table")
            self.assertVerifies(what)
            for b, s in sums.items():
                path = os.path.join(self.out, "builds", b, "table.sst")
                if os.path.exists(path):  # retention may delete the oldest
                    self.assertEqual(sha(path), s, what + f": build {b} changed")
            self.next_run_succeeds(self.small, what)
        print(f"KILLS nightly-random: killed={killed} completed={completed}")
        self.assertGreater(killed, KILL_ITERATIONS // 2)

    def test_sigint_sigterm_nightly(self):
        self.nightly_setup()
        full = cpu_run(self.nightly_argv(self.big))
        interrupted = 0
        for sig in (signal.SIGINT, signal.SIGTERM):
            for i in range(SIGNAL_TRIES * 2):
                before = self.current()
                delay = self.rng.uniform(0.05, full * 0.9)
                what = f"nightly {sig.name} after {delay:.2f} of {full:.2f} CPU-s"
                done, err = interrupt(self, self.nightly_argv(self.big), sig, delay, what)
                if done:
                    self.assertNotEqual(self.current(), before, what + ": finished, not published")
                    self.assertEqual(temp_leftovers(self.out), [], what + ": finished, left")
                    self.assertVerifies(what)
                    continue
                interrupted += 1
                # Only the staging directory stays, for the next run to remove.
                left = temp_leftovers(self.out)
                self.assertTrue(all(os.path.basename(p).startswith(".staging-") for p in left),
                                what + f": temporary files left: {left}")
                self.assertLessEqual(len(left), 1, what)
                if self.current() != before:
                    self.assertTrue(self.current().startswith("builds/"), what)
                self.assertVerifies(what)
                self.next_run_succeeds(self.small, what)
        print(f"SIGNALS nightly: interrupted={interrupted}")
        self.assertGreater(interrupted, 0, "every nightly finished before its signal")

    def test_sigterm_inside_current_swap(self):
        """SIGTERM between the new `current` link's creation and its
        exchange (the run held at that rename): the temporary link goes
        with the process, and current still names the earlier build."""
        self.nightly_setup()
        other = wikigen(self.path("other.xml.zst"), "1M", "43", "zst")
        self.next_run_succeeds(self.small, "the first run")
        # The index of the swap's rename, counted on a copy of this state.
        copy = self.path("copy")
        shutil.copytree(self.out, copy, symlinks=True)
        with open(self.ini, "rb") as f:
            ini = self.write_file("copy.ini", f.read().replace(self.out.encode(), copy.encode()))
        traced = faultlib.run([sstpipe_bin(), "nightly", "-c", ini, other], fault_dir=copy,
                              trace=True)
        self.assertEqual(traced.code, 0, traced.describe())
        swap = [(op, n) for op, n, path in traced.calls
                if op.startswith("rename") and "current.tmp" in os.path.basename(path)]
        self.assertEqual(len(swap), 1, f"the swap's renames: {swap}")
        before, proc = self.current(), []
        with faultlib.Held("%s:%d" % swap[0], self.out,
                           lambda path: os.kill(proc[0].pid, signal.SIGTERM)) as held:
            proc.append(subprocess.Popen(self.nightly_argv(other), env=held.env,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
            _, err = proc[0].communicate(timeout=PATIENCE)
        self.assertIn("current.tmp", os.path.basename(held.path), "held elsewhere")
        self.assertEqual(proc[0].returncode, 128 + signal.SIGTERM, err.decode(errors="replace"))
        left = temp_leftovers(self.out)
        self.assertTrue(all(os.path.basename(p).startswith(".staging-") for p in left),
                        f"temporary files left: {left}")
        self.assertEqual(self.current(), before)
        self.assertVerifies("SIGTERM inside the swap")
        self.next_run_succeeds(other, "SIGTERM inside the swap")

    # ------------------------------------------------------------ build, sort

    def stage_signals(self, argv, out, tmp, what):
        """Sends SIGINT then SIGTERM at random points of argv, which writes
        out (a previous version of which exists, and is at self.prev_copy)
        with spill files in tmp. A build's output is its table with its
        title index (output_sha), both or neither."""
        def restore():
            shutil.copy(self.prev_copy, out)
            if os.path.exists(self.prev_copy + TITLES):
                shutil.copy(self.prev_copy + TITLES, out + TITLES)

        def names():
            return output_names(out, os.path.exists(out + TITLES))

        prev = output_sha(out)
        full = cpu_run(argv)
        done_sha = output_sha(out)
        self.assertNotEqual(done_sha, prev, "the fault-free run did not replace the output")
        restore()
        interrupted = 0
        for sig in (signal.SIGINT, signal.SIGTERM):
            for i in range(SIGNAL_TRIES * 3):
                delay = self.rng.uniform(0.02, full * 0.9)
                w = f"{what} {sig.name} after {delay:.2f} of {full:.2f} CPU-s"
                done, err = interrupt(self, argv, sig, delay, w)
                if done:
                    self.assertEqual(err, "", w + ": finished, with something to report")
                    self.assertEqual(sorted(os.listdir(os.path.dirname(out))), names(),
                                     w + ": finished, files left")
                    self.assertEqual(os.listdir(tmp), [], w + ": finished, --tmp not empty")
                    self.assertEqual(output_sha(out), done_sha,
                                     w + ": finished, not the complete output")
                    restore()
                    continue
                interrupted += 1
                self.assertEqual(err, "", w + ": a signal is not an error to report")
                self.assertEqual(sorted(os.listdir(os.path.dirname(out))), names(),
                                 w + ": temporary files left")
                self.assertEqual(os.listdir(tmp), [], w + ": --tmp not empty")
                # The previous output, or (signalled after the rename) the
                # complete new one; or, signalled between the title index's
                # rename and the table's, the previous table with the new
                # index taken back (the old one it replaced is gone).
                self.assertIn(output_sha(out), (prev, done_sha, (prev[0], None)),
                              w + ": the output is neither")
                restore()
        print(f"SIGNALS {what}: interrupted={interrupted}")
        self.assertGreater(interrupted, 0, f"{what}: every run finished before its signal")

    def test_sigint_sigterm_build(self):
        os.mkdir(self.path("out"))
        os.mkdir(self.path("spill"))
        out = self.path("out", "table.sst")
        self.build(self.small, out)
        self.prev_copy = self.path("prev.sst")
        shutil.copy(out, self.prev_copy)
        shutil.copy(out + TITLES, self.prev_copy + TITLES)
        argv = [sstpipe_bin(), "build", self.big, "-o", out, "--memory", "1M", "--tmp",
                self.path("spill")]
        self.stage_signals(argv, out, self.path("spill"), "build")

    def test_sigint_sigterm_sort(self):
        records = self.path("records.rs")
        self.assertOk(sstpipe("extract", self.big, "-o", self.path("x.rs")))
        self.assertOk(sstpipe("truncate", self.path("x.rs"), "--max-bytes", "8192", "-o",
                              records))
        os.unlink(self.path("x.rs"))
        os.mkdir(self.path("out"))
        os.mkdir(self.path("spill"))
        out = self.path("out", "sorted.rs")
        self.assertOk(sstpipe("extract", self.small, "-o", out))  # an earlier output
        self.prev_copy = self.path("prev.rs")
        shutil.copy(out, self.prev_copy)
        argv = [sstpipe_bin(), "sort", records, "-o", out, "--memory", "1M", "--fan-in", "4",
                "--tmp", self.path("spill")]
        self.stage_signals(argv, out, self.path("spill"), "sort")


if __name__ == "__main__":
    unittest.main()
