"""``python -m hive_rpc`` is the ``hive-rpc`` command."""

from hive_rpc.cli import main

raise SystemExit(main())
