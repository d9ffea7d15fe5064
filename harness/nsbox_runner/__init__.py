"""The nsbox test runner, by concern (harness/README.md; the entry is
harness/nsbox_test_runner.py). Standard library only."""
