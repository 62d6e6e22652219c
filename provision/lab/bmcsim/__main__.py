"""`python -m provision.lab.bmcsim CONFIG.json`: run the simulator in the foreground."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from provision.lab.bmcsim.config import SimConfig
from provision.lab.bmcsim.server import serve


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m provision.lab.bmcsim CONFIG.json", file=sys.stderr)
        return 2
    cfg = SimConfig.model_validate_json(Path(argv[0]).read_text())
    asyncio.run(serve(cfg))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
