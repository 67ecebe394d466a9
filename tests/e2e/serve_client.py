"""serve_client.py: running `sstpipe serve` for the tests and talking to it.

A Server starts the binary on 127.0.0.1 port 0, waits (bounded) for its
"listening on HOST:PORT" line and knows the port; stop() sends a signal
and returns the exit code; wait_for polls (bounded) for an event. Client
is one keep-alive HTTP/1.1 connection (http.client) with helpers for the
endpoints. Standard library only.
"""

import http.client
import json
import os
import select
import signal
import subprocess
import time
import urllib.parse

from sstpipe_e2e import sstpipe_bin

START_SECONDS = 30
BOUND = 60  # seconds any wait for an event may take at most


def wait_for(what, predicate, seconds=BOUND):
    """Polls predicate until it holds; fails naming what after seconds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {seconds}s waiting for {what}")


class Server:
    def __init__(self, target, *args, env=None):
        self.target = target
        self.args = args
        self.env = env
        self.proc = None
        self.port = None
        self.stderr_path = None

    def start(self, stderr_path):
        self.stderr_path = stderr_path
        self.err_file = open(stderr_path, "wb")
        self.proc = subprocess.Popen(
            [sstpipe_bin(), "serve", self.target, "--listen", "127.0.0.1:0", *self.args],
            stdout=subprocess.PIPE, stderr=self.err_file, stdin=subprocess.DEVNULL,
            env=dict(os.environ, **(self.env or {})))
        line = b""
        deadline = time.monotonic() + START_SECONDS
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            if not ready:
                self.kill()
                raise AssertionError(f"serve did not say where it listens in "
                                     f"{START_SECONDS}s: {self.stderr()!r}")
            chunk = os.read(self.proc.stdout.fileno(), 1)
            if not chunk:
                code = self.proc.wait()
                raise AssertionError(f"serve exited {code} before listening: {self.stderr()!r}")
            line += chunk
        text = line.decode()
        assert text.startswith("listening on 127.0.0.1:"), text
        self.port = int(text.rsplit(":", 1)[1])
        return self

    def stderr(self):
        if not self.err_file.closed:
            self.err_file.flush()
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def client(self, timeout=30):
        return Client(self.port, timeout)

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Sends sig, waits (bounded) for the exit; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            self.close_files()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.close_files()

    def close_files(self):
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()
        if not self.err_file.closed:
            self.err_file.close()


def quote(key):
    """Percent-encodes bytes or str for a query (every reserved byte)."""
    return urllib.parse.quote(key, safe="")


class Client:
    """One keep-alive connection; reconnects only when told to."""

    def __init__(self, port, timeout=30):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def request(self, path, method="GET", headers=None, body=None):
        """(status, headers dict with lower-case names, body bytes)."""
        self.conn.request(method, path, body=body, headers=headers or {})
        r = self.conn.getresponse()
        body = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body

    def get(self, key):
        """The record stored under key itself (raw=1: a redirect not
        followed), as the tests compare it with the table's."""
        return self.request("/v1/get?key=" + quote(key) + "&raw=1")

    def prefix(self, prefix, limit=None, start=None, keys_only=None):
        """(status, headers, the page {"records", "more"[, "next"]} or the
        error body)."""
        path = "/v1/prefix?prefix=" + quote(prefix)
        if limit is not None:
            path += f"&limit={limit}"
        if start is not None:
            path += "&from=" + quote(start)
        if keys_only is not None:
            path += f"&keys_only={keys_only}"
        status, headers, body = self.request(path)
        return status, headers, json.loads(body) if status == 200 else body

    def metrics(self):
        """/metrics -> {"name{labels}": float}."""
        status, _, body = self.request("/metrics")
        assert status == 200, body
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def close(self):
        self.conn.close()
