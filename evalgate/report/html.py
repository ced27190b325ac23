"""The HTML report: one self-contained page (docs/html-report.md).

The page is `templates/report.html` with its stylesheet and script inlined, and the data of
`page_data` embedded as JSON in a `<script type="application/json">` block. A Content-Security-Policy
allows only that stylesheet and that script (by their SHA-256), no other origin, no connection: a text
that escaped every other defence still could not run or send anything.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

from evalgate.infra.files import check_writable, write_file
from evalgate.report.page_data import field_limit, page_data
from evalgate.results.model import Results

PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
# In a script element's text, `</script` or `<!--` would end it early; in JSON, `<`, `>` and `&` occur
# only inside strings, where their \\u escapes mean the same. U+2028/9 are escaped for old parsers.
JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
JSON_UNSAFE = re.compile("[<>&\u2028\u2029]")
MAX_BYTES = 45_000_000  # the data block at most: the page stays under 50 MB however long the texts
FLOOR = 40  # characters a text keeps when the cap is reached


def template(name: str) -> str:
    return resources.files("evalgate.report").joinpath(f"templates/{name}").read_text("utf-8")


def embedded_json(data: Any) -> str:
    """JSON that cannot end its script element nor be read as markup; lone surrogates as escapes."""
    raw = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return JSON_UNSAFE.sub(lambda m: JSON_ESCAPES[m.group()], raw)


def source_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii") + "'"


def policy(style: str, script: str) -> str:
    """Nothing but the page's own style and script; no fetch, frame, form, base or other origin."""
    return (f"default-src 'none'; style-src {source_hash(style)}; script-src {source_hash(script)}; "
            "img-src 'none'; connect-src 'none'; font-src 'none'; media-src 'none'; object-src 'none'; "
            "frame-src 'none'; worker-src 'none'; manifest-src 'none'; base-uri 'none'; form-action 'none'")


def bounded_data(results: Results, max_bytes: int) -> str:
    """The page's data as embedded JSON within `max_bytes`: texts cut shorter (halved) until it fits."""
    limit = field_limit(results.item_count())
    while True:
        data = embedded_json(page_data(results, limit))
        if limit <= FLOOR or len(data.encode("utf-8", "backslashreplace")) <= max_bytes:
            return data
        limit = max(FLOOR, limit // 2)


def render_html(results: Results, max_bytes: int = MAX_BYTES) -> str:
    """The report page for a results file, as text; its data within `max_bytes`."""
    style, script = template("report.css"), template("report.js")
    values = {
        "csp": html.escape(policy(style, script), quote=True),
        "title": html.escape(f"evalgate · {results.name}: {results.verdict or 'no verdict'}"[:300]),
        "style": style,
        "script": script,
        "data": bounded_data(results, max_bytes),
    }
    # one pass over the template: a value's own text is never searched for placeholders
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], template("report.html"))


def write_html(path: Path, page: str) -> None:
    """The page written beside `path` and renamed over it by the one writer (evalgate.infra.files): a reader never
    sees half a page, and nothing is written through a symlink, a FIFO or a device."""
    check_writable(path)
    write_file(path, page.encode("utf-8", "backslashreplace"))  # a lone surrogate: its JSON escape
