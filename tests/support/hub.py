"""A real JupyterHub on loopback for the deployment tests: configurable-http-proxy (from npm, installed by
``tests/deploy/up.sh``), the dummy authenticator, ``SimpleLocalProcessSpawner`` (one single-user Jupyter Server per
user, each with its own home under the hub's folder), and a ``tester`` service whose token drives it through its REST
API: create users, start and stop their servers, reach their kernels through the proxy (``RemoteKernel``).

``Hub(root, environment=..., services=...)`` starts it; ``hub.server(name)`` starts that user's server and gives its
URL; ``hub.close()`` stops everything.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from served import Served, free_port
from ws_kernel import auth

TOOLS = Path(os.environ.get("PI_DEPLOY_TOOLS", "~/.cache/pi-notebook/deploy")).expanduser()
PROXY = TOOLS / "node_modules" / ".bin" / "configurable-http-proxy"
TESTER_SCOPES = ["admin:users", "admin:servers", "access:servers", "list:users", "read:users", "read:servers"]


def require_proxy() -> Path:
    """JupyterHub's proxy, or a skip that says how to install it (pytest's ``-ra`` prints it)."""
    if not PROXY.exists():
        pytest.skip(f"configurable-http-proxy is not installed in {TOOLS}: run bash tests/deploy/up.sh")
    return PROXY


class Hub:
    def __init__(
        self,
        root: Path,
        *,
        environment: Mapping[str, str] | None = None,
        services: list[dict[str, Any]] | None = None,
        roles: list[dict[str, Any]] | None = None,
    ) -> None:
        """``environment``: added to every single-user server's (and so its kernels'); ``services`` and ``roles``:
        more hub services (an idle culler) and their roles."""
        proxy = require_proxy()
        self.root = root
        self.token = secrets.token_hex(16)
        port, hub_port, api_port = free_port(), free_port(), free_port()
        self.url = f"http://127.0.0.1:{port}"
        bin_dir = Path(sys.executable).parent
        config = {
            "JupyterHub": {
                "bind_url": self.url,
                "hub_bind_url": f"http://127.0.0.1:{hub_port}",
                "authenticator_class": "dummy",
                "spawner_class": "simple",
                "db_url": f"sqlite:///{root / 'hub.sqlite'}",
                "cookie_secret_file": str(root / "cookie_secret"),
                "services": [{"name": "tester", "api_token": self.token}, *(services or [])],
                "load_roles": [{"name": "tester", "scopes": TESTER_SCOPES, "services": ["tester"]}, *(roles or [])],
            },
            "ConfigurableHTTPProxy": {
                "command": [str(proxy)],
                "api_url": f"http://127.0.0.1:{api_port}",
                "pid_file": str(root / "proxy.pid"),
            },
            "Authenticator": {"allow_all": True},
            "SimpleLocalProcessSpawner": {"home_dir_template": str(root / "home" / "{username}")},
            "Spawner": {
                "cmd": [str(bin_dir / "jupyterhub-singleuser")],
                "args": ["--allow-root"],
                "environment": dict(environment or {}),
                "start_timeout": 120,
                "http_timeout": 120,
            },
        }
        path = root / "jupyterhub_config.json"
        path.write_text(json.dumps(config))
        self.served = Served(
            [str(bin_dir / "jupyterhub"), "-f", str(path)],
            log=root / "jupyterhub.log",
            ready=f"{self.url}/hub/api/",
            cwd=root,
            env={"PATH": f"{bin_dir}:{os.environ['PATH']}"},
        )

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = httpx.request(method, f"{self.url}/hub/api{path}", headers=auth(self.token), timeout=60, **kwargs)
        response.raise_for_status()
        return response

    def server(self, name: str, timeout: float = 120) -> str:
        """Create user ``name`` if needed, start their server and wait until it is ready; returns its URL."""
        if httpx.get(f"{self.url}/hub/api/users/{name}", headers=auth(self.token), timeout=30).status_code == 404:
            self.api("POST", f"/users/{name}")
        if not self.running(name):
            self.api("POST", f"/users/{name}/server")
        deadline = time.monotonic() + timeout
        while not self.running(name, ready=True):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}'s server did not start within {timeout} s:\n{self.served.tail()}")
            time.sleep(0.5)  # polling the hub's state of the spawn
        return f"{self.url}/user/{name}"

    def running(self, name: str, *, ready: bool = False) -> bool:
        """The user's default server exists (and, with ``ready``, answers)."""
        servers = self.api("GET", f"/users/{name}").json().get("servers") or {}
        server = servers.get("")
        return server is not None and (not ready or bool(server.get("ready")))

    def home(self, name: str) -> Path:
        return self.root / "home" / name

    def close(self) -> None:
        self.served.close()
