"""What the hub reads from the host it runs on: where its socket and data live
(paths), and who is at the other end of a Unix socket (peercred)."""
