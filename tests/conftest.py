"""Shared fixtures: a short private temp dir (Unix socket paths are capped at 108
bytes), a real hub served in-process on a real Unix socket, and the real Codex CLI and
Gemini CLI (installed, or found in their cache, per session; see
tests/agents/agent_homes.py) with a private root per test for the agent's HOME,
project directory and TMPDIR."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trio
from agent_homes import AgentHome, installed
from cli_support import Shell
from disk_support import mounted_tmpfs, short_tmp_dir
from nats_support import NATS_SERVER, NatsCluster, NatsServer

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.service import HubService


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    with short_tmp_dir("hv-") as path:
        yield path


@pytest.fixture
def hub_config(short_tmp: Path) -> HubConfig:
    return HubConfig(socket=short_tmp / "run" / "hub.sock", data_dir=short_tmp / "data")


@pytest.fixture
async def hub(hub_config: HubConfig, nursery: trio.Nursery) -> HubService:
    """A hub on the sqlite store, serving a real socket, for the test's duration."""
    service: HubService = await nursery.start(run_hub, hub_config)
    return service


@pytest.fixture
async def http_hub(hub_config: HubConfig, nursery: trio.Nursery) -> HubService:
    """A hub as ``hub``, also serving HTTP (MCP, the dashboard) on a free loopback port."""
    hub_config.http = "127.0.0.1:0"
    service: HubService = await nursery.start(run_hub, hub_config)
    return service


@pytest.fixture
async def client(hub: HubService, hub_config: HubConfig) -> AsyncIterator[HubClient]:
    async with await HubClient.connect(hub_config.socket) as c:
        yield c


@pytest.fixture
def sh(short_tmp: Path) -> Iterator[Shell]:
    """``hive-rpc`` run as a shell user runs it, on a private socket and data dir."""
    shell = Shell(short_tmp)
    try:
        yield shell
    finally:
        shell.stop()


@pytest.fixture
def nats_server(short_tmp: Path) -> Iterator[NatsServer]:
    if NATS_SERVER is None:
        pytest.skip("nats-server is not installed (Debian: apt-get install nats-server)")
    server = NatsServer(short_tmp / "jetstream")
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def small_disk(short_tmp: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs of the test's own (tests/disk_support.py)."""
    with mounted_tmpfs(short_tmp / "disk") as mount_point:
        yield mount_point


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return installed("install-codex.sh", "HIVE_CODEX_UNAVAILABLE", "Codex CLI")


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    return installed("install-gemini-cli.sh", "HIVE_GEMINI_UNAVAILABLE", "Gemini CLI")


@pytest.fixture
def agent_home() -> Iterator[AgentHome]:
    """A short private root (Unix socket paths are capped at 108 bytes), made."""
    root = Path(tempfile.mkdtemp(prefix="hag-", dir="/tmp"))
    agent = AgentHome(root)
    agent.make()
    try:
        yield agent
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def nats_cluster(short_tmp: Path) -> Iterator[NatsCluster]:
    """A real 3-node nats-server cluster with JetStream on loopback (n1, n2, n3),
    started with a meta leader elected, killed at the end."""
    if NATS_SERVER is None:
        pytest.skip("nats-server is not installed (Debian: apt-get install nats-server)")
    cluster = NatsCluster(short_tmp / "cluster")
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
