"""The inspector's gate over real HTTP: token once, cookie, Host, CSRF, headers, escaping."""

from __future__ import annotations

import re

import httpx

from agentzero_store.ui.security import COOKIE, CSP

from .conftest import Served, csrf_of


def test_without_the_cookie_every_request_is_401(served: Served) -> None:
    with served.client(login=False) as c:
        for path in ("/", "/search?q=tea", "/facts", "/static/ui.css", f"/memory/{served.ids.tea}"):
            assert c.get(path).status_code == 401, path
        r = c.post("/action/forget", data={"by": "id", "value": served.ids.tea})
        assert r.status_code == 401
        c.cookies.set(COOKIE, "not-the-session")
        assert c.get("/").status_code == 401
    assert served.inspector.mem.get(served.ids.tea) is not None


def test_the_token_works_once_and_becomes_a_strict_httponly_cookie(served: Served) -> None:
    with served.client(login=False) as c:
        assert c.get("/?token=wrong").status_code == 401
        r = c.get(f"/?token={served.keys.login_token}")
        assert r.status_code == 303
        assert r.headers["location"] == "/"  # the token leaves the address bar
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}=")
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert served.keys.login_token not in cookie
        assert c.get("/").status_code == 200  # the cookie opens the pages
    with served.client(login=False) as other:
        assert other.get(f"/?token={served.keys.login_token}").status_code == 401  # used


def test_the_token_is_spent_only_on_a_redirect_that_could_be_built(served: Served) -> None:
    """A login URL with a path the Location header cannot carry as typed (not Latin-1)
    still signs in, back to that path: the token was once spent before the answer failed
    to build, locking the person out until a restart."""
    with served.client(login=False) as c:
        r = c.get(f"/caf\u00e9/\u20ac?token={served.keys.login_token}&page=1")
        assert r.status_code == 303, r.text
        assert r.headers["location"] == "/caf%C3%A9/%E2%82%AC?page=1"
        assert r.headers["set-cookie"].startswith(f"{COOKIE}=")
        assert c.get("/").status_code == 200  # signed in
    with served.client(login=False) as other:
        assert other.get(f"/?token={served.keys.login_token}").status_code == 401  # spent


def test_a_login_path_of_two_slashes_redirects_within_the_app(served: Served) -> None:
    with served.client(login=False) as c:
        r = c.get(f"{served.base}//evil.example/x?token={served.keys.login_token}")
        assert r.status_code == 303 and r.headers["location"] == "/"  # not another site


def test_a_foreign_host_header_is_refused(served: Served) -> None:
    port = served.keys.port
    with served.client(login=False) as c:
        # The login token is refused under a rebound name (and stays unused) ...
        r = c.get(f"/?token={served.keys.login_token}", headers={"Host": f"evil.example:{port}"})
        assert r.status_code == 400
        assert c.get(f"/?token={served.keys.login_token}").status_code == 303
        # ... and so is every request with the cookie.
        for host in (f"evil.example:{port}", "127.0.0.1", f"127.0.0.1:{port + 1}", "localhost"):
            assert c.get("/", headers={"Host": host}).status_code == 400, host
        assert c.get("/", headers={"Host": f"localhost:{port}"}).status_code == 200
        assert c.get("/").status_code == 200


def test_security_headers_and_no_cors(served: Served, client: httpx.Client) -> None:
    for path in ("/", "/static/ui.css", "/memory/nope"):
        r = client.get(path, headers={"Origin": "http://evil.example"})
        assert r.headers["content-security-policy"] == CSP
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer"
        assert not [h for h in r.headers if h.lower().startswith("access-control-")]
    with served.client(login=False) as c:  # refusals carry them too
        assert c.get("/").headers["content-security-policy"] == CSP
    # No inline script or style: the CSP would block them, so none may be needed.
    page = client.get(f"/memory/{served.ids.tea}").text
    assert "<style" not in page and "style=" not in page
    assert re.findall(r"<script[^>]*>", page) == ['<script src="/static/ui.js" defer>']


def test_a_post_without_the_csrf_token_is_403_and_changes_nothing(
    served: Served, client: httpx.Client
) -> None:
    tea = served.ids.tea
    for data in ({"id": tea}, {"id": tea, "csrf": "wrong"}):
        assert client.post("/action/pin", data=data).status_code == 403
        assert (
            client.post("/action/forget", data={**data, "by": "id", "value": tea}).status_code
            == 403
        )
    assert [m.id for m in served.inspector.mem.pinned()] == []
    assert served.inspector.mem.get(tea) is not None
    csrf = csrf_of(client.get(f"/memory/{tea}").text)
    r = client.post("/action/pin", data={"id": tea, "csrf": csrf, "next": f"/memory/{tea}"})
    assert r.status_code == 303 and r.headers["location"] == f"/memory/{tea}"
    assert [m.id for m in served.inspector.mem.pinned()] == [tea]
    # ``next`` only leads back into the app.
    for away in ("//evil.example/", "/\\evil.example/", "https://evil.example/", "/x\n"):
        r = client.post("/action/unpin", data={"id": tea, "csrf": csrf, "next": away})
        assert r.headers["location"] == "/", away


def test_memory_text_is_escaped_everywhere(served: Served, client: httpx.Client) -> None:
    sid = served.ids.script
    pages = [
        client.get("/").text,
        client.get("/search", params={"q": "pasted chat", "mode": "keyword"}).text,
        client.get(f"/memory/{sid}").text,
        client.get(f"/memory/{served.ids.tea}").text,  # the graph labels its neighbour
        client.get("/decay").text,
        client.get("/search", params={"q": "<script>alert(2)</script>"}).text,  # the query
    ]
    for page in pages:
        assert "<script>alert(" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[0]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[2]
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in pages[5]


def test_no_secret_in_reprs(served: Served) -> None:
    keys, settings = served.keys, served.inspector.settings
    for secret in (keys.login_token, keys.session, keys.csrf):
        assert secret not in repr(keys)
    assert "correct horse" not in repr(settings)
