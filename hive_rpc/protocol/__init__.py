"""Sans-IO codecs: bytes in, events out; messages in, bytes out.  No sockets, no trio."""
