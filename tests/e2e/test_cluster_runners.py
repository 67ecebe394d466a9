"""test_cluster_runners.py: cluster builds through GNU parallel and Slurm.

On each of the two engines the issue names (GNU parallel with a login file of
this machine alone, ":"; a real single-node Slurm cluster: tests/run's for the
whole suite, or one this module starts with tests/cluster/slurm-up and stops
with slurm-down when run alone), a sharded build of a multistream dump holds
the records of one `sstpipe build` (`dump --jsonl`, byte for byte), `shards =
1` gives build's bytes, and a map task killed while it runs (kill -9 under the
local runner and parallel; scancel of its array task under Slurm) is retried
and the build still completes with the same records. On Slurm the set is
published by a finishing job (`sstpipe task finish`, after the reduce array),
and a failing finishing job fails the build with one line naming it, its
range and its log, nothing at OUT; the same build run again resumes and
publishes the records. SIGINT or SIGTERM to `sstpipe build -c` while a map
task runs (each under the local runner, one under each other runner): no
task left running (nor queued), exit 128+signal
with one line saying what was stopped, nothing at OUT, no temporary file; the
same build run again resumes and publishes build's records. Nothing of the
test's is left in squeue afterwards.

It is one of the suite's longest tests, and most of its time is waiting,
not work: on Slurm (jobs queued, started and polled for, a finishing job
after each reduce array) and on map tasks kept running until the signal or
the kill reaches them, for which the cases that stop one shard a dump large
enough (setUpClass says why). Its label `waits` (tests/CMakeLists.txt)
keeps it off the slots of the tests that use the cores.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import os
import re
import signal
import subprocess
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from sstpipe_e2e import E2ETest, SlurmCluster, multistream_reference, sstpipe, sstpipe_bin  # noqa: E402

CLUSTER = None
WAIT_SECONDS = 600


def setUpModule():
    global CLUSTER
    CLUSTER = SlurmCluster()


def tearDownModule():
    if CLUSTER:
        CLUSTER.stop()


def task_processes(plan_word):
    """{pid: environ} of running `sstpipe task map ...` processes of a build
    whose shared directory is plan_word (our own processes: the exact plan)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if len(argv) > 4 and argv[1:3] == [b"task", b"map"] and plan_word in argv[4]:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    found[int(entry)] = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0")
                                             if b"=" in kv)
        except OSError:
            pass
    return found


class RunnerBuilds(E2ETest):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-runners-")
        # The input of the cases that stop or kill a map task while it runs:
        # large enough that a task is seen running and is stopped before
        # every task ends, however loaded the machine (on 8M, Slurm's map
        # tasks both finished before the SIGINT reached them). The others shard the
        # smallest input that has records in every shard and duplicate
        # titles across tasks.
        cls.src, cls.ref, cls.ref_dump = multistream_reference(cls.classtmp, "16M", "53")
        small = os.path.join(cls.classtmp, "small")
        os.mkdir(small)
        cls.small_src, cls.small_ref, cls.small_dump = multistream_reference(small, "2M", "53")

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.classtmp, ignore_errors=True)

    def config(self, runner, **keys):
        self.shared = self.path("shared")
        login = self.write_file("sshlogin", b":\n")
        keys = dict({"runner": runner, "shared_dir": self.shared, "tasks": 4, "retries": 2,
                     "jobs": 2, "slurm_partition": CLUSTER.partition,
                     "slurm_args": "--time=30 " + CLUSTER.slurm_args,
                     "parallel_sshlogin": login}, **keys)
        lines = ["[cluster]"] + [f"{k} = {v}" for k, v in keys.items()]
        return self.write_file(f"{runner}.ini", ("\n".join(lines) + "\n").encode())

    def slurm_jobs(self):
        """{id: name} of this test's jobs the controller knows, finished ones too."""
        return CLUSTER.jobs("all")

    def sharded_is_build(self, runner):
        jobs_before = self.slurm_jobs()
        out = self.path("set")
        r = sstpipe("build", "-c", self.config(runner, shards=3), self.small_src, "-o", out)
        self.assertOk(r)
        self.assertTrue(os.path.exists(os.path.join(out, "tableset.json")), "not a table set")
        got = sstpipe("dump", out, "--jsonl")
        self.assertOk(got)
        self.assertTrue(got.stdout == self.small_dump,
                        f"{runner}: the set's records are not build's")
        one = self.path("one.sst")
        self.assertOk(sstpipe("build", "-c", self.config(runner, shards=1), self.small_src, "-o",
                              one))
        with open(self.small_ref, "rb") as a, open(one, "rb") as b:
            self.assertTrue(a.read() == b.read(), f"{runner}: shards = 1 is not build's bytes")
        self.assertEqual(CLUSTER.queue(), [])
        # Through Slurm: the map and reduce arrays and the finishing job of
        # both builds.
        if runner == "slurm":
            new = {j: n for j, n in self.slurm_jobs().items() if j not in jobs_before}
            names = sorted(new.values())
            for name in ("sstpipe-map", "sstpipe-reduce", "sstpipe-finish"):
                self.assertGreaterEqual(names.count(name), 2, f"{name} jobs: {names}")

    def killed_task_completes(self, runner):
        out = self.path("set")
        cfg = self.config(runner, shards=2, tasks=2)
        build = subprocess.Popen([sstpipe_bin(), "build", "-c", cfg, self.src, "-o", out],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            killed = None
            deadline = time.monotonic() + WAIT_SECONDS
            while killed is None and build.poll() is None and time.monotonic() < deadline:
                for pid, env in task_processes(self.shared.encode()).items():
                    try:
                        os.kill(pid, signal.SIGSTOP)  # held still while it is killed
                    except ProcessLookupError:
                        continue
                    # Run by the engine asked for, not by another runner.
                    engines = {b"SLURM_ARRAY_JOB_ID", b"PARALLEL_PID"} & set(env)
                    want = {"slurm": {b"SLURM_ARRAY_JOB_ID"}, "parallel": {b"PARALLEL_PID"},
                            "local": set()}[runner]
                    self.assertEqual(engines, want, f"a map task not started by {runner}")
                    if runner == "slurm":
                        job = (env[b"SLURM_ARRAY_JOB_ID"] + b"_" + env[b"SLURM_ARRAY_TASK_ID"]).decode()
                        subprocess.run(["scancel", job], check=True)
                        killed = job
                    else:
                        os.kill(pid, signal.SIGKILL)
                        killed = pid
                    break
                time.sleep(0.005)
        except BaseException:
            build.kill()  # a failed check must not leave the build (or a stopped task)
            for pid in task_processes(self.shared.encode()):
                os.kill(pid, signal.SIGKILL)
            build.wait()
            raise
        stdout, stderr = build.communicate(timeout=WAIT_SECONDS)
        self.assertIsNotNone(killed, "no map task was seen running: nothing was killed")
        self.assertEqual(build.returncode, 0, stderr.decode(errors="replace"))
        logs = os.listdir(os.path.join(self.shared)) if os.path.exists(self.shared) else []
        self.assertEqual(logs, [], "the build's directory is left")
        got = sstpipe("dump", out, "--jsonl")
        self.assertOk(got)
        self.assertTrue(got.stdout == self.ref_dump, f"{runner}: records differ after the kill")
        self.assertEqual(CLUSTER.queue(), [])

    def test_local_killed_task_completes(self):
        self.killed_task_completes("local")

    def test_slurm_finish_job_fails_then_resumes(self):
        """The finishing job fails (EIO at the mkdir of the set's temporary
        directory beside OUT: the fault shim, preloaded into sstpipe, is
        inherited by the jobs sbatch submits): one line naming the finishing
        task, its range and its log, which is the Slurm job's; nothing at
        OUT. Run again without the fault, the build resumes its plan and
        publishes build's records."""
        outdir = self.path("out")
        os.mkdir(outdir)
        out = os.path.join(outdir, "set")
        cfg = self.config("slurm", shards=2, tasks=2, retries=0)
        jobs_before = self.slurm_jobs()
        r = faultlib.run([sstpipe_bin(), "build", "-c", cfg, self.small_src, "-o", out, "-v"],
                         fault="mkdir:1:EIO", fault_dir=outdir, timeout=WAIT_SECONDS)
        self.assertEqual(r.code, 1, r.describe())
        self.assertTrue(r.fired, "the fault never fired" + r.describe())
        line = r.stderr.strip().splitlines()[-1]
        m = re.fullmatch(r"sstpipe: finish task 0 \(every key, 2 shards, into " + re.escape(out) +
                         r"\): exit 1: .*Input/output error.* \(log: (\S+/logs/finish-0\.0\.log)\)",
                         line)
        self.assertIsNotNone(m, "not the finishing job's one line: " + line)
        with open(m.group(1)) as f:
            self.assertIn("Input/output error", f.read(), "the log is not the job's")
        self.assertEqual(os.listdir(outdir), [], "something is at OUT")
        new = [n for j, n in self.slurm_jobs().items() if j not in jobs_before]
        self.assertIn("sstpipe-finish", new, "the finishing step was not a Slurm job")
        self.assertEqual(CLUSTER.queue(), [])
        again = sstpipe("build", "-c", cfg, self.small_src, "-o", out, "-v")
        self.assertOk(again)
        self.assertRegex(again.err_text, r"cluster: plan=\S+ maps=2 shards=2 resumed=1 maps_done=2")
        got = sstpipe("dump", out, "--jsonl")
        self.assertOk(got)
        self.assertTrue(got.stdout == self.small_dump, "resumed: the set's records are not build's")
        self.assertEqual(os.listdir(self.shared), [], "the build's directory is left")
        self.assertEqual(CLUSTER.queue(), [])

    def committed_maps(self):
        """The map tasks' outputs committed in the shared directory."""
        return sorted(os.path.join(root, n) for root, dirs, _ in os.walk(self.shared)
                      if os.path.basename(root) == "map" for n in dirs if not n.startswith("."))

    def interrupted_then_resumed(self, runner, signo):
        """signo to `sstpipe build -c` while a map task runs: the task is
        stopped (its process gone; on Slurm its job cancelled and out of the
        queue), sstpipe exits 128+signo with one line saying so, nothing is
        at OUT, no temporary file is left; the same build run again resumes
        its plan and publishes build's records."""
        outdir = self.path("out")
        os.mkdir(outdir)
        out = os.path.join(outdir, "set")
        cfg = self.config(runner, shards=2, tasks=2)
        shared = self.shared.encode()
        build = subprocess.Popen([sstpipe_bin(), "build", "-c", cfg, self.src, "-o", out, "-v"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            seen = {}
            deadline = time.monotonic() + WAIT_SECONDS
            while not seen and build.poll() is None and time.monotonic() < deadline:
                seen = task_processes(shared)
                if not seen:
                    time.sleep(0.005)
            self.assertTrue(seen, "no map task was seen running")
            build.send_signal(signo)
            stdout, stderr = build.communicate(timeout=WAIT_SECONDS)
        except BaseException:
            build.kill()
            build.wait()
            for pid in task_processes(shared):
                os.kill(pid, signal.SIGKILL)
            raise
        err = stderr.decode(errors="replace")
        self.assertEqual(build.returncode, 128 + signo, err)
        name = signal.Signals(signo).name
        self.assertRegex((err.strip().splitlines() or ["(nothing on stderr)"])[-1],
                         rf"^sstpipe: interrupted by {name}: .*; the same build run again "
                         r"resumes$")
        # A task sent SIGTERM (or SIGKILL, by GNU parallel's --termseq) just
        # before the build exited may still be ending on a loaded machine:
        # wait for that (bounded only against a hang). A task nobody stopped
        # would run on to its end and commit its output: the map outputs
        # committed once every task is gone must be those there at the exit.
        at_exit = self.committed_maps()
        deadline = time.monotonic() + WAIT_SECONDS
        left = task_processes(shared)
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = task_processes(shared)
        if left:
            for pid in left:
                os.kill(pid, signal.SIGKILL)
            logs = []
            for root, _, files in os.walk(self.shared):
                logs += [os.path.join(root, n) for n in files if n.endswith(".log")]
            text = "".join(f"--- {p}:\n" + open(p, errors="replace").read()[-1500:]
                           for p in sorted(logs))
            self.fail(f"tasks {sorted(left)} outlived the build:\n{err}\n{text}")
        self.assertEqual(self.committed_maps(), at_exit,
                         "a task outlived the build and ran to its end")
        if runner == "slurm":
            self.assertEqual(CLUSTER.queue(), [], "a job of the build is still queued")
            states = subprocess.run(["squeue", "--noheader", "--states=all", "--format=%k %j %T"],
                                    capture_output=True, text=True, check=True).stdout
            self.assertRegex(states, rf"{CLUSTER.tag} sstpipe-map CANCELLED",
                             "no map job was cancelled")
        self.assertEqual(os.listdir(outdir), [], "something is at OUT")
        # Stopped, not finished: not every map task committed its output.
        self.assertLess(len(self.committed_maps()), 2, "every map task finished: none was stopped")
        left = [os.path.join(root, n) for root, dirs, files in os.walk(self.shared)
                for n in dirs + files if ".tmp" in n]
        self.assertEqual(left, [], "temporary files left")
        again = sstpipe("build", "-c", cfg, self.src, "-o", out, "-v")
        self.assertOk(again)
        self.assertRegex(again.err_text, r"cluster: plan=\S+ maps=2 shards=2 resumed=1 ")
        got = sstpipe("dump", out, "--jsonl")
        self.assertOk(got)
        self.assertTrue(got.stdout == self.ref_dump, f"{runner}: resumed: records differ")
        self.assertEqual(os.listdir(self.shared), [], "the build's directory is left")

    # Both signals are caught in one place for every runner
    # (cluster_runner.c), and a runner stops its tasks whichever came: each
    # signal is sent under the local runner, and each other runner is
    # stopped by one of them, taking turns.
    def test_local_sigint_then_resume(self):
        self.interrupted_then_resumed("local", signal.SIGINT)

    def test_local_sigterm_then_resume(self):
        self.interrupted_then_resumed("local", signal.SIGTERM)

    def test_parallel_sigterm_then_resume(self):
        self.interrupted_then_resumed("parallel", signal.SIGTERM)

    def test_slurm_sigint_then_resume(self):
        self.interrupted_then_resumed("slurm", signal.SIGINT)

    def test_parallel_sharded_is_build(self):
        self.sharded_is_build("parallel")

    def test_slurm_sharded_is_build(self):
        self.sharded_is_build("slurm")

    def test_parallel_killed_task_completes(self):
        self.killed_task_completes("parallel")

    def test_slurm_scancelled_task_completes(self):
        self.killed_task_completes("slurm")


if __name__ == "__main__":
    unittest.main()
