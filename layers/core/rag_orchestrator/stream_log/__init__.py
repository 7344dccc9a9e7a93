"""The event log of streamed turns: what a reconnecting client replays, and where a cancel is asked for."""
