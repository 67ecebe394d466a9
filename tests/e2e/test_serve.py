"""test_serve.py: `sstpipe serve` end to end, over HTTP on 127.0.0.1.

- Every endpoint against `dump` and `info --json` of the same table: every
  key's value by /v1/get, every key in order by paging /v1/prefix with
  limit and from, /v1/info, /healthz, and /metrics counting what was asked.
- Every error: bad percent-encoding, invalid UTF-8, unknown path, a method
  other than GET/HEAD, a key of 321 bytes (320 is fine), missing
  parameters, bad limits, an oversized request line or headers (414, 431,
  not the HTTP library's HTML page): each a 4xx with one line
  (those of GET on one kept-alive connection), and the server still answers
  after them. Bad command lines.
- Publishes under load: `current` swapped many times between two tables
  (same keys, different values) while client threads loop: no failed
  request, every answer is one of the two tables' values, and after each
  swap the answers turn to the new table's. A real `sstpipe nightly`
  publish is followed too, and a corrupt table published is refused while
  the old one keeps being served. These run with the once-a-second check
  off ([serve] poll_seconds = 0), so the inotify event is what they see;
  with it off each publish is seen within 0.5 s. A change no event reports
  (a symlink deeper in the path retargeted) stays unseen with the check
  off, SIGHUP swaps it in at once, and the default check follows it.
- A slow client that sends half a request and stalls does not hold the one
  worker thread and is cut off once the timeout has passed; many
  connections at once;
  connections beyond max_connections are refused without harm.
- SIGTERM (and SIGINT) while requests are in flight: a response being sent
  completes, the process exits 0. kill -9 then a restart on the same port.
- --cold: the same answers, one read per lookup (the process's read
  syscalls, /proc/PID/io).
- POST /v1/get_many: every key, misses and duplicates answered in order as
  /v1/get answers them; a 4xx with one line for no keys, too many, an empty
  key or one of 321 bytes, a key not a string, malformed JSON, not an
  array, a body over the bound (413), a method other than POST (405);
  with --cold a batch reads each distinct block once, all in one go (the
  bytes the process read from the disk, and no read system call with
  io_uring).
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import json
import os
import random
import signal
import socket
import threading
import time
import unittest

from serve_client import BOUND, Server, quote, wait_for
from sstpipe_e2e import E2ETest, corpora_dir, parse_dump, sstpipe, sstpipe_bin

# The swap tests turn the once-a-second check off: a publish must then be
# seen by its inotify event (or SIGHUP), which the check cannot stand in for.
NO_POLL = ("--set", "serve.poll_seconds=0")
# How soon an event's swap must be seen: well under the check's 1 s, and
# still ample for a wakeup, a realpath and a table's open on a loaded machine.
EVENT_SECONDS = 0.5


def io_uring_available():
    """Whether the kernel lets this process set up an io_uring (a seccomp
    filter or kernel.io_uring_disabled may not)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)  # struct io_uring_params
    fd = libc.syscall(425, 1, params)  # io_uring_setup, one number on every architecture
    if fd < 0:
        return False
    os.close(fd)
    return True


class ServeTest(E2ETest):
    @classmethod
    def setUpClass(cls):
        import tempfile
        import shutil
        cls.classtmp = tempfile.mkdtemp(prefix="sstpipe-serve-")
        cls.addClassCleanup(shutil.rmtree, cls.classtmp, True)
        corpus = os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2")
        # Two tables with the same keys and different values: A's values are
        # cut at 100 bytes, B's at 1024.
        cls.table_a = os.path.join(cls.classtmp, "a.sst")
        cls.table_b = os.path.join(cls.classtmp, "b.sst")
        for path, cut in ((cls.table_a, "100"), (cls.table_b, "1024")):
            r = sstpipe("build", corpus, "-o", path, "--max-bytes", cut)
            assert r.code == 0, r.describe()
        cls.records_a = cls.dump_records(cls.table_a)
        cls.records_b = cls.dump_records(cls.table_b)
        cls.values_a = dict(cls.records_a)
        cls.values_b = dict(cls.records_b)
        assert cls.values_a.keys() == cls.values_b.keys()
        cls.differing = [k for k in cls.values_a if cls.values_a[k] != cls.values_b[k]]
        assert len(cls.differing) > 100

    @classmethod
    def dump_records(cls, path):
        r = sstpipe("dump", path)
        assert r.code == 0, r.describe()
        return parse_dump(unittest.TestCase(), r.stdout)

    def serve(self, target, *args, env=None):
        s = Server(target, *args, env=env).start(self.path(f"serve-{time.monotonic_ns()}.err"))
        self.addCleanup(s.kill)
        return s

    # ------------------------------------------------------------ endpoints

    def test_every_key_and_endpoint(self):
        # The idle timeout only guards against a hang: the one connection
        # below must stay open however slowly a loaded machine runs the test.
        s = self.serve(self.table_b, "--threads", "2", "--set", f"serve.timeout={BOUND}")
        c = s.client()
        self.assertEqual(c.request("/healthz")[0], 200)
        sock = c.conn.sock  # http.client would reconnect silently after a close
        for key, value in self.records_b:
            status, headers, body = c.get(key)
            self.assertEqual(status, 200, key)
            self.assertEqual(headers["content-type"], "text/plain; charset=utf-8")
            self.assertEqual(body, value, key)
        # HEAD: the headers of GET, no body.
        status, headers, body = c.request("/v1/get?key=" + quote(self.records_b[0][0]),
                                          method="HEAD")
        self.assertEqual((status, body), (200, b""))
        self.assertEqual(int(headers["content-length"]), len(self.records_b[0][1]))
        misses = [self.records_b[0][0] + b"\x00", b"No such page at all", b"\xc3\xa9t\xc3\xa9 absent"]
        for key in misses:
            status, _, body = c.get(key)
            self.assertEqual((status, body), (404, b"key not found\n"), key)

        # Paging through every key with prefix= (all), limit and from: each
        # page says whether more follow and gives the next page's from.
        # keys_only: the same keys, no values.
        for keys_only in (None, 1):
            got, start, pages = [], None, 0
            while True:
                status, headers, page = c.prefix(b"", limit=7, start=start,
                                                 keys_only=keys_only)
                self.assertEqual(status, 200, page)
                self.assertEqual(headers["content-type"], "application/json")
                pages += 1
                records = page["records"]
                for rec in records:
                    self.assertEqual(set(rec), {"key"} if keys_only else {"key", "value"})
                got += [(r["key"].encode(), r.get("value", "").encode()) for r in records]
                if not page["more"]:
                    self.assertEqual(set(page), {"records", "more"})
                    self.assertLessEqual(len(records), 7)
                    break
                self.assertEqual(len(records), 7)
                start = page["next"].encode()  # the first key not sent; from is inclusive
            want = [(k, b"" if keys_only else v) for k, v in self.records_b]
            self.assertRecordsEqual(got, want, f"paged /v1/prefix, keys_only={keys_only}")
            self.assertEqual(pages, (len(want) + 6) // 7)
        # A page that ends exactly at the last record: no more.
        status, _, page = c.prefix(b"", limit=len(self.records_b))
        self.assertEqual((len(page["records"]), page["more"]), (len(self.records_b), False))
        # A real prefix, the default limit of 10.
        status, _, page = c.prefix(b"A")
        expect = [(k, v) for k, v in self.records_b if k.startswith(b"A")]
        self.assertEqual([(r["key"].encode(), r["value"].encode()) for r in page["records"]],
                         expect[:10])
        self.assertEqual((page["more"], page["next"].encode()), (True, expect[10][0]))
        status, _, page = c.prefix(b"no such prefix \xe2\x82\xac")
        self.assertEqual((status, page), (200, {"records": [], "more": False}))

        status, headers, body = c.request("/v1/info")
        self.assertEqual((status, headers["content-type"]), (200, "application/json"))
        info = sstpipe("info", self.table_b, "--json")
        self.assertOk(info)
        # What `info --json` says, but the table's name, not where it is.
        want = dict(json.loads(info.stdout), path=os.path.basename(self.table_b))
        self.assertEqual(json.loads(body), want)
        self.assertEqual(c.request("/healthz")[:3:2], (200, b"ok\n"))

        m = c.metrics()
        n = len(self.records_b)
        self.assertEqual(m['sstpipe_serve_requests_total{endpoint="get",status="200"}'], n + 1)
        self.assertEqual(m['sstpipe_serve_requests_total{endpoint="get",status="404"}'],
                         len(misses))
        self.assertEqual(m["sstpipe_serve_lookup_misses_total"], len(misses))
        self.assertEqual(m['sstpipe_serve_request_duration_seconds_count{endpoint="get"}'],
                         n + 1 + len(misses))
        self.assertEqual(m['sstpipe_serve_request_duration_seconds_bucket{endpoint="get",'
                           'le="+Inf"}'], n + 1 + len(misses))
        # The table's name, not where it is on the server.
        self.assertEqual(m['sstpipe_serve_table_info{path="b.sst"}'], 1)
        self.assertFalse([k for k in m if self.classtmp in k], m)
        self.assertEqual(m["sstpipe_serve_table_build_time_seconds"],
                         int(os.stat(self.table_b).st_mtime))
        self.assertEqual(m["sstpipe_serve_table_records"], n)
        self.assertEqual(m["sstpipe_serve_table_swaps_total"], 0)
        # One connection did all of it: keep-alive.
        self.assertIsNotNone(sock)
        self.assertIs(c.conn.sock, sock)
        self.assertEqual(s.stop(), 0)

    def test_bad_requests(self):
        # The idle timeout only guards against a hang: c must stay open
        # across the errors however slowly a loaded machine runs the test.
        s = self.serve(self.table_b, "--set", "serve.prefix_limit_max=5", "--set",
                       f"serve.timeout={BOUND}")
        c = s.client()
        self.assertEqual(c.request("/healthz")[0], 200)
        sock = c.conn.sock  # http.client would reconnect silently after a close
        key320 = b"k" * 320
        cases = [
            ("/v1/get?key=%ZZ", 400, "bad percent-encoding at byte 0"),
            ("/v1/get?key=ab%4", 400, "bad percent-encoding at byte 2"),
            ("/v1/get?key=%C3%28", 400, "not valid UTF-8"),
            ("/v1/get", 400, "missing parameter 'key'"),
            ("/v1/get?kye=A", 400, "unknown parameter 'kye' (/v1/get takes key, raw)"),
            ("/v1/get?key=A&key=B", 400, "parameter 'key' given twice"),
            ("/v1/get?key=A&limit=3", 400, "unknown parameter 'limit'"),
            ("/v1/get?key", 400, "parameter 'key' without a value"),
            ("/v1/prefix?prefix=A&limt=3", 400,
             "unknown parameter 'limt' (/v1/prefix takes prefix, limit, from, keys_only)"),
            ("/v1/prefix?prefix=A&limit=3&limit=4", 400, "parameter 'limit' given twice"),
            ("/v1/prefix?prefix=A&prefix=B", 400, "parameter 'prefix' given twice"),
            ("/v1/prefix?prefix=A&keys_only=yes", 400, "keys_only: 'yes'"),
            ("/v1/get?key=" + "k" * 321, 400, "longer than 320 bytes"),
            ("/v1/get?key=" + quote(key320), 404, "key not found"),
            ("/v1/prefix", 400, "missing parameter 'prefix'"),
            ("/v1/prefix?prefix=A&limit=0", 400, "limit: '0'"),
            ("/v1/prefix?prefix=A&limit=-1", 400, "limit: '-1'"),
            ("/v1/prefix?prefix=A&limit=x", 400, "limit: 'x'"),
            ("/v1/prefix?prefix=A&limit=1e3", 400, "limit: '1e3'"),
            ("/v1/prefix?prefix=A&limit=99999999999999999999999", 400, "limit:"),
            ("/v1/prefix?prefix=A&from=%G0", 400, "from: bad percent-encoding"),
            ("/v1/prefix?prefix=" + "p" * 321, 400, "prefix: longer than 320 bytes"),
            ("/nope", 404, "no such endpoint: /nope"),
            ("/v1/get/", 404, "no such endpoint"),
            # Serving a table, the nightly's pages are not there (/ is the
            # search page, test_search_page.py).
            ("/index.html", 404, "no such endpoint"),
        ]
        for path, status, reason in cases:
            got, headers, body = c.request(path)
            self.assertEqual(got, status, f"{path}: {body!r}")
            text = body.decode()
            self.assertIn(reason, text, path)
            self.assertTrue(text.endswith("\n") and text.count("\n") == 1, f"{path}: {text!r}")
        # Above the configured cap, limit is cut to it.
        status, _, page = c.prefix(b"", limit=1000)
        self.assertEqual((status, len(page["records"]), page["more"]), (200, 5, True))
        # A 4xx keeps the connection: every answer so far came on one.
        self.assertIs(c.conn.sock, sock)
        for method in ("POST", "PUT", "DELETE"):
            status, headers, body = s.client().request("/v1/get?key=A", method=method,
                                                       body=b"x" * 100)
            self.assertEqual(status, 405, method)
            self.assertEqual(headers["allow"], "GET, HEAD")
            self.assertIn(f"method {method} not allowed", body.decode())
        # A request line, or line and headers, beyond max_request_bytes
        # (32K): one plain line like every other error, not the HTTP
        # library's HTML page.
        for path, headers, status, reason in (
                ("/v1/get?key=" + "k" * 40000, {}, 414, "request line longer than 32768 bytes"),
                ("/healthz", {"X-Big": "v" * 40000}, 431,
                 "request line and headers longer than 32768 bytes"),
                ("/v1/get?key=" + "k" * 20000, {"X-Big": "v" * 20000}, 431, "and headers")):
            got, h, body = s.client().request(path, headers=headers)
            self.assertEqual(got, status, body)
            self.assertEqual(h.get("content-type"), "text/plain; charset=utf-8", body)
            self.assertIn(reason, body.decode())
            self.assertEqual(body.count(b"\n"), 1, body)
        # Garbage instead of HTTP: a 400, or (when the library waits for a
        # request line that never ends) cut off at the idle timeout: a
        # server of its own, with the shortest timeout.
        g = self.serve(self.table_b, "--set", "serve.timeout=1")
        with socket.create_connection(("127.0.0.1", g.port), timeout=BOUND) as raw:
            raw.sendall(b"\x00\xff\xfe garbage\r\n\r\n")
            reply = raw.recv(4096)
            self.assertTrue(reply == b"" or reply.startswith(b"HTTP/1.1 400"), reply)
        self.assertEqual(g.client().request("/healthz")[0], 200)
        self.assertEqual(g.stop(), 0)
        self.assertEqual(c.request("/healthz")[0], 200)
        self.assertIs(c.conn.sock, sock)
        m = c.metrics()
        self.assertEqual(m['sstpipe_serve_requests_total{endpoint="other",status="404"}'], 3)
        self.assertEqual(s.stop(), 0)

    def test_table_error_logged_once_and_access_log(self):
        """A corrupt block: each request meeting it is a 500, and the error
        is one line on stderr however many meet it. [serve] access_log:
        one common-log-format line a request, in the order answered."""
        bad = self.path("bad.sst")
        with open(self.table_b, "rb") as f:
            data = bytearray(f.read())
        data[200] ^= 0xFF  # inside the first data block
        with open(bad, "wb") as f:
            f.write(data)
        log = self.path("access.log")
        s = self.serve(bad, "--set", f"serve.access_log={log}", "--set", f"serve.timeout={BOUND}")
        c = s.client()
        first = quote(self.records_b[0][0])
        last_key, last_value = self.records_b[-1]
        for _ in range(3):
            for path in ("/v1/get?key=" + first, "/v1/prefix?prefix=&limit=3"):
                status, _, body = c.request(path)
                self.assertEqual(status, 500, body)
                # The table's name, not the server's directories.
                self.assertTrue(body.startswith(b"bad.sst: block 0 at byte 0: "), body)
                self.assertNotIn(os.path.dirname(bad).encode(), body)
        self.assertEqual(c.get(last_key)[:3:2], (200, last_value))
        self.assertEqual(c.request("/healthz", method="HEAD")[0], 200)
        self.assertEqual(c.request("/nope")[0], 404)
        wait_for("the access log's lines", lambda: os.path.exists(log) and
                 open(log, "rb").read().count(b"\n") == 9)
        errors = [l for l in s.stderr().splitlines() if "checksum" in l]
        self.assertEqual(len(errors), 1, s.stderr())
        self.assertIn(bad, errors[0])
        lines = open(log).read().splitlines()
        import re
        clf = re.compile(r'^127\.0\.0\.1 - - \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d \+0000\] '
                         r'"(.*)" (\d{3}) (\d+|-)$')
        got = []
        for line in lines:
            m = clf.match(line)
            self.assertIsNotNone(m, line)
            got.append((m.group(1), int(m.group(2)), m.group(3)))
        self.assertEqual([g[:2] for g in got], [
            (f"GET /v1/get?key={first} HTTP/1.1", 500),
            ("GET /v1/prefix?prefix=&limit=3 HTTP/1.1", 500)] * 3 + [
            (f"GET /v1/get?key={quote(last_key)}&raw=1 HTTP/1.1", 200),
            ("HEAD /healthz HTTP/1.1", 200), ("GET /nope HTTP/1.1", 404)])
        self.assertEqual(got[6][2], str(len(last_value)))
        self.assertEqual(got[7][2], "-")  # HEAD: no body sent
        self.assertEqual(s.stop(), 0)
        # An access log that cannot be opened: refused before serving.
        r = sstpipe("serve", self.table_b, "--listen", "127.0.0.1:0", "--set",
                    f"serve.access_log={self.path('no/such/dir/log')}")
        self.assertEqual(r.code, 2, r.describe())
        self.assertIn("access_log", r.err_text)

    def test_command_line_errors(self):
        r = sstpipe("serve", self.table_b, "--listen", "127.0.0.1")
        self.assertEqual(r.code, 2, r.describe())
        self.assertIn("HOST:PORT", r.err_text)
        r = sstpipe("serve", self.table_b, "--listen", "127.0.0.1:70000")
        self.assertEqual(r.code, 2, r.describe())
        r = sstpipe("serve", self.table_b, "--set", "serve.timeout=0")
        self.assertEqual(r.code, 2, r.describe())
        r = sstpipe("serve")
        self.assertEqual(r.code, 2, r.describe())
        r = sstpipe("serve", self.path("missing.sst"), "--listen", "127.0.0.1:0")
        self.assertEqual(r.code, 2, r.describe())  # refused before any work
        self.assertIn("missing.sst", r.err_text)
        self.assertEqual(len(r.err_text.splitlines()), 1, r.describe())
        not_table = self.write_file("not.sst", b"not a table" * 1000)
        r = sstpipe("serve", not_table, "--listen", "127.0.0.1:0")
        self.assertEqual(r.code, 1, r.describe())
        # A port in use.
        s = self.serve(self.table_b)
        r = sstpipe("serve", self.table_b, "--listen", f"127.0.0.1:{s.port}")
        self.assertEqual(r.code, 1, r.describe())
        self.assertIn("Address already in use", r.err_text)
        self.assertEqual(s.stop(), 0)

    # ------------------------------------------------------------ publishes

    def nightly_dir(self):
        """A nightly layout: builds/a and builds/b holding the two tables,
        current -> builds/a."""
        out = self.path("out")
        for name, table in (("a", self.table_a), ("b", self.table_b)):
            os.makedirs(os.path.join(out, "builds", name))
            os.link(table, os.path.join(out, "builds", name, "table.sst"))
        os.symlink("builds/a", os.path.join(out, "current"))
        return out

    def swap(self, out, target):
        """What nightly does: a temporary symlink renamed over current."""
        tmp = os.path.join(out, f".current.tmp-{os.getpid()}")
        os.symlink(target, tmp)
        os.rename(tmp, os.path.join(out, "current"))

    def test_publishes_under_load(self):
        out = self.nightly_dir()
        s = self.serve(out, "--threads", "2", *NO_POLL)
        stop = threading.Event()
        failures, counts = [], []
        keys = list(self.values_a)

        def loop(seed):
            rng = random.Random(seed)
            c = s.client()
            n = 0
            try:
                while not stop.is_set():
                    key = rng.choice(keys)
                    status, _, body = c.get(key)
                    if status != 200 or body not in (self.values_a[key], self.values_b[key]):
                        failures.append((key, status, body[:80]))
                    n += 1
            except Exception as e:  # a failed request is what this test is for
                failures.append(("exception", repr(e)))
            counts.append(n)

        threads = [threading.Thread(target=loop, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        probe = s.client()
        key = self.differing[0]
        swaps = 40
        try:
            for i in range(swaps):
                target, values = ("builds/b", self.values_b) if i % 2 == 0 else ("builds/a",
                                                                                 self.values_a)
                self.swap(out, target)
                wait_for(f"swap {i + 1} to {target}",
                         lambda: probe.get(key)[2] == values[key])
        finally:
            stop.set()
            for t in threads:
                t.join(BOUND)
        self.assertEqual(failures, [])
        self.assertEqual(len(counts), 4)
        self.assertGreater(sum(counts), swaps)
        m = probe.metrics()
        self.assertEqual(m["sstpipe_serve_table_swaps_total"], swaps)
        real_a = os.path.realpath(os.path.join(out, "builds", "a", "table.sst"))
        self.assertEqual(m['sstpipe_serve_table_info{path="table.sst"}'], 1)
        self.assertEqual(s.stop(), 0)
        self.assertIn(f"serving {real_a}", s.stderr())

    def test_in_flight_response_finishes_on_old_table(self):
        """A value being sent (straight from the old table's mapping) when
        current is swapped and the old file deleted still arrives whole."""
        out = self.path("big")
        corpus = os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2")
        for name, cut in (("a", "256K"), ("b", "100K")):
            os.makedirs(os.path.join(out, "builds", name))
            r = sstpipe("build", corpus, "-o", os.path.join(out, "builds", name, "table.sst"),
                        "--block-size", "1M", "--max-bytes", cut)
            self.assertOk(r)
        os.symlink("builds/a", os.path.join(out, "current"))
        big = dict(self.dump_records(os.path.join(out, "builds", "a", "table.sst")))
        small = dict(self.dump_records(os.path.join(out, "builds", "b", "table.sst")))
        key = max(big, key=lambda k: len(big[k]))
        self.assertGreater(len(big[key]), 150000)
        self.assertNotEqual(big[key], small[key])
        s = self.serve(out, *NO_POLL)
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.settimeout(BOUND)
        raw.connect(("127.0.0.1", s.port))
        # Pipelined, more than the socket buffers hold: the server is still
        # sending when the table goes away.
        n = 30
        raw.sendall(f"GET /v1/get?key={quote(key)} HTTP/1.1\r\nHost: x\r\n\r\n".encode() * n)
        probe = s.client()
        wait_for("a large value in flight",
                 lambda: probe.metrics()["sstpipe_serve_in_flight"] >= 2)
        self.swap(out, "builds/b")
        wait_for("the swap to b", lambda: probe.get(key)[2] == small[key])
        os.unlink(os.path.join(out, "builds", "a", "table.sst"))
        bodies = []
        f = raw.makefile("rb")
        for _ in range(n):
            status = f.readline()
            self.assertTrue(status.startswith(b"HTTP/1.1 200"), status)
            length = None
            while (line := f.readline()) != b"\r\n":
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            bodies.append(f.read(length))
        f.close()
        raw.close()
        # Whole values: the old table's up to the swap, the new one's after.
        olds = bodies.index(small[key]) if small[key] in bodies else n
        self.assertGreater(olds, 0)
        self.assertEqual(bodies, [big[key]] * olds + [small[key]] * (n - olds))
        self.assertEqual(s.stop(), 0)

    def test_old_table_removed_after_swap(self):
        """Retention may delete the previous build right after a publish:
        the requests on it and after it are unaffected."""
        out = self.nightly_dir()
        s = self.serve(out, *NO_POLL)
        c = s.client()
        key = self.differing[0]
        self.assertEqual(c.get(key)[2], self.values_a[key])
        self.swap(out, "builds/b")
        wait_for("the swap to b", lambda: c.get(key)[2] == self.values_b[key])
        os.unlink(os.path.join(out, "builds", "a", "table.sst"))
        for k in self.differing[:50]:
            self.assertEqual(c.get(k)[2], self.values_b[k])
        self.assertEqual(s.stop(), 0)

    def test_corrupt_publish_keeps_old_table(self):
        out = self.nightly_dir()
        bad = os.path.join(out, "builds", "bad")
        os.makedirs(bad)
        with open(self.table_b, "rb") as f:
            data = f.read()
        with open(os.path.join(bad, "table.sst"), "wb") as f:
            f.write(data[:-100])  # the footer cut off
        s = self.serve(out, *NO_POLL)
        c = s.client()
        self.swap(out, "builds/bad")
        wait_for("the refusal", lambda: "not swapping" in s.stderr())
        self.assertIn("still serving", s.stderr())
        # SIGHUP says what it found: the same refused table, and why.
        s.proc.send_signal(signal.SIGHUP)
        wait_for("SIGHUP's line", lambda: "SIGHUP: not swapped" in s.stderr())
        line = [l for l in s.stderr().splitlines() if "SIGHUP" in l][0]
        self.assertIn(f"still serving {os.path.join(out, 'builds', 'a', 'table.sst')}: ", line)
        self.assertIn(os.path.join(out, "builds", "bad", "table.sst"), line)
        key = self.differing[0]
        self.assertEqual(c.get(key)[2], self.values_a[key])
        self.swap(out, "builds/b")
        wait_for("the swap to b", lambda: c.get(key)[2] == self.values_b[key])
        self.assertEqual(s.stop(), 0)

    def test_follows_table_file_replaced(self):
        """Given a file, a rebuild renamed over it is followed too."""
        path = self.path("t.sst")
        os.link(self.table_a, path)
        s = self.serve(path, *NO_POLL)
        c = s.client()
        key = self.differing[0]
        self.assertEqual(c.get(key)[2], self.values_a[key])
        os.link(self.table_b, self.path("t.sst.new"))
        os.rename(self.path("t.sst.new"), path)
        wait_for("the swap", lambda: c.get(key)[2] == self.values_b[key])
        self.assertEqual(s.stop(), 0)

    def test_follows_real_nightly(self):
        out = self.path("nightly")
        ini = self.write_file("nightly.ini", (
            f"[output]\ndir = {out}\n[profile]\nlookups = 100\n[sort]\nmemory = 4M\n"
            "[truncate]\nmax_bytes = 100\n").encode())
        corpus = os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2")
        r = sstpipe("nightly", "-c", ini, corpus)
        self.assertOk(r)
        s = self.serve(out, "-c", ini, *NO_POLL)
        c = s.client()
        key = self.differing[0]
        self.assertEqual(c.get(key)[2], self.values_a[key])
        r = sstpipe("nightly", "-c", ini, "--set", "truncate.max_bytes=1024", corpus)
        self.assertOk(r)
        wait_for("the nightly's publish", lambda: c.get(key)[2] == self.values_b[key])
        self.assertEqual(s.stop(), 0)

    def test_nightly_dir_without_config(self):
        """A nightly directory served without the nightly's -c: the table
        is the one the published build's manifest names, whatever its
        [output] name; no published build, or several tables and no
        manifest, say what to pass."""
        out = self.path("nightly")
        ini = self.write_file("nightly.ini", (
            f"[output]\ndir = {out}\nname = wiki.sst\n[profile]\nlookups = 100\n"
            "[truncate]\nmax_bytes = 100\n").encode())
        r = sstpipe("nightly", "-c", ini, os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2"))
        self.assertOk(r)
        s = self.serve(out, *NO_POLL)
        key = self.differing[0]
        self.assertEqual(s.client().get(key)[2], self.values_a[key])
        self.assertEqual(s.client().metrics()['sstpipe_serve_table_info{path="wiki.sst"}'], 1)
        self.assertEqual(s.stop(), 0)

        empty = self.path("empty")
        os.makedirs(empty)
        r = sstpipe("serve", empty, "--listen", "127.0.0.1:0")
        self.assertNotEqual(r.code, 0, r.describe())
        self.assertIn("no build published yet", r.err_text)

        two = self.nightly_dir()
        os.link(self.table_b, os.path.join(two, "builds", "a", "other.sst"))
        r = sstpipe("serve", two, "--listen", "127.0.0.1:0")
        self.assertNotEqual(r.code, 0, r.describe())
        self.assertIn("2 tables", r.err_text)
        self.assertIn("--set output.name=", r.err_text)
        s = self.serve(two, "--set", "output.name=other.sst", *NO_POLL)
        self.assertEqual(s.client().get(key)[2], self.values_b[key])
        self.assertEqual(s.stop(), 0)

    def test_publish_seen_at_once_without_poll(self):
        """With the check turned off, each publish (current renamed, a table
        renamed over the served file) is seen through its inotify event,
        well within the second the check would take."""
        out = self.nightly_dir()
        path = self.path("t.sst")
        os.link(self.table_a, path)
        key = self.differing[0]
        on_dir, on_file = self.serve(out, *NO_POLL), self.serve(path, *NO_POLL)
        c, f = on_dir.client(), on_file.client()
        self.assertEqual(c.get(key)[2], self.values_a[key])
        self.assertEqual(f.get(key)[2], self.values_a[key])
        for target, values in (("builds/b", self.values_b), ("builds/a", self.values_a)):
            self.swap(out, target)
            wait_for(f"the publish of {target}", lambda: c.get(key)[2] == values[key],
                     seconds=EVENT_SECONDS)
        os.link(self.table_b, self.path("t.sst.new"))
        os.rename(self.path("t.sst.new"), path)
        wait_for("the table renamed over the file", lambda: f.get(key)[2] == self.values_b[key],
                 seconds=EVENT_SECONDS)
        self.assertEqual(c.metrics()["sstpipe_serve_table_swaps_total"], 2)
        self.assertEqual(on_dir.stop(), 0)
        self.assertEqual(on_file.stop(), 0)

    def unwatched_layout(self):
        """A nightly directory whose current names links/now, a symlink to
        builds/a: what current leads to changes, by a rename in links/,
        without an event where serve watches (as a change made on another
        NFS client). Returns (out, a function that points it at b)."""
        out = self.nightly_dir()
        os.unlink(os.path.join(out, "current"))
        os.makedirs(os.path.join(out, "links"))
        os.symlink("../builds/a", os.path.join(out, "links", "now"))
        os.symlink("links/now", os.path.join(out, "current"))

        def to_b():
            tmp = os.path.join(out, "links", "now.tmp")
            os.symlink("../builds/b", tmp)
            os.rename(tmp, os.path.join(out, "links", "now"))
        return out, to_b

    def test_sighup_swaps_at_once(self):
        """With the check off and a change no event reports, the old table
        stays served past the check's default second; SIGHUP swaps at once,
        and the request after the swap is reported sees the new table."""
        out, to_b = self.unwatched_layout()
        s = self.serve(out, *NO_POLL)
        c = s.client()
        key = self.differing[0]
        self.assertEqual(c.get(key)[2], self.values_a[key])
        to_b()
        time.sleep(1.2)  # longer than the default check's second: off means off
        self.assertEqual(c.get(key)[2], self.values_a[key], "swapped with the check off")
        real_b = os.path.realpath(os.path.join(out, "builds", "b", "table.sst"))
        s.proc.send_signal(signal.SIGHUP)
        wait_for("the swap SIGHUP asked for", lambda: f"serving {real_b}" in s.stderr(),
                 seconds=EVENT_SECONDS)
        self.assertEqual(c.get(key)[2], self.values_b[key])
        self.assertEqual(c.metrics()["sstpipe_serve_table_swaps_total"], 1)
        self.assertIn(f"SIGHUP: swapped to {real_b}", s.stderr())
        s.proc.send_signal(signal.SIGHUP)
        wait_for("the second SIGHUP's line",
                 lambda: f"SIGHUP: unchanged, still serving {real_b}" in s.stderr())
        self.assertEqual(s.stop(), 0)

    def test_poll_follows_unwatched_change(self):
        """By default the check follows a change no event reports (NFS)."""
        out, to_b = self.unwatched_layout()
        s = self.serve(out)
        c = s.client()
        key = self.differing[0]
        self.assertEqual(c.get(key)[2], self.values_a[key])
        to_b()
        wait_for("the check's swap", lambda: c.get(key)[2] == self.values_b[key])
        self.assertEqual(s.stop(), 0)

    # ------------------------------------------------------------ connections

    def test_slow_client_does_not_hold_the_worker(self):
        # Not held: the idle timeout only guards against a hang, so the
        # slow connection is still waiting however long the requests take.
        s = self.serve(self.table_b, "--threads", "1", "--set", f"serve.timeout={BOUND}")
        slow = socket.create_connection(("127.0.0.1", s.port), timeout=BOUND)
        self.addCleanup(slow.close)
        slow.sendall(b"GET /v1/get?key=A HTTP/1.1\r\nHost: x\r\n")  # and then nothing
        c = s.client()
        for key, value in self.records_b[:50]:
            self.assertEqual(c.get(key)[2], value)
        # Still open: the server is waiting for the rest.
        slow.setblocking(False)
        with self.assertRaises(BlockingIOError):
            slow.recv(1)
        c.close()
        self.assertEqual(s.stop(), 0, s.stderr())
        # Cut off once idle for the timeout: the read ends, no reply, not
        # before the timeout has passed since the connection was opened.
        timeout = 1
        s = self.serve(self.table_b, "--threads", "1", "--set", f"serve.timeout={timeout}")
        start = time.monotonic()
        slow = socket.create_connection(("127.0.0.1", s.port), timeout=BOUND)
        self.addCleanup(slow.close)
        slow.sendall(b"GET /v1/get?key=A HTTP/1.1\r\nHost: x\r\n")
        self.assertEqual(slow.recv(4096), b"")
        self.assertGreaterEqual(time.monotonic() - start, timeout, "cut off before the timeout")
        # The worker still answers.
        self.assertEqual(s.client().request("/healthz")[0], 200)
        self.assertEqual(s.stop(), 0)

    def test_half_closed_client_answered_then_closed(self):
        """A client that shuts down its sending side right after its
        requests (shutdown(SHUT_WR), as `nc -N` does) gets every answer and
        then the end of the connection at once, not at the idle timeout."""
        s = self.serve(self.table_b, "--threads", "2", "--set", f"serve.timeout={BOUND}")
        key, value = self.records_b[3]
        one = f"GET /v1/get?key={quote(key)}&raw=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        # The race (the end read with the request, or after it) differs
        # from one try to the next: many tries, each bounded well below
        # the idle timeout.
        for tries, n in ((20, 1), (5, 3)):
            for i in range(tries):
                with socket.create_connection(("127.0.0.1", s.port), timeout=5) as raw:
                    raw.sendall(one * n)
                    raw.shutdown(socket.SHUT_WR)
                    start = time.monotonic()
                    try:
                        responses, partial = self.read_responses(raw)
                    except socket.timeout:
                        self.fail(f"try {i} of {n}: no answer and end within 5 s "
                                  f"(the idle timeout is {BOUND} s)")
                    self.assertEqual(partial, b"")
                    self.assertEqual([b for _, b in responses], [value] * n, f"try {i}")
                    self.assertLess(time.monotonic() - start, 5)
        self.assertEqual(s.stop(), 0)

    def test_many_connections(self):
        s = self.serve(self.table_b)
        conns = [s.client() for _ in range(200)]
        keys = [k for k, _ in self.records_b]
        for round_ in range(3):
            for i, c in enumerate(conns):
                key = keys[(i + round_) % len(keys)]
                status, _, body = c.get(key)
                self.assertEqual((status, body), (200, self.values_b[key]))
        for c in conns:
            c.close()
        self.assertEqual(s.stop(), 0)

    def test_connection_limit(self):
        """Beyond max_connections a connection waits in the listen queue,
        unanswered, until one of the others closes."""
        s = self.serve(self.table_b, "--threads", "1", "--set", "serve.max_connections=20")
        held = [s.client() for _ in range(20)]
        for c in held:
            self.assertEqual(c.request("/healthz")[0], 200)
        extra = socket.create_connection(("127.0.0.1", s.port), timeout=1)
        self.addCleanup(extra.close)
        extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        with self.assertRaises(socket.timeout):
            extra.recv(4096)
        held[0].close()
        extra.settimeout(BOUND)
        self.assertTrue(extra.recv(4096).startswith(b"HTTP/1.1 200"))
        for c in held[1:]:
            self.assertEqual(c.request("/healthz")[0], 200)
            c.close()
        self.assertEqual(s.stop(), 0)

    # ------------------------------------------------------------ signals

    def read_responses(self, raw):
        """Every whole response on raw until the server closes it:
        [(head, body)], and the bytes of an incomplete last one."""
        f = raw.makefile("rb")
        out = []
        while True:
            head = b""
            while (line := f.readline()) not in (b"\r\n", b""):
                head += line
            if not line:
                return out, head
            length = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
                      if l.lower().startswith(b"content-length:")][0]
            body = f.read(length)
            if len(body) < length:
                return out, head + body
            out.append((head, body))

    def test_sigterm_drains_in_flight(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            s = self.serve(self.table_b, "--threads", "2")
            stop = threading.Event()
            errors, done = [], []

            def loop():
                c = s.client()
                while not stop.is_set():
                    try:
                        status, _, body = c.get(self.records_b[5][0])
                    except (ConnectionError, OSError):
                        return  # the server went away between requests: allowed
                    if status != 200 or body != self.records_b[5][1]:
                        errors.append((status, body[:80]))
                    done.append(1)

            threads = [threading.Thread(target=loop) for _ in range(3)]
            for t in threads:
                t.start()
            wait_for("requests under way", lambda: len(done) > 100)
            # 40 pipelined requests for every record (~200 KB each), unread:
            # far more than the socket buffers hold, so the server is in the
            # middle of sending one when the signal comes.
            raw = socket.socket()
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            raw.settimeout(BOUND)
            raw.connect(("127.0.0.1", s.port))
            req = f"GET /v1/prefix?prefix=&limit={len(self.records_b)} HTTP/1.1\r\nHost: x\r\n\r\n"
            raw.sendall(req.encode() * 40)
            key = 'sstpipe_serve_requests_total{endpoint="prefix",status="200"}'
            wait_for("the first answers sent", lambda: s.client().metrics().get(key, 0) >= 2)
            s.proc.send_signal(sig)
            wait_for("the drain to start", lambda: "finishing the requests" in s.stderr())
            responses, partial = self.read_responses(raw)
            raw.close()
            # The answer being sent when the signal came arrived whole; then
            # the server closed the connection (pipelined requests it had not
            # started are not answered).
            self.assertEqual(partial, b"")
            self.assertGreaterEqual(len(responses), 3)
            self.assertLess(len(responses), 40)
            for head, body in responses:
                self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
                page = json.loads(body)["records"]
                self.assertEqual([(r["key"].encode(), r["value"].encode()) for r in page],
                                 self.records_b)
            self.assertEqual(s.stop(timeout=BOUND), 0, s.stderr())
            stop.set()
            for t in threads:
                t.join(BOUND)
            self.assertEqual(errors, [])

    def test_kill9_and_restart_on_same_port(self):
        s = self.serve(self.table_b)
        c = s.client()
        self.assertEqual(c.request("/healthz")[0], 200)
        s.proc.kill()
        s.proc.wait()
        c.close()
        # The later --listen wins over Server's port 0; SO_REUSEADDR lets
        # the new process bind while the old connection is in TIME_WAIT.
        s2 = self.serve(self.table_b, "--listen", f"127.0.0.1:{s.port}")
        self.assertEqual(s2.port, s.port)
        self.assertEqual(s2.client().get(self.records_b[0][0])[2], self.records_b[0][1])
        self.assertEqual(s2.stop(), 0)

    # ------------------------------------------------------------ get_many

    def get_many(self, c, keys):
        """POST /v1/get_many of keys (bytes): (status, headers, parsed JSON or the body)."""
        body = json.dumps([k.decode() for k in keys]).encode()
        # raw=1: the stored records, which the test compares (a table
        # built from a dump follows its redirects otherwise).
        status, headers, out = c.request("/v1/get_many?raw=1", method="POST", body=body,
                                         headers={"Content-Type": "application/json"})
        return status, headers, json.loads(out) if status == 200 else out

    def test_get_many(self):
        s = self.serve(self.table_b, "--threads", "2", "--set", f"serve.timeout={BOUND}")
        c = s.client()
        keys = [k for k, _ in self.records_b]
        asked = keys + [k + b" (absent)" for k in keys[::9]] + keys[::13]
        random.Random(3).shuffle(asked)
        for at in range(0, len(asked), 256):
            chunk = asked[at:at + 256]
            status, headers, got = self.get_many(c, chunk)
            self.assertEqual(status, 200, got)
            self.assertEqual(headers["content-type"], "application/json")
            want = [{"key": k.decode(), "value": self.values_b[k].decode()
                     if k in self.values_b else None} for k in chunk]
            self.assertEqual(got, want)
        key320 = "\u00e9" * 160  # 320 bytes of UTF-8
        status, _, got = self.get_many(c, [key320.encode()])
        self.assertEqual((status, got), (200, [{"key": key320, "value": None}]))
        cases = [
            (b"[]", 400, "no keys"),
            (json.dumps(["A"] * 257).encode(), 400, "257 keys; at most 256"),
            (json.dumps(["A", ""]).encode(), 400, "key 2 is 0 bytes"),
            (json.dumps(["k" * 321]).encode(), 400, "key 1 is 321 bytes"),
            (b'["A", 17]', 400, "key 2 is not a string"),
            (b'["A", ', 400, "malformed JSON"),
            (b"", 400, "malformed JSON"),
            (b'"A"', 400, "expected a JSON array"),
            (b'{"keys": ["A"]}', 400, "expected a JSON array"),
        ]
        for body, want_status, reason in cases:
            one = s.client()
            status, _, got = one.request("/v1/get_many", method="POST", body=body)
            one.close()
            self.assertEqual(status, want_status, f"{body[:40]!r}: {got!r}")
            text = got.decode()
            self.assertIn(reason, text, body[:40])
            self.assertTrue(text.endswith("\n") and text.count("\n") == 1, text)
        # A body over the bound: a 413 from its Content-Length, before it is
        # sent; sent chunked (no length), once it is all in.
        for head, rest in ((b"Content-Length: 600000\r\n", b""),
                           (b"Transfer-Encoding: chunked\r\n",
                            b"%x\r\n%s\r\n0\r\n\r\n" % (600000, b"[" * 600000))):
            with socket.create_connection(("127.0.0.1", s.port), timeout=BOUND) as raw:
                raw.sendall(b"POST /v1/get_many HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n" + rest)
                reply = b""
                while b"\r\n\r\n" not in reply or not reply.endswith(b"\n"):
                    more = raw.recv(4096)
                    if not more:
                        break
                    reply += more
            self.assertTrue(reply.startswith(b"HTTP/1.1 413"), reply)
            self.assertIn(b"body over", reply)
        for method in ("GET", "PUT"):
            one = s.client()
            status, headers, got = one.request("/v1/get_many", method=method)
            one.close()
            self.assertEqual(status, 405, method)
            self.assertEqual(headers["allow"], "POST")
            self.assertIn(f"method {method} not allowed (POST)", got.decode())
        # A 4xx with its body read keeps the connection.
        sock = c.conn.sock
        self.assertEqual(c.request("/v1/get_many", method="POST", body=b"[]")[0], 400)
        self.assertEqual(self.get_many(c, keys[:2])[0], 200)
        self.assertIs(c.conn.sock, sock)
        # A request is counted when the server has finished with it, which
        # may come after its client has read the answer and closed.
        counted = 'sstpipe_serve_requests_total{endpoint="get_many",status="%s"}'
        wait_for("the refusals counted", lambda: (lambda m: m.get(counted % 400, 0) >= 10 and
                                                  m.get(counted % 413, 0) >= 2)(c.metrics()))
        m = c.metrics()
        self.assertEqual(m[counted % 400], 10)
        self.assertEqual(m[counted % 413], 2)
        self.assertEqual(s.stop(), 0)

    def test_cold_get_many_reads_each_block_once(self):
        s = self.serve(self.table_b, "--cold", "--threads", "1")
        c = s.client()
        info = json.loads(sstpipe("info", self.table_b, "--json").stdout)
        blocks, bs = info["data_blocks"], info["block_size"]
        keys = [k for k, _ in self.records_b]
        batches = [keys[at:at + 128] for at in range(0, len(keys), 128)]
        # Once per process, the first batch reads more than blocks (the
        # kernel's overcommit setting, for malloc; jansson's hash seed).
        self.assertEqual(self.get_many(c, batches[0])[0], 200)
        before = self.io(s.proc.pid)
        for batch in batches:
            # Each key twice: the second finds its block read already.
            status, _, got = self.get_many(c, batch + batch)
            self.assertEqual(status, 200)
            self.assertEqual([r["value"].encode() for r in got], [self.values_b[k] for k in batch] * 2)
        after = self.io(s.proc.pid)
        # In key order, the batches read every block once, and a block cut
        # between two batches once in each.
        read = after["read_bytes"] - before["read_bytes"]
        self.assertGreaterEqual(read, blocks * bs)
        self.assertLessEqual(read, (blocks + len(batches) - 1) * bs)
        if io_uring_available():
            self.assertEqual(after["syscr"] - before["syscr"], 0)
        self.assertEqual(s.stop(), 0)

    # ------------------------------------------------------------ cold

    def io(self, pid):
        with open(f"/proc/{pid}/io") as f:
            return {k: int(v) for k, v in (l.split(": ") for l in f.read().splitlines())}

    def read_syscalls(self, pid):
        with open(f"/proc/{pid}/io") as f:
            return int(dict(l.split(": ") for l in f.read().splitlines())["syscr"])

    def test_cold_one_read_per_lookup(self):
        s = self.serve(self.table_b, "--cold", "--threads", "1")
        c = s.client()
        keys = [k for k, _ in self.records_b]
        self.assertEqual(c.get(keys[0])[2], self.values_b[keys[0]])
        before = self.read_syscalls(s.proc.pid)
        for key in keys:
            status, _, body = c.get(key)
            self.assertEqual((status, body), (200, self.values_b[key]))
        reads = self.read_syscalls(s.proc.pid) - before
        # One pread per lookup; the network is recv(), not counted here. The
        # watcher's once-a-second check reads nothing.
        self.assertEqual(reads, len(keys))
        self.assertEqual(s.stop(), 0)


if __name__ == "__main__":
    unittest.main()
