from hive_rpc.client.async_client import HubClient


async def test_ask_then_poll_over_the_socket(client: HubClient) -> None:
    record = await client.call("hive/ask", {"question": "ok?", "agent_id": "a"})
    assert record["status"] == "pending"
    again = await client.call("hive/poll", {"id": record["id"], "agent_id": "a"})
    assert again == record
