#!/usr/bin/env python3
"""embed_text.py IN OUT NAME: OUT is a C header holding IN's bytes as
`static const unsigned char NAME[]` and `NAME_len`, so the binary carries
the file (the split harness of test jobs) and needs nothing installed."""
import sys

data = open(sys.argv[1], "rb").read()
name = sys.argv[3]
with open(sys.argv[2], "w") as f:
    f.write("/* generated from %s by batch/embed_text.py: do not edit */\n" % sys.argv[1].rsplit("/", 1)[-1])
    f.write("static const unsigned char %s[] = {\n" % name)
    for i in range(0, len(data), 16):
        f.write("        " + ", ".join("0x%02x" % b for b in data[i:i + 16]) + ",\n")
    f.write("};\nstatic const unsigned long %s_len = %d;\n" % (name, len(data)))
