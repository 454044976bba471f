"""The tooling around the book: the speed benchmark and the hand-written NumPy floor it compares with."""
