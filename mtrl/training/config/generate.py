"""Writes defaults_table.py, the embedded default config, from the section dataclasses
and the registries' options (sections.py): `python -m mtrl.training.config.generate`.

base_config() reads the table so that loading an experiment config imports no jax
(the dataclasses' modules do); tests/training/config/test_defaults.py fails, naming
this command, when a dataclass or an entry's options change and the table does not.
"""

from __future__ import annotations

import pathlib
import pprint

from mtrl.training.config.sections import SPECS, TOP_LEVEL, section_defaults, section_types

TABLE = pathlib.Path(__file__).with_name("defaults_table.py")
HEADER = '''"""The embedded default config, generated from the section dataclasses and the
registries' options by `python -m mtrl.training.config.generate`; do not edit it (each
default is written once, where its section or option is defined: sections.py).

SECTIONS: {section: {field: default}}. NONE_TYPES: {"section.field": type} of the
fields whose default is None (unset), so the command line can set them.
"""

'''


def table_source() -> str:
    sections = {name: section_defaults(name) for name in SPECS}
    none_types = {f"{name}.{field}": kind for name in SPECS
                  for field, kind in sorted(section_types(name).items())}
    return (HEADER + f"TOP_LEVEL = {pprint.pformat(TOP_LEVEL, width=88, sort_dicts=False)}\n\n"
            f"SECTIONS = {pprint.pformat(sections, width=88, sort_dicts=False)}\n\n"
            f"NONE_TYPES = {pprint.pformat(none_types, width=88, sort_dicts=False)}\n")


def main() -> None:
    TABLE.write_text(table_source())
    print(f"wrote {TABLE}")


if __name__ == "__main__":
    main()
