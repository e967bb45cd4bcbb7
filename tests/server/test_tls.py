"""`corral serve --certfile/--keyfile` over real TLS: a remote command and a remote runner
that trust the certificate work through it; one that does not is refused, exit 3."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .conftest import CORRAL, Server
from .test_remote_workers import remote, remote_env, statuses, wait_for


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1, made by openssl."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def test_remote_commands_and_a_runner_work_over_https(server: Server, tmp_path: Path) -> None:
    cert, key = _certificate(tmp_path)
    operator, worker = server.token("operator"), server.token("worker")
    server.start_tls(cert, key)
    trusting = {"SSL_CERT_FILE": str(cert)}  # OpenSSL's default trust, as a user would set it
    added = subprocess.run(
        [*CORRAL, "add", "over tls", "--json"],
        env=remote_env(server, operator, **trusting),
        capture_output=True, text=True, check=False, cwd=server.folder,
    )  # fmt: skip
    assert 0 == added.returncode, added.stderr
    task = json.loads(added.stdout)["id"]
    argv = [*CORRAL, "worker", "start", "--name", "tls", "--exec", "true"]
    server.spawn(argv, "tls", remote_env(server, worker, **trusting))
    wait_for(lambda: statuses(server)[task] == "done", what="the task done over https")
    untrusting = remote(server, operator, "list")
    assert 3 == untrusting.returncode
    assert "certificate verify failed" in untrusting.stderr
    assert 1 == len(untrusting.stderr.strip().splitlines())
