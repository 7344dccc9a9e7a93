"""`make eval`: how well the knowledge base answers, on questions written about eval/corpus/ (see scoring)."""
