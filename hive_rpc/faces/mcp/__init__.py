"""The agents' face: MCP, over stdio (``hive-rpc mcp``) and Streamable HTTP (the hub's
``/mcp``), with the hivemind tool family and request_human_input.

Modules, in the order a request meets them:

* ``groups``: which tool groups a session offers (imports no SDK: the CLI checks
  ``--tools`` with it before anything loads the MCP SDK);
* ``identity``: which agent a request acts as;
* ``server``: ``HiveMcp``, the MCPServer over one ``Backend``;
* ``prompt_tools`` (the ``hivemind_*`` tools and request_human_input) and
  ``agora_tools`` (dialogues, lings, events, task outcomes), each tool wrapped by
  ``guarded.guarded``, which turns the hub's refusals into tool errors in the tools'
  own words;
* ``results``: the tools' structured results;
* ``resources``: ``hive://asks/{ask_id}`` and its subscriptions, and the only file
  that touches the SDK's private attributes;
* ``stdio`` and ``http``: the two entry points.

This file imports nothing, so that importing ``groups`` stays light.
"""
