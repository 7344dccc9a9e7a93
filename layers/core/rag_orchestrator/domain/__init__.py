"""Typed domain: conversations, messages, tool calls and stream events."""
