"""One module per kind of client.  Faces depend on the service and registry, never the reverse."""
