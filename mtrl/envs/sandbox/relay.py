"""Two agents: the judge's side of main's calls of its helper.

Main's process asks the judge ({"aux": name, "args", "kwargs", "id"}); the judge
passes the call to the helper's process on the helper's own socket and the answer
back to main ({"aux": answer, "id": id}: main's threads each get their own), as
JSON it never rebuilds. What the level reward reads is counted here, from what
ran, never from what main says:

* `returned`: calls the helper answered with a value. A call that raised, or one
  made while the helper's code had failed to load, counts nothing.
* `derived`: main's answers (replies to the judge's calls) that came after at
  least one such value during that call and equal none of them: main computed
  something of its own rather than handing aux's value on.
"""

from __future__ import annotations

import json
from typing import Any

from mtrl.envs.sandbox import codec
from mtrl.envs.sandbox.remote import CandidateLink

MESSAGE_CHARS = 2000


def _dumps(message: Any) -> bytes:
    return json.dumps(message, ensure_ascii=False, allow_nan=True,
                      separators=(",", ":")).encode("utf-8", "surrogatepass")


class HelperRelay:
    """Relays and counts main's helper calls for one program (judge.Judge)."""

    def __init__(self, budget_items: int):
        self.budget_items = budget_items  # for rebuilding a value to compare it
        self.returned = 0
        self.derived = 0
        self._values: list[Any] = []  # values returned since main's last reply (trees)

    def relay(self, link: CandidateLink, request: dict[str, Any]) -> bytes:
        """The frame that answers main's `request` (the helper's answer).

        Raises codec.ProtocolError when the helper's answer cannot be re-encoded
        within the judge's memory: the candidate's fault, never the judge's own."""
        answer = self._answer(link, request)
        if "r" in answer:
            self.returned += 1
            self._values.append(answer["r"])
        call_id = request.get("id")
        try:
            return _dumps({"aux": answer, "id": call_id if type(call_id) is int else None})
        except MemoryError:
            raise codec.ProtocolError("the helper's answer exhausted the judge's memory") from None

    def reply_arrived(self) -> list[Any]:
        """The helper's values since main's previous reply, for the reply that just
        arrived (prefetched and skipped ones included); starts the next call's."""
        values, self._values = self._values, []
        return values

    def judge_reply(self, values: list[Any], tree: Any, value: Any) -> None:
        """Counts main's answer (`tree` as sent, `value` as rebuilt) as derived when
        the helper returned during its call and it equals none of those values."""
        if values and not any(self._same(helper, tree, value) for helper in values):
            self.derived += 1

    def _same(self, helper: Any, tree: Any, value: Any) -> bool:
        try:
            if json.dumps(helper, sort_keys=True) == json.dumps(tree, sort_keys=True):
                return True  # also NaN, which == never equals
            return bool(codec.from_plain(helper, 0, codec.Budget(self.budget_items)) == value)
        except Exception:  # noqa: BLE001 - not rebuildable or not comparable: not the same
            return False

    @staticmethod
    def _answer(link: CandidateLink, request: dict[str, Any]) -> dict[str, Any]:
        try:
            if link.helper_hello is None:
                link.helper_hello = json.loads(link.receive(helper=True))
            hello = link.helper_hello
            if type(hello) is not dict or "names" not in hello:
                kind, detail = next(iter(hello.items()), ("load_error", "")) if (
                    type(hello) is dict) else ("load_error", "")
                return {"e": ["NameError", f"the helper's code did not load ({kind}: {detail})"[
                    :MESSAGE_CHARS]]}
            call = {"call": request.get("aux"), "args": request.get("args", {"$tuple": []}),
                    "kwargs": request.get("kwargs", {"$dict": []})}
            link.send(_dumps(call), helper=True)
            reply = json.loads(link.receive(helper=True))
        except (EOFError, OSError, ValueError, RecursionError, codec.ProtocolError) as error:
            return {"e": ["RuntimeError", f"the helper process ended ({type(error).__name__})"]}
        except MemoryError:  # decoding what the candidate sent: its doing, not the judge's
            return {"e": ["RuntimeError", "the helper's reply exhausted the judge's memory"]}
        if type(reply) is not dict or ("r" not in reply and "e" not in reply):
            return {"e": ["RuntimeError", "malformed reply from the helper"]}
        return {"e": reply["e"]} if "e" in reply else {"r": reply["r"]}
