"""The agentic loop (seed 000's OrchestratorService, seed 001's model-agnostic loop) and its finalizers."""
