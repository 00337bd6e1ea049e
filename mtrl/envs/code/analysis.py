"""Static analysis of a candidate program: the facts the level reward and the
diagnostics feedback are computed from.

Agents and the program. With one agent, the agent writes the entry point. With two
agents (CoMLRL's roles, Liu et al. 2025, "LLM Collaboration with Multi-Agent
Reinforcement Learning"), agent 1 writes a helper `aux` and agent 2 writes the entry
point, which may call `aux`; each agent owns its function name, so a definition of
the other agent's function is removed from an agent's code before the two are
joined (`aux` code first, then the main code).

All checks use `ast`, not regular expressions, so comments, strings and nested
functions cannot fool them. Syntax errors are found with `compile` (which also
rejects e.g. `return` outside a function) and are reported per agent, with the line
and column inside that agent's own code (column: Python's 1-based offset).
"""

from __future__ import annotations

import ast
import dataclasses

from mtrl.envs.code import ast_walk, helper_flow, rebinding
from mtrl.envs.code.extraction import try_parse
from mtrl.envs.sandbox.types import SyntaxErrorInfo

AUX_NAME = "aux"
# Work units (AST nodes visited, name entries copied or joined) the helper analysis
# may spend on one completion: about 0.3 s of one CPU at most (docs/sandbox.md); an
# honest program of the completion cap's size needs a small fraction of it.
ANALYSIS_BUDGET = 300_000
BUDGET_EXCEEDED = "the code is too costly to analyse"
_COMPILE_FAILURES = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)


@dataclasses.dataclass(frozen=True)
class FunctionCheck:
    """Whether an agent's code defines its function at top level, with `return <value>`."""

    name: str
    defined: bool  # a top-level def with this name exists
    returns_value: bool  # ... and its body (not nested defs) has `return <expr>`

    @property
    def ok(self) -> bool:
        return self.defined and self.returns_value


@dataclasses.dataclass(frozen=True)
class AgentSyntaxError:
    agent: int  # 0-based index of the agent whose code does not compile
    info: SyntaxErrorInfo  # line/column within that agent's code


@dataclasses.dataclass(frozen=True)
class HelperUsage:
    """How the entry point uses `aux` (two agents only), by data flow (helper_flow.py,
    dataflow.py)."""

    calls_aux: bool  # the entry point's own code refers to aux (or to code that does)
    ignored_calls: tuple[int, ...]  # lines (in main's code, anywhere) of references to aux
    # whose value does not reach every answer of the entry point given after them
    thin_wrapper: bool  # every value it returns is aux's value unchanged
    reaches_return: bool = False  # some reference in it reaches every answer after it
    # Why nothing here is vouched for: what runs may not be this def (rebinding.py), or
    # the analysis ran past its work budget (BUDGET_EXCEEDED).
    rebound: str = ""
    work: int = 0  # work units the analysis spent (ast_walk.Budget)

    @property
    def uses_result(self) -> bool:
        return self.calls_aux and self.reaches_return and not self.ignored_calls


@dataclasses.dataclass(frozen=True)
class CandidateAnalysis:
    """Everything known about one joint action before running it."""

    codes: tuple[str, ...]  # per agent, extracted code (after ownership filtering)
    program: str  # the joined program sent to the sandbox
    functions: tuple[FunctionCheck, ...]  # per agent: aux (2 agents), then the entry point
    syntax_error: AgentSyntaxError | None
    helper: HelperUsage | None  # None with one agent

    def __post_init__(self):
        if len(self.codes) != len(self.functions):
            raise ValueError("CandidateAnalysis needs one FunctionCheck per agent")

    @property
    def num_agents(self) -> int:
        return len(self.codes)

    @property
    def main(self) -> FunctionCheck:
        return self.functions[-1]

    @property
    def aux(self) -> FunctionCheck | None:
        return self.functions[0] if self.num_agents == 2 else None

    @property
    def syntax_ok(self) -> bool:
        return self.syntax_error is None


def role_function_names(num_agents: int, entry_point: str) -> tuple[str, ...]:
    """The function each agent owns: (entry_point,) or ("aux", entry_point)."""
    if num_agents == 1:
        return (entry_point,)
    if num_agents == 2:
        if entry_point == AUX_NAME:
            raise ValueError(f"entry point may not be named {AUX_NAME!r} with two agents")
        return (AUX_NAME, entry_point)
    raise ValueError(f"code environments support 1 or 2 agents, got {num_agents}")


def syntax_error_of(code: str) -> SyntaxErrorInfo | None:
    """The first compile error of `code`, or None when it compiles."""
    try:
        compile(code, "<candidate>", "exec", dont_inherit=True)
    except SyntaxError as error:  # includes IndentationError
        return SyntaxErrorInfo(line=int(error.lineno or 1), column=int(error.offset or 0),
                               message=str(error.msg))
    except _COMPILE_FAILURES as error:
        # Pathological nesting or NUL bytes: the parser gives up without a location.
        return SyntaxErrorInfo(line=1, column=0,
                               message=f"{type(error).__name__}: code too complex to compile")
    return None


def top_level_function(tree: ast.Module | None, name: str
                       ) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The last top-level definition of `name` (the one Python would bind)."""
    if tree is None:
        return None
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node
    return found


def function_source(code: str, name: str) -> str | None:
    """The source lines (decorators included) of top-level function `name`, or None."""
    function = top_level_function(try_parse(code), name)
    if function is None:
        return None
    first = min([function.lineno] + [d.lineno for d in function.decorator_list])
    return "\n".join(code.split("\n")[first - 1:function.end_lineno or function.lineno])


def check_function(code: str, name: str) -> FunctionCheck:
    function = top_level_function(try_parse(code), name)
    if function is None:
        return FunctionCheck(name, defined=False, returns_value=False)
    returns = any(isinstance(node, ast.Return) and node.value is not None
                  for node in ast_walk.own_nodes(function))
    return FunctionCheck(name, defined=True, returns_value=returns)


def helper_usage(main_code: str, entry_point: str, helper: str = AUX_NAME,
                 budget_units: int = ANALYSIS_BUDGET) -> HelperUsage:
    """How the entry point defined in `main_code` uses `helper` (see HelperUsage):
    every reference to the helper in the code, wherever it is (helper_flow.py).
    Past `budget_units` of work the analysis stops and vouches for nothing."""
    tree = try_parse(main_code)
    function = top_level_function(tree, entry_point)
    if function is None:
        return HelperUsage(calls_aux=False, ignored_calls=(), thin_wrapper=False)
    budget = ast_walk.Budget(budget_units)
    try:
        flow = helper_flow.program_flow(tree, function, helper, budget)
        thin = flow.calls_aux and helper_flow.passes_through(function, helper, budget)
        rebound = rebinding.why_rebound(tree, function, budget)
    except ast_walk.BudgetExceeded:
        return HelperUsage(calls_aux=False, ignored_calls=(), thin_wrapper=False,
                           rebound=BUDGET_EXCEEDED, work=budget.used)
    return HelperUsage(calls_aux=flow.calls_aux, ignored_calls=flow.ignored_lines,
                       thin_wrapper=thin, reaches_return=flow.used, rebound=rebound,
                       work=budget.used)


def remove_top_level_functions(code: str, names: set[str]) -> str:
    """`code` without top-level definitions of `names` (unchanged if it does not parse)."""
    tree = try_parse(code)
    if tree is None:
        return code
    doomed = [node for node in tree.body
              if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names]
    if not doomed:
        return code
    lines = code.split("\n")
    drop: set[int] = set()
    for node in doomed:
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        drop.update(range(first, (node.end_lineno or node.lineno) + 1))
    kept = [line for number, line in enumerate(lines, start=1) if number not in drop]
    return "\n".join(kept).strip("\n")


def analyze_candidate(codes: tuple[str, ...], entry_point: str) -> CandidateAnalysis:
    """Joins the agents' extracted codes into one program and checks its structure.

    codes: per agent, the code from `extract_code` (1 agent: main; 2: aux, main).
    """
    names = role_function_names(len(codes), entry_point)
    owned = tuple(remove_top_level_functions(code, set(names) - {name})
                  for code, name in zip(codes, names))
    functions = tuple(check_function(code, name) for code, name in zip(owned, names))
    syntax_error = None
    for agent, code in enumerate(owned):
        info = syntax_error_of(code)
        if info is not None:
            syntax_error = AgentSyntaxError(agent, info)
            break
    program = "\n\n\n".join(code for code in owned if code.strip())
    if syntax_error is None and program:
        info = syntax_error_of(program)  # parts compile alone but not together: rare
        if info is not None:
            syntax_error = AgentSyntaxError(len(codes) - 1, info)
    helper = helper_usage(owned[-1], entry_point) if len(codes) == 2 else None
    return CandidateAnalysis(codes=owned, program=program, functions=functions,
                             syntax_error=syntax_error, helper=helper)


def agent_programs(analysis: CandidateAnalysis) -> tuple[str, str]:
    """(main code, helper code) of a two-agent action, for a sandbox run that loads
    the helper's code in a process of its own (Program.helper_code): a helper that
    patches or replaces the entry point at run time (a profile hook rebinding it,
    a write to its caller's globals) then cannot make a wrong main pass, so the
    tests, and the level-4 bonuses that need a passed test, judge main's code as
    it ran. The helper's top-level imports are repeated for main (in one joined
    program it could use them); an import binds library names only.
    """
    if analysis.num_agents != 2:
        raise ValueError("agent_programs needs a two-agent analysis")
    helper, main = analysis.codes
    tree = try_parse(helper)
    imports = [ast.get_source_segment(helper, node) or "" for node in (tree.body if tree else [])
               if isinstance(node, (ast.Import, ast.ImportFrom))
               and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")]
    return "\n".join([*imports, main]).strip("\n"), helper
