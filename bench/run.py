"""Run every benchmark in bench/ (``make bench``): each prints its own figures and targets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failures = 0
    for script in sorted(HERE.glob("*.py")):
        # Only the entry points: helper modules (the manifest generators) have no __main__ block.
        if script.name == "run.py" or '__name__ == "__main__"' not in script.read_text():
            continue
        print(f"\n=== {script.name} ===", flush=True)
        failures += subprocess.run([sys.executable, str(script)], check=False).returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
