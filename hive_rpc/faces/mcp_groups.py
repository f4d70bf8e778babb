"""Old import path of ``hive_rpc.faces.mcp.groups``, kept only while the CLI moves to
``hive_rpc/cli/`` (issue 13): delete this file once nothing imports it."""

from hive_rpc.faces.mcp.groups import DEFAULT_GROUPS, GROUPS, parse_groups, valid_names

__all__ = ["DEFAULT_GROUPS", "GROUPS", "parse_groups", "valid_names"]
