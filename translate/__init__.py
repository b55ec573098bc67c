"""The migration rules: pure functions from legacy device requests to DRA objects."""
