"""Plain-text helpers at the bottom of the package: sentences with kinds and offsets, centred snippets."""
