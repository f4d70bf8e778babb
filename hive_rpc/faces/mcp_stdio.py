"""Old import path of ``hive_rpc.faces.mcp.stdio``, kept only while the CLI moves to
``hive_rpc/cli/`` (issue 13): delete this file once nothing imports it."""

from hive_rpc.faces.mcp.stdio import run_mcp_stdio

__all__ = ["run_mcp_stdio"]
