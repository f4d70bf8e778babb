"""hive_rpc: a trio sidecar where AI agents ask humans questions without blocking.

An agent asks and gets an id back at once; the question is shown wherever the human
already is (Emacs, VS Code, a shell); the answer is kept, durably, until the agent
collects it.  The layers point one way: ``core`` (pure rules) <- ``registry`` (trio)
<- ``store`` and ``faces`` (I/O at the edges).
"""

__version__ = "0.1.0"
