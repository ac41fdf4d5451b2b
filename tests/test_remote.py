"""The one outbound module: pinned connections, IPv6 forms, redirects (issue 27, item 1).

All traffic stays on loopback: the "public" address a resolver shim claims is
never connected to (the shim answers it only where the check happens and no
connection follows, or the connection hook refuses it), and the stubs listen
on 127.0.0.1.
"""

from __future__ import annotations

import http.server
import socket
import threading

import httpx2
import pytest

from biastest import public, remote, settings
from biastest.errors import GenerationError, PolicyError
from biastest.generate.images import OpenAICompatibleImageGenerator
from biastest.generate.openai_chat import OpenAICompatibleGenerator
from biastest.models.endpoint_lm import EndpointCausalLM
from biastest.remote import http as remote_http
from tests.openai_stub import OpenAIStub

PUBLIC_ADDRESS = "93.184.216.34"  # claimed by the shim for a check only; never connected to
REBIND = "rebind.example.org"


@pytest.fixture
def public_mode(monkeypatch):
    monkeypatch.setattr(public, "_policy", public.decide(host="0.0.0.0", environ={}))
    return public.current()


@pytest.fixture
def private_mode(monkeypatch):
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    return public.current()


class Shim:
    """``socket.getaddrinfo`` for one name: ``answers[i]`` at the i-th lookup (the last one after that).

    Address literals pass through to the real function (the socket layer looks them up too) and are not counted.
    """

    def __init__(self, monkeypatch, answers: list[str], name: str = REBIND) -> None:
        self.answers, self.name, self.calls = answers, name, 0
        self.real = socket.getaddrinfo
        monkeypatch.setattr(socket, "getaddrinfo", self)

    def __call__(self, host, port, *args, **kwargs):
        if host != self.name:
            return self.real(host, port, *args, **kwargs)
        address = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        sockaddr = (address, int(port or 0), 0, 0) if family == socket.AF_INET6 else (address, int(port or 0))
        return [(family, socket.SOCK_STREAM, 6, "", sockaddr)]


@pytest.fixture
def connections(monkeypatch):
    """The addresses the pinned backend connects to; anything but loopback is refused without a packet."""
    seen: list[str] = []
    real = remote_http.httpcore2.SyncBackend.connect_tcp

    def connect(self, host, port, *args, **kwargs):
        seen.append(host)
        if not host.startswith("127."):
            raise remote_http.httpcore2.ConnectError("test: no traffic off loopback")
        return real(self, host, port, *args, **kwargs)

    monkeypatch.setattr(remote_http.httpcore2.SyncBackend, "connect_tcp", connect)
    return seen


# =========================================================================== (a) DNS rebinding
def test_rebinding_public_then_loopback_reaches_no_loopback_stub(public_mode, monkeypatch, connections):
    """The name is public for the check and 127.0.0.1 afterwards: one lookup per request, and the connection goes
    to the address checked (refused by the test hook before any packet), never to the stub."""
    with OpenAIStub() as stub:
        port = int(stub.base_url.rsplit(":", 1)[1].split("/")[0])
        shim = Shim(monkeypatch, [PUBLIC_ADDRESS, "127.0.0.1"])
        with remote.http_client(5.0) as client, pytest.raises(httpx2.ConnectError):
            client.get(f"http://{REBIND}:{port}/v1/models")
        assert shim.calls == 1  # resolved once: the check and the connection share the answer
        assert connections == [PUBLIC_ADDRESS]
        assert stub.requests == []


def test_rebinding_through_a_generator_and_an_endpoint_sends_nothing_to_loopback(public_mode, monkeypatch,
                                                                                   connections):
    """The generator's and the endpoint's address checks (when they are built) see a public address; from then on
    the name says 127.0.0.1: each request is refused on its own lookup, and nothing is sent."""
    with OpenAIStub() as stub:
        port = int(stub.base_url.rsplit(":", 1)[1].split("/")[0])
        base_url = f"http://{REBIND}:{port}/v1"
        shim = Shim(monkeypatch, [PUBLIC_ADDRESS])
        generator = OpenAICompatibleGenerator(base_url, "stub-model")
        endpoint = EndpointCausalLM(base_url, "stub-model", tokenizer=False)
        shim.answers, shim.calls = ["127.0.0.1"], 0
        with pytest.raises(PolicyError) as e:
            generator.list_models()
        assert e.value.message == remote.MSG_PRIVATE_ADDRESS.format(host=REBIND)
        assert shim.calls == 1
        with pytest.raises(PolicyError):
            endpoint.connect()  # /v1/models first, refused
        assert connections == []
        assert stub.requests == []


def test_allowed_network_rebinding_connects_only_to_the_checked_address(monkeypatch, connections):
    """The operator allows 127.0.0.2 only; the name says 127.0.0.2 once, then 127.0.0.1 (where the stub is):
    the connection goes to 127.0.0.2 (nothing listens there), the stub hears nothing."""
    policy = public.decide(host="0.0.0.0", environ={settings.ALLOWED_HOSTS_ENV: "127.0.0.2/32"})
    monkeypatch.setattr(public, "_policy", policy)
    with OpenAIStub() as stub:
        port = int(stub.base_url.rsplit(":", 1)[1].split("/")[0])
        shim = Shim(monkeypatch, ["127.0.0.2", "127.0.0.1"])
        with remote.http_client(5.0) as client, pytest.raises(httpx2.ConnectError):
            client.get(f"http://{REBIND}:{port}/v1/models")
        assert shim.calls == 1
        assert connections == ["127.0.0.2"]
        assert stub.requests == []


def test_private_mode_connects_to_the_pinned_address(private_mode, monkeypatch, connections):
    """Private mode checks nothing but still pins: the first answer (the stub's 127.0.0.1) is the one connected to,
    though a second lookup would say 127.0.0.2."""
    with OpenAIStub() as stub:
        port = int(stub.base_url.rsplit(":", 1)[1].split("/")[0])
        shim = Shim(monkeypatch, ["127.0.0.1", "127.0.0.2"])
        generator = OpenAICompatibleGenerator(f"http://{REBIND}:{port}/v1", "stub-model")
        assert generator.list_models()
        assert shim.calls == 1 and connections == ["127.0.0.1"]
        assert stub.count("/v1/models") == 1
        assert stub.requests[0]["headers"].get("host") == f"{REBIND}:{port}"  # the original host, not the address


def test_a_connection_that_was_not_pinned_is_refused():
    backend = remote_http._PinnedBackend()
    with pytest.raises(remote_http.httpcore2.ConnectError):
        backend.connect_tcp("127.0.0.1", 9)


# =========================================================================== (b) IPv6 forms
IPV6_LOOPBACK_FORMS = ["::127.0.0.1", "::ffff:127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::"]


@pytest.mark.parametrize("address", IPV6_LOOPBACK_FORMS)
def test_ipv6_forms_of_loopback_are_refused_on_the_check_without_a_connection(address, public_mode, monkeypatch,
                                                                              connections):
    looked_up = []
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: looked_up.append(a) or [])
    with OpenAIStub() as stub:
        with pytest.raises(PolicyError) as e:
            remote.check_outbound_url(f"http://[{address}]/")
        assert e.value.message == remote.MSG_PRIVATE_ADDRESS.format(host=address)
        with remote.http_client(5.0) as client, pytest.raises(PolicyError):
            client.get(f"http://[{address}]:{stub.base_url.rsplit(':', 1)[1]}")
        assert looked_up == [] and connections == [] and stub.requests == []


@pytest.mark.parametrize(("address", "carried"), [
    ("::127.0.0.1", "127.0.0.1"), ("::ffff:10.0.0.1", "10.0.0.1"), ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
    ("2002:a9fe:a9fe::1", "169.254.169.254"), ("fe80::1%eth0", "fe80::1"), ("[::1]", "::1"), ("::", "::"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.45"),
])
def test_normalise_address(address, carried):
    assert str(remote.normalise_address(address)) == carried


@pytest.mark.parametrize("address", ["fe80::1%eth0", "64:ff9b:1::a00:1", "::0.0.0.2", "::ffff:8.8.8.8x"])
def test_scoped_local_use_nat64_and_odd_forms_are_not_public(address):
    try:
        assert not remote.is_public_address(address)
    except ValueError:
        assert address.endswith("x")  # not an address at all


def test_public_ipv6_forms_of_public_addresses_stay_public():
    assert remote.is_public_address("::ffff:8.8.8.8") and remote.is_public_address("2002:808:808::1")
    assert remote.is_public_address("2606:4700:4700::1111")


# =========================================================================== (c) redirects
class _Redirect(http.server.BaseHTTPRequestHandler):
    target = ""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(302)
        self.send_header("Location", self.target + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def redirector():
    servers = []

    def start(target: str) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("R", (_Redirect,), {"target": target}))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://allowed.example.org:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_a_redirect_to_a_private_address_is_refused(monkeypatch, redirector):
    """An allowed host answers 302 to 127.0.0.1: the client and the image download refuse the hop."""
    policy = public.decide(host="0.0.0.0", environ={settings.ALLOWED_HOSTS_ENV: "allowed.example.org"})
    monkeypatch.setattr(public, "_policy", policy)
    with OpenAIStub() as stub:
        Shim(monkeypatch, ["127.0.0.1"], name="allowed.example.org")
        start = redirector(stub.base_url.removesuffix("/v1"))
        with remote.http_client(5.0) as client, pytest.raises(PolicyError) as e:
            client.get(start + "/v1/models")
        assert e.value.message == remote.MSG_PRIVATE_ADDRESS.format(host="127.0.0.1")
        with pytest.raises(PolicyError):
            remote.download(start + "/files/img0.png", timeout=5.0, max_bytes=1000)
        assert stub.requests == []


def test_an_image_url_answer_redirected_to_a_private_address_ends_the_run(monkeypatch, redirector):
    """The service is allowed; the image URL it answers with redirects to loopback: a fatal error, no request."""
    policy = public.decide(host="0.0.0.0", environ={settings.ALLOWED_HOSTS_ENV: "allowed.example.org"})
    monkeypatch.setattr(public, "_policy", policy)
    with OpenAIStub() as files:
        Shim(monkeypatch, ["127.0.0.1"], name="allowed.example.org")
        start = redirector(files.base_url.removesuffix("/v1"))
        generator = OpenAICompatibleImageGenerator(start + "/v1", "stub-image")
        with pytest.raises(PolicyError):
            generator._download(start + "/files/img0.png", 5.0)
        assert files.requests == []


def test_private_mode_follows_redirects_to_loopback(private_mode, redirector, monkeypatch):
    with OpenAIStub() as stub:
        Shim(monkeypatch, ["127.0.0.1"], name="allowed.example.org")
        start = redirector(stub.base_url.removesuffix("/v1"))
        with remote.http_client(5.0) as client:
            assert client.get(start + "/v1/models").status_code == 200
        assert stub.count("/v1/models") == 1


def test_download_maps_failures(private_mode):
    from biastest.remote import MalformedAnswer, TransientError

    with pytest.raises(MalformedAnswer):
        remote.download("ftp://example.org/x.png", timeout=1.0, max_bytes=10)
    with OpenAIStub() as stub:
        root = stub.base_url.removesuffix("/v1")
        with pytest.raises(MalformedAnswer):
            remote.download(root + "/no-such-file", timeout=5.0, max_bytes=10)
    with pytest.raises(TransientError) as e:
        remote.download(root + "/gone", timeout=5.0, max_bytes=10)  # the stub has stopped
    assert e.value.kind == "connection"


def test_bad_base_url_is_a_generation_error():
    with pytest.raises(GenerationError) as e:
        remote.check_base_url("ftp://example.org/v1")
    assert e.value.message == remote.MSG_BAD_BASE_URL.format(value="ftp://example.org/v1")


def test_private_mode_uses_a_configured_proxy_and_public_mode_never_does(monkeypatch):
    """A self-hosted server behind a company proxy reaches its endpoints through it; a public one pins instead."""
    from biastest.remote.http import PinnedTransport, http_client

    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "NO_PROXY",
                "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # never contacted: no request is sent
    monkeypatch.setattr("biastest.remote.http.current", lambda: public.Policy(public=False, reason="test"))
    with http_client(5.0) as client:
        assert not isinstance(client._transport, PinnedTransport)
        assert any(m is not None for m in client._mounts.values())  # the proxy's transport
    monkeypatch.setattr("biastest.remote.http.current", lambda: public.Policy(public=True, reason="test"))
    with http_client(5.0) as client:
        assert isinstance(client._transport, PinnedTransport) and not client._mounts
    monkeypatch.delenv("HTTPS_PROXY")
    monkeypatch.setattr("biastest.remote.http.current", lambda: public.Policy(public=False, reason="test"))
    with http_client(5.0) as client:  # private mode, no proxy: pinned as before
        assert isinstance(client._transport, PinnedTransport)


# =========================================================================== (d) rebinding, for every outbound user
ALLOWED_LOOPBACK = "127.0.0.2"  # the operator allows this address only; nothing listens on it


def _png():
    from PIL import Image

    return Image.new("RGB", (8, 8), (200, 10, 10))


def _users(base_url: str) -> dict[str, tuple]:
    """Each outbound user: how it is built (its address check) and one request it makes afterwards."""
    from biastest.models.chat_records import ChatRequest
    from biastest.models.endpoint_chat import EndpointChatLM
    from biastest.models.endpoint_vlm import EndpointVLM
    from biastest.remote import RetryPolicy, RunLimits
    from biastest.spec import BiasSpec

    fast = RetryPolicy(max_retries=1, initial_delay=0.01, factor=1.0, max_delay=0.02, jitter=0.0)
    limits = RunLimits(max_requests=6, max_seconds=20.0, request_timeout=3.0)
    spec = BiasSpec.from_terms(group1="red", group2="blue", stereotype1="doctor", antistereotype1="nurse")
    root = base_url.removesuffix("/v1")
    return {
        "endpoint-lm": (lambda: EndpointCausalLM(base_url, "stub-model", tokenizer=False, retry=fast, limits=limits),
                        lambda lm: lm.text_log_probs(["He is a doctor."])),
        "chat-endpoint": (lambda: EndpointChatLM(base_url, "stub-model", retry=fast, limits=limits),
                          lambda lm: lm.chat([ChatRequest.ask("Who is it?")])),
        "vqa-endpoint": (lambda: EndpointVLM(base_url, "stub-model", retry=fast, limits=limits),
                         lambda vlm: vlm.ask([_png()], spec=spec, question="Is this a {T1} or a {T2}?")),
        "generator": (lambda: OpenAICompatibleGenerator(base_url, "stub-model"), lambda g: g.list_models()),
        "image-generator": (lambda: OpenAICompatibleImageGenerator(base_url, "stub-image"),
                            lambda g: g._generate("a doctor", seed=1, timeout=3.0)),
        "image-download": (lambda: remote.check_outbound_url(root + "/files/img0.png"),
                           lambda url: remote.download(url, timeout=3.0, max_bytes=1000)),
    }


USERS = list(_users("http://x/v1"))


@pytest.fixture
def loopback_rebinding(monkeypatch):
    """Public mode that admits 127.0.0.2 only; a name the shim resolves (loopback answers only: no traffic off it)."""
    policy = public.decide(host="0.0.0.0", environ={settings.ALLOWED_HOSTS_ENV: f"{ALLOWED_LOOPBACK}/32"})
    monkeypatch.setattr(public, "_policy", policy)
    return policy


@pytest.mark.parametrize("user", USERS)
def test_rebinding_after_the_check_reaches_no_loopback_stub_for_any_user(user, loopback_rebinding, monkeypatch):
    """The name says 127.0.0.2 (allowed) when the user is built, 127.0.0.1 (the stub) from then on: each request
    looks the name up once, is refused on that answer (public mode), and the stub hears nothing."""
    with OpenAIStub() as stub:
        port = int(stub.base_url.rsplit(":", 1)[1].split("/")[0])
        build, request = _users(f"http://{REBIND}:{port}/v1")[user]
        shim = Shim(monkeypatch, [ALLOWED_LOOPBACK])
        made = build()
        assert shim.calls >= 1
        shim.answers, shim.calls = ["127.0.0.1"], 0
        with pytest.raises(PolicyError) as e:
            request(made)
        assert e.value.message == remote.MSG_PRIVATE_ADDRESS.format(host=REBIND)
        assert shim.calls >= 1
        assert stub.requests == []


class _Flip(Shim):
    """Answers 127.0.0.2 and 127.0.0.1 in turn: every check may see the allowed address and a second look the stub."""

    def __call__(self, host, port, *args, **kwargs):
        if host == self.name:
            self.answers = [ALLOWED_LOOPBACK] if self.calls % 2 == 0 else ["127.0.0.1"]
        return super().__call__(host, port, *args, **kwargs)


@pytest.mark.parametrize("user", USERS)
def test_a_name_that_flips_between_lookups_reaches_no_loopback_stub_for_any_user(user, loopback_rebinding,
                                                                                 monkeypatch):
    """Whatever each lookup says, the connection goes to the address that lookup's check passed (127.0.0.2, where
    nothing listens) or is refused: the stub on 127.0.0.1 hears nothing, ever."""
    from biastest.errors import BiastestError
    from biastest.remote import MalformedAnswer, TransientError

    with OpenAIStub() as stub:
        port = int(stub.base_url.rsplit(":", 1)[1].split("/")[0])
        build, request = _users(f"http://{REBIND}:{port}/v1")[user]
        shim = _Flip(monkeypatch, [ALLOWED_LOOPBACK])
        for _ in range(3):
            try:
                request(build())
            except (BiastestError, TransientError, MalformedAnswer, httpx2.HTTPError):
                pass
        assert shim.calls >= 2
        assert stub.requests == []


def test_an_ipv4_compatible_loopback_literal_is_refused_by_every_user_without_a_lookup(public_mode, monkeypatch,
                                                                                       connections):
    """``http://[::127.0.0.1]/`` (the issue's case) is refused where each user checks its address: no lookup, no
    connection."""
    looked_up = []
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: looked_up.append(a) or [])
    with OpenAIStub() as stub:
        port = int(stub.base_url.rsplit(":", 1)[1].split("/")[0])
        for user, (build, _) in _users(f"http://[::127.0.0.1]:{port}/v1").items():
            with pytest.raises(PolicyError) as e:
                build()
            assert e.value.message == remote.MSG_PRIVATE_ADDRESS.format(host="::127.0.0.1"), user
        assert looked_up == [] and connections == [] and stub.requests == []
