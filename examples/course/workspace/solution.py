"""Word count: the learner's (correct) solution."""

import re


def word_count(text):
    """Count the words in text, ignoring case and punctuation.

    A word is a run of letters, digits and apostrophes; apostrophes at the
    start or end of a word are quotes, not part of it.

    >>> word_count("The cat and the hat.")
    {'the': 2, 'cat': 1, 'and': 1, 'hat': 1}
    """
    counts = {}
    for word in re.findall(r"[a-z0-9']+", text.lower()):
        word = word.strip("'")
        if word:
            counts[word] = counts.get(word, 0) + 1
    return counts
