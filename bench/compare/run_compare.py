"""Run the comparison benchmarks of the other implementations that are installed (stdlib only).

    python bench/compare/run_compare.py [--timeout S] [--quick] [--no-variants] [--json]

Each implementation runs in its own process, one after the other (the machine has 2 cores), and
prints one JSON object; this collects them and prints a table. From our own bench:

    from bench.compare.run_compare import collect   # or put bench/compare on sys.path
    rows = collect(timeout_s=900)                   # list of dicts, one per implementation

Where things are looked up (see README.md for installing them):
* Node: ``node`` on PATH and ``pi_node/node_modules`` (``npm ci`` in ``pi_node/``).
* Ports: the venv at ``$PI_COMPARE_VENV_<NAME>`` (name upper-cased, ``-`` -> ``_``, e.g.
  ``PI_COMPARE_VENV_PI_AI_PYTHON``), else ``$PI_COMPARE_VENVS/<name>``, else
  ``~/.cache/pi-notebook/compare-venvs/<name>``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PORTS = ["pi-ai-python", "pi-agents-py", "pi-agent-core-lc"]
DEFAULT_VENVS = "~/.cache/pi-notebook/compare-venvs"


def venv_python(name: str) -> Path | None:
    root = os.environ.get("PI_COMPARE_VENV_" + name.upper().replace("-", "_"))
    if root is None:
        root = os.path.join(os.path.expanduser(os.environ.get("PI_COMPARE_VENVS", DEFAULT_VENVS)), name)
    python = Path(root) / "bin" / "python"
    return python if python.exists() else None


def targets(variants: bool = True) -> list[tuple[str, list[str], Path]]:
    """(label, argv, cwd) of every installed implementation; ``variants`` adds the second driver
    of the two that have a faux provider (Pi on Node and pi-ai-python)."""
    found: list[tuple[str, list[str], Path]] = []
    node = shutil.which("node")
    node_dir = HERE / "pi_node"
    if node and (node_dir / "node_modules" / "@earendil-works" / "pi-agent-core").is_dir():
        found.append(("pi-0.83-node", [node, "pi_bench.mjs", "--driver", "faux"], node_dir))
        if variants:
            found.append(("pi-0.83-node-scripted", [node, "pi_bench.mjs", "--driver", "scripted"], node_dir))
    for name in PORTS:
        python = venv_python(name)
        if python is None:
            continue
        script = f"{name}_bench.py"
        if name == "pi-ai-python":
            found.append((name, [str(python), script, "--driver", "faux"], HERE / "ports"))
            if variants:
                found.append((f"{name}-scripted", [str(python), script, "--driver", "scripted"], HERE / "ports"))
        else:
            found.append((name, [str(python), script], HERE / "ports"))
    return found


def _cpu_seconds() -> tuple[float, float]:
    """(busy CPU seconds of the whole machine, CPU seconds of our finished children) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:9]]
        busy = (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # minus idle, iowait
    except (OSError, ValueError):
        busy = float("nan")
    return busy, usage.ru_utime + usage.ru_stime


def run_one(label: str, argv: list[str], cwd: Path, timeout_s: float, quick: bool = False) -> dict:
    busy0, ours0 = _cpu_seconds()
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            argv + (["--quick"] if quick else []), cwd=cwd, capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return {"impl": label, "error": f"timed out after {timeout_s:.0f} s"}
    busy1, ours1 = _cpu_seconds()
    # CPU used by other processes during the run, in cores (this machine has 2): above ~0.2,
    # something else competed with the benchmark and its numbers are inflated.
    load = round(max(0.0, (busy1 - busy0) - (ours1 - ours0)) / (time.monotonic() - t0), 2)
    lines = proc.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"impl": label, "error": f"exit {proc.returncode}: " + " | ".join(tail), "other_cpu_cores": load}
    result["other_cpu_cores"] = load
    if proc.returncode != 0:
        result["error"] = f"exit {proc.returncode}"
    return result


def collect(timeout_s: float = 900, variants: bool = True, quick: bool = False) -> list[dict]:
    """Run every installed implementation (each with ``timeout_s``) and return their JSON objects.
    A failed one is returned as ``{"impl": ..., "error": ...}``."""
    return [run_one(label, argv, cwd, timeout_s, quick) for label, argv, cwd in targets(variants)]


def _fmt(value, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_table(results: list[dict]) -> str:
    rows = [
        [
            "impl",
            "driver",
            "w1 us/ev (small)",
            "w1 us/ev (large)",
            "w2 ms/turn (small)",
            "w2 ms/turn (large)",
            "w3 abort p50 ms",
            "w3 abort p99 ms",
        ]
    ]
    notes = []
    for r in results:
        if "error" in r and "w1_us_per_event" not in r:
            rows.append([r["impl"], "", "error", "", "", "", "", ""])
            notes.append(f"{r['impl']}: {r['error']}")
            continue
        w1 = list(r["w1_us_per_event"].values())
        w2 = list(r["w2_ms_per_turn"].values())
        w3 = r.get("w3_abort_ms")
        no_abort = w3 is None and "abort does not work" in r.get("notes", "")
        rows.append(
            [
                r["impl"],
                r.get("driver", ""),
                _fmt(w1[0]),
                _fmt(w1[1]),
                _fmt(w2[0], 3),
                _fmt(w2[1], 3),
                "abort does not work" if no_abort else _fmt(w3 and w3["p50"]),
                "" if no_abort else _fmt(w3 and w3["p99"]),
            ]
        )
        sizes = f"w1 N={'/'.join(r['w1_us_per_event'])}, w2 T={'/'.join(r['w2_ms_per_turn'])}"
        notes.append(
            f"{r['impl']} {r.get('version', '')} ({r.get('runtime', '')}; {sizes}; "
            f"other processes used {r.get('other_cpu_cores')} cores meanwhile): {r.get('notes', '')}"
            + (f" [{r['error']}]" if "error" in r else "")
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join([*lines, "", *notes])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=900, help="seconds per implementation (default 900)")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument(
        "--no-variants", action="store_true", help="skip the scripted-stream variants of the faux-driven ones"
    )
    parser.add_argument("--json", action="store_true", help="print the JSON list instead of a table")
    args = parser.parse_args()
    if not targets(not args.no_variants):
        print("no implementation installed: see bench/compare/README.md", file=sys.stderr)
        return 1
    results = collect(args.timeout, not args.no_variants, args.quick)
    print(json.dumps(results, indent=1) if args.json else format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
