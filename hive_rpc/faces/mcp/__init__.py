"""The agents' face: MCP, over stdio (``hive-rpc mcp``, a relay to a session served
here) and Streamable HTTP (the hub's ``/mcp``), with the hivemind tool family and
request_human_input.  Both run in the hub, on its one MCP server.

Modules, in the order a request meets them:

* ``session``: what one agent session's requests act with (``AgentSession``), read
  from the request's context;
* ``groups``: which tool groups a session offers (the groups' names are
  core/tool_groups.py, which ``hive-rpc mcp`` checks ``--tools`` with and loads no
  SDK; each tool names its group where it is declared, and ``tools`` derives each
  group's tools and lists every ``ToolTable``);
* ``identity``: which agent a request acts as;
* ``server``: ``HiveMcp``, the hub's one MCPServer over one ``Backend``;
* ``prompt_tools`` (the ``hivemind_*`` tools and request_human_input),
  ``agora_tools`` (dialogues, lings, events, task outcomes), ``spawn_tools``
  (children a parent agent asks for, each approved by the human) and ``approve_tool``:
  plain functions listed in a ``tool_table.ToolTable`` (a tool's name is its
  function's; its hints and its names for the hub's parameters are declared with
  it), each wrapped by ``guarded.guarded``;
* ``results``: the tools' structured results, and ``tool_error``, the one place a
  failure becomes a tool error (in the tool's words, with its code and kind, as
  protocol/tool_errors.py puts it on the wire);
* ``resources``: ``hive://asks/{ask_id}`` and its subscriptions, and the only file
  that touches the SDK's private attributes;
* ``updates`` with ``coordinator_news``: the hub's one registry watcher and news
  poll, telling every session what is its own;
* ``stdio`` (the session of one ``hive-rpc mcp`` relay, on its socket connection) and
  ``http``: the two entry points.

This file imports nothing.
"""
