"""What a pane started by ``hive-rpc spawn`` runs first (``python -m
hive_rpc.cli.spawned_pane NAME SOCKET DATA_DIR LABEL CHANNEL COMMAND...``): register
the pane from inside it as ling NAME, tell the waiting ``spawn`` on its ``tmux
wait-for`` channel, then ``exec`` COMMAND in its place (cli/spawn.py says why).

The work is client/spawned_pane.py's, which the hub's ``ling/spawn`` runs too; this
entry keeps the name ``hive-rpc spawn``'s panes have always run (and their agents'
recorded command lines show).  A module of its own, not ``spawn``'s ``__main__``: the
CLI's parser imports ``spawn``, and ``python -m`` of a module already imported by its
package warns in the new pane (runpy's RuntimeWarning).
"""

from __future__ import annotations

import sys

from hive_rpc.client.spawned_pane import pane_main

if __name__ == "__main__":
    raise SystemExit(pane_main(sys.argv[1:]))
