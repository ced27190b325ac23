"""Pin the Action to a pushed image: `image: Dockerfile` becomes `image: docker://IMAGE@sha256:DIGEST`.

The release workflow runs it on the release commit only, so `uses: owner/evalgate@v1` pulls the
image built for that tag instead of building the Dockerfile in every job; `main` keeps building.

    python .github/scripts/pin_image.py action.yml ghcr.io/owner/evalgate sha256:<64 hex digits>
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

IMAGE = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)+")
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
LINE = re.compile(r"^(?P<indent>\s+)image:\s*(?P<value>\S.*?)\s*$")


class PinError(ValueError):
    pass


def pin(text: str, image: str, digest: str) -> str:
    """action.yml with the `runs.image` line pinned; every other byte kept."""
    image = image.lower()  # registry paths are lower case; GitHub owners may not be
    if not IMAGE.fullmatch(image):
        raise PinError(f"not an image name: {image!r} (e.g. ghcr.io/owner/evalgate)")
    if not DIGEST.fullmatch(digest):
        raise PinError(f"not an image digest: {digest!r} (sha256: and 64 hex digits)")
    lines = text.splitlines(keepends=True)
    in_runs = False
    for number, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            in_runs = line.rstrip() == "runs:"
            continue
        match = LINE.match(line.rstrip("\r\n"))
        if in_runs and match:
            value = match.group("value").strip("'\"")
            if value != "Dockerfile":
                raise PinError(f"runs.image is {value!r}, not Dockerfile: already pinned?")
            ending = line[len(line.rstrip("\r\n")):]
            lines[number] = f"{match.group('indent')}image: docker://{image}@{digest}{ending}"
            return "".join(lines)
    raise PinError("no `image: Dockerfile` under `runs:` in action.yml")


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    path = Path(argv[1])
    try:
        path.write_text(pin(path.read_text(encoding="utf-8"), argv[2], argv[3]), encoding="utf-8")
    except (OSError, PinError) as exc:
        print(f"pin_image: {exc}", file=sys.stderr)
        return 1
    print(f"pin_image: {path} now runs docker://{argv[2].lower()}@{argv[3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
