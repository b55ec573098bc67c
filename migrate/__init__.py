"""dra-migrate: the offline command line (convert, slices, classes)."""
