"""Clients of a hub: finding or starting one (hub_start, start_record), the
blocking client light commands use (sync_client), the trio one (async_client), and
the connection an editor-facing face keeps to its hub (hub_connection)."""
