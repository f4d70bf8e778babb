"""The ways in: one module (or package) per kind of client (editor socket, LSP, EPC,
MCP, the dashboard's HTTP), and ``backends.py``, how a face reaches the service (in
process, or a hub over its socket).  Faces depend on the service and the registry,
never the reverse."""
