"""reference.py: an independent reader of MediaWiki XML exports.

It computes the records sstpipe must produce, with nothing shared with the C
code: Python's xml.etree.ElementTree (expat) parses the dump as a stream and
each <page> is dropped once read, so memory follows the largest page, not the
dump. The rules are the issue's:

  key    the <title> text (entities resolved), UTF-8
  value  the <text> of the page's last <revision>; "" when absent or deleted;
         cut to the longest prefix of at most max_bytes bytes of its UTF-8
         encoding that ends on a character boundary
  a title seen again later replaces the earlier record (and is counted)
  records sorted by the UTF-8 bytes of the key (memcmp order)

Usable as a program too: `python3 reference.py DUMP [--max-bytes N]` prints
the expected records as JSON lines, like `sstpipe dump --jsonl`.
"""

import bz2
import gzip
import json
import lzma
import subprocess
import sys
import xml.etree.ElementTree as ET


def truncate_utf8(data, max_bytes):
    """The longest prefix of data (valid UTF-8) of at most max_bytes bytes
    that does not split a character."""
    if len(data) <= max_bytes:
        return data
    n = max_bytes
    # data[n] starts the first byte left out; a continuation byte there means
    # the character it belongs to began inside the prefix: drop that too.
    while n > 0 and (data[n] & 0xC0) == 0x80:
        n -= 1
    return data[:n]


class Reference:
    """The expected content of the SSTable built from one dump."""

    def __init__(self, records, pages, duplicates_replaced):
        self.records = records  # [(key bytes, value bytes)] sorted by key
        self.pages = pages  # <page> elements seen
        self.duplicates_replaced = duplicates_replaced

    def as_dict(self):
        return dict(self.records)


def _local(tag):
    return tag.rsplit("}", 1)[-1]


def read_records(stream, max_bytes=1024):
    """Parses a binary file object holding MediaWiki XML (any encoding expat
    knows, declared or with a BOM) into a Reference."""
    by_key = {}
    pages = duplicates = 0
    root = None
    for event, elem in ET.iterparse(stream, events=("start", "end")):
        if root is None:
            root = elem
        if event != "end" or _local(elem.tag) != "page":
            continue
        pages += 1
        title, last_rev = None, None
        for child in elem:
            name = _local(child.tag)
            if name == "title":
                title = child.text or ""
            elif name == "revision":
                last_rev = child
        text = ""
        if last_rev is not None:
            for child in last_rev:
                if _local(child.tag) == "text":
                    text = child.text or ""
        key = (title or "").encode("utf-8")
        if key in by_key:
            duplicates += 1
        by_key[key] = truncate_utf8(text.encode("utf-8"), max_bytes)
        # Drop what has been read: the page and everything before it.
        root.clear()
    return Reference(sorted(by_key.items()), pages, duplicates)


def open_dump(path):
    """Opens a dump file, decompressing by its magic bytes (zstd through the
    zstd CLI, streaming). Returns a binary file object and a closer."""
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic.startswith(b"BZh"):
        f = bz2.open(path, "rb")  # reads multistream files to the end
        return f, f.close
    if magic.startswith(b"\x1f\x8b"):
        f = gzip.open(path, "rb")
        return f, f.close
    if magic.startswith(b"\xfd7zXZ\x00"):
        f = lzma.open(path, "rb")
        return f, f.close
    if magic.startswith(b"\x28\xb5\x2f\xfd"):
        proc = subprocess.Popen(["zstd", "-q", "-d", "-c", path], stdout=subprocess.PIPE)

        def close():
            proc.stdout.close()
            if proc.wait() != 0:
                raise RuntimeError(f"zstd -d {path} failed")

        return proc.stdout, close
    f = open(path, "rb")
    return f, f.close


def read_dump(path, max_bytes=1024):
    """read_records on a dump file in any of the compressions."""
    f, close = open_dump(path)
    try:
        return read_records(f, max_bytes)
    finally:
        close()


def main(argv):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    ap.add_argument("--max-bytes", type=int, default=1024)
    args = ap.parse_args(argv)
    ref = read_dump(args.dump, args.max_bytes)
    out = sys.stdout
    for k, v in ref.records:
        out.write(json.dumps({"key": k.decode("utf-8"), "value": v.decode("utf-8")},
                             ensure_ascii=False) + "\n")
    print(f"pages={ref.pages} records={len(ref.records)} "
          f"duplicates_replaced={ref.duplicates_replaced}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
