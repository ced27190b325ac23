"""Infrastructure: the network, the one file writer and capped reads, redaction, safe text and streams, process
isolation, the log."""
