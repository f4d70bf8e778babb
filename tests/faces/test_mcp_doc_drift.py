"""What docs quote from the running code, checked against it: mcp.md's 401 body
(the table of the HTTP endpoint's refusals) and multi-machine.md's example of a
dotted document key in the NATS bucket (dots are not kept as they are)."""

from __future__ import annotations

import re
from pathlib import Path

import trio
from test_mcp import raw_post

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService
from hive_rpc.store.nats import decode_name, encode_name

DOCS = Path(__file__).resolve().parents[2] / "docs"


async def test_mcp_md_quotes_the_401_body(http_hub: HubService, hub_config: HubConfig) -> None:
    row = next(
        line
        for line in (DOCS / "mcp.md").read_text().splitlines()
        if line.startswith("| no `Authorization` | 401")
    )
    quoted = re.findall(r"``(.+?) ``", row)[0]
    with trio.fail_after(30):
        refused = await raw_post(str(http_hub.info.http_url), {})
    assert refused.status_code == 401
    body = refused.text.strip()
    assert body == quoted.replace("DATA_DIR", str(hub_config.data_dir))


def test_multi_machine_md_shows_how_a_dotted_key_is_stored() -> None:
    text = " ".join((DOCS / "multi-machine.md").read_text().split())
    name, key = re.findall(r"`(main\.feature\.auth)` is the key `ling\.(=[A-Z2-7]+)`", text)[0]
    assert encode_name(name) == key
    assert decode_name(key) == name
    assert encode_name("ling") == "ling"  # plain names are kept as they are
