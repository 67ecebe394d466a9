"""test_config.py: `sstpipe config show` end to end: the shipped INI files,
precedence (defaults < -c FILE < --set) with each value's origin, and the
errors a bad file or --set gives (file:line, key, suggestion, exit 2)."""

import json
import os
import re
import unittest

from sstpipe_e2e import E2ETest, env_path, sstpipe


def show(*args):
    return sstpipe("config", *args, "show")


class ConfigShowTest(E2ETest):
    def source(self, rel):
        return os.path.join(env_path("SSTPIPE_SOURCE"), rel)

    def show_json(self, *args):
        r = sstpipe("config", *args, "show", "--json")
        self.assertOk(r)
        return json.loads(r.stdout)

    def test_defaults_and_default_ini_agree(self):
        plain = self.show_json()
        from_file = self.show_json("-c", self.source("config/default.ini"))
        self.assertEqual(set(plain), {"input", "extract", "truncate", "sort", "build", "sst", "verify",
                                      "profile", "output", "progress",
                                      "serve", "cluster"})
        for section, keys in plain.items():
            for key, entry in keys.items():
                self.assertEqual(entry["origin"], "default", f"[{section}] {key}")
                got = from_file[section][key]
                self.assertEqual(got["value"], entry["value"], f"[{section}] {key}")
                self.assertIn("default.ini:", got["origin"], f"[{section}] {key}")
        self.assertEqual(plain["sst"]["block_size"]["value"], 8192)
        self.assertEqual(plain["truncate"]["max_bytes"]["value"], 1024)

    def test_precedence_text_and_json(self):
        ini = self.write_file("a.ini", b"[sst]\nblock_size = 16K\ncluster_size = 8K\n"
                                       b"[extract]\nnamespaces = 0, 14\nredirects = skip\n")
        r = sstpipe("config", "show", "-c", ini, "--set", "sst.block_size=64K")
        self.assertOk(r)
        out = r.stdout.decode()
        lines = {l.split(" = ")[0]: l for l in out.splitlines() if " = " in l}
        self.assertRegex(lines["block_size"], r"block_size = 64K +; --set sst.block_size=64K$")
        self.assertRegex(lines["cluster_size"], r"cluster_size = 8K +; " + re.escape(ini) + ":3$")
        self.assertRegex(lines["namespaces"], r"namespaces = 0,14 +; " + re.escape(ini) + ":5$")
        self.assertRegex(lines["keep"], r"keep = 7 +; default$")
        j = self.show_json("-c", ini, "--set=sst.block_size=64K")
        self.assertEqual(j["sst"]["block_size"], {"value": 65536,
                                                  "origin": "--set sst.block_size=64K"})
        self.assertEqual(j["extract"]["namespaces"]["value"], [0, 14])
        self.assertEqual(j["extract"]["redirects"]["value"], "skip")

    def test_nightly_example_loads(self):
        j = self.show_json("-c", self.source("config/nightly.ini"))
        self.assertEqual(j["output"]["name"]["value"], "enwiki.sst")
        self.assertTrue(j["profile"]["cold"]["value"])

    def assertConfigError(self, r, *parts):
        self.assertEqual(r.code, 2, r.describe())
        self.assertEqual(r.stdout, b"", r.describe())
        lines = r.err_text.splitlines()
        self.assertEqual(len(lines), 1, r.describe())
        self.assertTrue(lines[0].startswith("sstpipe: "), r.describe())
        for p in parts:
            self.assertIn(p, lines[0], r.describe())

    def test_errors(self):
        typo = self.write_file("typo.ini", b"; x\n[sst]\nblok_size = 4K\n")
        self.assertConfigError(show("-c", typo), typo + ":3: unknown key [sst] blok_size",
                               "did you mean [sst] block_size?")
        pow2 = self.write_file("pow2.ini", b"[sst]\ncluster_size = 3000\n")
        self.assertConfigError(show("-c", pow2), pow2 + ":2: [sst] cluster_size: '3000' must "
                               "be a power of two from 512 to 1G")
        section = self.write_file("section.ini", b"[sotr]\nmemory = 1G\n")
        self.assertConfigError(show("-c", section), section + ":1: unknown section [sotr]",
                               "did you mean [sort]?")
        self.assertConfigError(show("--set", "sort.memory=12Q"),
                               "--set sort.memory=12Q: [sort] memory: '12Q' is not a size")
        self.assertConfigError(show("--set", "extract.namespaces=0,talk"),
                               "[extract] namespaces: '0,talk' is not a namespace list")
        self.assertConfigError(show("--set", "profile.cold=perhaps"),
                               "[profile] cold: 'perhaps' is not a boolean")
        self.assertConfigError(show("-c", self.path("missing.ini")),
                               "missing.ini: cannot open config file")

    def test_help_and_usage(self):
        r = sstpipe("config", "--help")
        self.assertOk(r)
        self.assertIn(b"usage: sstpipe config show", r.stdout)
        r = sstpipe("config", "list")
        self.assertEqual(r.code, 2, r.describe())
        r = sstpipe("config", "show", "--bogus")
        self.assertEqual(r.code, 2, r.describe())


if __name__ == "__main__":
    unittest.main()
