"""hive_rpc: a trio sidecar where AI agents ask humans questions without blocking.

An agent asks and gets an id back at once; the question is shown wherever the human
already is (Emacs, VS Code, a shell); the answer is kept, durably, until the agent
collects it.

One package per job, lowest layer first (imports point down; docs/design.md,
tests/project/test_layers.py):

- ``core``: the rules, pure (prompt record, lifecycle table, schema, errors, limits);
- ``protocol``: sans-IO codecs, and the protocol as data (``protocol/methods.py``);
- ``host``: where the socket and data live, who is at the other end of a socket;
- ``rpc``: one JSON-RPC connection, both ways;
- ``store``: where prompts outlive the hub (memory, SQLite, NATS);
- ``relay``: typing into terminals (tmux, Zellij, Emacs);
- ``client``: finding, starting and talking to a hub;
- ``runtime``: the hub's trio state (the prompt registry, the activity stream);
- ``agora``: dialogues between agents, and the terminals they run in;
- ``service``: the handlers of the method table;
- ``faces``: the ways in (editor socket, LSP, EPC, MCP, the dashboard);
- ``hub.py``: all of it assembled in one process;
- ``cli``: the ``hive-rpc`` commands.
"""

__version__ = "0.1.0"
