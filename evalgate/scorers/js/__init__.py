"""JavaScript semantics the Mastra-compatible scorers need: strings, regexes, properties, compromise's tagger and
word forms."""
