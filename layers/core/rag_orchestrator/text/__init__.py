"""Plain-text helpers at the bottom of the package: sentences with kinds and offsets, centred snippets,
content words, and the offline hashing embedder (pure text in, vector out)."""
