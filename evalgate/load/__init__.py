"""Loading: the spec file and its models, the data and its items, the one builder of cases."""
