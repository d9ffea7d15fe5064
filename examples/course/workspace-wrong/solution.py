"""Word count: a plausible first attempt that forgets case and punctuation."""


def word_count(text):
    counts = {}
    for word in text.split():
        counts[word] = counts.get(word, 0) + 1
    return counts
