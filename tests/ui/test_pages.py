"""What the pages show: timeline, search with ranks per signal, facts and their history,
decay curves, the graph, documents, health and the polled background jobs."""

from __future__ import annotations

import html
import json
import re
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from agentzero_store import MemoryEntry
from agentzero_store.memory.records import KINDS
from tests.conftest import FAST, PASSPHRASE

from .conftest import NEEDLE, Served, csrf_of, seed, serving


def test_timeline_pages_and_filters(served: Served, client: httpx.Client) -> None:
    mem = served.inspector.mem
    for i in range(30):
        mem.add_turn("chat-7", "user", f"turn number {i:02d}")
    page = client.get("/").text
    rows = re.findall(r'<tr class="memory" data-id="([0-9a-f]+)"', page)
    newest = [m.id for m in mem.memories(limit=25)]
    assert rows == newest  # newest first, one page
    assert re.search(r'href="/\?[^"]*page=1">older', page)
    second = re.findall(r'data-id="([0-9a-f]+)"', client.get("/", params={"page": 1}).text)
    assert second == [m.id for m in mem.memories(limit=25, offset=25)]
    only = client.get("/", params={"conversation": "chat-7", "type": "episodic"}).text
    assert len(re.findall(r'<tr class="memory"', only)) == 25
    assert NEEDLE not in only
    semantic = client.get("/", params={"type": "semantic"}).text
    assert NEEDLE in semantic and "turn number" not in semantic


def test_timeline_filters_by_kind(served: Served, client: httpx.Client) -> None:
    mem = served.inspector.mem
    # A row the agent noted itself, written below the layer (as `memory append` does).
    noted = mem.store.append(MemoryEntry("the agent noted a heron", kind="self_noted"))
    mem.adopt()
    mem.archive(served.ids.script)
    page = client.get("/").text
    for kind in KINDS:  # the select offers every stored kind
        assert f'<option value="{kind}"' in page, kind

    def ids(**params: str) -> list[str]:
        r = client.get("/", params=params)
        assert r.status_code == 200, r.text
        return re.findall(r'<tr class="memory" data-id="([0-9a-f]+)"', r.text)

    assert ids(kind="self_noted") == [noted]
    granted = ids(kind="granted")
    assert served.ids.tea in granted and noted not in granted
    assert served.ids.script not in granted  # archived now: its kind changed
    assert ids(kind="recalled") == []
    # Kind "archived" lists the archived ones without also asking for archived=only.
    assert ids(kind="archived") == [served.ids.script]
    assert ids(kind="archived", archived="include") == [served.ids.script]
    selected = client.get("/", params={"kind": "self_noted"}).text
    assert '<option value="self_noted" selected>' in selected
    r = client.get("/", params={"kind": "dreamt"})
    assert r.status_code == 400 and "kind must be one of" in r.text


def test_search_shows_each_hits_rank_per_signal(served: Served, client: httpx.Client) -> None:
    for mode in ("", "keyword"):
        page = client.get("/search", params={"q": f"{NEEDLE} tea", "mode": mode}).text
        first = re.search(r'<tr class="hit" data-id="([0-9a-f]+)">(.*?)</tr>', page, re.S)
        assert first is not None and first.group(1) == served.ids.tea
        assert re.search(r"keyword #1", first.group(2)), first.group(2)
    # A mode that needs an embedder the server has not: the API's error and hint.
    r = client.get("/search", params={"q": "tea", "mode": "semantic"})
    assert r.status_code == 400 and 'class="problem"' in r.text and "embedder" in r.text


def test_facts_now_as_of_and_history(served: Served, client: httpx.Client) -> None:
    page = client.get("/facts").text
    believed = page.split("<h2>Every version</h2>")[0]
    assert '<td class="object">Lisbon</td>' in believed and "Porto" not in believed
    assert re.search(r"Porto</a> \(0\.90\) from 2020-01-01.*replaced 2024-01-01", page, re.S)
    then = client.get("/facts", params={"as_of": "2022-06-01"}).text.split("Every version")[0]
    assert '<td class="object">Porto</td>' in then and "Lisbon" not in then
    history = client.get(f"/facts/{served.ids.porto}").text
    assert "replaced" in history and "believed now" in history
    assert re.search(r"<td>supersede</td><td>by=" + served.ids.lisbon, history)
    assert client.get("/facts/nope").status_code == 404


def test_an_extracted_fact_links_to_the_turns_it_came_from(
    served: Served, client: httpx.Client
) -> None:
    mem = served.inspector.mem
    turn = mem.add_turn("chat", "user", "I moved to Reykjavik.", speaker="Noor")
    mem.extract(conversation_id="chat")
    (fact,) = mem.facts(subject="Noor")
    page = client.get(f"/facts/{fact.id}").text
    assert f'<td class="sources"><a href="/memory/{turn}">turn</a>' in page
    assert "stated" in client.get(f"/facts/{served.ids.porto}").text  # asserted by hand


def test_decay_curve_and_marks(served: Served, client: httpx.Client) -> None:
    mem = served.inspector.mem
    page = client.get(f"/memory/{served.ids.tea}").text
    points = re.search(r'<polyline points="([^"]+)" class="r-line', page)
    assert points is not None
    ys = [float(p.split(",")[1]) for p in points.group(1).split()]
    assert len(ys) == 37 and ys == sorted(ys) and ys[-1] > ys[0]  # it fades (y grows down)
    r_now = round(100 * mem.retrievability(served.ids.tea))
    assert f'<strong class="r-now">{r_now}%</strong>' in page
    mem.pin(served.ids.tea)
    page = client.get(f"/memory/{served.ids.tea}").text
    assert 'class="r-line held"' in page and "pinned: loaded in every context pack" in page
    decay = client.get("/decay").text
    assert re.search(NEEDLE + r".*?mark pin", decay, re.S)


def test_graph_draws_typed_edges_with_confidence(served: Served, client: httpx.Client) -> None:
    page = client.get(f"/memory/{served.ids.tea}").text
    svg = page.split('<svg class="graph"')[1].split("</svg>")[0]
    assert 'class="edge causal"' in svg and 'class="edge entity"' in svg
    assert re.search(r">causal 0\.\d\d</text>", svg)
    assert f'href="/memory/{served.ids.script}"' in svg  # the neighbour is a link
    assert ">tea</text>" in svg  # the entity node
    lisbon = client.get(f"/memory/{served.ids.lisbon}").text
    assert 'class="edge supersedes"' in lisbon


def test_documents_search_and_best_chunk(served: Served, client: httpx.Client) -> None:
    page = client.get("/documents", params={"q": "herons estuary"}).text
    link = re.search(r'<a href="(/documents/report-1\?[^"]+)">Heron report</a>', page)
    assert link is not None
    doc = client.get(link.group(1).replace("&amp;", "&")).text
    best = re.search(r'<mark id="best-chunk">(.*?)</mark>', doc, re.S)
    assert best is not None and "herons" in best.group(1).lower()
    assert client.get("/documents/none-such").status_code == 404


SUBFOLDER_IDS = ("travel/lisbon.md", "notes/a b?c#d%e.md", "x/../y.md")


def test_documents_from_subfolders_open_by_link_and_by_either_spelling(
    data_dir: Path,
) -> None:
    ids = seed(data_dir)
    from rag.store import DocumentStore

    with DocumentStore.open(data_dir, passphrase=PASSPHRASE, config=FAST, create=False) as docs:
        for i, doc_id in enumerate(SUBFOLDER_IDS):
            docs.ingest(doc_id, f"Pelican sightings, note {i}.", title=f"Pelicans {i}")
    with serving(data_dir, ids) as served:
        client = served.client()
        page = client.get("/documents", params={"q": "pelican sightings"}).text
        for i, doc_id in enumerate(SUBFOLDER_IDS):
            link = re.search(rf'<a href="(/documents/[^"]+)">Pelicans {i}</a>', page)
            assert link is not None, doc_id
            got = client.get(html.unescape(link.group(1)))
            assert got.status_code == 200 and f"note {i}." in got.text, doc_id
            assert f"<code>{html.escape(doc_id)}</code>" in got.text
            encoded = client.get("/documents/" + quote(doc_id, safe=""))
            assert encoded.status_code == 200 and f"note {i}." in encoded.text, doc_id
        plain = client.get("/documents/travel/lisbon.md")  # as typed, "/" unescaped
        assert plain.status_code == 200 and "note 0." in plain.text
        assert client.get("/documents/travel/none-such.md").status_code == 404
        client.close()


def _finish(client: httpx.Client, job_url: str) -> dict[str, Any]:
    wait = threading.Event()
    for _ in range(1200):  # poll as the page's script does (no timed assertion)
        job: dict[str, Any] = client.get(job_url + ".json").json()
        if job["state"] != "running":
            return job
        wait.wait(0.1)
    raise AssertionError(f"job still running: {job}")


def test_health_jobs_run_in_the_background(served: Served, client: httpx.Client) -> None:
    page = client.get("/health").text
    assert "index.jsonl.tantivy" in page  # the document store's BM25 index, covered
    csrf = csrf_of(page)
    assert client.post("/jobs/start/verify", data={}).status_code == 403
    r = client.post("/jobs/start/verify", data={"csrf": csrf})
    assert r.status_code == 303 and r.headers["location"].startswith("/jobs/")
    job_page = client.get(r.headers["location"]).text
    assert 'data-poll="' in job_page and "<progress" in job_page
    job = _finish(client, r.headers["location"])
    assert job["state"] == "done" and job["result"]["clean"] is True, job
    # Told after each check (keys, ledger, databases, log, each index), the last one last.
    assert job["done"] == job["total"] > 5, job
    assert job["step"] == list(job["result"]["checked"]["sidecars"])[-1], job
    r = client.post("/jobs/start/consolidate", data={"csrf": csrf, "dry_run": "1"})
    job = _finish(client, r.headers["location"])
    assert job["state"] == "done" and job["result"]["dry_run"] is True, job
    assert job["step"] and job["total"] >= job["done"] > 0
    assert "verify" in client.get("/health").text


def test_health_shows_the_last_backups_age(
    served: Served, client: httpx.Client, tmp_path: Path
) -> None:
    """A backup notes itself in the user's state dir (when, what it holds; never where,
    never in the store) and the Health page shows its age; before any, it says so."""
    from agentzero_store.ops.backup import backup_store
    from agentzero_store.storage.backup_log import last_backup
    from agentzero_store.storage.credentials import Credential

    before = re.search(r'<p id="last-backup"[^>]*>(.*?)</p>', client.get("/health").text, re.S)
    assert before is not None and "No backup of this store yet" in before.group(1)
    result = backup_store(served.data_dir, Credential.from_passphrase(PASSPHRASE), tmp_path / "b")
    assert result.recorded
    note = last_backup(result.store_id)
    assert note is not None and note["memory_seq"] == result.memory_seq
    assert str(tmp_path) not in json.dumps(note)  # the note never says where
    after = re.search(r'<p id="last-backup"[^>]*>(.*?)</p>', client.get("/health").text, re.S)
    assert after is not None, client.get("/health").text
    shown = after.group(1)
    assert re.search(r"Last backup <strong>\d+ (s|min) ago</strong>", shown), shown
    assert f"memory seq {result.memory_seq}" in after.group(1)


def test_graph_around_an_entity(served: Served, client: httpx.Client) -> None:
    page = client.get(f"/memory/{served.ids.tea}").text
    assert 'href="/graph?entity=tea"' in page
    graph = client.get("/graph", params={"entity": "TEA"}).text  # entities compare folded
    svg = graph.split('<svg class="graph"')[1].split("</svg>")[0]
    assert f'href="/memory/{served.ids.tea}"' in svg
    assert served.ids.script not in svg  # not about tea
    assert re.search(r">entity 1\.00</text>", svg)
    assert client.get("/graph").status_code == 400
    # Found by entity, however many newer memories there are; at most 60 drawn.
    from agentzero_store import Turn

    mem = served.inspector.mem
    mem.add_turns("later", [Turn("user", f"unrelated turn {i}") for i in range(2_100)])
    svg = client.get("/graph", params={"entity": "tea"}).text.split('<svg class="graph"')[1]
    assert f'href="/memory/{served.ids.tea}"' in svg.split("</svg>")[0]
    mem.add_turns("otters", [Turn("user", f"otter fact {i}", speaker="Otto") for i in range(61)])
    many = client.get("/graph", params={"entity": "otto"}).text
    assert "The newest 60 of them (there are more" in many
    assert len(re.findall(r'href="/memory/[0-9a-f]+"', many.split("</svg>")[0])) == 60


def test_forget_a_whole_conversation_from_its_timeline(
    served: Served, client: httpx.Client
) -> None:
    mem = served.inspector.mem
    ids = [mem.add_turn("chat-9", "user", f"message {i}") for i in range(3)]
    page = client.get("/", params={"conversation": "chat-9"}).text
    assert 'id="forget-conversation"' in page
    r = client.post(
        "/action/forget",
        data={"csrf": csrf_of(page), "by": "conversation_id", "value": "chat-9"},
    )
    assert r.status_code == 303
    assert all(mem.get(i) is None for i in ids)
    assert served.inspector.receipts[0].count == 3


def test_an_unpinned_inspector_switches_agents_and_a_pinned_one_refuses(
    unpinned: Served,
) -> None:
    """Plain ``agentzero ui`` lists every agent's memory (never a namespace's or a
    session's scope: those are reached through their agents) and switches on a POST with
    the CSRF token; each agent's forgets keep their Undo in that agent's view."""
    from agentzero_store import AgentMemory
    from agentzero_store.agentmem.namespaces import scope_agent
    from tests.conftest import FAST

    base = unpinned.inspector.mem
    base.namespace("team").grant("a2")
    with base.shared("team") as team:
        team.remember("a namespace note about otters")
    other = base.for_scope("acme", "a2")
    other.remember("a2 keeps otters in the garden")
    other.close()
    c = unpinned.client()
    try:
        page = c.get("/").text
        options = re.findall(r"<option value='([^']+)'", page)
        assert json.dumps(["acme", "a2"]) in options
        assert json.dumps(["default", "default"]) in options
        assert not any("\\u001e" in o or "ns" in json.loads(o)[1] for o in options)
        csrf = csrf_of(page)
        assert c.post("/scope", data={"scope": json.dumps(["acme", "a2"])}).status_code == 403
        assert NEEDLE in c.get("/").text  # nothing switched without the token
        r = c.post("/scope", data={"scope": json.dumps(["acme", "a2"]), "csrf": csrf})
        assert r.status_code == 303
        page = c.get("/").text
        assert "a2 keeps otters" in page and NEEDLE not in page and "namespace note" not in page
        assert re.search(r"acme / a2 \(1\)</option>", page)
        mid = unpinned.inspector.mem.memories()[0].id
        assert c.post("/action/forget", data={"value": mid, "csrf": csrf}).status_code == 303
        assert 'class="undo-token"' in c.get("/").text
        forged = json.dumps(["default", scope_agent("team")])
        r = c.post("/scope", data={"scope": forged, "csrf": csrf})
        assert r.status_code == 400 and "control characters" in r.text
        assert unpinned.inspector.scope == ("acme", "a2")
        c.post("/scope", data={"scope": json.dumps(["default", "default"]), "csrf": csrf})
        page = c.get("/").text
        assert NEEDLE in page and 'class="undo-token"' not in page  # a2's undo stays with a2
    finally:
        c.close()
    with AgentMemory.open(unpinned.data_dir, passphrase=PASSPHRASE, config=FAST) as mem:
        assert mem.get(mid) is None  # the forget happened in a2's memory only
        assert mem.for_scope("acme", "a2").memories() == []


def test_a_pinned_inspector_never_switches(served: Served, client: httpx.Client) -> None:
    page = client.get("/").text
    assert 'action="/scope"' not in page and 'title="pinned by --org/--agent"' in page
    csrf = csrf_of(client.get("/health").text)
    r = client.post("/scope", data={"scope": json.dumps(["acme", "a2"]), "csrf": csrf})
    assert r.status_code == 403 and "pinned" in r.text
    assert served.inspector.scope == ("default", "default")
