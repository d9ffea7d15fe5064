"""Issue #27, class 5: program-controlled text on a person's terminal.

A program (the code under test, a judged solution) prints text made to
deceive whoever reads nsbox's output: ESC[2K and CR to erase the real lines,
the 8-bit CSI U+009B and NEL U+0085, the bidi override U+202E and isolate
U+2066, and a fake "✓ 5 passed" line after a newline. Every text output
nsbox renders from it (`nsbox test`, `nsbox judge` text, the --junit XML,
`nsbox report` text and --html) must show those characters as visible
escapes (util/textsafe.h); the JSON outputs must carry them exactly.

`unsafe()` below is the test's own statement of docs/security.md's "Text
shown to people" list, independent of the C code it checks.

Needs NSBOX_SOURCE (the source tree, or the world-readable copy made by
as_nobody.sh) for harness/ (the runner)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata
import unittest
import xml.etree.ElementTree as ET

from nsbtest import SandboxTest

SOURCE = os.environ.get("NSBOX_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
RUNNER_DIR = os.path.join(SOURCE, "harness")
ENV = dict(os.environ, NSBOX_RUNNER_DIR=RUNNER_DIR)

# What the learner prints: erase the line, return to column 0, the C1 CSI
# (erase line again) and NEL, a right-to-left override and an isolate, then a
# fake mark line and a fake summary.
HOSTILE = ("boom\x1b[2K\r\u009b2K\u0085\u202eevil\u2066x\u2069\u200f\u061c\u2028\x07\x08\x7f"
           "\n\u2713 5 passed\n== 5 passed in 0.01s ==\nverdict: pass")
FAKE_LINES = ("\u2713 5 passed", "== 5 passed in 0.01s ==", "verdict: pass")
BIDI = {0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069}


def unsafe(ch):
    cp = ord(ch)
    return (cp < 0x20 and ch not in "\t\n") or 0x7F <= cp <= 0x9F or cp in BIDI or cp in (0x2028, 0x2029, 0xFFFE, 0xFFFF)


def assert_safe_text(test, raw, what, multiline=True):
    """raw (bytes): valid UTF-8, no unsafe character (a CR only before LF)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        test.fail("%s: not UTF-8 (%s): %r" % (what, exc, raw[:400]))
    for i, ch in enumerate(text):
        if ch == "\r" and text[i + 1:i + 2] == "\n":
            continue
        if unsafe(ch):
            test.fail("%s: raw U+%04X at %d: %r" % (what, ord(ch), i, text[max(0, i - 60):i + 60]))
    return text


def assert_no_fake_line(test, text, what):
    """None of the fake lines starts a line of its own."""
    for line in text.split("\n"):
        for fake in FAKE_LINES:
            if line.startswith(fake):
                test.fail("%s: a line of the program's passes for nsbox's: %r\n%s" % (what, line, text))


def columns(ch):
    """The columns a terminal gives one code point: 2 for East Asian Wide
    and Fullwidth, 0 for a combining mark, else 1 (as wcwidth)."""
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def screen_rows(text, width=80):
    """The rows an 80-column terminal shows text on: a line longer than the
    width goes on at column 0 of the next row (xterm's auto-wrap)."""
    rows = []
    for line in text.split("\n"):
        row, col = "", 0
        for ch in line:
            w = columns(ch)
            if col + w > width:
                rows.append(row)
                row, col = "", 0
            row += ch
            col += w
        rows.append(row)
    return rows


def assert_no_fake_row(test, text, what):
    """No screen row of an 80-column terminal starts with the program's fake
    line, and no line of nsbox's needs the terminal to wrap it (#27 F1)."""
    for row in screen_rows(text):
        for fake in FAKE_LINES:
            if row.lstrip(" ").startswith(fake) and not row.startswith(" "):
                test.fail("%s: a screen row starts with the program's text: %r\n%s" % (what, row, text))
    for line in text.split("\n"):
        if sum(columns(ch) for ch in line) >= 80:
            test.fail("%s: a line of %d columns, wrapped by the terminal: %r"
                      % (what, sum(columns(ch) for ch in line), line))


WORKSPACE = {
    "solution.py": (
        "HOSTILE = %r\n"
        "def explode():\n"
        "    raise ValueError(HOSTILE)\n"
        "def answer():\n"
        "    return HOSTILE\n" % HOSTILE),
}
HARNESS = {
    "test_hostile.py": (
        "from solution import explode, answer\n"
        "def test_exception():\n"
        "    explode()\n"
        "def test_assert_message():\n"
        "    assert answer() == 'x', answer()\n"
        "def test_ok():\n"
        "    pass\n"),
}
# The runner killed by the code under test: undetermined, and the summary
# shows the tail of stderr, where the learner wrote first.
HARNESS_KILL = {
    "test_kill.py": (
        "import os, signal, sys\n"
        "from solution import HOSTILE\n"
        "def test_kill_runner():\n"
        "    sys.stderr.write(HOSTILE + '\\n')\n"
        "    sys.stderr.flush()\n"
        "    os.kill(os.getppid(), signal.SIGKILL)\n"),
}

# #27 F1: lines padded to an 80-column terminal's width, so that the text
# after the padding would start a screen row: after the summary's 4-column
# prefix, 76 spaces (or 38 wide characters) fill the row.
PADDED = ("wrong\n" + " " * 76 + "== 1 passed in 0.01s ==\n"
          + "\u4e2d" * 38 + "verdict: pass\n" + "x" * 300)
HARNESS_PAD = {
    "test_pad.py": (
        "PADDED = %r\n"
        "def test_padded():\n"
        "    raise ValueError(PADDED)\n"
        "def test_%s():\n"
        "    pass\n" % (PADDED, "n" * 90)),
}
HARNESS_PAD_KILL = {
    "test_pad_kill.py": (
        "import os, signal, sys\n"
        "PADDED = %r\n"
        "def test_kill_runner():\n"
        "    sys.stderr.write(PADDED + '\\n')\n"
        "    sys.stderr.flush()\n"
        "    os.kill(os.getppid(), signal.SIGKILL)\n" % PADDED),
}

PROGRAM = (
    "import sys\n"
    "H = %r\n"
    "print(H)\n"
    "if len(sys.argv) > 1:\n"
    "    raise SystemExit(H.split('\\n')[0])\n" % HOSTILE)


class TextSafety(SandboxTest):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="nsbox-textsafe-")
        os.chmod(self.tmp, 0o755)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def make_dir(self, name, files):
        d = os.path.join(self.tmp, name)
        os.mkdir(d)
        os.chmod(d, 0o755)
        for fname, text in files.items():
            with open(os.path.join(d, fname), "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(os.path.join(d, fname), 0o644)
        return d

    def path(self, name):
        return os.path.join(self.tmp, name)

    # -- nsbox test -------------------------------------------------------

    def test_testcmd_summary(self):
        ws = self.make_dir("ws", WORKSPACE)
        harness = self.make_dir("harness", HARNESS)
        junit = self.path("tests.xml")
        p = self.nsbox("test", "--harness", harness, "--workspace", ws, "--junit", junit, env=ENV, timeout=120)
        self.assertEqual(p.returncode, 1, p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace"))
        text = assert_safe_text(self, p.stdout, "nsbox test summary")
        assert_no_fake_line(self, text, "nsbox test summary")
        self.assertIn("\\x1b[2K\\r\\u009b2K\\u0085\\u202eevil\\u2066x\\u2069", text)
        self.assertIn("verdict: fail", text)
        self.check_junit(junit, "test_exception")   # classname="test_hostile" (#32)
        # the JSON report: exact
        p = self.nsbox("test", "--json", "--harness", harness, "--workspace", ws, env=ENV, timeout=120)
        rep = json.loads(p.stdout)
        msgs = {t["name"]: t["message"] for t in rep["tests"]}
        self.assertIn(HOSTILE, msgs["test_hostile.py::test_exception"])
        self.assertIn(HOSTILE, msgs["test_hostile.py::test_assert_message"])

    def test_testcmd_stderr_tail(self):
        ws = self.make_dir("ws", WORKSPACE)
        harness = self.make_dir("harness", HARNESS_KILL)
        p = self.nsbox("test", "--harness", harness, "--workspace", ws, env=ENV, timeout=120)
        self.assertEqual(p.returncode, 3, p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace"))
        text = assert_safe_text(self, p.stdout, "nsbox test summary, stderr tail")
        self.assertIn("---- stderr (last lines) ----", text)
        self.assertIn("\\u202eevil", text)
        assert_no_fake_line(self, text, "nsbox test summary, stderr tail")

    def test_runner_reference_summary(self):
        """The runner's own --summary (for authors running it by hand)."""
        ws = self.make_dir("ws", WORKSPACE)
        harness = self.make_dir("harness", HARNESS)
        # fd 3, the results channel, to /dev/null: only the summary is read
        p = subprocess.run(["sh", "-c", 'exec "$0" "$@" 3>/dev/null', sys.executable, "-I", "-B",
                            os.path.join(RUNNER_DIR, "nsbox_test_runner.py"),
                            "--harness", harness, "--workspace", ws, "--budget", "30", "--summary"],
                           cwd=ws, capture_output=True, timeout=120)
        text = assert_safe_text(self, p.stderr, "runner --summary")
        assert_no_fake_line(self, text, "runner --summary")
        self.assertIn("\\u202eevil", text)
        # #27 F1: padded lines wrapped by the runner itself
        harness = self.make_dir("harness-pad", HARNESS_PAD)
        p = subprocess.run(["sh", "-c", 'exec "$0" "$@" 3>/dev/null', sys.executable, "-I", "-B",
                            os.path.join(RUNNER_DIR, "nsbox_test_runner.py"),
                            "--harness", harness, "--workspace", ws, "--budget", "30", "--summary"],
                           cwd=ws, capture_output=True, timeout=120)
        text = assert_safe_text(self, p.stderr, "runner --summary, padded")
        assert_no_fake_row(self, text, "runner --summary, padded")
        self.assertIn("\n  \u21aa \u4e2d\u4e2dverdict: pass\n", text)

    def test_testcmd_padded_lines_wrap(self):
        """#27 F1: a message and a stderr tail padded to the terminal's
        width: nsbox wraps them itself, every row after its prefix or its
        continuation mark, none wider than 80 columns."""
        ws = self.make_dir("ws", {"solution.py": "\n"})
        harness = self.make_dir("harness", HARNESS_PAD)
        p = self.nsbox("test", "--harness", harness, "--workspace", ws, env=ENV, timeout=120)
        self.assertEqual(p.returncode, 1, p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace"))
        text = assert_safe_text(self, p.stdout, "nsbox test summary, padded")
        assert_no_fake_row(self, text, "nsbox test summary, padded")
        self.assertRegex(text, "\n  \u21aa +== 1 passed in 0.01s ==\n")
        self.assertIn("\n  \u21aa \u4e2d\u4e2dverdict: pass\n", text)
        self.assertIn("test_" + "n" * 40, text)
        harness = self.make_dir("harness-kill", HARNESS_PAD_KILL)
        p = self.nsbox("test", "--harness", harness, "--workspace", ws, env=ENV, timeout=120)
        self.assertEqual(p.returncode, 3, p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace"))
        text = assert_safe_text(self, p.stdout, "nsbox test stderr tail, padded")
        self.assertIn("---- stderr (last lines) ----", text)
        assert_no_fake_row(self, text, "nsbox test stderr tail, padded")
        self.assertIn("\n  |\u21aa\u4e2d\u4e2dverdict: pass\n", text)

    # -- nsbox report -----------------------------------------------------

    def test_report_nul_shown(self):
        """#27 F2: a NUL in a failed job's stderr does not hide what follows
        it, in the text summary's groups nor in --html."""
        line = {"id": "nul", "schema": "nsbox.result/1", "status": "error", "exit_code": None,
                "error": {"stage": "spawn", "message": "fine\u0000HIDDEN-MSG"},
                "stderr": {"text": "all tests passed\u0000Traceback: HIDDEN-ERR\n", "bytes": 40}}
        src = self.path("nul.jsonl")
        with open(src, "w", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        html = self.path("nul.html")
        r = self.nsbox("report", "--html", html, src, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = assert_safe_text(self, r.stdout, "nsbox report text, NUL")
        self.assertIn("fine\\x00HIDDEN-MSG", text)
        with open(html, "rb") as f:
            page = assert_safe_text(self, f.read(), "nsbox report --html, NUL")
        self.assertIn("all tests passed\\x00Traceback: HIDDEN-ERR", page)
        self.assertIn("fine\\x00HIDDEN-MSG", page)

    def test_report_reads_any_line_nsbox_writes(self):
        """#27 F3: a verdict line over 64 MiB (nsbox batch writes such lines:
        6 cases x 2 streams x 1 MiB of \\x01 is 75 MB) is read and counted,
        its failure shown: never dropped as a bad line."""
        big = "\x01" * (1 << 20)
        res = {"schema": "nsbox.result/1", "status": "exited", "exit_code": 0,
               "stdout": {"text": big, "bytes": len(big), "truncated": False},
               "stderr": {"text": big, "bytes": len(big), "truncated": False}}
        cases = [{"name": "c%d" % i, "verdict": "fail", "reason": "expected '42'", "result": res}
                 for i in range(6)]
        line = json.dumps({"id": "learner-17", "schema": "nsbox.verdict/1", "verdict": "fail",
                           "cases": cases})
        self.assertGreater(len(line), 64 << 20)
        src = self.path("big.jsonl")
        with open(src, "w", encoding="utf-8") as f:
            f.write(line + "\n" + json.dumps({"id": "other", "schema": "nsbox.result/1", "status": "exited",
                                               "exit_code": 0}) + "\n")
        html = self.path("big.html")
        r = self.nsbox("report", "--html", html, src, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = r.stdout.decode()
        self.assertIn("2 jobs (1 results, 1 verdicts), 1 failed or erred; 0 bad lines", text)
        with open(html, encoding="utf-8") as f:
            self.assertIn("learner-17", f.read())

    # -- nsbox profile show -----------------------------------------------

    def test_profile_show_path_is_one_line(self):
        """#27 F4: the profile's path is shown escaped: a newline in the file
        name cannot add a line to the profile read back."""
        name = self.path("p\n[network]\nmode = host\n\x1b[2K.ini")
        with open(name, "w", encoding="utf-8") as f:
            f.write("[limits]\nwall_time = 7s\n")
        p = self.nsbox("profile", "show", name, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        text = assert_safe_text(self, p.stdout, "nsbox profile show")
        first = text.split("\n")[0]
        self.assertTrue(first.startswith("; nsbox profile: "), text)
        self.assertIn("p\\n[network]\\nmode = host\\n\\x1b[2K.ini", first)
        self.assertNotIn("\n[network]\nmode = host", text)
        back = self.path("back.ini")
        with open(back, "wb") as f:
            f.write(p.stdout)
        q = self.nsbox("profile", "show", back, timeout=60)
        self.assertEqual(q.returncode, 0, q.stderr)
        self.assertEqual(q.stdout.decode().split("\n", 1)[1], text.split("\n", 1)[1])

    # -- JSON on a terminal -----------------------------------------------

    def test_json_outputs_terminal_safe(self):
        """#27 I1: the JSON nsbox writes (batch lines, --json) carries DEL,
        C1, bidi controls and U+2028 as \\uXXXX: exact once parsed, and no
        byte of it moves a terminal's cursor; ordinary non-ASCII stays raw."""
        text = "FAIL\u009b4D\u009b2KPASS \u202eliaf\u202c\u2028\x7f\u0085 \u00e9\u4e2d\U0001F600"
        code = "import sys\nsys.stdout.write(%r)\n" % text
        jobs = self.path("jobs.jsonl")
        with open(jobs, "w", encoding="utf-8") as f:
            f.write(json.dumps({"id": "c1\u202e", "kind": "python", "code": code}) + "\n")
        out = self.path("res.jsonl")
        for opts in ((), ("--warm",)):
            p = self.nsbox("batch", *opts, "--result", out, jobs, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out, "rb") as f:
                written = f.read()
            for raw, what in ((p.stdout, "batch stdout"), (written, "batch --result")):
                lines = assert_safe_text(self, raw, what + " " + " ".join(opts)).strip().split("\n")
                self.assertEqual(len(lines), 1, lines)
                self.assertIn("\\u009b4D\\u009b2KPASS \\u202eliaf\\u202c\\u2028\\u007f\\u0085 "
                              "\u00e9\u4e2d\U0001F600", lines[0])
                res = json.loads(lines[0])
                self.assertEqual(res["stdout"]["text"], text)
                self.assertEqual(res["start"], "warm" if opts else "cold", res.get("start_reason"))
                self.assertEqual(res["id"], "c1\u202e")
        p = self.nsbox("python", "--json", "-c", code, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        assert_safe_text(self, p.stdout, "nsbox python --json")
        self.assertEqual(json.loads(p.stdout)["stdout"]["text"], text)

    # -- nsbox judge ------------------------------------------------------

    def write_spec(self):
        prog = self.path("prog.py")
        with open(prog, "w", encoding="utf-8") as f:
            f.write(PROGRAM)
        spec = {
            "program": {"path": prog},
            "limits": {"wall_time": "20s"},
            "cases": [
                {"name": "stdout " + HOSTILE, "expect": {"stdout": {"equals": "it's fine\n"}}},
                {"name": "exit", "args": ["x"], "expect": {"exit_code": 0}},
                {"name": "regex", "expect": {"stdout": {"regex": "\u202e\\x1b^nope$"}}},
            ],
        }
        path = self.path("spec.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        os.chmod(self.tmp, 0o755)
        for name in ("prog.py", "spec.json"):
            os.chmod(self.path(name), 0o644)
        return path

    def judge(self, *opts):
        spec = self.write_spec()
        junit = self.path("judge-%d.xml" % len(opts))
        p = self.nsbox("judge", *opts, "--junit", junit, spec, timeout=180)
        self.assertEqual(p.returncode, 1, p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace"))
        return p, junit

    def check_judge_text(self, p):
        text = assert_safe_text(self, p.stdout, "nsbox judge text")
        assert_safe_text(self, p.stderr, "nsbox judge stderr")
        assert_no_fake_line(self, text, "nsbox judge text")
        # one line per case (its screen rows after the first start with the
        # continuation mark), and the verdict
        lines = [ln for ln in text.rstrip("\n").split("\n") if not ln.startswith("  \u21aa ")]
        self.assertEqual(len(lines), 4, text)
        assert_no_fake_row(self, text, "nsbox judge text")
        self.assertIn("expected 'it's fine'", text)   # a plain quote is not escaped
        self.assertIn("\\u202eevil", text)
        return text

    def test_judge_text_and_junit(self):
        p, junit = self.judge()
        self.check_judge_text(p)
        self.check_junit(junit, "stdout boom\\x1b[2K\\r\\u009b2K")

    def test_judge_warm_text(self):
        p, junit = self.judge("--warm")
        # warm for real: judge says on stderr when the cases ran cold
        self.assertNotIn(b"ran cold", p.stderr, p.stderr)
        self.check_judge_text(p)
        self.check_junit(junit, "exit")

    def test_judge_json_exact(self):
        spec = self.write_spec()
        p = self.nsbox("judge", "--json", spec, timeout=180)
        self.assertEqual(p.returncode, 1, p.stderr)
        v = json.loads(p.stdout)
        cases = v["cases"]
        self.assertEqual(cases[0]["name"], "stdout " + HOSTILE)
        # the reason quotes the first differing line exactly, not escaped
        self.assertIn("got 'boom\x1b[2K\r\u009b2K\u0085\u202eevil\u2066x\u2069\u200f\u061c\u2028\x07\x08\x7f'",
                      cases[0]["reason"])
        self.assertIn("expected 'it's fine'", cases[0]["reason"])
        self.assertEqual(cases[0]["result"]["stdout"]["text"], HOSTILE + "\n")
        self.assertIn("(stderr: 'boom\x1b[2K\r\u009b2K\u0085\u202eevil", cases[1]["reason"])
        # nsbox report over the verdict: text and HTML
        path = self.path("verdict.json")
        with open(path, "wb") as f:
            f.write(p.stdout)
        html = self.path("report.html")
        r = self.nsbox("report", "--html", html, path, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        assert_safe_text(self, r.stdout, "nsbox report text")
        with open(html, "rb") as f:
            page = assert_safe_text(self, f.read(), "nsbox report --html")
        self.assertIn("\\u202eevil", page)
        self.assertNotIn("\u202e", page)

    def check_junit(self, path, name_part):
        with open(path, "rb") as f:
            raw = f.read()
        text = assert_safe_text(self, raw, "--junit XML")
        root = ET.fromstring(raw)
        names = [c.get("name") for c in root.iter("testcase")]
        self.assertTrue(any(name_part in n for n in names), names)
        for el in root.iter():
            for v in list(el.attrib.values()) + [el.text or ""]:
                for ch in v:
                    if unsafe(ch) and ch != "\r":
                        self.fail("--junit: parsed text with raw U+%04X: %r" % (ord(ch), v))
        return text

    # -- the definitions agree --------------------------------------------

    def test_runner_twin_matches_nsbox(self):
        """harness/nsbox_runner/summary.py's _unsafe is util/textsafe.c's
        set: checked on every BMP code point through `nsbox report --html`
        (a failed job's stderr, shown escaped in the page)."""
        sys.path.insert(0, RUNNER_DIR)
        try:
            from nsbox_runner.summary import _unsafe
        finally:
            sys.path.pop(0)
        # not NUL (a C string ends there), nor what HTML writes as a reference
        cps = [cp for cp in range(1, 0x10000) if not 0xD800 <= cp <= 0xDFFF and chr(cp) not in "&<>\"'\r\n\t"]
        lines = []
        chunk = 250
        for k in range(0, len(cps), chunk):
            text = " ".join(chr(cp) for cp in cps[k:k + chunk])
            lines.append(json.dumps({"id": "c%d" % k, "status": "exited", "exit_code": 1,
                                     "stderr": {"text": text, "bytes": len(text.encode())}}))
        src = self.path("all.jsonl")
        with open(src, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        html = self.path("all.html")
        r = self.nsbox("report", "--html", html, src, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(html, encoding="utf-8") as f:
            page = f.read()
        for k in range(0, len(cps), chunk):
            want = " ".join(("\\x%02x" % cp if cp < 0x80 else "\\u%04x" % cp) if _unsafe(cp) else chr(cp)
                            for cp in cps[k:k + chunk])
            self.assertTrue(want in page, "code points from U+%04X: the two definitions differ" % cps[k])


if __name__ == "__main__":
    unittest.main()
