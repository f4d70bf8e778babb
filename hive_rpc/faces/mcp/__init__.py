"""The agents' face: MCP, over stdio (``hive-rpc mcp``, a relay to a session served
here) and Streamable HTTP (the hub's ``/mcp``), with the hivemind tool family and
request_human_input.  Both run in the hub.

Modules, in the order a request meets them:

* ``groups``: which tool groups a session offers (the table is core/tool_groups.py,
  which ``hive-rpc mcp`` checks ``--tools`` with and loads no SDK);
* ``identity``: which agent a request acts as;
* ``server``: ``HiveMcp``, the MCPServer over one ``Backend``;
* ``prompt_tools`` (the ``hivemind_*`` tools and request_human_input) and
  ``agora_tools`` (dialogues, lings, events, task outcomes), each tool wrapped by
  ``guarded.guarded``, which turns the hub's refusals into tool errors in the tools'
  own words;
* ``results``: the tools' structured results;
* ``resources``: ``hive://asks/{ask_id}`` and its subscriptions, and the only file
  that touches the SDK's private attributes;
* ``stdio`` (the session of one ``hive-rpc mcp`` relay, on its socket connection) and
  ``http``: the two entry points.

This file imports nothing.
"""
