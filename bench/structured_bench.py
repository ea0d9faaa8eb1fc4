"""What structured notes cost: start-up with schema notes, and changing front matter.

In one run, against one local vault on loopback holding 20 schema notes:

- spawn → ``initialize`` answered and spawn → ``tools/list`` answered, for
  ``teamvault-mcp`` with ``TEAM_VAULT_SCHEMA_DIR`` (it reads and parses the 20 notes,
  importing ruamel.yaml, in a thread) against without it, alternating runs;
- ``frontmatter.update`` (one field set, one removed) and ``frontmatter.read`` of a note
  with 30 front matter fields and a 100 KB body, in-process CPU time.

    .venv/bin/python bench/structured_bench.py [--runs 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from stdio_client import StdioHost

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change
from teamvault_mcp.text import frontmatter

HERE = Path(__file__).resolve().parent

SCHEMA = """# {name}

```yaml schema
metadata:
  schemaName: {name}
  description: Kind {number} of structured note.
  identifierField: slug
  pathTemplate: Kind{number}/${{slug}}.md
  pathComponents: [slug]
fields:
  slug: {{type: string, description: The note's id}}
  title: {{type: string}}
  status: {{type: enum, values: [draft, active, done]}}
  due: {{type: date, optional: true}}
  owners: {{type: array, items: {{type: string}}, default: []}}
  score: {{type: number, minimum: 0, maximum: 10, optional: true}}
```
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as scratch, LocalVault(Path(scratch) / "vault") as vault:
        store = vault.store
        with store.write() as db:
            change = Change(db, vault.project_id, store.owner_of(vault.project_id))
            for number in range(20):
                text = SCHEMA.format(name=f"kind_{number}", number=number)
                store.create(change, f"schemas/kind_{number}.md", text.encode(), None)
        env = {
            "TEAM_VAULT_URL": vault.url,
            "TEAM_VAULT_API_KEY": vault.api_key,
            "TEAM_VAULT_PROJECT_ID": vault.project_id,
            "TEAM_VAULT_CACHE_DIR": "off",
            "PYTHONPATH": str(HERE.parent),
        }
        measured: dict[str, dict[str, list[float]]] = {
            name: {"initialize": [], "tools/list": []} for name in ("without", "with")
        }
        for _ in range(runs):
            for name, extra in (("without", {}), ("with", {"TEAM_VAULT_SCHEMA_DIR": "schemas/"})):
                host = StdioHost([sys.executable, "-m", "teamvault_mcp"], {**env, **extra})
                measured[name]["initialize"].append(host.initialize() * 1000)
                host.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
                tools = host.receive()["result"]["tools"]
                measured[name]["tools/list"].append((time.perf_counter() - host.started) * 1000)
                host.close()
                assert len(tools) == (18 if name == "without" else 18 + 2 + 20), len(tools)

    fields = "".join(f"field_{n}: value {n}\n" for n in range(28)) + "tags:\n  - a\n  - b\n"
    note = f"---\n{fields}---\n" + ("Body text line.\n" * 6400)
    update_ms, read_ms = [], []
    for _ in range(200):
        started = time.perf_counter()
        changed = frontmatter.update(note, {"field_3": "new", "status": "done"}, ["field_7"], "n.md")
        update_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        frontmatter.read(changed, "n.md")
        read_ms.append((time.perf_counter() - started) * 1000)

    print(f"spawn → answered, median of {runs} alternating runs (20 schema notes in the vault):")
    for name in ("without", "with"):
        init = statistics.median(measured[name]["initialize"])
        listed = statistics.median(measured[name]["tools/list"])
        print(f"  {name:7} TEAM_VAULT_SCHEMA_DIR: initialize {init:.0f} ms, tools/list {listed:.0f} ms")
    print(
        f"front matter of 30 fields, 100 KB body (median of 200): update {statistics.median(update_ms):.2f} ms, "
        f"read {statistics.median(read_ms):.2f} ms"
    )


if __name__ == "__main__":
    main()
