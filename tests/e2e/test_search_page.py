"""test_search_page.py: the search page `sstpipe serve` shows at / (issue 32).

Without JavaScript, over plain HTTP: / is the page with its form, sent with
a Content-Security-Policy allowing nothing from elsewhere and naming no
external resource; /?q=TEXT lists the titles starting with TEXT (case and
accents ignored: "anarch" finds Anarchism on the enwiki corpus, "adolfs"
finds Adoļfs Hitlers on ltgwiki) as links to /?title=...; /?title=T shows
T's record as escaped text (a record holding <script> comes back as text),
a redirect followed and named, a record cut at the table's 1 KB marked;
bad input (q or title empty, over-long, not UTF-8, badly encoded, both
given, an unknown parameter) is a 400 page, an unknown title or a redirect
to a missing page a 404 page saying so. A table without a title index
still shows exact titles and says suggestions need one.

In Debian's headless Chromium, driven through the DevTools protocol over
--remote-debugging-pipe (standard library only): typing a prefix shows
suggestions; down and enter, or a click, shows the record and makes the
address /?title=..., and back the page before it; a redirect is shown as
one; escape closes the list; every request the page makes goes to the
server, its Content-Security-Policy refuses nothing, and the page throws
nothing. Those tests are skipped (exit 77 through tests/skip_status) only
when chromium is absent; pipeline/install-deps installs it on CI.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean under ctest

import html
import html.parser
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

from serve_client import Server  # noqa: E402
from sstpipe_e2e import E2ETest, _page, corpora_dir, sstpipe  # noqa: E402

ENWIKI = os.path.join(corpora_dir(), "enwiki-206pages.xml.bz2")
LTGWIKI = os.path.join(corpora_dir(), "ltgwiki-2004pages.xml")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-headless-shell")
PATIENCE = 60  # seconds the page may take to do one thing, however loaded the machine

SCRIPT_TEXT = 'Before <script>alert("x")</script> & after'
LONG_TEXT = "é" * 800  # 1600 bytes: cut at 1024


def small_dump():
    """Records a page must escape, redirects, a cut record and a short one."""
    pages = [
        _page("Script page", [html.escape(SCRIPT_TEXT, quote=False)]),
        _page("Old script", ["#REDIRECT [[Script page]]"], redirect="Script page"),
        _page("Dangling", ["#REDIRECT [[Nowhere]]"], redirect="Nowhere"),
        _page("Long page", [LONG_TEXT]),
        _page("Short page", ["short"]),
        _page("AT&amp;T &lt;b&gt;", ["a company"]),
    ]
    return ("<mediawiki>\n  <siteinfo>\n    <sitename>Test</sitename>\n"
            "    <case>first-letter</case>\n    <namespaces>\n"
            '      <namespace key="0" case="first-letter"></namespace>\n'
            "    </namespaces>\n  </siteinfo>\n" + "".join(pages) + "</mediawiki>\n")


class Page(html.parser.HTMLParser):
    """What a test looks at in a page: its links (href, text), the text of
    each element by class or id (title, record, redirect, cut, note, error,
    result), the box's value, the scripts and every attribute naming a
    resource."""

    def __init__(self, text):
        super().__init__()
        self.links, self.scripts, self.resources = [], 0, []
        self.fields = {}  # class -> text
        self.value = None
        self._open = []  # (tag, class) of the open elements
        self._href = None
        self._text = ""
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "input" and a.get("name") == "q":
            self.value = a.get("value")
        for name in ("src", "srcset", "data", "poster"):
            if name in a:
                self.resources.append(a[name])
        if tag == "link":
            self.resources.append(a.get("href"))
        if tag == "a":
            self._href, self._text = a.get("href"), ""
        if tag not in ("input", "meta", "br"):
            self._open.append((tag, a.get("class") or a.get("id")))

    def handle_endtag(self, tag):
        if tag == "a" and self._href is not None:
            self.links.append((self._href, self._text))
            self._href = None
        while self._open and self._open.pop()[0] != tag:
            pass

    def handle_data(self, data):
        if self._href is not None:
            self._text += data
        for _, cls in self._open:
            if cls:
                self.fields[cls] = self.fields.get(cls, "") + data


def fetch(port, path):
    """status, headers (lower-case names), body text of GET path."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=PATIENCE) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read().decode()


def setUpModule():
    global TABLES, TMP
    TMP = tempfile.mkdtemp(prefix="sstpipe-search-")
    TABLES = {}
    small = os.path.join(TMP, "small.xml")
    with open(small, "w", encoding="utf-8") as f:
        f.write(small_dump())
    for name, src in (("en", ENWIKI), ("ltg", LTGWIKI), ("small", small)):
        TABLES[name] = os.path.join(TMP, name + ".sst")
        r = sstpipe("build", src, "-o", TABLES[name], "-q")
        assert r.code == 0, r.describe()
    # The small table again, without its title index.
    TABLES["bare"] = os.path.join(TMP, "bare.sst")
    shutil.copyfile(TABLES["small"], TABLES["bare"])


def tearDownModule():
    for srv in SERVERS.values():
        srv.stop()
    shutil.rmtree(TMP, True)


SERVERS = {}  # table name -> its Server, started on first use


def record(table, title):
    r = sstpipe("get", table, "--", title)
    assert r.code == 0, r.describe()
    return r.stdout.decode()[:-1]  # get ends the value with a newline


class Serving(E2ETest):
    def port(self, name):
        if name not in SERVERS:
            SERVERS[name] = Server(TABLES[name]).start(os.path.join(TMP, name + ".err"))
        return SERVERS[name].port


class WithoutJavaScript(Serving):
    def page(self, name, path, status=200):
        st, headers, body = fetch(self.port(name), path)
        self.assertEqual((st, headers.get("content-type")), (status, "text/html; charset=utf-8"),
                         f"{path}: {body[:300]}")
        self.assertIn("default-src 'none'", headers.get("content-security-policy", ""), path)
        return Page(body), body

    def test_the_page_is_self_contained(self):
        p, body = self.page("en", "/")
        self.assertEqual(p.value, "")
        self.assertEqual(p.scripts, 1)
        self.assertEqual(p.resources, [])
        self.assertNotRegex(body, r"(?i)https?:|url\(|@import|//[a-z]")
        self.assertIn("Type the start of a title", p.fields["result"])
        self.assertNotIn("no title index", p.fields["result"])
        self.assertIn('role="search" autocomplete="off">', body)

    def test_query_lists_titles(self):
        p, _ = self.page("en", "/?q=anarch")
        self.assertEqual(p.value, "anarch")
        self.assertEqual(p.links[1], ("/?title=Anarchism", "Anarchism"))
        self.assertIn(("/?title=AnarchY", "AnarchY"), p.links)
        p, _ = self.page("ltg", "/?q=adolfs")
        self.assertIn(("/?title=Ado%C4%BCfs%20Hitlers", "Adoļfs Hitlers"), p.links)
        p, _ = self.page("en", "/?q=zzzzqx")
        self.assertIn("No title starts with “zzzzqx”.", p.fields["result"])

    def test_title_shows_the_record(self):
        p, _ = self.page("en", "/?title=Anarchism")
        self.assertEqual(p.fields["title"], "Anarchism")
        self.assertEqual(p.fields["record"], record(TABLES["en"], "Anarchism"))
        self.assertIn("cut", p.fields)
        self.assertNotIn("redirect", p.fields)
        # As people type it; a redirect followed and named.
        p, _ = self.page("en", "/?title=anarchism")
        self.assertEqual(p.fields["title"], "Anarchism")
        p, _ = self.page("en", "/?title=AbacuS")
        self.assertEqual((p.fields["title"], p.fields["redirect"]),
                         ("Abacus", "Redirected from “AbacuS”"))
        self.assertEqual(p.fields["record"], record(TABLES["en"], "Abacus"))

    def test_text_is_escaped(self):
        p, body = self.page("small", "/?title=Script%20page")
        self.assertEqual(p.fields["record"], SCRIPT_TEXT)
        self.assertEqual(p.scripts, 1)
        self.assertIn("Before &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; after",
                      body)
        p, body = self.page("small", "/?title=Old_script")
        self.assertEqual((p.fields["record"], p.fields["redirect"]),
                         (SCRIPT_TEXT, "Redirected from “Old script”"))
        # A title in a link and in the box, and text typed.
        p, body = self.page("small", "/?q=at%26t%20%3C")
        self.assertEqual(p.value, "at&t <")
        self.assertEqual(p.links[1], ("/?title=AT%26T%20%3Cb%3E", "AT&T <b>"))
        self.assertNotIn("<b>", body)
        p, body = self.page("small", "/?q=%3Cscript%3E%22")
        self.assertEqual(p.scripts, 1)
        self.assertIn('value="&lt;script&gt;&quot;"', body)

    def test_cut_records_are_marked(self):
        p, _ = self.page("small", "/?title=Long%20page")
        self.assertEqual(p.fields["record"], "é" * 512)
        self.assertIn("Cut at 1024 bytes", p.fields["cut"])
        p, _ = self.page("small", "/?title=Short%20page")
        self.assertEqual(p.fields["record"], "short")
        self.assertNotIn("cut", p.fields)

    def test_bad_input_is_a_page(self):
        for path, status, says in (
                ("/?q=", 400, "q is empty"), ("/?title=", 400, "title is empty"),
                ("/?q=" + "x" * 321, 400, "q: longer than 320 bytes"),
                ("/?q=%FF", 400, "q: not valid UTF-8"),
                ("/?title=%C3", 400, "title: not valid UTF-8"),
                ("/?q=%ZZ", 400, "bad percent-encoding"),
                ("/?q=a&title=b", 400, "not both"), ("/?bogus=1", 400, "unknown parameter"),
                ("/?q=a&q=b", 400, "given twice"),
                ("/?title=No%20such%20page", 404, "No page is titled “No such page”."),
                ("/?title=Dangling", 404,
                 "“Dangling” redirects to “Nowhere”, which is not in the table.")):
            p, _ = self.page("small", path, status)
            self.assertIn(says, p.fields.get("error", ""), path)
            self.assertEqual(p.scripts, 1, path)
        # A title not found lists the titles starting with it.
        p, _ = self.page("small", "/?title=Short", 404)
        self.assertIn(("/?title=Short%20page", "Short page"), p.links)

    def test_without_title_index(self):
        p, body = self.page("bare", "/")
        self.assertIn("no title index", p.fields["note"])
        # The form tells the script so: it asks for no suggestion.
        self.assertIn('role="search" autocomplete="off" data-titles="no">', body)
        p, _ = self.page("bare", "/?title=Script%20page")
        self.assertEqual(p.fields["record"], SCRIPT_TEXT)
        p, _ = self.page("bare", "/?q=Short%20page")
        self.assertIn(("/?title=Short%20page", "Short page"), p.links)
        self.assertIn("no title index", p.fields["note"])
        p, _ = self.page("bare", "/?q=short")
        self.assertIn("No page has that title.", p.fields["result"])
        # The API says so too, naming the table as a client knows it: the
        # server's directories are not the client's business.
        st, _, body = fetch(self.port("bare"), "/v1/suggest?q=short")
        self.assertEqual(st, 400, body)
        self.assertIn("bare.sst has no title index", body)
        self.assertNotIn(TMP, body)

    def test_methods(self):
        port = self.port("small")
        req = urllib.request.Request(f"http://127.0.0.1:{port}/", method="HEAD")
        with urllib.request.urlopen(req, timeout=PATIENCE) as r:
            self.assertEqual((r.status, r.read()), (200, b""))
        req = urllib.request.Request(f"http://127.0.0.1:{port}/", data=b"x", method="POST")
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=PATIENCE)
        self.assertEqual(e.exception.code, 405)


class Chromium:
    """Debian's headless Chromium driven through the DevTools protocol over
    --remote-debugging-pipe (JSON messages ended by a NUL, commands on its
    fd 3, answers and events on its fd 4), with one page attached."""

    KEYS = {"ArrowDown": 40, "ArrowUp": 38, "Enter": 13, "Escape": 27}

    def __init__(self, tmp):
        import fcntl
        # Both ends above 4, so that the child's dup2 onto 3 and 4 clobbers
        # neither.
        cmd_r, cmd_w = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in os.pipe())
        ev_r, ev_w = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in os.pipe())

        def onto_3_and_4():
            os.dup2(cmd_r, 3)
            os.dup2(ev_w, 4)

        self.err = open(os.path.join(tmp, "chromium.err"), "wb")
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--remote-debugging-pipe",
             f"--user-data-dir={tempfile.mkdtemp(prefix='chromium-', dir=tmp)}",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", "--disable-default-apps", "--window-size=1000,800",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.err, stderr=self.err,
            preexec_fn=onto_3_and_4, close_fds=False)
        for fd in (cmd_r, ev_w):
            os.close(fd)
        self.cmd, self.ev = cmd_w, ev_r
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.send(domain + ".enable")
        # Every page keeps what its Content-Security-Policy refused.
        self.send("Page.addScriptToEvaluateOnNewDocument", source=(
            "window.refused = []; document.addEventListener('securitypolicyviolation', "
            "e => window.refused.push(e.violatedDirective + ' ' + e.blockedURI));"))

    def close(self):
        os.close(self.cmd)
        os.close(self.ev)
        self.proc.kill()
        self.proc.wait()
        self.err.close()

    def _message(self, deadline):
        import select
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.ev], [], [], max(left, 0))
            if not ready:
                raise AssertionError("chromium did not answer in time")
            chunk = os.read(self.ev, 65536)
            if not chunk:
                raise AssertionError(f"chromium exited {self.proc.wait()}")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if self.session:
            msg["sessionId"] = self.session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self.cmd, data):]
        deadline = time.monotonic() + PATIENCE
        while True:
            m = self._message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise AssertionError(f"{method}: {m['error']}")
                return m["result"]
            self.events.append(m)

    def js(self, expression):
        r = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise AssertionError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait(self, expression, what):
        deadline = time.monotonic() + PATIENCE
        last = None
        while time.monotonic() < deadline:
            try:
                if self.js(expression):
                    return
            except AssertionError as e:  # a page being replaced has no context to ask
                last = e
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what} ({expression}); last error: {last}")

    def open(self, url):
        self.send("Page.navigate", url=url)
        self.wait(f"location.href === {json.dumps(url)} && document.readyState === 'complete'",
                  "the page to load")

    def type(self, text):
        self.js("document.getElementById('q').focus()")
        self.send("Input.insertText", text=text)

    def key(self, name):
        code = self.KEYS[name]
        down = {"key": name, "code": name, "windowsVirtualKeyCode": code}
        if name == "Enter":
            down["text"] = "\r"
        self.send("Input.dispatchKeyEvent", type="keyDown", **down)
        self.send("Input.dispatchKeyEvent", type="keyUp", key=name, code=name,
                  windowsVirtualKeyCode=code)

    def click(self, selector):
        x, y = self.js(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                       ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2];"
                       " })()")
        self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)


LIVE = "[...document.querySelectorAll('#live li')]"
SUGGESTED = f"{LIVE}.map(li => li.firstChild.textContent)"


@unittest.skipIf(not CHROMIUM, "chromium is not installed (pipeline/install-deps installs it)")
class InChromium(Serving):
    @classmethod
    def setUpClass(cls):
        cls.browser = Chromium(TMP)
        cls.addClassCleanup(cls.browser.close)

    def setUp(self):
        super().setUp()
        self.b = self.browser
        self.since = len(self.b.events)

    def open(self, name, path="/"):
        self.base = f"http://127.0.0.1:{self.port(name)}"
        self.b.open(self.base + path)

    def suggestions(self, text):
        self.b.type(text)
        self.b.wait(f"{LIVE}.length > 0", f"suggestions for {text}")
        return self.b.js(SUGGESTED)

    def shown(self, title):
        self.b.wait(f"(document.querySelector('#result h2.title') || {{}}).textContent === "
                    f"{json.dumps(title)}", f"the record of {title}")
        return (self.b.js("location.pathname + location.search"),
                self.b.js("document.querySelector('#result pre.record').textContent"),
                self.b.js("(document.querySelector('#result .redirect') || {}).textContent"))

    def tearDown(self):
        """The page broke no rule of its Content-Security-Policy; every
        request it made went to the server; it threw nothing, opened no
        dialog and logged no error."""
        self.assertEqual(self.b.js("window.refused"), [])
        events = self.b.events[self.since:]
        urls = [e["params"]["request"]["url"] for e in events
                if e.get("method") == "Network.requestWillBeSent"]
        self.assertTrue(urls)
        self.assertEqual([u for u in urls if not u.startswith(self.base + "/")], [])
        self.assertEqual([e for e in events if e.get("method") in (
            "Runtime.exceptionThrown", "Page.javascriptDialogOpening")], [])
        # Errors logged, but a failed request's (a 404 page fetched) and
        # Chromium's notes on slow handlers (a loaded machine's).
        logged = [e["params"]["entry"] for e in events if e.get("method") == "Log.entryAdded"]
        self.assertEqual([e["text"] for e in logged
                          if e["level"] == "error" and e["source"] != "network"], [])
        super().tearDown()

    def test_keys_pick_a_suggestion(self):
        self.open("en")
        got = self.suggestions("anarch")
        self.assertEqual(got[:2], ["Anarchism", "AnarchY"])
        self.b.key("ArrowDown")
        self.b.key("ArrowDown")
        self.b.key("ArrowUp")
        self.assertEqual(self.b.js(f"{LIVE}.map(li => li.getAttribute('aria-selected'))")[:2],
                         ["true", "false"])
        self.b.key("Enter")
        self.assertEqual(self.shown("Anarchism"),
                         ("/?title=Anarchism", record(TABLES["en"], "Anarchism"), None))
        self.assertEqual(self.b.js(f"{LIVE}.length"), 0)
        self.assertIn("Cut at 1024 bytes", self.b.js("document.querySelector('.cut').textContent"))
        # Back is the page before the record.
        self.b.js("history.back()")
        self.b.wait("location.search === '' && !document.querySelector('#result h2.title') && "
                    "document.querySelector('#result').textContent.includes('Type the start')",
                    "the page before the record")

    def test_click_a_redirect(self):
        self.open("en")
        got = self.suggestions("abacu")
        at = got.index("AbacuS")
        self.assertEqual(self.b.js(f"{LIVE}[{at}].querySelector('.kind').textContent"),
                         "redirect")
        self.b.click(f"#live li:nth-child({at + 1})")
        self.assertEqual(self.shown("Abacus"), ("/?title=AbacuS", record(TABLES["en"], "Abacus"),
                                                "Redirected from “AbacuS”"))
        # The address, shared, shows the same.
        self.b.open(self.base + "/?title=AbacuS")
        self.assertEqual(self.shown("Abacus")[1:], (record(TABLES["en"], "Abacus"),
                                                    "Redirected from “AbacuS”"))

    def test_escape_closes_the_list(self):
        self.open("ltg")
        self.assertIn("Adoļfs Hitlers", self.suggestions("adolfs"))
        self.b.key("Escape")
        self.b.wait(f"{LIVE}.length === 0", "the list to close")
        # Enter with nothing chosen is the form: every match, listed by the server.
        self.b.key("Enter")
        self.b.wait("location.search === '?q=adolfs'", "the server's list")
        self.assertIn("Adoļfs Hitlers",
                      self.b.js("document.querySelector('#result').textContent"))

    def test_a_record_is_text(self):
        self.open("small")
        self.assertEqual(self.suggestions("scri")[0], "Script page")
        self.b.key("ArrowDown")
        self.b.key("Enter")
        self.assertEqual(self.shown("Script page"),
                         ("/?title=Script%20page", SCRIPT_TEXT, None))
        self.assertEqual(self.b.js("document.scripts.length"), 1)

    def test_without_title_index(self):
        self.open("bare")
        self.b.type("sho")
        self.b.wait("document.getElementById('live-status').textContent"
                    ".includes('Suggestions need a title index')", "the note")
        self.b.key("Enter")
        self.b.wait("location.search === '?q=sho'", "the server's page")
        self.b.open(self.base + "/?title=Short%20page")
        self.assertEqual(self.shown("Short page")[1], "short")


if __name__ == "__main__":
    unittest.main()
