"""The user library: :class:`Context`, GRDDs and their operators, data formats."""
