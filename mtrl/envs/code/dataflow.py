"""Data flow inside one function: does each helper call's value reach every answer
given after it? (the level reward's helper parts; program-wide view: helper_flow.py)

A *source* is a call whose value carries the helper's (`aux(x)`, a call of a
function that returns aux's value, `map(aux, xs)`: helper_flow.py). A source is *used*
when, on every path on which it ran, each value the function returns (or yields)
afterwards depends on it: through the names it is stored in, or because the answer
was chosen under a condition on it (a helper used as a predicate decides what main
returns). One return it does not reach makes it unused: an overwritten value, a
result dropped, or a value that reaches only a branch the tests need not take.

The analysis is flow-sensitive and conservative towards "unused". One pass over the
statements serves every source at once: each source is a bit, and a state holds per
name the sources it must carry on every path since they ran (`taint`), the sources
that may have run (`reached`) and those the path is control-dependent on (`ctrl`).
A name assigned anew forgets what it carried; a store into an item or attribute of
a name (or a mutating call such as `xs.append(v)` or `heapq.heappush(h, v)`) adds to
it. An `if`/`while`/`for`/`match` on a tainted value taints what its branches assign,
and the code after it when a branch returns, breaks or continues; a `raise` gives no
answer, so a guard that raises is no use. A handler starts from any point of its
`try` body; a `finally` also runs on the paths that return through it (and its own
return replaces theirs). Loops iterate to a fixed point. Nested
functions and lambdas are their own scopes; a function defined here carries what its
body reads from this one. All work is counted against a `Budget`: past it the
analysis stops (BudgetExceeded) rather than spending more time. What it cannot see:
a condition (or an exception) on aux's value that never goes the other way in the
tests, and arithmetic that cancels the value (`0 * aux(x)`).
"""

from __future__ import annotations

import ast

from mtrl.envs.code import ast_walk
from mtrl.envs.code.ast_walk import Budget


class _State:
    """What holds on the paths reaching one program point (module docstring).

    Per source bit: reached (may have run), taint[name] (every path on which the
    source ran leaves its value in `name`), ctrl (every such path depends on it)."""

    __slots__ = ("reached", "taint", "ctrl")

    def __init__(self, reached: int = 0, taint: dict[str, int] | None = None, ctrl: int = 0):
        self.reached, self.taint, self.ctrl = reached, taint if taint is not None else {}, ctrl

    def copy(self, budget: Budget) -> _State:
        budget.spend(1 + len(self.taint))
        return _State(self.reached, dict(self.taint), self.ctrl)

    def same(self, other: _State | None, budget: Budget) -> bool:
        budget.spend(1 + len(self.taint))
        return other is not None and (self.reached, self.ctrl, self.taint) == (
            other.reached, other.ctrl, other.taint)

    def set(self, name: str, mask: int) -> None:
        if mask:
            self.taint[name] = mask
        else:
            self.taint.pop(name, None)


def join(a: _State | None, b: _State | None, budget: Budget) -> _State | None:
    """Paths through `a` or `b`: a source keeps a must-fact where it holds on both,
    or on the one side where the source ran at all (None: no path)."""
    if a is None or b is None:
        return b if a is None else a
    budget.spend(1 + len(a.taint) + len(b.taint))
    only_a, only_b = a.reached & ~b.reached, b.reached & ~a.reached

    def meet(x: int, y: int) -> int:
        return (x & y) | (x & only_a) | (y & only_b)

    taint = {}
    for name in a.taint.keys() | b.taint.keys():
        mask = meet(a.taint.get(name, 0), b.taint.get(name, 0))
        if mask:
            taint[name] = mask
    return _State(a.reached | b.reached, taint, meet(a.ctrl, b.ctrl))


class _Loop:
    __slots__ = ("breaks", "continues")

    def __init__(self):
        self.breaks: list[_State] = []
        self.continues: list[_State] = []

    @property
    def exits(self) -> int:
        return len(self.breaks) + len(self.continues)


class FunctionFlow:
    """The analysis of one function or lambda (`scope`) whose sources are the nodes
    in `bits` (id(node) -> a one-bit mask). After `run()`: `used`, the sources that
    reach every answer given after them, and `reached`, those on any path."""

    def __init__(self, scope: ast.AST, bits: dict[int, int], budget: Budget):
        self.scope, self.bits, self.budget = scope, bits, budget
        self.seen = 0  # sources carried by some answer
        self.bad = 0  # sources that ran before an answer that does not carry them
        self.reached = 0
        self.returns = 0  # returns met (for control dependence)
        self._loops: list[_Loop] = []
        self._finally: list[list[_State]] = []  # per enclosing `finally`: paths leaving through it
        self._generator = any(isinstance(node, (ast.Yield, ast.YieldFrom))
                              for node in ast_walk.own_nodes(scope, budget))

    @property
    def used(self) -> int:
        return self.seen & ~self.bad

    def run(self) -> FunctionFlow:
        if isinstance(self.scope, ast.Lambda):
            state = _State()
            self._answer(self._mask(self.scope.body, state), state)
            return self
        end = self._block(self.scope.body, _State())
        if end is not None and not self._generator:
            self._answer(end.ctrl, end)  # falling off the end returns None
        return self

    # -- answers ---------------------------------------------------------------
    def _answer(self, mask: int, state: _State) -> None:
        self.reached |= state.reached
        self.seen |= state.reached & mask
        self.bad |= state.reached & ~mask

    # -- statements ------------------------------------------------------------
    def _block(self, statements: list[ast.stmt], state: _State | None) -> _State | None:
        for statement in statements:
            if state is None:
                return None  # unreachable code after return/raise/break/continue
            state = self._statement(statement, state)
        return state

    def _statement(self, node: ast.stmt, state: _State) -> _State | None:
        self.budget.spend()
        if isinstance(node, ast.Return):
            mask = self._mask(node.value, state) if node.value is not None else state.ctrl
            if not self._generator:  # a generator's answers are its yields
                self._answer(mask, state)
            self.returns += 1
            self._leave(state)
            return None
        if isinstance(node, ast.Raise):
            self._mask(node.exc, state)
            self._mask(node.cause, state)
            self.reached |= state.reached
            self._leave(state)
            return None
        if isinstance(node, (ast.Break, ast.Continue)):
            if self._loops:
                loop = self._loops[-1]
                (loop.breaks if isinstance(node, ast.Break) else loop.continues).append(state)
            self._leave(state)
            return None
        if isinstance(node, ast.Assign):
            mask = self._mask(node.value, state)
            for target in node.targets:
                self._store(target, mask, state)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self._store(node.target, self._mask(node.value, state), state)
        elif isinstance(node, ast.AugAssign):
            mask = self._mask(node.value, state) | self._mask(node.target, state)
            self._store(node.target, mask, state, strong=False)
        elif isinstance(node, (ast.If, ast.While, ast.For, ast.AsyncFor)):
            return self._control(node, state)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                mask = self._mask(item.context_expr, state)
                if item.optional_vars is not None:
                    self._store(item.optional_vars, mask, state)
            return self._block(node.body, state)
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            return self._try(node, state)
        elif isinstance(node, ast.Match):
            return self._match(node, state)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for part in ast_walk.outer_parts(node):
                self._mask(part, state)
            state.set(node.name, self._closure(node, state))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                state.set((alias.asname or alias.name).split(".")[0], 0)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                self._store(target, 0, state)
        else:  # Expr, Assert, Global, Nonlocal, Pass, TypeAlias
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self._mask(child, state)
        return state

    def _branch(self, state: _State, mask: int) -> _State:
        inner = state.copy(self.budget)
        inner.ctrl |= mask
        return inner

    def _exits(self) -> tuple[int, int]:
        """A count that grows when a return, or a break or continue of the loop
        around the current construct, is met."""
        return self.returns, self._loops[-1].exits if self._loops else 0

    def _after(self, out: _State | None, before: _State, mask: int, exits: tuple[int, int],
               bodies: list[list[ast.stmt]]) -> _State | None:
        """Leaving a construct whose branches ran under `mask`: what they assign
        carries it, and so does what follows when a branch left early."""
        if out is None:
            return None
        early = mask if self._exits() != exits else 0
        out.ctrl = (out.ctrl & ~mask) | before.ctrl | early
        if mask:
            for name in ast_walk.assigned_names(bodies, self.budget):
                out.taint[name] = out.taint.get(name, 0) | (mask & out.reached)
        return out

    def _control(self, node: ast.If | ast.While | ast.For | ast.AsyncFor, state: _State
                 ) -> _State | None:
        exits = self._exits()
        if isinstance(node, ast.If):
            mask = self._mask(node.test, state)
            out = join(self._block(node.body, self._branch(state, mask)),
                       self._block(node.orelse, self._branch(state, mask)), self.budget)
            return self._after(out, state, mask, exits, [node.body, node.orelse])
        is_for = not isinstance(node, ast.While)
        entry = state
        if is_for:
            iter_mask = self._mask(node.iter, entry)
        head: _State | None = entry
        while True:  # to a fixed point (the budget bounds the iterations)
            current = head.copy(self.budget)
            mask = iter_mask | current.ctrl if is_for else self._mask(node.test, current)
            body = self._branch(current, mask)
            if is_for:
                self._store(node.target, mask, body)
            loop, returns = _Loop(), self.returns
            self._loops.append(loop)
            out = self._block(node.body, body)
            self._loops.pop()
            for other in loop.continues:
                out = join(out, other, self.budget)
            if out is not None:
                out.ctrl = (out.ctrl & ~mask) | current.ctrl | (
                    mask if loop.breaks or self.returns != returns else 0)
            new_head = join(entry, out, self.budget)
            if new_head.same(head, self.budget):
                break
            head = new_head
        done = self._block(node.orelse, current)  # the loop ran out normally
        for other in loop.breaks:
            done = join(done, other, self.budget)
        return self._after(done, entry, mask, exits, [node.body, node.orelse])

    def _leave(self, state: _State) -> None:
        """A path that leaves through an enclosing `finally`, which still runs (and
        may answer in place of a return)."""
        if self._finally:
            self._finally[-1].append(state.copy(self.budget))

    def _try(self, node: ast.Try, state: _State) -> _State | None:
        if node.finalbody:
            self._finally.append([])
        # A handler may start after any statement of the body.
        handler_entry: _State | None = state.copy(self.budget)
        current: _State | None = state
        for statement in node.body:
            if current is None:
                break
            current = self._statement(statement, current)
            if current is not None:
                handler_entry = join(handler_entry, current.copy(self.budget), self.budget)
        out = self._block(node.orelse, current)
        for handler in node.handlers:
            begin = handler_entry.copy(self.budget)
            self._mask(handler.type, begin)
            if handler.name:
                begin.set(handler.name, 0)
            out = join(out, self._block(handler.body, begin), self.budget)
        if not node.finalbody:
            return out
        through: _State | None = None
        for leaving in self._finally.pop():
            through = join(through, leaving, self.budget)
        if through is not None:
            through = self._block(node.finalbody, through)
            if through is not None:
                self._leave(through)  # on to the next enclosing `finally`
        if out is None:
            return None
        return self._block(node.finalbody, out)

    def _match(self, node: ast.Match, state: _State) -> _State | None:
        exits = self._exits()
        mask = self._mask(node.subject, state)
        out: _State | None = state.copy(self.budget)  # no case matched
        for case in node.cases:
            inner = self._branch(state, mask)
            for pattern_node in ast.walk(case.pattern):
                self.budget.spend()
                name = getattr(pattern_node, "name", None) or getattr(pattern_node, "rest", None)
                if isinstance(name, str):
                    inner.set(name, mask | inner.ctrl)
            if case.guard is not None:
                inner.ctrl |= self._mask(case.guard, inner)
            out = join(out, self._block(case.body, inner), self.budget)
        return self._after(out, state, mask, exits, [case.body for case in node.cases])

    # -- expressions -----------------------------------------------------------
    def _mask(self, expression: ast.AST | None, state: _State) -> int:
        """The sources `expression`'s value carries (with the path's `ctrl`); marks
        the sources in it as run and applies its `:=` and mutating calls."""
        if expression is None:
            return state.ctrl
        mask = 0
        stack = [expression]
        stores: list[ast.AST] = []
        while stack:
            node = stack.pop()
            self.budget.spend()
            bit = self.bits.get(id(node))
            if bit:
                mask |= bit
                state.reached |= bit
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                mask |= state.taint.get(node.id, 0)
            elif isinstance(node, ast.Lambda):
                mask |= self._closure(node, state)
                stack.extend(ast_walk.outer_parts(node))
                continue
            elif isinstance(node, (ast.NamedExpr, ast.Yield, ast.YieldFrom)) or (
                    isinstance(node, ast.Call) and ast_walk.stores_into(node)):
                stores.append(node)
            stack.extend(ast.iter_child_nodes(node))
        mask |= state.ctrl
        for node in reversed(stores):  # inner first: the walk is preorder
            if isinstance(node, ast.NamedExpr):
                self._store(node.target, self._mask_quiet(node.value, state), state)
            elif isinstance(node, (ast.Yield, ast.YieldFrom)):
                self._answer(self._mask_quiet(node.value, state) if node.value else state.ctrl,
                             state)
            else:
                self._mutating_call(node, state)
        return mask

    def _mask_quiet(self, expression: ast.AST, state: _State) -> int:
        """The sources an already-evaluated expression carries (no side effects)."""
        mask = state.ctrl
        for node in ast_walk.walk_expression(expression, self.budget):
            mask |= self.bits.get(id(node), 0)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                mask |= state.taint.get(node.id, 0)
        return mask

    def _mutating_call(self, call: ast.Call, state: _State) -> None:
        arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
        mask = 0
        for argument in arguments:
            mask |= self._mask_quiet(argument, state)
        if not mask:
            return
        function = call.func
        if isinstance(function, ast.Attribute) and function.attr in ast_walk.MUTATORS:
            self._store(function.value, mask, state, strong=False)
        name = function.attr if isinstance(function, ast.Attribute) else (
            function.id if isinstance(function, ast.Name) else "")
        if name in ast_walk.STORE_INTO_FIRST and call.args:
            self._store(call.args[0], mask, state, strong=False)

    def _closure(self, scope: ast.AST, state: _State) -> int:
        """What a function defined here carries: the names its body reads from here."""
        mask = 0
        for node in ast_walk.walk_bodies(scope, self.budget):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                mask |= state.taint.get(node.id, 0)
        return mask

    def _store(self, target: ast.AST, mask: int, state: _State, strong: bool = True) -> None:
        """Assigns a value carrying `mask` to `target` (names: replaced when `strong`;
        an item or attribute store adds to the name it stores into)."""
        self.budget.spend()
        if isinstance(target, ast.Name):
            state.set(target.id, (mask | state.ctrl) | (0 if strong else state.taint.get(
                target.id, 0)))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._store(element, mask, state, strong)
        elif isinstance(target, ast.Starred):
            self._store(target.value, mask, state, strong)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            if isinstance(target, ast.Subscript):
                mask |= self._mask(target.slice, state)
            base = target.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                state.set(base.id, state.taint.get(base.id, 0) | mask | state.ctrl)
            else:
                self._mask(base, state)
