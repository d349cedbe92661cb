"""Every action of the inspector over real HTTP, checked against the store's API."""

from __future__ import annotations

import re

import httpx

from tests.conftest import scan_for, text_needles

from .conftest import NEEDLE, SCRIPT, TEA, Served, csrf_of


def _post(client: httpx.Client, path: str, **data: str) -> httpx.Response:
    csrf = csrf_of(client.get("/namespaces").text)  # any page with a form
    return client.post(path, data={"csrf": csrf, **data})


def test_forget_shows_the_undo_token_and_undo_restores(
    served: Served, client: httpx.Client
) -> None:
    tea, mem = served.ids.tea, served.inspector.mem
    r = _post(client, "/action/forget", by="id", value=tea, next="/")
    assert r.status_code == 303 and r.headers["location"] == "/"
    assert mem.get(tea) is None
    page = client.get("/").text
    assert NEEDLE not in page  # gone from the timeline
    token = re.search(r'class="undo-token">([^<]+)</code>', page)
    assert token is not None and token.group(1) == served.inspector.receipts[0].token
    assert 'class="undo">Undo</button>' in page
    hits = client.get("/search", params={"q": NEEDLE}).text
    assert NEEDLE not in hits.split("<main>")[1].replace(f'value="{NEEDLE}"', "")

    r = _post(client, "/action/undo", token=token.group(1), next="/")
    assert r.status_code == 303
    back = mem.get(tea)
    assert back is not None and back.content == TEA
    page = client.get("/").text
    assert NEEDLE in page and "undo-token" not in page  # the receipt went with its undo
    # A token used twice is a clear error, not a crash.
    again = _post(client, "/action/undo", token=token.group(1))
    assert again.status_code in (400, 404) and 'class="problem"' in again.text


def test_erase_needs_both_confirmations(served: Served, client: httpx.Client) -> None:
    sid, mem = served.ids.script, served.inspector.mem
    confirm = client.get("/erase", params={"by": "id", "value": sid})
    assert confirm.status_code == 200 and "irreversible" in confirm.text
    for partial in (
        {},
        {"understand": "yes"},
        {"confirm_word": "ERASE"},
        {"understand": "yes", "confirm_word": "erase"},
    ):
        r = _post(client, "/action/erase", by="id", value=sid, **partial)
        assert r.status_code == 400, partial
        assert "nothing was erased" in r.text
        assert mem.get(sid) is not None
    r = _post(client, "/action/erase", by="id", value=sid, understand="yes", confirm_word="ERASE")
    assert r.status_code == 200 and "Erased 1 memory" in r.text
    assert mem.get(sid) is None
    assert client.get(f"/memory/{sid}").status_code == 404
    assert [t["count"] for t in mem.tombstones()][-1] >= 1
    # The erased text is in no file of the data dir (memory.db, WAL, indexes, archive).
    mem.flush()
    assert scan_for(served.data_dir, text_needles("pasted <script>alert(1)")) == []


def test_pin_unpin_archive_restore(served: Served, client: httpx.Client) -> None:
    tea, mem = served.ids.tea, served.inspector.mem
    assert _post(client, "/action/pin", id=tea).status_code == 303
    assert [m.id for m in mem.pinned()] == [tea]
    assert "mark pin" in client.get(f"/memory/{tea}").text
    assert _post(client, "/action/unpin", id=tea).status_code == 303
    assert mem.pinned() == []

    assert _post(client, "/action/archive", id=tea).status_code == 303
    m = mem.get(tea)
    assert m is not None and m.archived
    assert NEEDLE not in client.get("/").text
    assert NEEDLE in client.get("/", params={"archived": "only"}).text
    assert _post(client, "/action/restore", id=tea).status_code == 303
    m = mem.get(tea)
    assert m is not None and not m.archived
    assert NEEDLE in client.get("/").text


def test_grant_and_revoke_a_namespace(served: Served, client: httpx.Client) -> None:
    mem = served.inspector.mem
    r = _post(client, "/action/grant", namespace="team", agent="bob")
    assert r.status_code == 303 and r.headers["location"] == "/namespaces"
    assert mem.namespace("team").members() == ["bob"]
    page = client.get("/namespaces").text
    assert "team" in page and "<li>bob" in page
    assert _post(client, "/action/revoke", namespace="team", agent="bob").status_code == 303
    assert mem.namespace("team").members() == []
    # The owner's own access cannot be revoked: the API's error, shown with its message.
    r = _post(client, "/action/revoke", namespace="team", agent="default")
    assert r.status_code == 400 and "cannot be revoked" in r.text


def test_bad_input_is_an_error_page_not_a_crash(served: Served, client: httpx.Client) -> None:
    assert _post(client, "/action/forget", by="nonsense", value="x").status_code == 400
    assert _post(client, "/action/pin", id="no-such-memory").status_code == 404
    assert _post(client, "/action/explode", id="x").status_code == 404
    assert client.get("/", params={"page": "two"}).status_code == 400
    assert client.get("/facts", params={"as_of": "yesterday"}).status_code == 400
    assert client.get("/memory/nope").status_code == 404


def test_no_plaintext_on_disk_after_a_session_of_actions(
    served: Served, client: httpx.Client
) -> None:
    tea = served.ids.tea
    for path, data in (
        ("/action/pin", {"id": tea}),
        ("/action/archive", {"id": tea}),
        ("/action/restore", {"id": tea}),
        ("/action/forget", {"by": "about", "value": "tea"}),
    ):
        assert _post(client, path, **data).status_code == 303
    _post(client, "/action/undo", token=served.inspector.receipts[0].token)
    client.get("/search", params={"q": NEEDLE})
    client.get("/documents", params={"q": "heron"})
    client.get(f"/memory/{tea}")
    served.inspector.mem.flush()
    needles = [*text_needles(NEEDLE), *text_needles(SCRIPT), *text_needles("heron migration")]
    assert scan_for(served.data_dir, needles) == []
