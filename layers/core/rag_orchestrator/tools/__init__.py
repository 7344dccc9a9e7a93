"""Tools the model may call: the Tool protocol, the registry, rag_search, HTTP tools, selection."""
