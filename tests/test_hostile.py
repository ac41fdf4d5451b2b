"""Hostile input, as an attacker of a public deployment would try it.

Every case asserts the exact message constant and (on the command line) the
exit status, and that it was refused **before any model or embedding was
loaded**: the model ids given are folders that do not exist, so a late check
would show a model-loading message instead of the option's.

Four tiers:

* the command line (``biastest.cli.main`` in process, and one real pipe);
* the Python API (the runners the apps and the CLI share);
* the public-mode policy: addresses refused on the address check itself (a
  resolver stands in for DNS: no connection is made), and a real local
  OpenAI-protocol stub on 127.0.0.1 that must receive no request, directly and
  through a redirect;
* the three apps through their real HTTP API (``gradio_client``), in public mode.

The pickle payloads (uploaded and on the command line) are in
``tests/test_safe_loading.py``; leftovers of closed sessions in
``tests/test_housekeeping.py``.
"""

from __future__ import annotations

import http.server
import math
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from biastest import cli, inputs, public, remote, settings
from biastest.errors import OptionError, PolicyError
from biastest.options import BOUNDS, MSG_BAD_CONFIDENCE, MSG_BAD_NUMBER, MSG_BAD_POSITIVE, MSG_BAD_WHOLE
from biastest.spec import MAX_SPEC_BYTES, MSG_JSON_TOO_DEEP, MSG_JSON_TOO_LARGE
from tests.openai_stub import OpenAIStub

REPO = Path(__file__).resolve().parents[1]
LM_SPEC = "Math_Arts_vs_Male_Female"
WEAT_SPEC = "WEAT 7: Math vs arts, male vs female terms"
NO_MODEL = "/nonexistent/biastest-model"


def _twoafc_spec() -> str:
    from biastest.specs import list_specs

    return list_specs("twoafc")[0]


def whole(name: str, value) -> str:
    b = BOUNDS[name]
    return MSG_BAD_WHOLE.format(label=b.label, low=int(b.low), high=int(b.high), value=value)


def real(name: str, value) -> str:
    b = BOUNDS[name]
    if name == "confidence":
        return MSG_BAD_CONFIDENCE.format(value=value)
    if b.low_open:
        return MSG_BAD_POSITIVE.format(label=b.label, low=b.low, high=b.high, value=value)
    return MSG_BAD_NUMBER.format(label=b.label, low=b.low, high=b.high, value=value)


@pytest.fixture
def public_mode(monkeypatch):
    """This process decides it is public (as when bound to 0.0.0.0), for one test."""
    monkeypatch.setattr(public, "_policy", public.decide(host="0.0.0.0", environ={}))
    return public.current()


# =========================================================================== the command line
def _base(kind: str, test: str | None = None) -> list[str]:
    if kind == "lm":
        return [LM_SPEC, "--kind", "lm", "--model", NO_MODEL]
    if kind == "vlm":
        return [LM_SPEC, "--kind", "vlm", "--model", NO_MODEL]
    spec = _twoafc_spec() if test == "2afc" else WEAT_SPEC
    return [spec, "--kind", "embeddings", "--test", test, "--model", f"file:{NO_MODEL}.txt"]


RUNS = {"lm": ("lm", None), "vlm": ("vlm", None), "2afc": ("embeddings", "2afc"),
        "weat": ("embeddings", "weat"), "bayes": ("embeddings", "bayes")}

CLI_OPTION_CASES: list[tuple[str, str, str, object, str]] = []  # (run, flag, text, value, expected message)
for run in RUNS:
    for v in (-1, -(2**40), 2**32, 10**20):
        CLI_OPTION_CASES.append((run, "--seed", str(v), v, whole("seed", v)))
for run in ("lm", "vlm"):
    for v in (-1, 0, 99, 100_001, 10**12):
        CLI_OPTION_CASES.append((run, "--bootstrap", str(v), v, whole("n_resamples", v)))
    for text in ("nan", "inf", "-inf", "0", "1", "-0.5", "1.5"):
        CLI_OPTION_CASES.append((run, "--confidence", text, float(text), real("confidence", float(text))))
    for v in (0, -1, 1025, 10**9):
        CLI_OPTION_CASES.append((run, "--batch-size", str(v), v, whole("batch_size", v)))
for v in (-1, 2001, 10**12):
    CLI_OPTION_CASES.append(("2afc", "--bootstrap", str(v), v, whole("n_bootstrap", v)))
for v in (-1, 0, 99, 1_000_001, 10**12):
    CLI_OPTION_CASES.append(("weat", "--permutations", str(v), v, whole("n_permutations", v)))
for v in (-1, 0, 99, 100_001, 10**12):  # the resamples of the words behind the interval of d
    CLI_OPTION_CASES.append(("weat", "--bootstrap", str(v), v, whole("n_resamples", v)))
for run in ("2afc", "weat"):
    for text in ("nan", "inf", "0", "1", "-0.5", "1.5"):
        CLI_OPTION_CASES.append((run, "--confidence", text, float(text), real("confidence", float(text))))
for v in (-1, 0, 99, 20_001):
    CLI_OPTION_CASES.append(("bayes", "--draws", str(v), v, whole("draws", v)))
for v in (-1, 99, 20_001):
    CLI_OPTION_CASES.append(("bayes", "--tune", str(v), v, whole("tune", v)))
for v in (0, -1, 9, 1000):
    CLI_OPTION_CASES.append(("bayes", "--chains", str(v), v, whole("chains", v)))
for text in ("nan", "0.3", "1", "1.5"):
    CLI_OPTION_CASES.append(("bayes", "--hdi-prob", text, float(text), real("hdi_prob", float(text))))
for text in ("0", "-5", "inf", "100000"):
    CLI_OPTION_CASES.append(("bayes", "--sampling-time-limit", text, float(text), real("time_limit", float(text))))
for text in ("-1", "nan", "inf", "11"):
    CLI_OPTION_CASES.append(("lm", "--tie-tolerance", text, float(text), real("tie_tolerance", float(text))))
for v in (0, -3, 65):
    CLI_OPTION_CASES.append(("vlm", "--max-new-tokens", str(v), v, whole("max_new_tokens", v)))
CLI_OPTION_CASES.append(("2afc", "--noise-sigma", "-1", -1.0, cli.MSG_BAD_SIGMA.format(value=-1.0)))
CLI_OPTION_CASES.append(("2afc", "--noise-sigma", "nan", math.nan, cli.MSG_BAD_SIGMA.format(value=math.nan)))
CLI_OPTION_CASES.append(("2afc", "--noise-sigma", "2", 2.0, real("noise_sigma", 2.0)))


def _main(argv, capsys) -> tuple[int, str, str]:
    code = cli.main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.mark.parametrize(("run", "flag", "text", "value", "message"), CLI_OPTION_CASES,
                         ids=[f"{c[0]}{c[1]}={c[2]}" for c in CLI_OPTION_CASES])
def test_cli_refuses_a_bad_option_before_any_model_loads(run, flag, text, value, message, tmp_path, capsys):
    kind, test = RUNS[run]
    out = tmp_path / "r.json"
    code, stdout, stderr = _main(["run", *_base(kind, test), "--out", str(out), f"{flag}={text}"], capsys)
    assert (code, stderr.strip()) == (cli.EXIT_USAGE, message)
    assert stdout == "" and not out.exists() and list(tmp_path.iterdir()) == []


def _spec_file(tmp_path: Path, text: str) -> str:
    p = tmp_path / "spec.json"
    p.write_text(text, encoding="utf-8")
    return str(p)


SPEC_FILE_CASES = {
    "nested-100000": ("[" * 100_000 + "]" * 100_000, MSG_JSON_TOO_DEEP),
    "nested-objects": ('{"a":' * 50_000 + "1" + "}" * 50_000, MSG_JSON_TOO_DEEP),
    "too-large": ('{"name": "' + "x" * (MAX_SPEC_BYTES + 10) + '"}', MSG_JSON_TOO_LARGE.format(limit_kb=1000)),
}


@pytest.mark.parametrize("case", list(SPEC_FILE_CASES))
@pytest.mark.parametrize("kind", ["lm", "embeddings"])
def test_cli_refuses_hostile_spec_files_with_exit_2(case, kind, tmp_path, capsys):
    text, message = SPEC_FILE_CASES[case]
    spec = _spec_file(tmp_path, text)
    code, _, stderr = _main(["run", spec, "--kind", kind, "--model", NO_MODEL, "--out", str(tmp_path / "r.json")],
                            capsys)
    assert (code, stderr.strip()) == (cli.EXIT_USAGE, message)


def test_cli_bad_json_message_names_the_position_not_the_content(tmp_path, capsys):
    from biastest.spec import MSG_BAD_JSON

    spec = _spec_file(tmp_path, '{"name": SECRET_TOKEN_abc123}')
    code, _, stderr = _main(["run", spec, "--kind", "lm", "--model", NO_MODEL, "--out", str(tmp_path / "r.json")],
                            capsys)
    assert code == cli.EXIT_USAGE
    assert stderr.strip() == MSG_BAD_JSON.format(problem="Expecting value at line 1, column 10")
    assert "abc123" not in stderr


def _cannot_create_in(folder: str) -> str:
    try:
        fd, p = tempfile.mkstemp(dir=folder)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    os.close(fd)
    os.unlink(p)
    pytest.skip(f"{folder} is writable here")


@pytest.mark.parametrize("flag", ["--out", "--csv"])
def test_cli_output_that_cannot_be_written_is_refused_before_the_run(flag, tmp_path, capsys):
    problem = _cannot_create_in("/proc")
    argv = ["run", WEAT_SPEC, "--kind", "embeddings", "--model", f"file:{NO_MODEL}.txt"]
    argv += ["--out", "/proc/version"] if flag == "--out" else ["--out", str(tmp_path / "r.json"), "--csv",
                                                                  "/proc/version"]
    code, _, stderr = _main(argv, capsys)
    assert (code, stderr.strip()) == (cli.EXIT_USAGE, cli.MSG_CANNOT_WRITE.format(path="/proc/version",
                                                                                  problem=problem))


def test_cli_output_in_a_missing_folder_or_on_a_folder(tmp_path, capsys):
    code, _, stderr = _main(["run", WEAT_SPEC, "--kind", "embeddings", "--out", str(tmp_path / "no" / "r.json")],
                            capsys)
    assert (code, stderr.strip()) == (cli.EXIT_USAGE, cli.MSG_NO_OUTPUT_FOLDER.format(path=tmp_path / "no"))
    code, _, stderr = _main(["run", WEAT_SPEC, "--kind", "embeddings", "--out", str(tmp_path)], capsys)
    folder = inputs.MSG_FILE_UNREADABLE.format(what="output file", path=str(tmp_path), problem="it is a folder")
    assert (code, stderr.strip()) == (cli.EXIT_USAGE, folder)


def test_cli_list_specs_into_a_closed_pipe_ends_quietly():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "biastest", "list-specs"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()  # `| head -1`
    proc.stdout.close()
    try:
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert first.strip()
    assert code == cli.EXIT_OK and "Error" not in stderr and "Traceback" not in stderr


def test_cli_unexpected_errors_never_quote_the_exception_text(monkeypatch, tmp_path, capsys):
    def boom(*a, **k):
        raise RuntimeError("SECRET_TOKEN=abc123 from some file")

    monkeypatch.setattr(cli, "cmd_list_specs", boom)
    code, _, stderr = _main(["list-specs"], capsys)
    assert (code, stderr.strip()) == (cli.EXIT_RUN_FAILED, cli.MSG_UNEXPECTED.format(type_name="RuntimeError"))


# =========================================================================== the Python API
def _pair():
    from biastest.records import SentencePair

    return SentencePair(stereotyped="He is good at math.", anti_stereotyped="She is good at math.",
                        group_term_stereotyped="he", group_term_anti="she", attribute_term="math", source="user")


def _lm(**kw):
    from tests.lm_helpers import run_pairs

    return run_pairs(pairs=[_pair()], model_id=NO_MODEL, method="causal-sum", **{"seed": 1, **kw})


def _vlm(**kw):
    from biastest.specs import get_spec
    from tests.vlm_helpers import run_vlm

    return run_vlm(images=[], image_root=tempfile.gettempdir(), spec=get_spec(LM_SPEC), model_id=NO_MODEL,
                        **{"seed": 1, **kw})


def _twoafc(**kw):
    from tests.embedding_runs import run_twoafc

    return run_twoafc(targets=["nurse"], cue_pairs=[("he", "she")], source=f"file:{NO_MODEL}.txt",
                      **{"seed": 1, **kw})


def _weat(**kw):
    from biastest.specs import get_spec
    from tests.embedding_runs import run_weat

    return run_weat(spec=get_spec(WEAT_SPEC), source=f"file:{NO_MODEL}.txt", **{"seed": 1, **kw})


def _bayes(**kw):
    from biastest.measures.bayes import BayesItems, run

    return run({"source": f"file:{NO_MODEL}.txt", "seed": 1, **kw},
               BayesItems(groups={"a": ["he"], "b": ["she"]}, attributes={"x": ["math"], "y": ["art"]}))


def _posterior(**kw):
    from biastest.measures.posterior import run

    return run({"source": f"file:{NO_MODEL}.txt", "seed": 1, **kw})


RUNNERS = {"lm": _lm, "vlm": _vlm, "twoafc": _twoafc, "weat": _weat, "bayes": _bayes, "posterior": _posterior}
API_CASES: list[tuple[str, str, object, str]] = []
for runner in RUNNERS:
    for v in (-1, 2**32, 1.5, "7", None, True):
        API_CASES.append((runner, "seed", v, whole("seed", v)))
for runner in ("lm", "vlm"):
    for v in (10**12, 50, -1):
        API_CASES.append((runner, "n_resamples", v, whole("n_resamples", v)))
    for v in (math.nan, 1.0, 0.0, "0.95"):
        API_CASES.append((runner, "confidence", v, real("confidence", v) if v != "0.95" else
                          f"The confidence level must be a number, got {v!r}."))
    API_CASES.append((runner, "batch_size", 0, whole("batch_size", 0)))
API_CASES += [
    ("lm", "tie_tolerance", -0.1, real("tie_tolerance", -0.1)),
    ("vlm", "max_new_tokens", 10_000, whole("max_new_tokens", 10_000)),
    ("twoafc", "n_bootstrap", -1, whole("n_bootstrap", -1)),
    ("twoafc", "n_bootstrap", 10**9, whole("n_bootstrap", 10**9)),
    ("twoafc", "noise_sigma", 0.0, real("noise_sigma", 0.0)),
    ("twoafc", "noise_sigma", math.inf, real("noise_sigma", math.inf)),
    ("weat", "n_permutations", -1, whole("n_permutations", -1)),
    ("weat", "n_permutations", 0, whole("n_permutations", 0)),
    ("weat", "n_permutations", 10**12, whole("n_permutations", 10**12)),
    ("weat", "n_bootstrap", 99, whole("n_resamples", 99)),
    ("weat", "n_bootstrap", 10**12, whole("n_resamples", 10**12)),
    ("weat", "confidence", 1.0, real("confidence", 1.0)),
    ("weat", "confidence", math.nan, real("confidence", math.nan)),
    ("twoafc", "confidence", 0.0, real("confidence", 0.0)),
]
for runner in ("bayes", "posterior"):
    API_CASES += [(runner, "draws", 10**9, whole("draws", 10**9)), (runner, "tune", 0, whole("tune", 0)),
                  (runner, "chains", 100, whole("chains", 100))]


@pytest.mark.parametrize(("runner", "option", "value", "message"), API_CASES,
                         ids=[f"{c[0]}-{c[1]}={c[2]!r}" for c in API_CASES])
def test_runner_refuses_a_bad_option_before_loading(runner, option, value, message):
    with pytest.raises(OptionError) as e:
        RUNNERS[runner](**{option: value})
    assert e.value.message == message


# =========================================================================== the public-mode policy
PRIVATE = ["127.0.0.1", "127.8.9.10", "10.0.0.1", "172.16.5.4", "172.31.255.255", "192.168.1.1",
           "169.254.169.254", "169.254.0.1", "100.64.0.1", "0.0.0.0", "192.0.2.10", "198.18.0.1",
           "224.0.0.1", "255.255.255.255", "::1", "fe80::1", "fc00::1", "fd12:3456::1", "::ffff:10.0.0.1",
           "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "::"]
PUBLIC = ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "151.101.1.140"]


@pytest.mark.parametrize("address", PRIVATE)
def test_public_mode_refuses_private_addresses_on_the_address_check(address, public_mode):
    resolved = []

    def resolver(host, port):
        resolved.append((host, port))
        return [address]

    with pytest.raises(PolicyError) as e:
        remote.check_outbound_url("https://models.example.org/v1", resolver=resolver)
    assert e.value.message == remote.MSG_PRIVATE_ADDRESS.format(host="models.example.org")
    assert resolved == [("models.example.org", 443)]


@pytest.mark.parametrize("address", PRIVATE)
def test_public_mode_refuses_private_address_literals(address, public_mode):
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(PolicyError) as e:
        remote.check_outbound_url(f"http://{host}:8000/v1")  # an address literal: no name lookup, no connection
    assert e.value.message == remote.MSG_PRIVATE_ADDRESS.format(host=address)


def test_public_mode_refuses_a_name_with_one_private_address_among_public_ones(public_mode):
    with pytest.raises(PolicyError):
        remote.check_outbound_url("https://x.example.org/", resolver=lambda h, p: ["8.8.8.8", "10.0.0.7"])


@pytest.mark.parametrize("address", PUBLIC)
def test_public_mode_allows_public_addresses(address, public_mode):
    url = "https://api.example.org/v1"
    assert remote.check_outbound_url(url, resolver=lambda h, p: [address]) == url


def test_operator_allow_list_admits_named_hosts_and_networks():
    names = public.decide(host="0.0.0.0", environ={settings.ALLOWED_HOSTS_ENV: "vllm.internal, 10.1.0.0/16"})
    assert remote.check_outbound_url("http://vllm.internal:8000/v1", policy=names,
                                     resolver=lambda h, p: ["10.9.9.9"])
    assert remote.check_outbound_url("http://gpu.lab:8000/v1", policy=names, resolver=lambda h, p: ["10.1.2.3"])
    with pytest.raises(PolicyError):
        remote.check_outbound_url("http://other.lab:8000/v1", policy=names, resolver=lambda h, p: ["10.2.0.1"])


@pytest.mark.parametrize("url", ["ftp://example.org/x", "", "http://", "javascript:alert(1)", "file:///etc/passwd",
                                 "http://[::1", "gopher://127.0.0.1:25/"])
def test_not_web_addresses_are_refused_in_both_modes(url):
    for policy in (public.decide(host="0.0.0.0", environ={}), public.decide(host="127.0.0.1", environ={})):
        with pytest.raises(PolicyError) as e:
            remote.check_outbound_url(url, policy=policy)
        assert e.value.message == remote.MSG_BAD_URL.format(value=url)


def test_unresolvable_host_is_refused_without_a_connection(public_mode):
    def resolver(host, port):
        raise OSError("no such host")

    with pytest.raises(PolicyError) as e:
        remote.check_outbound_url("https://nowhere.example.org/v1", resolver=resolver)
    assert e.value.message == remote.MSG_HOST_UNRESOLVED.format(host="nowhere.example.org")


@pytest.mark.parametrize(("environ", "host", "is_public"), [
    ({}, "127.0.0.1", False), ({}, "localhost", False), ({}, "::1", False), ({}, "0.0.0.0", True),
    ({}, "192.168.1.5", True), ({}, "::", True), ({"SPACE_ID": "user/space"}, "127.0.0.1", True),
    ({settings.PUBLIC_ENV: "1"}, "127.0.0.1", True), ({settings.PUBLIC_ENV: "0"}, "0.0.0.0", True),
    ({settings.PUBLIC_ENV: "0", "SPACE_ID": "u/s"}, "127.0.0.1", True),
])
def test_one_public_mode_decision(environ, host, is_public):
    policy = public.decide(host=host, environ=environ)
    assert policy.public is is_public and policy.server_paths is (not is_public)
    assert ("PUBLIC mode" in policy.describe()) is is_public


MODEL_PATHS = ["/etc", "/", "../../etc/passwd", "~/.ssh", ".", "..", "tests", "biastest", "a/b/c", "C:\\models\\x",
               "gpt2/../x", "file:///etc/passwd", "http://example.org/model", " /tmp ", "org/na me", ""]


@pytest.mark.parametrize("value", MODEL_PATHS)
def test_public_mode_loads_models_by_hub_id_only(value, public_mode, monkeypatch):
    monkeypatch.chdir(REPO)  # "tests" and "biastest" are folders here: from_pretrained would read them
    with pytest.raises(PolicyError) as e:
        public.check_model_reference(value)
    assert e.value.message == public.MSG_MODEL_PATH_OFF.format(value=value.strip()[:80])


@pytest.mark.parametrize("value", ["gpt2", "openai/clip-vit-base-patch32", "Salesforce/blip-vqa-base"])
def test_public_mode_accepts_hub_ids(value, public_mode):
    assert public.check_model_reference(value) == value


def test_private_mode_keeps_local_folders(monkeypatch):
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    assert public.check_model_reference(" /models/my-bert ") == "/models/my-bert"


def test_services_refuse_a_model_folder_in_public_mode_before_loading(public_mode):
    from biastest.measures.stereotype import run as lm_run

    with pytest.raises(PolicyError) as e:
        lm_run.run_lm_test(pairs=[_pair()], model_id="/etc", method="causal-sum", seed=1, spec=None)
    assert e.value.message == public.MSG_MODEL_PATH_OFF.format(value="/etc")


def test_public_mode_generator_to_a_loopback_stub_sends_no_request(public_mode):
    from biastest.generate.openai_chat import OpenAICompatibleGenerator

    with OpenAIStub() as stub:
        with pytest.raises(PolicyError) as e:
            OpenAICompatibleGenerator(stub.base_url, "stub-model")
        assert e.value.message == remote.MSG_PRIVATE_ADDRESS.format(host="127.0.0.1")
        assert stub.requests == []


def test_private_mode_generator_reaches_the_loopback_stub(monkeypatch):
    from biastest.generate.openai_chat import OpenAICompatibleGenerator

    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    with OpenAIStub() as stub:
        assert OpenAICompatibleGenerator(stub.base_url, "stub-model").list_models()
        assert stub.count("/v1/models") == 1


class _Redirect(http.server.BaseHTTPRequestHandler):
    target = ""

    def log_message(self, *args):
        pass

    def _go(self):
        self.send_response(307)
        self.send_header("Location", self.target + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = _go


def test_public_mode_refuses_a_redirect_to_a_private_address(monkeypatch):
    """An allowed endpoint answers 307 to 127.0.0.1 (think cloud metadata): the stub there hears nothing."""
    from biastest.generate.openai_chat import OpenAICompatibleGenerator

    policy = public.decide(host="0.0.0.0", environ={settings.ALLOWED_HOSTS_ENV: "localhost"})
    monkeypatch.setattr(public, "_policy", policy)
    with OpenAIStub() as stub:
        handler = type("R", (_Redirect,), {"target": stub.base_url.removesuffix("/v1")})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            gen = OpenAICompatibleGenerator(f"http://localhost:{server.server_address[1]}/v1", "stub-model")
            with pytest.raises(PolicyError) as e:
                gen.list_models()
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)
        assert e.value.message == remote.MSG_PRIVATE_ADDRESS.format(host="127.0.0.1")
        assert stub.requests == []


def test_upload_bounds():
    with pytest.raises(PolicyError) as e:
        public.check_upload([f"/tmp/x{i}.png" for i in range(public.MAX_FILES_PER_UPLOAD + 1)])
    assert e.value.message == public.MSG_TOO_MANY_FILES.format(limit=public.MAX_FILES_PER_UPLOAD,
                                                               count=public.MAX_FILES_PER_UPLOAD + 1)
    with tempfile.TemporaryDirectory() as d:
        big = Path(d) / "big.png"
        with open(big, "wb") as fh:
            fh.truncate(public.MAX_UPLOAD_BYTES + 1)  # sparse: no 50 MB written
        with pytest.raises(PolicyError) as e:
            public.check_upload([big])
        assert e.value.message == public.MSG_FILE_TOO_LARGE.format(name="big.png", limit_mb=50)


# =========================================================================== the apps, through their HTTP API
@pytest.fixture(scope="module")
def public_apps():
    """The three apps served on 127.0.0.1 by this process, which has decided it is public."""
    from gradio_client import Client

    from biastest.ui import gpt, psychophysics, vqa
    from tests.browser_helpers import served

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(public, "_policy", public.decide(host="0.0.0.0", environ={}))
        with served(gpt.build_demo()) as g, served(vqa.build_demo()) as v, served(psychophysics.build_demo()) as p:
            yield {"gpt": lambda: Client(g, verbose=False), "vqa": lambda: Client(v, verbose=False),
                   "psychophysics": lambda: Client(p, verbose=False)}


def _app_error(call) -> str:
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError) as e:
        call()
    return str(e.value)


@pytest.fixture(scope="module")
def gpt_session(public_apps):
    from biastest.measures.stereotype import report as report
    from biastest.specs import get_spec

    c = public_apps["gpt"]()
    offered = get_spec(LM_SPEC).name  # the dropdown offers the library's readable names (the old one is an alias)
    lists = c.predict(offered, api_name="/fill_from_library")
    out = c.predict(offered, *lists[:4], api_name="/confirm_spec")
    assert out[0].startswith("✅")
    row = {"keep": True, "attribute_term": "math", "group_term_stereotyped": "he", "stereotyped": "He is good at math.",
           "group_term_anti": "she", "anti_stereotyped": "She is good at math.", "category": "Math",
           "source": "user", "template": "[T] is good at math."}
    columns = list(report.pairs_to_table([]).columns)  # readable headers, in the order of the fields
    table = {"headers": columns, "data": [[row.get(field, "") for field in report.PAIR_COLUMNS]], "metadata": None}
    return c, table


def _gpt_inline(outputs, index: int) -> str:
    """The language-model app shows a user's mistake inline (⚠️ + escaped message): the message, unescaped."""
    import html
    import re

    text = outputs[index]
    assert text.startswith("⚠️ "), outputs
    return html.unescape(re.sub(r"\\(.)", r"\1", text.removeprefix("⚠️ ")))


#: Where /generate_sentences returns its message (table, find, coverage, import, generation, run messages).
GPT_GEN_MESSAGE = 4
GPT_RUN_CASES = [("gpt2", v, whole("seed", v)) for v in (-1, -(2**33), 2**32)]
GPT_RUN_CASES += [(m, 42, public.MSG_MODEL_PATH_OFF.format(value=m)) for m in ("/etc", "../../x", "~/.cache", "tests")]


@pytest.mark.parametrize(("model", "seed", "message"), GPT_RUN_CASES, ids=[f"{c[0]}-{c[1]}" for c in GPT_RUN_CASES])
def test_gpt_app_run_refuses_before_loading(model, seed, message, gpt_session, monkeypatch):
    monkeypatch.chdir(REPO)
    c, table = gpt_session
    assert _gpt_inline(c.predict(model, "causal-sum", seed, table, api_name="/run_test"), 0) == message


PRIVATE_URLS = ["http://127.0.0.1:8000/v1", "http://localhost:11434/v1", "http://169.254.169.254/latest",
                "http://10.0.0.1/v1", "http://192.168.1.1:8080/v1", "http://[::1]:8000/v1", "http://0.0.0.0:8000/v1",
                "http://100.64.0.1/v1", "http://[fe80::1]/v1", "http://2130706433/v1", "http://127.1/v1"]


def _host(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).hostname


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_gpt_app_generation_refuses_private_endpoints(url, gpt_session):
    from biastest.runner import services

    c, table = gpt_session
    prompt = services.sentence_prompt_choices()[0][1]
    message = _gpt_inline(c.predict("openai-compatible", "", url, "some-model", 2, prompt, 1, table,
                                    api_name="/generate_sentences"), GPT_GEN_MESSAGE)
    assert message == remote.MSG_PRIVATE_ADDRESS.format(host=_host(url))


def test_gpt_app_generation_to_a_loopback_stub_sends_no_request(gpt_session):
    from biastest.runner import services

    c, table = gpt_session
    prompt = services.sentence_prompt_choices()[0][1]
    with OpenAIStub() as stub:
        message = _gpt_inline(c.predict("openai-compatible", "", stub.base_url, "stub-model", 2, prompt, 1,
                                        table, api_name="/generate_sentences"), GPT_GEN_MESSAGE)
        assert message == remote.MSG_PRIVATE_ADDRESS.format(host="127.0.0.1")
        assert stub.requests == []


@pytest.mark.parametrize("url", ["file:///etc/passwd", "gopher://127.0.0.1:70/", "ftp://example.org/v1"])
def test_gpt_app_generation_refuses_other_schemes(url, gpt_session):
    from biastest.remote import MSG_BAD_BASE_URL, safe_base_url
    from biastest.runner import services

    c, table = gpt_session
    prompt = services.sentence_prompt_choices()[0][1]
    message = _gpt_inline(c.predict("openai-compatible", "", url, "m", 2, prompt, 1, table,
                                    api_name="/generate_sentences"), GPT_GEN_MESSAGE)
    assert message == MSG_BAD_BASE_URL.format(value=safe_base_url(url))


@pytest.mark.parametrize(("per_attribute", "seed", "expected"), [
    (0, 1, "count"), (51, 1, "count"), (2, -1, "seed"), (2, 2**32, "seed"),
])
def test_gpt_app_generation_options(per_attribute, seed, expected, gpt_session):
    from biastest.runner import services

    c, table = gpt_session
    prompt = services.sentence_prompt_choices()[0][1]

    def call():
        return c.predict("openai-compatible", "", "https://api.example.org/v1", "m", per_attribute, prompt, seed,
                         table, api_name="/generate_sentences")

    if expected == "count" and per_attribute < 1:  # the number box refuses it first (Gradio's own message)
        assert _app_error(call) == f"Value {per_attribute} is less than minimum value 1."
        return
    message = _gpt_inline(call(), GPT_GEN_MESSAGE)
    if expected == "count":
        assert message == services.MSG_BAD_COUNT.format(limit=services.MAX_PER_ATTRIBUTE, value=per_attribute)
    else:
        assert message == whole("seed", seed)


@pytest.fixture(scope="module")
def vqa_session(public_apps, tmp_path_factory):
    from gradio_client import handle_file

    from tests.openai_stub import png_bytes

    folder = tmp_path_factory.mktemp("pictures")
    c = public_apps["vqa"]()
    from biastest.ui.spec_step import CUSTOM

    c.predict(CUSTOM, "man", "woman", "doctor", "nurse", api_name="/confirm_handler")
    files = []
    for i in range(2):
        p = folder / f"man{i}.png"
        p.write_bytes(png_bytes(color=(10 * i, 20, 30)))
        files.append(handle_file(str(p)))
    out = c.predict(files, "man", api_name="/upload_handler")
    assert "✅" in str(out)
    return c, folder


def _vqa_inline(outputs, index: int = 0) -> str:
    """The vision-language app shows a user's mistake inline (⚠️ + HTML-escaped message): the message, unescaped."""
    import html

    text = outputs[index]
    assert text.startswith("⚠️ "), outputs
    return html.unescape(text.removeprefix("⚠️ "))


VQA_RUN_CASES = [("openai/clip-vit-base-patch32", "seed", v, whole("seed", v)) for v in (-1, 2**32)]
VQA_RUN_CASES += [("openai/clip-vit-base-patch32", "batch_size", v, whole("batch_size", v)) for v in (0, 5000)]
VQA_RUN_CASES += [("openai/clip-vit-base-patch32", "n_resamples", v, whole("n_resamples", v)) for v in (5, 10**12)]
VQA_RUN_CASES += [(m, "seed", 0, public.MSG_MODEL_PATH_OFF.format(value=m)) for m in ("/etc", "../models/x", "~")]


@pytest.mark.parametrize(("model", "option", "value", "message"), VQA_RUN_CASES,
                         ids=[f"{c[0]}-{c[1]}={c[2]}" for c in VQA_RUN_CASES])
def test_vqa_app_run_refuses_before_loading(model, option, value, message, vqa_session):
    from biastest.measures.vlm.options import COMBINE_CHOICES, DEFAULT_PROMPT_TEMPLATE, DEFAULT_QUESTION

    c, _ = vqa_session
    settings = {"seed": 0, "batch_size": 16, "n_resamples": 1000, option: value}
    message_got = _vqa_inline(c.predict(model, [DEFAULT_PROMPT_TEMPLATE], "", COMBINE_CHOICES[0],
                                        DEFAULT_QUESTION, settings["seed"], settings["batch_size"],
                                        settings["n_resamples"], api_name="/run_handler"))
    assert message_got == message


@pytest.mark.parametrize("url", PRIVATE_URLS[:6])
def test_vqa_app_generation_refuses_private_endpoints(url, vqa_session):
    from biastest.generate.prompts import IMAGE_PROMPTS
    from biastest.ui import vqa

    c, _ = vqa_session
    message = _vqa_inline(c.predict(vqa.GEN_COMPATIBLE, "", url, "sd", "", "256x256", 1,
                                    next(iter(IMAGE_PROMPTS)), 0, api_name="/generate_images"))
    assert message == remote.MSG_PRIVATE_ADDRESS.format(host=_host(url))


@pytest.mark.parametrize("model", ["/etc", "../../tmp/sd"])
def test_vqa_app_local_diffusion_from_a_server_folder_is_refused(model, vqa_session):
    from biastest.generate.prompts import IMAGE_PROMPTS
    from biastest.ui import vqa

    c, _ = vqa_session
    message = _vqa_inline(c.predict(vqa.GEN_LOCAL, "", "", "", model, "256x256", 1,
                                    next(iter(IMAGE_PROMPTS)), 0, api_name="/generate_images"))
    assert message == public.MSG_MODEL_PATH_OFF.format(value=model)


def test_vqa_app_upload_count_is_bounded(vqa_session):
    from gradio_client import handle_file

    from tests.openai_stub import png_bytes

    c, folder = vqa_session
    p = folder / "one.png"
    p.write_bytes(png_bytes())
    n = public.MAX_FILES_PER_UPLOAD + 1
    message = _vqa_inline(c.predict([handle_file(str(p))] * n, "woman", api_name="/upload_handler"))
    assert message == public.MSG_TOO_MANY_FILES.format(limit=public.MAX_FILES_PER_UPLOAD, count=n)


@pytest.fixture(scope="module")
def psy_session(public_apps):
    from biastest.ui import psychophysics as app

    c = public_apps["psychophysics"]()
    w = app.fill_weat(WEAT_SPEC)
    out = c.predict(app.KIND_WEAT, app.CUSTOM, "", "", "", "", WEAT_SPEC, *w, "glove-6b-50d", None, "",
                    api_name="/confirm_spec")
    assert out[0].startswith("✅")
    return c


def test_psychophysics_app_offers_no_server_path_in_public_mode(public_apps):
    """The choice is not offered, so Gradio refuses it before our code runs; the environment is not shown."""
    from biastest.ui import psychophysics as app

    os.environ["BIASTEST_HOSTILE_PROBE"] = "abc123secret"
    try:
        c = public_apps["psychophysics"]()
        w = app.fill_weat(WEAT_SPEC)
        message = _app_error(lambda: c.predict(app.KIND_WEAT, app.CUSTOM, "", "", "", "", WEAT_SPEC, *w,
                                               app.SOURCE_PATH, None, "/proc/self/environ",
                                               api_name="/confirm_spec"))
    finally:
        del os.environ["BIASTEST_HOSTILE_PROBE"]
    choices = [v for _, v in app.source_choices(allow_paths=False)]
    assert message == f"Value: {app.SOURCE_PATH!r} (type: <class 'str'>) is not in the list of choices: {choices}"
    assert "abc123secret" not in message


def test_psychophysics_server_path_is_refused_by_the_handler_in_public_mode(public_mode):
    from biastest.errors import EmbeddingError
    from biastest.ui import psychophysics as app

    with pytest.raises(EmbeddingError) as e:  # even if a client slipped the choice past the component
        app.embedding_source_id(app.SOURCE_PATH, None, "/proc/self/environ", allow_paths=True)
    assert e.value.message == app.MSG_PATHS_DISABLED


def _psy_inline(outputs, index: int = 0) -> str:
    """The word-embedding app shows a user's mistake inline (⚠️ + HTML-escaped message): the message, unescaped."""
    import html

    text = outputs[index]
    assert text.startswith("⚠️ "), outputs
    return html.unescape(text.removeprefix("⚠️ "))


PSY_RUN_CASES = [("n_perm", v, whole("n_permutations", v)) for v in (-1, 0, 99, 10**7)]
PSY_RUN_CASES += [("seed", v, whole("seed", v)) for v in (-1, 2**32)]


@pytest.mark.parametrize(("option", "value", "message"), PSY_RUN_CASES, ids=[f"{c[0]}={c[1]}" for c in PSY_RUN_CASES])
def test_psychophysics_app_run_options(option, value, message, psy_session):
    from biastest.ui import psychophysics as app

    s = {"n_boot": 200, "n_perm": 1000, "seed": 0, option: value}
    out = psy_session.predict(app.REPLICATES_NONE, 0.05, None, "norm", False, s["n_boot"], s["n_perm"], s["seed"],
                              api_name="/run_handler")
    assert _psy_inline(out) == message  # next to "Run the test" (#run-message), as a warning: no AppError


PSY_SAMPLER_CASES = [("draws", v, whole("draws", v)) for v in (-5, 99, 10**6)]
PSY_SAMPLER_CASES += [("tune", v, whole("tune", v)) for v in (0, 10**6)]
PSY_SAMPLER_CASES += [("chains", v, whole("chains", v)) for v in (0, 9)]
PSY_SAMPLER_CASES += [("seed", -3, whole("seed", -3))]


@pytest.mark.parametrize(("option", "value", "message"), PSY_SAMPLER_CASES,
                         ids=[f"{c[0]}={c[1]}" for c in PSY_SAMPLER_CASES])
@pytest.mark.parametrize("endpoint", ["/bayes_handler", "/posterior_handler"])
def test_psychophysics_app_sampler_options(endpoint, option, value, message, psy_session):
    s = {"draws": 500, "tune": 500, "chains": 2, "seed": 0, option: value}
    sampler = (s["draws"], s["tune"], s["chains"], s["seed"])
    if endpoint == "/bayes_handler":
        args = ("hierarchical", *sampler)
    else:
        args = ("female", "amy, joan", "male", "john, paul", *sampler)
    assert _psy_inline(psy_session.predict(*args, api_name=endpoint)) == message  # next to the section's button


DEEP_JSON = "[" * 100_000 + "]" * 100_000


def test_a_deeply_nested_stereoset_file_is_bad_data_not_an_unexpected_error(tmp_path, capsys):
    from biastest.store import importers as imp

    with pytest.raises(imp.DataError) as e:
        imp.read_stereoset_intrasentence(DEEP_JSON.encode(), name="dev.json")
    assert e.value.message == imp.MSG_UNREADABLE.format(name="dev.json", kind="StereoSet", problem=imp.MSG_TOO_DEEP)
    pairs = tmp_path / "dev.json"
    pairs.write_text(DEEP_JSON)
    code, _, stderr = _main(["run", LM_SPEC, "--kind", "lm", "--model", NO_MODEL, "--pairs", str(pairs), "--out",
                             str(tmp_path / "r.json")], capsys)
    assert (code, stderr.strip()) == (cli.EXIT_USAGE, e.value.message)


def test_a_deeply_nested_image_manifest_is_bad_input(tmp_path, capsys):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(DEEP_JSON)
    code, _, stderr = _main(["run", LM_SPEC, "--kind", "vlm", "--model", NO_MODEL, "--images", str(manifest),
                             "--out", str(tmp_path / "r.json")], capsys)
    from biastest.store.importers import MSG_TOO_DEEP

    expected = inputs.MSG_BAD_MANIFEST.format(path=manifest, problem=MSG_TOO_DEEP)
    assert (code, stderr.strip()) == (cli.EXIT_USAGE, expected)
