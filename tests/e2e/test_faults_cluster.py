"""test_faults_cluster.py: ENOSPC, EIO and SIGKILL at a cluster build's task I/O.

A map task writes one table per shard into a temporary directory of the
shared directory and commits it by renaming the directory; a reduce task
writes its shard table as build writes a table (anonymous file, fsync,
rename). The fault shim counts the calls one map task and one reduce task
of a two-shard plan make in the shared directory, then each run fails one
(with ENOSPC or EIO, taking turns): exit 1, one error line naming the
task, its range and the errno, nothing committed (no map/IIIII, no
reduce/shard file), no temporary file left. Then SIGKILL at call indices
spread over each task: nothing that looks done unless the kill came after
the commit, and the task run again gives the reference bytes. The input
lives outside the shared directory.

ClusterPublishKills does the same for the finishing step, the publish of
OUT (a table with one shard, a set with two): SIGKILL at each of its calls
and at random calls of `sstpipe build -c` resuming at its publish; then the
next build must leave no temporary name (before the fix a kill after the
publish's link left OUT.tmp.PID for good).
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import random
import shutil
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from faultlib import (OPS, Tally, check_error_line, errnos_at, indices, kill_indices,  # noqa: E402
                      sha)
from sstpipe_e2e import SANITIZED, E2ETest, run, sstpipe_bin, wikigen_bin  # noqa: E402


class ClusterTaskFaults(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-cluster-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.src = os.path.join(cls.classtmp, "gen.xml.bz2")
        # Wiktionary's short pages: streams for three tasks and records for
        # two shards in few bytes; each of the sweep's runs decodes a task's
        # share of them.
        r = run([wikigen_bin(), "--size", "1M" if not faultlib.LONG else "32M", "--seed", "41",
                 "--format", "bz2-multistream", "--profile", "wiktionary", "--duplicates", "5",
                 "-o", cls.src])
        assert r.code == 0, r.describe()
        # Plan, map and reduce, once: the finish is stopped (EIO at the
        # first mkdir in OUT's directory, the set's temporary one; no task
        # writes there), so the tasks' outputs stay. Each case starts from
        # a copy of the build's directory as it left it.
        cls.shared = os.path.join(cls.classtmp, "shared")
        cls.out_dir = os.path.join(cls.classtmp, "out")
        os.mkdir(cls.out_dir)
        cfg = os.path.join(cls.classtmp, "c.ini")
        with open(cfg, "w") as f:
            f.write(f"[cluster]\nshared_dir = {cls.shared}\ntasks = 3\nshards = 2\nretries = 0\n")
        cls.stopped = faultlib.run([sstpipe_bin(), "build", "-c", cfg, cls.src, "-o",
                                    os.path.join(cls.out_dir, "set"), "-v"], fault="mkdir:1:EIO",
                                   fault_dir=cls.out_dir)
        cls.pristine = os.path.join(cls.classtmp, "pristine")
        if os.path.isdir(cls.shared):
            shutil.copytree(cls.shared, cls.pristine, symlinks=True)

    def setUp(self):
        super().setUp()
        r = self.stopped
        self.assertEqual(r.code, 1, r.describe())
        self.assertEqual(os.listdir(self.out_dir), [])
        line = [ln for ln in r.stderr.splitlines() if ln.startswith("cluster: plan=")]
        self.assertTrue(line, r.describe())
        self.plan = line[0].split()[1].split("=", 1)[1]
        self.dir = os.path.dirname(self.plan)
        shutil.rmtree(self.shared, True)
        shutil.copytree(self.pristine, self.shared, symlinks=True)
        with open(self.plan) as f:
            self.maps = json.load(f)["maps"]
        self.map_dir = os.path.join(self.dir, "map", "00001")
        # The map task's committed output, put back before each reduce run.
        self.pristine_map = os.path.join(self.pristine, os.path.relpath(self.map_dir,
                                                                        self.shared))
        self.shard = os.path.join(self.dir, "reduce", "shard-0001.sst")
        self.ref_map = {n: sha(os.path.join(self.map_dir, n)) for n in os.listdir(self.map_dir)}
        self.ref_shard = sha(self.shard)

    def task(self, stage):
        return [sstpipe_bin(), "task", stage, "--plan", self.plan, "--task", "1"]

    def temps(self):
        found = []
        for root, dirs, files in os.walk(self.dir):
            found += [os.path.join(root, n) for n in dirs + files if ".tmp" in n]
        return found

    def reset(self, stage):
        shutil.rmtree(self.map_dir, True)
        if os.path.exists(self.shard):
            os.unlink(self.shard)
        if stage == "reduce":
            shutil.copytree(self.pristine_map, self.map_dir, symlinks=True)

    def committed(self, stage):
        return os.path.exists(self.map_dir if stage == "map" else self.shard)

    def check_output(self, stage, what):
        if stage == "map":
            got = {n: sha(os.path.join(self.map_dir, n)) for n in os.listdir(self.map_dir)}
            self.assertEqual(got, self.ref_map, what + ": not the reference tables")
        else:
            self.assertEqual(sha(self.shard), self.ref_shard, what + ": not the reference shard")

    def sweep(self, stage):
        self.reset(stage)
        counts = faultlib.count_calls(self, self.task(stage), self.dir)
        tally = Tally(f"cluster {stage}")
        names = {"map": f"map task 1 (gen.xml.bz2 bytes {self.maps[1]['start']}-"
                        f"{self.maps[1]['end']})",
                 "reduce": "reduce task 1 (keys "}
        for op in OPS:
            # One errno a call index, the two taking turns (an errno
            # changes the message, not the path the failure takes). The
            # sanitized build takes each op's first and last call: a task
            # writes its tables in one loop, whose middle calls fail down
            # the paths of its first.
            for i, n in enumerate(indices(counts[op], 6 if SANITIZED else 12)):
                for action in errnos_at(i, alternate=True):
                    self.reset(stage)
                    what = f"{stage} {op}:{n}:{action}"
                    r = faultlib.run(self.task(stage), fault=f"{op}:{n}:{action}",
                                     fault_dir=self.dir)
                    self.assertEqual(self.temps(), [], what + r.describe())
                    if not r.fired:
                        tally.not_reached += 1
                        self.assertEqual(r.code, 0, what + r.describe())
                        continue
                    if r.code == 0:
                        # Only a close after everything was synced may fail unseen.
                        self.assertEqual(op, "close", what + ": a failed call went unnoticed" +
                                         r.describe())
                        self.check_output(stage, what)
                        tally.absorbed += 1
                        continue
                    self.assertEqual(r.code, 1, what + r.describe())
                    check_error_line(self, r, action, what)
                    self.assertIn(names[stage], r.stderr, what + ": the task is not named")
                    # The fsync of the directory after the commit may fail
                    # with the output already in place (and whole).
                    if self.committed(stage):
                        self.assertEqual(op, "fsync", what + ": a failed task looks done" +
                                         r.describe())
                        self.check_output(stage, what)
                    tally.failed_cleanly += 1
        print(tally.report())
        self.assertGreater(tally.failed_cleanly, 0)

    def test_map_errors_at_every_call(self):
        self.sweep("map")

    def test_reduce_errors_at_every_call(self):
        self.sweep("reduce")

    def test_kill_at_random_calls(self):
        rng = random.Random(43)
        tally = Tally("cluster-kill")
        for stage in ("map", "reduce"):
            self.reset(stage)
            counts = faultlib.count_calls(self, self.task(stage), self.dir)
            ops = [op for op in OPS if counts[op]]
            for _ in range(24 if faultlib.LONG else faultlib.brief(5)):
                self.reset(stage)
                op = rng.choice(ops)
                n = rng.randint(1, counts[op])
                what = f"{stage} {op}:{n}:SIGKILL"
                r = faultlib.run(self.task(stage), fault=f"{op}:{n}:SIGKILL", fault_dir=self.dir)
                self.assertEqual(r.code, -9, what + r.describe())
                if self.committed(stage):
                    self.check_output(stage, what)  # killed after its commit
                # Run again: the output, whole, and no attempt left behind.
                r2 = faultlib.run(self.task(stage), preload=False)
                self.assertEqual(r2.code, 0, what + ": the next run failed" + r2.describe())
                self.check_output(stage, what)
                self.assertEqual(self.temps(), [], what + ": the dead attempt was left")
                tally.killed += 1
        print(tally.report())


class ClusterPublishKills(E2ETest):
    """SIGKILL at every call the publish makes (the finishing step: OUT, a
    table when shards = 1, a set when 2, put in place over an older OUT;
    the sanitized build: each kind's first or last call, taking turns),
    and at random calls of `sstpipe build -c` resuming a build whose tasks
    are all done: OUT is the old one or the new one, whole; with shards = 1
    nothing is ever left beside OUT (the second name the shard gets before
    its rename lives in the build's directory); a set's directory under
    construction may be, and the next build, resuming, publishes the
    reference bytes and leaves no temporary name anywhere."""

    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-faults-publish-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.src = os.path.join(cls.classtmp, "gen.xml.bz2")
        cls.old = os.path.join(cls.classtmp, "old.xml.bz2")
        for path, seed in ((cls.src, "47"), (cls.old, "48")):
            r = run([wikigen_bin(), "--size", "1M", "--seed", seed, "--format",
                     "bz2-multistream", "-o", path])
            assert r.code == 0, r.describe()
        cls.plans = {}  # shards: the plan prepare() made

    def prepare(self, shards):
        """A build of src whose tasks are all done, stopped at its publish
        (EIO at the first rename in OUT's directory); its plan directory
        kept as it is then (self.pristine), the reference output (a finish
        of a copy) and an older OUT (from old.xml.bz2) to publish over.
        Made once for each number of shards, in a directory of the class
        that the case then works in: reset() puts back all a case uses."""
        self.shards = shards
        self.tmp = os.path.join(self.classtmp, f"shards-{shards}")
        first = not os.path.isdir(self.tmp)
        if first:
            os.mkdir(self.tmp)
        self.shared = self.path("shared")
        self.out_dir = self.path("out")
        self.out = os.path.join(self.out_dir, "t.sst" if shards == 1 else "set")
        self.cfg = self.path("c.ini")
        self.pristine = self.path("pristine")
        self.ref = os.path.join(self.path("ref"), os.path.basename(self.out))
        self.old_out = self.path("old-" + os.path.basename(self.out))
        if not first:
            self.plan = self.plans[shards]
            self.dir = os.path.dirname(self.plan)
            return
        os.mkdir(self.out_dir)
        self.write_file("c.ini", f"[cluster]\nshared_dir = {self.shared}\ntasks = 3\n"
                        f"shards = {shards}\nretries = 0\n".encode())
        r = faultlib.run([sstpipe_bin(), "build", "-c", self.cfg, self.src, "-o", self.out, "-v"],
                         fault="rename:1:EIO", fault_dir=self.out_dir)
        self.assertEqual(r.code, 1, r.describe())
        self.assertEqual(os.listdir(self.out_dir), [], r.describe())
        line = [ln for ln in r.stderr.splitlines() if ln.startswith("cluster: plan=")]
        self.assertTrue(line, r.describe())
        self.plan = line[0].split()[1].split("=", 1)[1]
        self.dir = os.path.dirname(self.plan)
        shutil.copytree(self.dir, self.pristine)
        # The reference: the finish, unfaulted, into a directory of its own.
        os.mkdir(self.path("ref"))
        r = faultlib.run(self.finish_argv(self.ref), preload=False)
        self.assertEqual(r.code, 0, r.describe())
        # The older OUT: a build of another input, as the same kind.
        old_cfg = self.write_file("old.ini", f"[cluster]\nshared_dir = {self.path('oldshared')}"
                                  f"\ntasks = 2\nshards = {shards}\n".encode())
        r = run([sstpipe_bin(), "build", "-c", old_cfg, self.old, "-o", self.old_out])
        self.assertEqual(r.code, 0, r.describe())
        self.assertNotEqual(self.digest(self.old_out), self.digest(self.ref))
        self.plans[shards] = self.plan

    def finish_argv(self, out):
        return [sstpipe_bin(), "task", "finish", "--plan", self.plan, "--task", "0", "-o", out,
                "--keep-plan"]

    def build_argv(self):
        return [sstpipe_bin(), "build", "-c", self.cfg, self.src, "-o", self.out]

    @staticmethod
    def digest(path):
        """A table's digest, or a set's: its files' digests by name."""
        if os.path.isdir(path):
            return tuple(sorted((n, sha(os.path.join(path, n))) for n in os.listdir(path)))
        return sha(path)

    def reset(self):
        """The plan directory as the stopped build left it, the older OUT in
        place, nothing else in OUT's directory."""
        shutil.rmtree(self.dir, True)
        shutil.copytree(self.pristine, self.dir)
        for name in os.listdir(self.out_dir):
            path = os.path.join(self.out_dir, name)
            if os.path.isdir(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        if os.path.isdir(self.old_out):
            shutil.copytree(self.old_out, self.out)
        else:
            shutil.copy(self.old_out, self.out)
            shutil.copy(self.old_out + ".titles", self.out + ".titles")

    def judge_kill(self, what, r):
        """After a kill: the old or the new OUT, whole; nothing beside it
        for a table; then the build run again (resuming): the reference and
        no temporary name anywhere, its directory gone."""
        self.assertEqual(r.code, -9, what + r.describe())
        self.assertIn(self.digest(self.out), {self.digest(self.old_out), self.digest(self.ref)},
                      what + ": OUT is neither the old nor the new one" + r.describe())
        left = faultlib.temp_leftovers(self.out_dir)
        if self.shards == 1:
            self.assertEqual(left, [], what + ": left beside OUT" + r.describe())
        r2 = faultlib.run(self.build_argv(), preload=False)
        self.assertEqual(r2.code, 0, what + ": the next build failed" + r2.describe())
        self.assertEqual(self.digest(self.out), self.digest(self.ref), what + ": the next build")
        self.assertEqual(faultlib.temp_leftovers(self.out_dir, self.shared), [],
                         what + ": the next build left the dead run's temporary names")
        # A table has its title index beside it, the reference's (a set's are
        # among its files).
        name = os.path.basename(self.out)
        self.assertEqual(sorted(os.listdir(self.out_dir)),
                         [name, name + ".titles"] if self.shards == 1 else [name], what)
        if self.shards == 1:
            self.assertEqual(sha(self.out + ".titles"), sha(self.ref + ".titles"), what)
        self.assertFalse(os.path.exists(self.dir), what + ": the build's directory stayed")

    def kill_every_call(self, shards):
        self.prepare(shards)
        self.reset()
        # Calls in OUT's directory and in the build's own.
        where = self.tmp
        counts = faultlib.count_calls(self, self.finish_argv(self.out), where)
        tally = Tally(f"cluster-publish-{shards}")
        for turn, op in enumerate(op for op in OPS if counts[op]):
            # Every call in the plain suite; the sanitized one kills each op
            # once (faultlib.kill_indices).
            picked = (kill_indices(counts[op], 2, turn) if SANITIZED else
                      range(1, counts[op] + 1))
            for n in picked:
                self.reset()
                what = f"publish shards={shards} {op}:{n}:SIGKILL"
                r = faultlib.run(self.finish_argv(self.out), fault=f"{op}:{n}:SIGKILL",
                                 fault_dir=where)
                self.judge_kill(what, r)
                tally.killed += 1
        print(tally.report())
        self.assertGreater(tally.killed, 0)

    def kill_random(self, shards):
        self.prepare(shards)
        self.reset()
        counts = faultlib.count_calls(self, self.build_argv(), self.out_dir)
        ops = [op for op in OPS if counts[op]]
        rng = random.Random(71 + shards)
        tally = Tally(f"cluster-publish-build-{shards}")
        for _ in range(24 if faultlib.LONG else faultlib.brief(6)):
            self.reset()
            op = rng.choice(ops)
            n = rng.randint(1, counts[op])
            what = f"build -c shards={shards} {op}:{n}:SIGKILL"
            r = faultlib.run(self.build_argv(), fault=f"{op}:{n}:SIGKILL", fault_dir=self.out_dir)
            self.judge_kill(what, r)
            tally.killed += 1
        print(tally.report())

    def test_table_publish_errors_keep_the_old_pair(self):
        """EIO at each rename the finish makes, in OUT's directory and the
        build's: a finish that fails leaves the older table and its own
        title index at OUT, byte for byte (the new index, published first,
        is taken back), and nothing beside them; one that succeeds, the
        reference pair."""
        self.prepare(1)
        self.reset()
        counts = faultlib.count_calls(self, self.finish_argv(self.out), self.tmp)
        self.assertGreater(counts["rename"], 1)
        failed = 0
        for n in range(1, counts["rename"] + 1):
            self.reset()
            what = f"publish rename:{n}:EIO"
            r = faultlib.run(self.finish_argv(self.out), fault=f"rename:{n}:EIO",
                             fault_dir=self.tmp)
            pair = (sha(self.out), sha(self.out + ".titles"))
            if r.code == 0:
                self.assertEqual(pair, (sha(self.ref), sha(self.ref + ".titles")), what)
                continue
            failed += 1
            self.assertEqual(r.code, 1, what + r.describe())
            self.assertEqual(pair, (sha(self.old_out), sha(self.old_out + ".titles")),
                             what + ": the older pair was not kept" + r.describe())
            self.assertEqual(faultlib.temp_leftovers(self.out_dir), [], what + r.describe())
        self.assertGreater(failed, 1)

    def test_kill_table_publish_at_every_call(self):
        self.kill_every_call(1)

    def test_kill_set_publish_at_every_call(self):
        self.kill_every_call(2)

    def test_kill_table_publish_at_random_calls(self):
        self.kill_random(1)

    def test_kill_set_publish_at_random_calls(self):
        self.kill_random(2)


if __name__ == "__main__":
    unittest.main()
