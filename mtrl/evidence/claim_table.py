"""A claims table as a marked block of a markdown file that tools/reproduce.py --table
rewrites, one row per claim (a claim's row is replaced when it is run again, rows of
other claims are kept in their order)."""

from __future__ import annotations

BEGIN = "<!-- reproductions:begin (tools/reproduce.py rewrites this block) -->"
END = "<!-- reproductions:end -->"
HEADER = ("| claim | source | metric (split) | seeds | baseline | treatment | "
          "difference, 95% CI | verdict | guard | minutes | record |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
SECTION = "\n## Reproductions (tools/reproduce.py)\n\n"


def _mean_values(values) -> str:
    found = [v for v in values if v is not None]
    shown = " / ".join("-" if v is None else f"{v:.3g}" for v in values)
    return f"{sum(found) / len(found):.3g} ({shown})" if found else "failed"


def _metric(record: dict) -> str:
    """The claim's metric, or each arm's own measure of it when they differ (Arm.metric:
    e.g. "test_success vs test_pass@2", treatment first)."""
    base, treat = (arm.get("metric", record["metric"]) for arm in record["arms"].values())
    return record["metric"] if base == treat else f"{treat} vs {base}"


def table_row(record: dict, record_path: str) -> str:
    """One markdown row of a claim record (claims.claim_record); a run below the
    claim's size says so beside its verdict."""
    base, treat = list(record["arms"].items())
    d = record["difference"]
    ci = ("n/a" if d["ci95"] is None
          else f"{d['mean']:+.3g} [{d['ci95'][0]:+.3g}, {d['ci95'][1]:+.3g}]")
    guard = record.get("guard")
    guard_cell = "-" if not guard else (
        f"{guard['metric']} {guard['mean']:+.3g}: {guard['status']}"
        if guard["mean"] is not None else f"{guard['metric']}: {guard['status']}")
    scale = record.get("scale") or {}
    reduced = "" if scale.get("full_size", True) else f" (reduced scale: {_reduced(record)})"
    still = record.get("did_not_move") or []
    if still and record["verdict"] != "uninformative":
        reduced += f" ({', '.join(still)} never rose above its warm start)"
    cells = [record["claim"], record["source"].split(";")[0].split(",")[0],
             f"{_metric(record)} ({record.get('metric_on', record['split'])})",
             ",".join(str(s) for s in record["seeds"]),
             f"{base[0]}: {_mean_values(base[1]['values'])}",
             f"{treat[0]}: {_mean_values(treat[1]['values'])}",
             ci, f"**{record['verdict']}**{reduced}", guard_cell, f"{record['minutes']:.0f}",
             f"`{record_path}`"]
    return "| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |"


def update_table(text: str, record: dict, record_path: str) -> str:
    """`text` (a markdown file's) with the claim's row written into the marked block (the
    block appended as a new section when the file has none)."""
    row = table_row(record, record_path)
    if BEGIN not in text:
        return text.rstrip("\n") + "\n" + SECTION + f"{BEGIN}\n{HEADER}\n{row}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    if END not in rest:
        raise ValueError(f"the table file: {BEGIN!r} without {END!r}")
    block, tail = rest.split(END, 1)
    rows = [line for line in block.strip().splitlines()[2:] if line.startswith("| ")]
    key = f"| {record['claim']} |"
    if any(r.startswith(key) for r in rows):
        rows = [row if r.startswith(key) else r for r in rows]
    else:
        rows.append(row)
    return head + BEGIN + "\n" + HEADER + "\n" + "\n".join(rows) + "\n" + END + tail


def _reduced(record: dict) -> str:
    """What a record below its claim's size changed: steps, seeds, extra overrides."""
    scale = record["scale"]
    parts = []
    if scale.get("steps") != scale.get("claim_steps"):
        parts.append(f"{scale.get('steps')} of {scale.get('claim_steps')} steps")
    claim_seeds = scale.get("claim_seeds")
    if claim_seeds is not None and list(record["seeds"]) != list(claim_seeds):
        parts.append(f"seeds {','.join(map(str, record['seeds']))} of "
                     f"{','.join(map(str, claim_seeds))}")
    if scale.get("extra_overrides"):
        parts.append("overrides " + " ".join(scale["extra_overrides"]))
    return ", ".join(parts) or "see the record's scale"
