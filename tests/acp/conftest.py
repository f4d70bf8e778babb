"""The ACP TypeScript SDK for the end-to-end tests, installed (or found in its cache) by
scripts/install-acp-sdk.sh; Node runs the tests' client and agent on it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = REPO / "scripts" / "install-acp-sdk.sh"


@pytest.fixture(scope="session")
def acp_sdk() -> Path:
    """The SDK's install directory. Skips only when Node is missing or the npm registry
    is unreachable (then nothing can install it), with the reason; any other failure to
    install fails."""
    reason = os.environ.get("HIVE_ACP_SDK_UNAVAILABLE")
    if reason:
        pytest.skip(f"no ACP SDK: {reason}")
    if shutil.which("node") is None:
        pytest.skip("no ACP SDK: node is not installed")
    done = subprocess.run(
        ["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode == 3:
        pytest.skip(f"no ACP SDK: {done.stdout.strip()}")
    if done.returncode != 0:
        pytest.fail(f"scripts/install-acp-sdk.sh failed ({done.returncode}):\n{done.stderr}")
    return Path(done.stdout.strip().splitlines()[-1])
