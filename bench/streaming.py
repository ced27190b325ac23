"""Benchmark: reading big results files. Time and peak RSS of `compare`, `merge`, `run --resume`, `report`
and `comment --results` at 10k, 100k (and, with --million, 1M) items, beside a floor.

Each size's results come from real runs of bench/scoring.py's spec (two gates, two scorers, recorded
runs): the whole data set once (the head), two shards (for `merge`). The base is head with a few
scores changed, so `compare` pairs every item. Every command is a whole `evalgate` process; its peak
RSS is the child's own (`os.wait4`). `comment --results` posts to a fake GitHub on 127.0.0.1. The
floor is the fastest plain way to read the file: one `json.load` of the head's results in a fresh
interpreter (it holds every item at once). Targets (issue 33): every command under 500 MiB at 1M
items, time growing linearly with the items.

Run from the checkout's root; the commands run the evalgate that PYTHONPATH gives (main's, to compare):

    PYTHONPATH=$PWD python bench/streaming.py              # 10k and 100k items (about 5 minutes here)
    PYTHONPATH=$PWD python bench/streaming.py --million    # and 1M items (slow: 30+ minutes more)
    PYTHONPATH=$PWD python bench/streaming.py --sizes 2000 --keep /tmp/streaming   # any sizes; keep the files
    PYTHONPATH=$PWD python bench/streaming.py --sizes 1000000 --only resume      # some commands (by a word)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
# bench/http.py would shadow the standard library's http package: import it with bench/ off the path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402

sys.path.insert(0, str(HERE))
from installed import compile_evalgate  # noqa: E402
from measured import measured  # noqa: E402
from scoring import SPEC, make_data  # noqa: E402

import evalgate  # noqa: E402

EVALGATE = [sys.executable, "-m", "evalgate.cli"]
# the children run the evalgate this interpreter imports (PYTHONPATH=$PWD: the checkout's)
CHILD_ENV = {**os.environ, "PYTHONPATH": str(Path(evalgate.__file__).resolve().parent.parent)}
FLOOR = "import json, sys\nwith open(sys.argv[1], 'rb') as f:\n    json.load(f)\n"


def timed(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one whole process."""
    wall, _, peak = measured(argv, cwd, env or CHILD_ENV)
    return wall, peak


def prepare(folder: Path, items: int, shards: bool = True) -> None:
    """The head's results, a base with some scores changed, and (for `merge`) two shards' results."""
    if not (folder / "runs.jsonl").exists():
        make_data(folder / "runs.jsonl", items)
    (folder / "evalgate.yaml").write_text(SPEC)
    runs = [["run", "evalgate.yaml", "-o", "head.json"]]
    if shards:
        runs += [["run", "evalgate.yaml", "--shard", "1/2", "-o", "shard1.json"],
                 ["run", "evalgate.yaml", "--shard", "2/2", "-o", "shard2.json"]]
    for argv in runs:
        if not (folder / argv[-1]).exists():
            timed([*EVALGATE, *argv], folder)
    with (folder / "head.json").open("rb") as source, (folder / "base.json").open("wb") as base:
        for n, line in enumerate(source):  # every 7th item's `includes` score flipped: pairs that differ
            if n % 7 == 3:
                line = line.replace(b'"includes:Brooklyn":1.0', b'"includes:Brooklyn":0.0', 1)
            base.write(line)


class FakeGitHub(BaseHTTPRequestHandler):
    """Just enough of GitHub's API for `evalgate comment`: no comments yet, a new one created."""

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer(200, [] if "/comments" in self.path else {"login": "bot"})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(201 if "/comments" in self.path else 200,
                     {"id": 1, "data": {"viewer": {"login": "bot"}}})


def commands(folder: Path, api: str) -> dict[str, tuple[list[str], dict[str, str] | None]]:
    env = {**CHILD_ENV, "GITHUB_TOKEN": "bench-token-0123456789", "GITHUB_API_URL": api,
           "GITHUB_GRAPHQL_URL": api + "/graphql"}
    return {
        "floor (json.load)": ([sys.executable, "-c", FLOOR, "head.json"], None),
        "report": ([*EVALGATE, "report", "head.json"], None),
        "comment --results": ([*EVALGATE, "comment", "--results", "head.json", "--pr", "1", "--repo", "o/r",
                               "--key", "bench", "--author", "bot"], env),
        "compare": ([*EVALGATE, "compare", "base.json", "head.json"], None),
        "compare -o": ([*EVALGATE, "compare", "base.json", "head.json", "-o", "compared.json"], None),
        "merge": ([*EVALGATE, "merge", "shard1.json", "shard2.json", "-o", "merged.json"], None),
        "run --resume (finished)": ([*EVALGATE, "run", "evalgate.yaml", "-o", "resumed.json", "--resume"], None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--million", action="store_true", help="add 1,000,000 items (slow)")
    parser.add_argument("--keep", type=Path, help="make the files here and keep them (reused when present)")
    parser.add_argument("--only", nargs="*", default=[], help="only the commands whose name has one of these words")
    args = parser.parse_args()
    wanted = [name for name in commands(Path(), "") if not args.only or any(w in name for w in args.only)]
    sizes = [*args.sizes, *([1_000_000] if args.million else [])]
    compile_evalgate()
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeGitHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    api = f"http://127.0.0.1:{server.server_address[1]}"
    root = args.keep or Path(tempfile.mkdtemp(prefix="evalgate-streaming-"))
    print("results files as a stream: one process per command; time and the child's peak RSS "
          "(the machine may be shared: times are noisy)")
    print(f"{'items':>9}  {'command':<26} {'seconds':>8} {'peak MiB':>9}  {'MiB/size':>8}")
    try:
        for items in sizes:
            folder = root / f"items-{items}"
            folder.mkdir(parents=True, exist_ok=True)
            if not (folder / "base.json").exists():  # a head.json already there (--keep) is used as it is
                prepare(folder, items, shards="merge" in wanted)
            size = (folder / "head.json").stat().st_size / 2**20
            for name, (argv, env) in commands(folder, api).items():
                if name not in wanted:
                    continue
                shutil.copy(folder / "head.json", folder / "resumed.json")
                seconds, peak = timed(argv, folder, env)
                print(f"{items:>9,}  {name:<26} {seconds:>8.1f} {peak:>9.0f}  {peak / size:>8.2f}", flush=True)
            print(f"{items:>9,}  (head.json is {size:,.0f} MiB)")
    finally:
        server.shutdown()
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
