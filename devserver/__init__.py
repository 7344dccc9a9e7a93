"""Local stack for development and tests: moto server, Chroma server, the app. Never deployed."""
