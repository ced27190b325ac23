"""Scorers: the registry (`registry`), the built-in types (`checks`, `code`, `judged`, `trajectory`,
`custom`) and `builtins.load_builtins()`, which registers them. Importing this package registers nothing.
"""
