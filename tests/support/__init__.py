"""Helpers shared by the test suites: log builders and hypothesis strategies."""
