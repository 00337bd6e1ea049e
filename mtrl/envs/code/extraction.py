"""Pulling a Python program out of a model completion.

A completion is whatever the sampler decoded: markdown with fenced blocks, a bare
function with prose around it, chat-template residue, truncated output, invalid
UTF-8 or nothing at all. `extract_code` turns it into the program text the
environment runs, or "" when there is no code.

Rules, in order:
1. Decode: bytes are UTF-8 with errors='replace'; lone surrogates become '?', NUL
   bytes are dropped, newlines are normalised, and the text is capped at
   `max_chars` (before any parsing, so enormous outputs cost bounded time).
2. Fenced blocks (``` or ~~~, tagged python/py/python3 or untagged; an unterminated
   last fence runs to the end of the text): the first block that defines the wanted
   function (one that parses before a broken draft), else the first block with any
   `def`, else the first block; functions, classes and imports it uses from the
   other blocks (a helper shown in a block of its own) are put before it.
3. No fenced Python block: bare code. Chunks start at column-0 `def`, `class`,
   `import`, `from x import` or decorator lines and end at the next column-0 line
   that is not code (prose, example calls, stray fences). A chunk that does not
   parse is extended past column-0 lines (docstrings written flush left), then
   trimmed of trailing prose lines; if neither helps it is kept as written so that
   a real syntax error reaches the diagnostics instead of being silently dropped.
4. Of code that parses, only definitions survive at top level: imports, functions,
   classes, constant assignments to names (not stores into an item or attribute)
   and import-only `try` blocks. `if __name__ ==
   "__main__":` blocks, prints, asserts, loops and assignments that call the code's
   own functions (example usage, test code) are dropped.
"""

from __future__ import annotations

import ast
import keyword
import re
import textwrap

# Rule 1, shared by every environment (math and tool decode completions too).
from mtrl.envs.text import MAX_COMPLETION_CHARS, decode_completion  # noqa: F401

_PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3", "ipython", "pycon"})
_FENCE_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<tag>[\w+.#-]*)[^\n`]*$")
_CODE_START = re.compile(
    r"^(?:async[ \t]+def\b|def\b|class\b|import[ \t]+\w|from[ \t]+[\w.]+[ \t]+import\b|@\w)")
_PARSE_FAILURES = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)
_MAX_EXTENSIONS = 20  # bounded repair work per chunk, whatever the input size
_MAX_TRIMMED_LINES = 10
# Calls that mark a top-level assignment as example usage rather than a definition.
_USAGE_CALLS = frozenset({"print", "input", "exit", "quit", "breakpoint", "help"})


def extract_code(completion: str | bytes, function_name: str | None = None,
                 max_chars: int = MAX_COMPLETION_CHARS) -> str:
    """The program in `completion`, preferring code that defines `function_name`.

    Returns "" when the completion holds no code. Code that does not parse is
    returned as written (fenced) or as its best chunk (bare), so that the caller's
    syntax check reports the model's own error.
    """
    if function_name is not None and not function_name.isidentifier():
        raise ValueError(f"function_name must be an identifier, got {function_name!r}")
    text = decode_completion(completion, max_chars)
    if not text.strip():
        return ""
    blocks, outside = _scan_fences(text)
    if blocks:
        chosen = _choose_block(blocks, function_name)
        code = _clean_fenced(chosen)
        helpers = _helpers_from_other_blocks(code, [b for b in blocks if b is not chosen])
        return "\n\n".join(helpers + [code]) if helpers and code else code
    return _extract_bare(outside)


def defines_function(code: str, name: str) -> bool:
    """Whether `code` has a line `def name(` (textual; works on unparseable code)."""
    return re.search(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(name)}[ \t]*\(",
                     code, re.MULTILINE) is not None


def try_parse(code: str) -> ast.Module | None:
    """`ast.parse(code)`, or None for anything the parser rejects or chokes on."""
    try:
        return ast.parse(code)
    except _PARSE_FAILURES:
        return None


def _scan_fences(text: str) -> tuple[list[str], list[str]]:
    """(fenced Python blocks, the text's lines with every fenced line masked).

    Masked lines read "```", which ends any bare chunk, so code inside a block of
    another language never leaks into bare extraction."""
    lines = text.split("\n")
    outside = list(lines)
    blocks: list[str] = []
    i = 0
    while i < len(lines):
        opening = _FENCE_OPEN.match(lines[i])
        if opening is None:
            i += 1
            continue
        first = i
        fence, tag = opening.group("fence"), opening.group("tag").lower()
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        body: list[str] = []
        i += 1
        while i < len(lines) and not closing.match(lines[i]):
            body.append(lines[i])
            i += 1
        i += 1  # past the closing fence (or the end, for an unterminated block)
        outside[first:i] = ["```"] * (min(i, len(lines)) - first)
        if tag in _PYTHON_TAGS:
            blocks.append(textwrap.dedent("\n".join(body)))
    return blocks, outside


def _choose_block(blocks: list[str], function_name: str | None) -> str:
    if function_name is not None:
        defining = [b for b in blocks if defines_function(b, function_name)]
        # A chatty answer may show a broken draft before its fix: prefer code that parses.
        for block in defining:
            if try_parse(block) is not None:
                return block
        if defining:
            return defining[0]
    for block in blocks:
        if re.search(r"^[ \t]*(?:async[ \t]+)?def[ \t]", block, re.MULTILINE):
            return block
    return blocks[0]


def _helpers_from_other_blocks(code: str, others: list[str]) -> list[str]:
    """Functions, classes and imports from the other fenced blocks that `code` uses but
    does not define (instruct models put a helper in its own block), in block order;
    nothing when `code` does not parse."""
    tree = try_parse(code) if code else None
    if tree is None:
        return []
    defined = {n.name for n in tree.body
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    defined |= {(a.asname or a.name).split(".")[0] for n in tree.body
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - defined
    helpers: list[str] = []
    for block in others:
        other = try_parse(block)
        if other is None:
            continue
        for node in other.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = {node.name}
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = {(a.asname or a.name).split(".")[0] for a in node.names}
            else:
                continue
            if names & used:
                helpers.append(ast.get_source_segment(block, node) or "")
                used -= names
    return [h for h in helpers if h]


def _clean_fenced(block: str) -> str:
    tree = try_parse(block)
    if tree is not None:
        return _keep_definitions(block, tree)
    # Unparseable: the model's real (broken) code, unless it is plainly not code.
    if re.search(r"^[ \t]*(?:async[ \t]+def|def|class|import|from|return)\b", block,
                 re.MULTILINE):
        return block.strip()
    return ""


def _extract_bare(lines: list[str]) -> str:
    pieces: list[str] = []
    i = 0
    while i < len(lines):
        if not _CODE_START.match(lines[i]):
            i += 1
            continue
        end = _chunk_end(lines, i)
        pieces.append(_repair_chunk(lines, i, end))
        i = max(end, i + 1)
    code = "\n\n".join(piece for piece in pieces if piece.strip())
    tree = try_parse(code)
    return _keep_definitions(code, tree) if tree is not None else code.strip()


def _is_column0_text(line: str) -> bool:
    """A non-blank line starting at column 0 that cannot continue an indented block."""
    return bool(line) and not line[0].isspace() and not line.startswith(("#", ")", "]", "}"))


def _chunk_end(lines: list[str], start: int) -> int:
    """Index of the first column-0 line after `start` that is not code (or a new chunk)."""
    j = start + 1
    # Decorators and a `def` line split across columns stay with their header.
    while j < len(lines) and lines[j - 1].startswith("@") and _CODE_START.match(lines[j]):
        j += 1
    while j < len(lines) and not _is_column0_text(lines[j]):
        j += 1
    return j


def _repair_chunk(lines: list[str], start: int, end: int) -> str:
    chunk = "\n".join(lines[start:end])
    if try_parse(chunk) is not None:
        return chunk
    # Extend past column-0 lines: a flush-left docstring or continuation line.
    later_ends = [k for k in range(end + 1, len(lines)) if _is_column0_text(lines[k])]
    for k in (later_ends[:_MAX_EXTENSIONS] + [len(lines)]):
        extended = "\n".join(lines[start:k])
        if try_parse(extended) is not None:
            return extended
    # Trim trailing prose lines (indented commentary after the code).
    stop = end
    for _ in range(_MAX_TRIMMED_LINES):
        if stop - 1 <= start or not _looks_like_prose(lines[stop - 1]):
            break
        stop -= 1
        trimmed = "\n".join(lines[start:stop])
        if try_parse(trimmed) is not None:
            return trimmed
    return chunk


def _looks_like_prose(line: str) -> bool:
    stripped = line.strip()
    if not stripped:
        return True
    first_word = re.match(r"[A-Za-z_]+", stripped)
    return (first_word is not None and not keyword.iskeyword(first_word.group())
            and not any(ch in stripped for ch in "=()[]{}:")
            and len(stripped.split()) >= 3)


def _keep_definitions(code: str, tree: ast.Module) -> str:
    defined = {node.name for node in tree.body
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    kept = [node for node in tree.body if _is_definition(node, defined)]
    if not kept:
        return ""
    dropped_lines: set[int] = set()
    for node in tree.body:
        if node not in kept:
            dropped_lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    lines = code.split("\n")
    parts = []
    for node in kept:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        last = node.end_lineno or node.lineno
        if dropped_lines.intersection(range(first, last + 1)):
            # A kept statement shares a line with a dropped one (`import os; print(1)`).
            parts.append(ast.unparse(node))
        else:
            parts.append("\n".join(lines[first - 1:last]))
    return "\n\n".join(part.rstrip() for part in parts).strip("\n")


def _is_definition(node: ast.stmt, defined: set[str]) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef,
                         ast.ClassDef)):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not all(_binds_names_only(target) for target in targets):
            return False  # a store into an object (`x[k] = v`, `m.f = g`) defines nothing
        return not any(isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)
                       and (sub.func.id in defined or sub.func.id in _USAGE_CALLS)
                       for sub in ast.walk(node))
    if isinstance(node, ast.Try):
        # `try: import numpy / except ImportError: ...` is setup, not test code.
        return all(isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass, ast.Assign))
                   for stmt in node.body)
    return False


def _binds_names_only(target: ast.AST) -> bool:
    """An assignment target that only binds names (`a`, `a, *b`), not an item or
    attribute of an object."""
    if isinstance(target, ast.Name):
        return True
    if isinstance(target, ast.Starred):
        return _binds_names_only(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_binds_names_only(element) for element in target.elts)
    return False
