"""The agentic loop: a turn claimed, run model ↔ tools whatever the provider, streamed and stored (docs/architecture.md)."""
