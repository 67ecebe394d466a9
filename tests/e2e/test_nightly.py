"""test_nightly.py: `sstpipe nightly` end to end on the shared corpora.

A published build (newest input by mtime, manifest complete and consistent
with `info`, the input checksum and the file itself); a build that fails
verify (one byte of the staged table flipped while the fault shim holds
verify's open of it) is not published and current keeps its target; a second run
while one holds the lock is refused naming the holder; kill -9 in the middle
of a build, then the next run cleans up and succeeds with the previous
build intact; retention keeps exactly `keep` builds; config errors stop
before anything is created."""

import ctypes
import ctypes.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))

import faultlib  # noqa: E402
from sstpipe_e2e import (E2ETest, assert_manifest_measures, corpora_dir,  # noqa: E402
                         parse_info, sstpipe, sstpipe_bin, wikigen, wikigen_bin)

from faultlib import wait_stopped  # noqa: E402


def xxh3_64(path):
    """XXH3-64 of a file through libxxhash itself (no Python binding needed)."""
    lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    with open(path, "rb") as f:
        data = f.read()
    return f"{lib.XXH3_64bits(data, len(data)):016x}"


class NightlyTest(E2ETest):
    def setUp(self):
        super().setUp()
        self.corpus = os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2")
        self.small = os.path.join(corpora_dir(), "simplewiki-7pages.xml.bz2")
        self.out = self.path("out")

    def config(self, **extra):
        """An INI file for a nightly into self.out; extra: {"section.key": value}."""
        keys = {"output.dir": self.out, "output.keep": "3", "profile.lookups": "200",
                "sort.memory": "4M"}
        keys.update(extra)
        sections = {}
        for k, v in keys.items():
            s, name = k.split(".")
            sections.setdefault(s, []).append(f"{name} = {v}")
        text = "".join(f"[{s}]\n" + "\n".join(lines) + "\n" for s, lines in sections.items())
        return self.write_file("nightly.ini", text.encode())

    def nightly(self, ini, *args, env=None, timeout=600):
        cmd = [sstpipe_bin(), "nightly", "-c", ini, *args]
        p = subprocess.run(cmd, capture_output=True, timeout=timeout,
                           env=dict(os.environ, **(env or {})))
        return p

    def assertExit(self, p, code):
        self.assertEqual(p.returncode, code,
                         f"exit {p.returncode}, stderr:\n{p.stderr.decode(errors='replace')}")

    def builds(self):
        return sorted(os.listdir(os.path.join(self.out, "builds")))

    def failed(self):
        return sorted(os.listdir(os.path.join(self.out, "failed")))

    def current(self):
        return os.readlink(os.path.join(self.out, "current"))

    def manifest(self, rel):
        with open(os.path.join(self.out, rel, "manifest.json")) as f:
            return json.load(f)

    def staging(self):
        return [n for n in os.listdir(self.out) if n.startswith(".staging-")]

    # ------------------------------------------------------------ published

    def test_published_manifest_complete(self):
        inputs = self.path("dumps")
        os.mkdir(inputs)
        # The newest by mtime wins, not the last by name.
        newer = os.path.join(inputs, "dump-a.xml.bz2")
        older = os.path.join(inputs, "dump-b.xml.bz2")
        shutil.copy(self.corpus, newer)
        shutil.copy(self.small, older)
        now = time.time()
        os.utime(older, (now - 3600, now - 3600))
        ini = self.config(**{"input.path": os.path.join(inputs, "dump-*.xml.bz2"),
                             "sst.block_size": "16K"})
        p = sstpipe("nightly", "-c", ini, "--set", "profile.seed=7", measure_rss=True)
        self.assertOk(p)
        self.assertEqual(self.staging(), [])
        (name,) = self.builds()
        self.assertTrue(name.endswith("-dump-a.xml.bz2"), name)
        self.assertEqual(self.current(), "builds/" + name)
        build = os.path.join(self.out, "builds", name)
        self.assertEqual(sorted(os.listdir(build)), ["manifest.json", "nightly.log",
                                                     "profile.json", "report.html",
                                                     "table.sst", "table.sst.titles",
                                                     "verify.json"])
        table = os.path.join(self.out, "current", "table.sst")

        # The same bytes as `sstpipe build` with the same options.
        ref = self.path("ref.sst")
        built = sstpipe("build", newer, "-o", ref, "--block-size", "16K", "--memory", "4M",
                        measure_rss=True)
        self.assertOk(built)
        with open(ref, "rb") as a, open(table, "rb") as b:
            self.assertTrue(a.read() == b.read(), "published table differs from build")

        m = self.manifest("builds/" + name)
        self.assertEqual(m["manifest_version"], 1)
        self.assertEqual(m["status"], "published")
        self.assertEqual(m["exit_code"], 0)
        self.assertIsNone(m["failed_stage"])
        self.assertIsNone(m["error"])
        self.assertEqual(m["build_dir"], "builds/" + name)
        self.assertEqual(m["pid"] > 0, True)
        self.assertRegex(m["started_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertGreater(m["wall_seconds"], 0)
        self.assertGreater(m["peak_rss_bytes"], 1 << 20)

        self.assertEqual(m["input"]["path"], os.path.realpath(newer))
        self.assertEqual(m["input"]["size"], os.path.getsize(newer))
        self.assertEqual(m["input"]["xxh3_64"], xxh3_64(newer))
        self.assertTrue(m["input"]["compressed"])

        cfg = m["config"]
        self.assertEqual(cfg["sst"]["block_size"]["value"], 16384)
        with open(ini) as f:
            line = [n for n, l in enumerate(f, 1) if l.startswith("block_size")][0]
        self.assertEqual(cfg["sst"]["block_size"]["origin"], f"{ini}:{line}")
        self.assertEqual(cfg["profile"]["seed"], {"value": 7, "origin": "--set profile.seed=7"})
        self.assertEqual(cfg["sst"]["cluster_size"]["origin"], "default")

        stages = {s["name"]: s for s in m["stages"]}
        self.assertEqual([s["name"] for s in m["stages"]],
                         ["checksum", "read", "write", "verify", "profile"])
        for s in m["stages"]:
            for k in ("wall_seconds", "cpu_seconds", "bytes_in", "bytes_out", "mb_per_s"):
                self.assertIsInstance(s[k], (int, float), f"{s['name']}.{k}")
                self.assertGreaterEqual(s[k], 0, f"{s['name']}.{k}")
        self.assertEqual(stages["checksum"]["bytes_in"], os.path.getsize(newer))
        assert_manifest_measures(self, m, p, peak=built.maxrss_kib * 1024)

        info = parse_info(self, table)
        sst = m["sstable"]
        for k in ("records", "data_blocks", "key_bytes", "value_bytes", "file_size",
                  "block_size", "cluster_size", "max_value_bytes"):
            self.assertEqual(sst[k], info[k], f"sstable.{k} vs info --json")
        self.assertEqual(sst["file_size"], os.path.getsize(table))

        counts = m["counts"]
        self.assertEqual(counts["pages"], 206)
        self.assertEqual(counts["input_bytes"], os.path.getsize(newer))
        self.assertEqual(counts["records_written"], info["records"])
        self.assertEqual(counts["records_extracted"],
                         counts["pages"] - counts["skipped_redirects"]
                         - counts["skipped_namespace"])
        self.assertEqual(counts["records_written"],
                         counts["records_extracted"] - counts["duplicates_replaced"])
        self.assertGreater(counts["truncated"], 0)
        self.assertEqual(stages["read"]["records_in"], 206)
        self.assertEqual(stages["write"]["records_out"], info["records"])
        self.assertEqual(stages["write"]["bytes_out"], info["file_size"])
        self.assertEqual(stages["verify"]["bytes_in"], info["file_size"])

        outputs = {o["file"]: o for o in m["outputs"]}
        self.assertEqual(set(outputs), {"table.sst", "verify.json", "profile.json"})
        for fname, o in outputs.items():
            path = os.path.join(build, fname)
            self.assertEqual(o["bytes"], os.path.getsize(path), fname)
            self.assertEqual(o["xxh3_64"], xxh3_64(path), fname)

        self.assertIsInstance(m["verify"], dict)
        self.assertEqual(m["verify"]["records"], info["records"])
        self.assertIsInstance(m["profile"], dict)
        self.assertIsNotNone(m["free_space"])
        self.assertGreater(m["free_space"]["available_bytes"], m["free_space"]["needed_bytes"])

        # Not a terminal: plain timestamped lines, the same ones as in the log.
        err = p.stderr.decode()
        self.assertRegex(err, r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ nightly: published ")
        with open(os.path.join(build, "nightly.log")) as f:
            log = f.read()
        self.assertIn("nightly: verify: OK", log)
        self.assertNotIn("\r", err)

        # The published table serves lookups.
        r = sstpipe("get", table, "Anarchism")
        self.assertOk(r)

    # ------------------------------------------------------------ failures

    def test_failed_verify_is_not_published(self):
        ini = self.config()
        self.assertExit(self.nightly(ini, self.small), 0)
        (first,) = self.builds()
        before = xxh3_64(os.path.join(self.out, "builds", first, "table.sst"))

        # Verify's first open of the staged table (the third open of an
        # existing file under out, after the staging directory's for the
        # fsyncs of the title index's publish and the table's) is held while
        # one byte of the table is flipped.
        with faultlib.Held("open_read:3", self.out,
                           lambda path: faultlib.flip_byte(path, 1000)) as held:
            p = self.nightly(ini, self.corpus, env=held.env)
        self.assertRegex(held.path, r"/\.staging-[^/]+/table\.sst$", "the call held")
        self.assertExit(p, 3)
        self.assertIn("verify found", p.stderr.decode())
        self.assertEqual(self.builds(), [first])
        self.assertEqual(self.current(), "builds/" + first)
        self.assertEqual(xxh3_64(os.path.join(self.out, "current", "table.sst")), before)
        self.assertEqual(self.staging(), [])
        (failed,) = self.failed()
        m = self.manifest("failed/" + failed)
        self.assertEqual(m["status"], "failed")
        self.assertEqual(m["failed_stage"], "verify")
        self.assertEqual(m["exit_code"], 3)
        self.assertIn("verify found", m["error"])
        self.assertEqual(m["build_dir"], "failed/" + failed)
        self.assertGreater(m["verify"]["problem_count"], 0)
        fdir = os.path.join(self.out, "failed", failed)
        with open(os.path.join(fdir, "nightly.log")) as f:
            log = f.read()
        self.assertIn("FAILED in verify", log)
        self.assertTrue(os.path.exists(os.path.join(fdir, "verify.json")))

    def test_missing_input_recorded(self):
        ini = self.config(**{"input.path": self.path("nothing-*.bz2")})
        p = self.nightly(ini)
        self.assertExit(p, 1)
        self.assertIn("no file matches", p.stderr.decode())
        self.assertFalse(os.path.lexists(os.path.join(self.out, "current")))
        (failed,) = self.failed()
        m = self.manifest("failed/" + failed)
        self.assertEqual(m["failed_stage"], "input")
        self.assertIsNone(m["input"])
        # A directory that is not there is named as such.
        missing = self.path("no-such-dir")
        p = self.nightly(self.config(**{"input.path": os.path.join(missing, "d-*.bz2")}))
        self.assertExit(p, 1)
        self.assertIn(f"directory {missing} does not exist", p.stderr.decode())

    def test_config_errors_before_any_work(self):
        ini = self.config(**{"sst.block_size": "3000"})
        p = self.nightly(ini, self.corpus)
        self.assertExit(p, 2)
        self.assertIn(ini + ":", p.stderr.decode())
        self.assertIn("[sst] block_size", p.stderr.decode())
        self.assertFalse(os.path.exists(self.out))
        # A value bound no block can hold is refused before any work too.
        ini = self.config(**{"sst.block_size": "512", "truncate.max_bytes": "4K"})
        self.assertExit(self.nightly(ini, self.corpus), 2)
        self.assertFalse(os.path.exists(self.out))
        # Nothing to build is a usage error too.
        p = self.nightly(self.config())
        self.assertExit(p, 2)
        self.assertIn("no INPUT given and [input] path is not set", p.stderr.decode())
        self.assertFalse(os.path.exists(self.out))
        p = self.nightly(ini, "--set", "output.kepe=2")
        self.assertExit(p, 2)
        self.assertIn("did you mean [output] keep?", p.stderr.decode())

    # ------------------------------------------------------------ up to date

    def test_published_dump_is_up_to_date_unless_forced(self):
        ini = self.config(**{"profile.lookups": "0", "output.keep": "10"})
        self.assertExit(self.nightly(ini, self.small), 0)
        (first,) = self.builds()
        index = os.path.join(self.out, "index.html")
        os.unlink(index)
        # The same dump again, from another directory (name, size, checksum
        # alike): nothing built, nothing recorded, the pages made again.
        same = self.path(os.path.basename(self.small))
        shutil.copyfile(self.small, same)
        p = self.nightly(ini, same)
        self.assertExit(p, 0)
        self.assertIn(f"up to date: current (builds/{first}) was published from the same input",
                      p.stderr.decode())
        self.assertEqual(self.builds(), [first])
        self.assertEqual(self.failed(), [])
        self.assertEqual(self.staging(), [])
        self.assertTrue(os.path.exists(index))
        # --force builds and publishes it again.
        p = self.nightly(ini, self.small, "--force")
        self.assertExit(p, 0)
        self.assertNotIn("up to date", p.stderr.decode())
        self.assertEqual(len(self.builds()), 2)
        self.assertNotEqual(self.current(), "builds/" + first)
        # Other settings that shape the table build it again.
        p = self.nightly(ini, self.small, "--set", "truncate.max_bytes=2048")
        self.assertExit(p, 0)
        self.assertNotIn("up to date", p.stderr.decode())
        self.assertEqual(len(self.builds()), 3)
        # Compression too: the same records in format 2 are another table.
        p = self.nightly(ini, self.small, "--set", "truncate.max_bytes=2048", "--set",
                         "sst.compression=zstd")
        self.assertExit(p, 0)
        self.assertNotIn("up to date", p.stderr.decode())
        self.assertEqual(len(self.builds()), 4)
        # Another dump is built, and current's manifest is what a dump is
        # checked against: the first one again is built too.
        self.assertExit(self.nightly(ini, self.corpus), 0)
        p = self.nightly(ini, self.small)
        self.assertExit(p, 0)
        self.assertNotIn("up to date", p.stderr.decode())
        self.assertEqual(len(self.builds()), 6)

    # ------------------------------------------------------------ lock, kill -9

    def test_lock_and_kill9_recovery(self):
        ini = self.config(**{"profile.lookups": "0"})
        self.assertExit(self.nightly(ini, self.small), 0)
        (first,) = self.builds()
        first_table = os.path.join(self.out, "builds", first, "table.sst")
        first_sum = xxh3_64(first_table)

        big = wikigen(self.path("big.xml.bz2"), "4M", 3, "bz2")
        log = open(self.path("big.log"), "wb")
        # The run stops itself (the fault shim's SIGSTOP) at its first write()
        # under the output directory, the table's: in the middle of the build,
        # lock held, staging dir there, however long the machine takes to get
        # there. Killed while stopped, it is killed mid-build for certain.
        env = faultlib.shim_env(os.environ, "write:1:SIGSTOP", self.out)
        proc = subprocess.Popen([sstpipe_bin(), "nightly", "-c", ini, big], stdout=log,
                                stderr=subprocess.STDOUT, env=env)
        try:
            wait_stopped(self, proc)
            with open(self.path("big.log"), "rb") as f:
                self.assertIn(b"nightly: build: ", f.read(), "stopped before the build")
            with open(os.path.join(self.out, ".lock")) as f:
                self.assertEqual(int(f.read()), proc.pid)

            p = self.nightly(ini, self.small)
            self.assertExit(p, 4)
            self.assertIn(f"pid {proc.pid}", p.stderr.decode())

            proc.send_signal(signal.SIGKILL)
            proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
        stale = self.staging()
        self.assertEqual(len(stale), 1, "kill -9 should leave its staging dir")
        self.assertTrue(stale[0].endswith(f"-{proc.pid}"), stale)
        self.assertEqual(self.builds(), [first])
        self.assertEqual(self.current(), "builds/" + first)

        p = self.nightly(ini, self.corpus)
        self.assertExit(p, 0)
        self.assertIn(f"removed {stale[0]}, left by a run that died", p.stderr.decode())
        self.assertEqual(self.staging(), [])
        self.assertEqual(len(self.builds()), 2)
        self.assertNotEqual(self.current(), "builds/" + first)
        self.assertEqual(xxh3_64(first_table), first_sum)
        self.assertEqual(self.manifest("builds/" + first)["status"], "published")

    # ------------------------------------------------------------ retention

    def test_retention_keeps_exactly_keep(self):
        ini = self.config(**{"output.keep": "2", "profile.lookups": "50"})
        made = []
        for i in range(4):
            self.assertExit(self.nightly(ini, self.small, "--force"), 0)
            made.append(self.current()[len("builds/"):])
            self.assertLessEqual(len(self.builds()), 2, self.builds())
        self.assertEqual(len(set(made)), 4, made)
        self.assertEqual(self.builds(), sorted(made[-2:]))
        self.assertEqual(self.current(), "builds/" + made[-1])
        # keep = 1 leaves only the build current points at.
        ini = self.config(**{"output.keep": "1", "profile.lookups": "0"})
        self.assertExit(self.nightly(ini, self.small, "--force"), 0)
        newest = self.current()[len("builds/"):]
        self.assertEqual(self.builds(), [newest])
        self.assertTrue(os.path.exists(os.path.join(self.out, "current", "table.sst")))

if __name__ == "__main__":
    unittest.main()
