"""RAG Orchestrator core: conversations, retrieval, providers, tools and the agentic loop."""

__version__ = "0.1.0"
