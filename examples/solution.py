"""A learner's solution, as a course would run it:

    nsbox python --profile examples/course.ini examples/solution.py

It reads nothing and writes only to stdout: the word counts of a sentence,
most frequent first.
"""

import re
from collections import Counter

TEXT = "The cat and the hat sat on the mat; the cat did not."


def word_count(text):
    return Counter(re.findall(r"[a-z']+", text.lower()))


if __name__ == "__main__":
    for word, n in word_count(TEXT).most_common():
        print("%-4s %d" % (word, n))
