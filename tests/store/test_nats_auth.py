"""Who may read and answer the questions on a NATS store (issue 31): the recipes of
docs/multi-machine.md on a real ``nats-server -js``, with real hubs started by the CLI.

An open server (the old one-machine recipe) lets any local process read every question
and answer it, past the hub's 0600 socket: the first test shows it with a plain nats-py
client.  The recipe that replaces it (a password and TLS in the server's config file,
certificates made here with ``openssl``, the URL with its password in a 0600 file given
to ``serve --store-file``, the CA through ``SSL_CERT_FILE``) refuses that client, and
the hub never shows the password: not in ``status``, its log, or its command line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import Shell
from nats_support import NatsServer

pytestmark = [
    pytest.mark.skipif(shutil.which("nats-server") is None, reason="nats-server is not installed"),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed"),
]

PASSWORD = "s3cret-Pa55-for-hive"

INTRUDER = r"""
import asyncio, json, sys, time
import nats

async def main(url, prompt_id, options):
    nc = await nats.connect(url, allow_reconnect=False, connect_timeout=5, **options)
    kv = await nc.jetstream().key_value("hive_prompts")
    entry = await kv.get(prompt_id)
    record = json.loads(entry.value)
    print("read:", record["question"])
    now = time.time()
    record.update(status="responded", answer="yes", by="intruder", action="accept",
                  answered_at=now, outcome="success", result="yes", completed_at=now)
    await kv.update(prompt_id, json.dumps(record).encode(), last=entry.revision)
    print("answered")
    await nc.close()

asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
"""


def intruder(
    url: str, prompt_id: str, env: dict[str, str] | None = None, **options: object
) -> subprocess.CompletedProcess[str]:
    """Another local process with nats-py, and nothing of the hub's: it reads the
    prompt from the bucket and writes it back answered."""
    import json

    return subprocess.run(
        [sys.executable, "-c", INTRUDER, url, prompt_id, json.dumps(options)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


def ask(shell: Shell, question: str) -> str:
    out = shell.run("ask", question, "--agent", "ci", "--timeout", "600")
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def make_certificates(root: Path) -> dict[str, Path]:
    """A private CA and a server certificate for 127.0.0.1 (an IP in its names, as
    the hub dials 127.0.0.1), made with ``openssl`` (Debian's package of that name) as
    docs/multi-machine.md makes them for a host name."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    ca, ca_key = root / "ca.pem", root / "ca.key"
    cert, key, csr = root / "server.pem", root / "server.key", root / "server.csr"
    ext = root / "server.ext"
    ext.write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectKeyIdentifier=hash\n"
        "authorityKeyIdentifier=keyid\n"
    )
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ca_ext = ["-addext", "basicConstraints=critical,CA:TRUE"]
    ca_ext += ["-addext", "keyUsage=critical,keyCertSign,cRLSign"]
    sign = ["-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-extfile", ext]
    for argv in (
        ["req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-subj", "/CN=hive CA", *ca_ext],
        ["req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"],
        ["x509", "-req", "-in", csr, *sign, "-out", cert, "-days", "2"],
    ):
        done = subprocess.run(["openssl", *map(str, argv)], capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr.decode(errors="replace")
    return {"ca": ca, "cert": cert, "key": key}


def server_config(path: Path, certs: dict[str, Path]) -> Path:
    """The server's config of the recipe: a password and TLS, in a 0600 file."""
    path.write_text(
        f'authorization {{ user: hive, password: "{PASSWORD}" }}\n'
        f'tls {{ cert_file: "{certs["cert"]}", key_file: "{certs["key"]}" }}\n'
    )
    path.chmod(0o600)
    return path


def test_an_open_nats_server_lets_any_local_process_answer(
    nats_server: NatsServer, short_tmp: Path
) -> None:
    """The old one-machine recipe (``nats-server -js -sd DIR -a 127.0.0.1``, no auth):
    a process that never touched the hub's socket reads the question and answers it,
    and the agent takes that answer as the human's."""
    shell = Shell(short_tmp / "hub")
    try:
        started = shell.run("serve", "--detach", "--store", nats_server.url)
        assert started.returncode == 0, started.stderr
        prompt_id = ask(shell, "Deploy build 412 to production?")
        out = intruder(nats_server.url, prompt_id)
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines() == ["read: Deploy build 412 to production?", "answered"]
        polled = shell.run("poll", prompt_id, "--agent", "ci", "--wait", "--json", timeout=60)
        assert '"answer": "yes"' in polled.stdout, polled.stdout + polled.stderr
        assert '"by": "intruder"' in polled.stdout
    finally:
        shell.stop()


def test_password_and_tls_refuse_other_processes_and_hide_the_password(
    short_tmp: Path,
) -> None:
    certs = make_certificates(short_tmp / "tls")
    config = server_config(short_tmp / "nats.conf", certs)
    server = NatsServer(short_tmp / "jetstream", extra=["-c", str(config)])
    server.start()
    shell = Shell(short_tmp / "hub")
    try:
        url = f"tls://hive:{PASSWORD}@127.0.0.1:{server.port}"
        secret = short_tmp / "nats-url"
        secret.write_text(url + "\n")
        secret.chmod(0o600)
        shell.env["SSL_CERT_FILE"] = str(certs["ca"])
        started = shell.run("serve", "--detach", "--store-file", str(secret))
        assert started.returncode == 0, started.stderr
        prompt_id = ask(shell, "Deploy build 412 to production?")

        with_ca = {**os.environ, "SSL_CERT_FILE": str(certs["ca"])}
        nobody = intruder(f"tls://127.0.0.1:{server.port}", prompt_id, env=with_ca)
        assert nobody.returncode != 0
        assert "Authorization Violation" in nobody.stderr, nobody.stderr
        wrong = intruder(f"tls://hive:guess@127.0.0.1:{server.port}", prompt_id, env=with_ca)
        assert "Authorization Violation" in wrong.stderr, wrong.stderr
        no_ca = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
        unverified = intruder(url, prompt_id, env=no_ca)
        assert unverified.returncode != 0
        assert "CERTIFICATE_VERIFY_FAILED" in unverified.stderr, unverified.stderr
        plain = intruder(f"nats://hive:{PASSWORD}@127.0.0.1:{server.port}", prompt_id, env=no_ca)
        assert plain.returncode != 0, "a client without the CA must not get in over nats://"

        # The one holding the password and the CA (what the hub holds) gets in: the
        # question is there, and answered through the hub as usual.
        answered = shell.run("answer", prompt_id, "yes", "--by", "alice")
        assert answered.returncode == 0, answered.stderr
        polled = shell.run("poll", prompt_id, "--agent", "ci", "--json")
        assert '"by": "alice"' in polled.stdout, polled.stdout + polled.stderr

        status = shell.run("status")
        assert status.returncode == 0, status.stderr
        assert "(nats store)" in status.stdout, status.stdout
        shown = status.stdout + status.stderr + shell.run("status", "--json").stdout
        assert PASSWORD not in shown
        pid = shell.hub_pid()
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        assert str(secret) in argv
        assert PASSWORD not in argv, "the password is on the hub's command line"
        record = (shell.data_dir / "hub.start.json").read_text()
        assert str(secret) in record  # what --autostart and restart start it with again
        assert PASSWORD not in record
        restarted = shell.run("restart", timeout=60)
        assert restarted.returncode == 0, restarted.stderr
        assert shell.hub_pid() != pid
        again = shell.run("poll", prompt_id, "--agent", "ci", "--json")
        assert '"by": "alice"' in again.stdout, again.stdout + again.stderr
        logs = [p for p in shell.data_dir.rglob("*.log") if p.is_file()]
        assert logs, f"no hub log in {shell.data_dir}"
        for log in logs:
            text = log.read_text(errors="replace")
            assert PASSWORD not in text, f"{log} shows the password"
        assert any(f"tls://***@127.0.0.1:{server.port}" in p.read_text() for p in logs)
    finally:
        shell.stop()
        server.kill()


def test_a_store_file_others_can_read_is_refused(short_tmp: Path) -> None:
    """A password in a file other users can read is no secret: ``serve`` says so and
    does not start, as ssh does with a private key."""
    secret = short_tmp / "nats-url"
    secret.write_text(f"nats://hive:{PASSWORD}@127.0.0.1:4222\n")
    secret.chmod(0o644)
    shell = Shell(short_tmp / "hub")
    try:
        out = shell.run("serve", "--store-file", str(secret))
        assert out.returncode != 0
        assert "chmod 600" in out.stderr, out.stderr
        assert PASSWORD not in out.stderr + out.stdout
    finally:
        shell.stop()
