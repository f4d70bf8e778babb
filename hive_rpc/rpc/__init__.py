"""JSON-RPC over a byte stream, both ways: one connection's reader, writer and
reply matching (connection), the waiter a request's reply wakes (reply_waiter),
and the dispatch of a request to its handler (dispatch)."""
