"""The results file: its model, the writer and journal, the streaming reader, merge, shards, score columns, the
lock, kept runs."""
