"""A caller's data as a whole (docs/privacy.md): erasure across every store, run by a function of its own."""
