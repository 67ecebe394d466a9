"""test_load.py: sustained lookups on one file, and sorts far beyond their budget.

- Profile with 16 threads, run after run (LOAD_RUNS: a few here, many more
  under tests/faults/run; under the sanitizers each run a tenth of the
  lookups), while other processes read the same file at once (a profile
  through io_uring with absent keys, `get` and `verify` loops, each of at
  most READER_ROUNDS rounds and at least one before the runs stop): every
  run and read succeeds with the figures it must have, and the peak
  RSS stays within the profile's own arrays (a few dozen bytes per lookup)
  plus a fixed allowance. valgrind then checks a short multi-threaded run:
  no leak, no memory error.
- Memory per lookup: a profile of 10N lookups may use more than one of N
  only by the profile's own per-lookup arrays, so a leak per lookup (even a
  small one) fails. Under ASan too, with its quarantine of freed blocks off
  (it would grow with every free); there LeakSanitizer's report at exit
  (which fails the run) also catches memory lost, however little, while
  memory kept to the end (which it does not report) meets the RSS bound.
- A build whose records are more than 4x the 1 MiB sort budget, and one
  whose budget alone (no --fan-in) forces a merge in several passes, both
  byte-identical to a build that sorts in memory, with --tmp left empty.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import shutil
import subprocess
import tempfile
import threading
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from sstpipe_e2e import E2ETest, parse_stats, run, sstpipe, sstpipe_bin, wikigen  # noqa: E402

# The load test's work is counted, not timed, so that a slow or loaded
# machine does the same: its 16-thread runs, and the rounds of each reader
# beside them, which stop early when the runs end.
LOAD_RUNS = 60 if faultlib.LONG else 3
READER_ROUNDS = 200 if faultlib.LONG else 3
LOOKUPS = 300000  # per 16-thread run: about 2 s on 2 cores
# Per lookup the profile keeps its key, latency and read count; beyond that
# a run may use a fixed amount (libraries, index, 16 threads' buffers).
BYTES_PER_LOOKUP = 64
FIXED_BYTES = 24 << 20


def profile_run(table, args, json_path):
    """One profile run: (exit code, stderr, peak RSS bytes, JSON result)."""
    r = run([sstpipe_bin(), "profile", table, *args, "--json", json_path], measure_rss=True)
    result = None
    if r.code == 0:
        with open(json_path) as f:
            result = json.load(f)
    return r.code, r.err_text, r.maxrss_kib * 1024, result


class Load(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-load-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        cls.dump = wikigen(os.path.join(cls.classtmp, "load.xml.zst"), "64M", "71", "zst")
        cls.table = os.path.join(cls.classtmp, "load.sst")
        r = sstpipe("build", cls.dump, "-o", cls.table)
        assert r.code == 0, r.describe()

    def test_profile_many_threads_with_concurrent_readers(self):
        failures, runs = [], []
        stop = threading.Event()
        lock = threading.Lock()
        counts = {"uring_runs": 0, "gets": 0, "verifies": 0}
        key = sstpipe("dump", self.table, "--jsonl").stdout.split(b"\n")[100]
        key = json.loads(key)["key"]

        def other_profiles():
            for _ in range(READER_ROUNDS):
                if stop.is_set():
                    break
                code, err, _, res = profile_run(
                    self.table, [50000, "--cold", "--threads", 4, "--queue-depth", 8,
                                 "--misses", 20],
                    self.path("uring.json"))
                with lock:
                    counts["uring_runs"] += 1
                    if code != 0 or res["misses"] != res["misses_requested"] or \
                            res["hits"] + res["misses"] != 50000:
                        failures.append(f"io_uring profile: exit {code}: {err[-300:]} {res}")

        def readers():
            for _ in range(READER_ROUNDS):
                if stop.is_set():
                    break
                g = subprocess.run([sstpipe_bin(), "get", "--raw", self.table, key], capture_output=True)
                v = subprocess.run([sstpipe_bin(), "verify", self.table], capture_output=True)
                with lock:
                    counts["gets"] += 1
                    counts["verifies"] += 1
                    if g.returncode != 0 or v.returncode != 0:
                        failures.append(f"get {g.returncode} {g.stderr[-200:]!r}, "
                                        f"verify {v.returncode} {v.stdout[-200:]!r}")

        threads = [threading.Thread(target=other_profiles), threading.Thread(target=readers)]
        for t in threads:
            t.start()
        try:
            seed = 1
            # The count matters to the peak RSS bound below, judged without
            # ASan only; under it a run's checks hold at any count, and runs
            # of a tenth of the lookups (the small run of
            # test_memory_grows_only_with_the_lookup_arrays) overlap the
            # other readers for as long at a tenth of the cost a run.
            asan = "ASAN_OPTIONS" in os.environ
            lookups = LOOKUPS // 10 if asan else LOOKUPS
            while len(runs) < LOAD_RUNS or not (counts["uring_runs"] and counts["gets"]):
                code, err, rss, res = profile_run(
                    self.table, [lookups, "--threads", 16, "--seed", seed],
                    self.path("main.json"))
                seed += 1
                self.assertEqual(code, 0, err)
                self.assertEqual(res["hits"], lookups, res)
                self.assertEqual(res["blocks_searched"], lookups, "one lookup = one block")
                self.assertEqual((res["io"], res["reads"]), ("mapped", 0), "read in place")
                runs.append(rss)
        finally:
            stop.set()
            for t in threads:
                t.join()
        self.assertEqual(failures, [])
        self.assertGreater(counts["uring_runs"], 0)
        self.assertGreater(counts["gets"], 0)
        # Under AddressSanitizer RSS holds shadow memory and the quarantine, so
        # the bound applies without it only; there LeakSanitizer's report at
        # the exit of each run (exit 86, asserted 0 above) checks for leaks, and
        # test_memory_grows_only_with_the_lookup_arrays bounds the growth.
        if not asan:
            bound = FIXED_BYTES + lookups * BYTES_PER_LOOKUP
            self.assertLess(max(runs), bound, f"peak RSS per run: {runs}")
        print(f"LOAD profile: runs16={len(runs)} lookups={len(runs) * lookups} "
              f"peak_rss_mib={max(runs) / 2**20:.1f} "
              + " ".join(f"{k}={v}" for k, v in counts.items()))

    def test_memory_grows_only_with_the_lookup_arrays(self):
        """Peak RSS of N and 10N lookups (one thread and 16) in one file:
        the difference over the 9N more lookups is at most BYTES_PER_LOOKUP
        each (the key, its latency and read count: ~47 bytes measured), so a
        leak or a cache that grows per lookup fails it, which comparing runs
        of equal work could not."""
        n = LOOKUPS // 10
        env = {}
        if "ASAN_OPTIONS" in os.environ:
            # ASan's quarantine holds freed blocks (up to 256 MiB), so RSS would
            # grow with every free; without it freed memory is reused at once,
            # as without ASan, and what grows with the lookups is their arrays
            # (large blocks: their shadow adds an eighth) under the same bound.
            # LeakSanitizer must be on: its report at exit (exit 86) fails a
            # run that lost memory, however little.
            self.assertNotIn("detect_leaks=0", os.environ["ASAN_OPTIONS"])
            env["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":quarantine_size_mb=0"
        for threads in (1, 16):
            peaks = {}
            for lookups in (n, 10 * n):
                with mock.patch.dict(os.environ, env):
                    code, err, rss, res = profile_run(
                        self.table, [lookups, "--threads", threads, "--seed", 9],
                        self.path("count.json"))
                self.assertEqual(code, 0, err)
                self.assertEqual(res["hits"], lookups, res)
                peaks[lookups] = rss
            per_lookup = (peaks[10 * n] - peaks[n]) / (9 * n)
            print(f"LOAD rss-per-lookup: threads={threads} rss_{n}={peaks[n]} "
                  f"rss_{10 * n}={peaks[10 * n]} bytes_per_lookup={per_lookup:.1f}"
                  + (" (ASan, quarantine off)" if env else ""))
            self.assertLess(per_lookup, BYTES_PER_LOOKUP,
                            f"{threads} threads: peak RSS {peaks} grows with the lookups")

    @unittest.skipUnless(shutil.which("valgrind"), "valgrind is not installed")
    @unittest.skipIf("ASAN_OPTIONS" in os.environ, "the binary under test is the sanitized one")
    def test_profile_under_valgrind(self):
        # Blocks read through io_uring (cold batches) are filled by the
        # kernel where valgrind cannot see, so that run checks leaks only.
        for extra, checks in ((["--threads", "4", "--misses", "10"], []),
                              (["--cold", "--threads", "4", "--queue-depth", "4"],
                               ["--undef-value-errors=no"])):
            p = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=definite",
                                "--errors-for-leak-kinds=definite", "--error-exitcode=99",
                                *checks, sstpipe_bin(), "profile", self.table, "3000", *extra,
                                "--seed", "5"], capture_output=True, timeout=600)
            log = p.stderr.decode(errors="replace")
            self.assertEqual(p.returncode, 0, f"valgrind {extra}:\n{log[-3000:]}")
            self.assertIn("ERROR SUMMARY: 0 errors", log)

    # ------------------------------------------------------------ sorting

    def sorted_build(self, dump, *opts):
        """Builds dump with opts under a 1 MiB budget and again in memory
        (without opts, the class's table is that build); returns the -v
        stats of the first. Both tables must be identical."""
        spill = self.path("spill")
        os.makedirs(spill, exist_ok=True)
        small, ref = self.path("small.sst"), self.path("ref.sst")
        r = sstpipe("build", dump, "-o", small, "--memory", "1M", "--tmp", spill, "-v", *opts)
        self.assertOk(r)
        self.assertEqual(os.listdir(spill), [], "spill files left in --tmp")
        if opts:
            self.build(dump, ref, *opts)
        else:
            ref = self.table
        with open(small, "rb") as a, open(ref, "rb") as b:
            self.assertTrue(a.read() == b.read(), "the spilled build differs from the in-memory one")
        return parse_stats(self, r.stderr, "sort"), parse_stats(self, r.stderr, "write")

    def test_records_four_times_the_budget(self):
        sort, write = self.sorted_build(self.dump)
        records = write["key_bytes"] + write["value_bytes"]
        self.assertGreaterEqual(records, 4 << 20, f"records of {records} bytes")
        self.assertGreaterEqual(sort["runs"], 4, sort)
        self.assertGreaterEqual(sort["spilled_bytes"], records, sort)

    def test_budget_forces_several_merge_passes(self):
        # 64 KiB values make the records about 40 MB: more runs than 1 MiB
        # of merge buffers can read at once, so the budget alone (no
        # --fan-in) makes the merge take more than one pass.
        sort, _ = self.sorted_build(self.dump, "--max-bytes", "65536", "--block-size", "128K")
        self.assertGreaterEqual(sort["merge_passes"], 2, sort)
        self.assertGreater(sort["runs"], 16, sort)


if __name__ == "__main__":
    unittest.main()
