"""Code extraction from chatty instruct-model answers: prose around several
fenced blocks, where the right program is not simply the first block."""

from mtrl.envs.code.extraction import extract_code

HELPER_SPLIT = """Sure! First, a helper that checks primality:

```python
def is_prime(n):
    if n < 2:
        return False
    return all(n % d for d in range(2, int(n ** 0.5) + 1))
```

Now the main function uses it:

```python
def count_primes(xs):
    return sum(1 for x in xs if is_prime(x))
```

Example usage:

```python
print(count_primes([2, 3, 4]))  # 2
```

```bash
python solution.py
```
"""

DRAFT_THEN_FIX = """Here is a first attempt:

```python
def add(a, b):
    return a +
```

Oops, that has a typo. The corrected version:

```python
def add(a, b):
    return a + b
```
"""

USAGE_FIRST = """You can call it like this:

```python
result = add(2, 3)
print(result)
```

where `add` is defined as:

```python
def add(a, b):
    return a + b
```
"""


def test_helper_from_an_earlier_block_is_kept_with_the_entry_point():
    code = extract_code(HELPER_SPLIT, "count_primes")
    namespace = {}
    exec(compile(code, "<x>", "exec"), namespace)  # noqa: S102 - our own test text
    assert namespace["count_primes"]([2, 3, 4, 9, 11]) == 3
    assert "print" not in code and "python solution.py" not in code


def test_a_block_that_parses_wins_over_a_broken_draft():
    code = extract_code(DRAFT_THEN_FIX, "add")
    assert code == "def add(a, b):\n    return a + b"


def test_usage_block_before_the_definition_is_skipped():
    assert extract_code(USAGE_FIRST, "add") == "def add(a, b):\n    return a + b"


def test_a_single_broken_block_still_surfaces_its_syntax_error():
    text = "Here:\n```python\ndef add(a, b):\n    return a +\n```\nDone."
    assert extract_code(text, "add") == "def add(a, b):\n    return a +"
