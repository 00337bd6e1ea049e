"""`python -m mtrl.envs.sandbox`: one JSON verdict, exit 0 unless the sandbox failed."""

import json
import subprocess
import sys


def run_cli(*args):
    done = subprocess.run([sys.executable, "-m", "mtrl.envs.sandbox", *map(str, args)],
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout


def test_assert_file_one_test_per_statement(tmp_path):
    (tmp_path / "p.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "t.py").write_text("assert add(1, 2) == 3\n# comment\nassert add(1, 1) == 3\n"
                                   "assert (add(\n    2, 2) == 4)\n")
    code, out = run_cli("--program", tmp_path / "p.py", "--tests", tmp_path / "t.py",
                        "--timeout", "1")
    verdict = json.loads(out)
    assert code == 0 and verdict["passed"] is False
    assert [t["status"] for t in verdict["tests"]] == ["passed", "failed", "passed"]
    assert verdict["isolation"]["network"] in ("netns", "socket-refused")


def test_humaneval_check_with_entry_point(tmp_path):
    (tmp_path / "p.py").write_text("def inc(x):\n    return x + 1\n")
    (tmp_path / "t.py").write_text("def check(candidate):\n    assert candidate(1) == 2\n"
                                   "    assert candidate(-1) == 0\n")
    code, out = run_cli("--program", tmp_path / "p.py", "--tests", tmp_path / "t.py",
                        "--entry-point", "inc")
    verdict = json.loads(out)
    assert code == 0 and verdict["passed"] is True and len(verdict["tests"]) == 1


def test_syntax_error_and_timeout_still_exit_zero(tmp_path):
    (tmp_path / "bad.py").write_text("def f(:\n")
    (tmp_path / "spin.py").write_text("def f():\n    while True:\n        pass\n")
    (tmp_path / "t.py").write_text("assert f() == 1\n")
    code, out = run_cli("--program", tmp_path / "bad.py", "--tests", tmp_path / "t.py")
    verdict = json.loads(out)
    assert code == 0 and verdict["syntax_error"]["line"] == 1 and not verdict["passed"]
    code, out = run_cli("--program", tmp_path / "spin.py", "--tests", tmp_path / "t.py",
                        "--timeout", "0.5")
    assert code == 0 and json.loads(out)["tests"][0]["status"] == "timeout"


def test_missing_file_is_a_sandbox_failure(tmp_path):
    code, out = run_cli("--program", tmp_path / "absent.py", "--tests", tmp_path / "absent.py")
    assert code == 2 and "could not run" in json.loads(out)["error"]


def test_candidate_name_option(tmp_path):
    (tmp_path / "p.py").write_text("def max(a, b):\n    return a if a > b else b\n")
    (tmp_path / "t.py").write_text("assert max(1, 2, 3) == 'never'\nassert max(4, 2) == 4\n")
    code, out = run_cli("--program", tmp_path / "p.py", "--tests", tmp_path / "t.py",
                        "--candidate-name", "max")
    tests = json.loads(out)["tests"]
    assert code == 0 and [t["status"] for t in tests] == ["error", "passed"]
    assert tests[0]["error_type"] == "TypeError"  # the candidate's max takes two arguments


def test_program_that_is_not_utf8_is_the_candidates_error(tmp_path):
    (tmp_path / "p.py").write_bytes(b"def f():\n    return '\xff\xfe'\n")
    (tmp_path / "t.py").write_text("assert f() == 1\n")
    code, out = run_cli("--program", tmp_path / "p.py", "--tests", tmp_path / "t.py")
    verdict = json.loads(out)
    assert code == 0 and verdict["passed"] is False and verdict["error"] == ""
    assert verdict["syntax_error"] is not None
    assert verdict["tests"][0]["status"] == "error"


def test_program_with_a_coding_declaration_is_decoded_like_python(tmp_path):
    (tmp_path / "p.py").write_bytes(b"# -*- coding: latin-1 -*-\ndef f():\n    return '\xe9'\n")
    (tmp_path / "t.py").write_text("assert f() == '\\u00e9'\n")
    code, out = run_cli("--program", tmp_path / "p.py", "--tests", tmp_path / "t.py")
    assert code == 0 and json.loads(out)["passed"] is True


def test_huge_non_ascii_error_message_is_a_verdict(tmp_path):
    # Escaped, this message is larger than a verdict frame: it must be shortened,
    # not torn (which cost the slot and made the sandbox "fail").
    (tmp_path / "p.py").write_text("def f():\n    raise ValueError('\u00e9' * 800)\n")
    (tmp_path / "t.py").write_text("assert f() == 1\n")
    code, out = run_cli("--program", tmp_path / "p.py", "--tests", tmp_path / "t.py")
    test = json.loads(out)["tests"][0]
    assert code == 0 and (test["status"], test["error_type"]) == ("error", "ValueError")
