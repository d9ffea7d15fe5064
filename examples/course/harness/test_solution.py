"""Hidden tests for the word_count exercise (mounted read-only at /harness)."""

import unittest

from solution import word_count


def test_empty_text():
    assert word_count("") == {}


def test_counts_repeated_words():
    assert word_count("the cat and the hat") == {"the": 2, "cat": 1, "and": 1, "hat": 1}


def test_ignores_case():
    assert word_count("Go go GO") == {"go": 3}, "words differing only in case are the same word"


class TestPunctuation(unittest.TestCase):
    def test_strips_punctuation(self):
        self.assertEqual(word_count("Hello, world! Hello."), {"hello": 2, "world": 1})

    def test_keeps_apostrophes_inside_words(self):
        self.assertEqual(word_count("don't stop"), {"don't": 1, "stop": 1})
