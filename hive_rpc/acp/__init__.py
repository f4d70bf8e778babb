"""``hive-rpc acp -- AGENT``: an Agent Client Protocol agent's permission requests,
answered by the human from any hive_rpc editor.

An ACP client (agent-shell in Emacs, Zed) starts this proxy instead of the agent; the
proxy starts the agent and passes every line both ways unchanged, except three: the
agent's ``session/request_permission`` is answered from the hub's rules or by the human
(falling back to the client's own dialog, or a deny), ``session/new`` and
``session/load`` get hive-rpc's MCP server added, and the agent's whole process tree
ends with the proxy (docs/acp.md).

``wire`` reads and rewrites the protocol's lines and ``permission`` turns a request into
a hub question and an answer into ACP's outcome, both pure; ``proxy`` is the trio part
that moves the lines and owns the agent's process group; ``guard`` ends that group
should the proxy be killed first.
"""
