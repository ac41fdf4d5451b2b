"""The one settings module (:mod:`biastest.settings`): each variable's parsing, secrets kept out of sight, the
docs' Configuration table, and that no other module of the package reads the environment."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import os
import re
from pathlib import Path

import pytest

from biastest import public, settings
from biastest.errors import SettingsError
from biastest.settings import Settings
from biastest.store import hub
from biastest.ui import serve

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE = REPO_ROOT / "biastest"
DOCS = REPO_ROOT / "docs" / "deploying.md"

#: What reads the process's environment (``os.environ``, ``os.getenv`` …).
_ENV_NAMES = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})


def env_reads(source: str, filename: str = "<source>") -> list[int]:
    """Lines of ``source`` that touch the process environment through ``os``."""
    lines: list[int] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if (isinstance(node, ast.Attribute) and node.attr in _ENV_NAMES and isinstance(node.value, ast.Name)
                and node.value.id == "os"):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and any(a.name in _ENV_NAMES
                                                                               for a in node.names):
            lines.append(node.lineno)
    return sorted(lines)


def _product_files(root: Path = REPO_ROOT) -> list[Path]:
    return sorted((root / "biastest").rglob("*.py")) + sorted(root.glob("app_*.py"))


# --------------------------------------------------------------------------- nothing else reads the environment
def test_only_the_settings_module_reads_the_environment():
    allowed = PACKAGE / "settings.py"
    bad = [f"{p.relative_to(REPO_ROOT)}:{line}" for p in _product_files() if p != allowed
           for line in env_reads(p.read_text(encoding="utf-8"), str(p))]
    assert bad == [], "read the environment through biastest.settings, not here:\n" + "\n".join(bad)
    assert env_reads(allowed.read_text(encoding="utf-8"))  # and the scan sees the module that does


def test_the_scan_catches_a_planted_reader(tmp_path):
    """Positive control: a planted module that reads the environment is caught, in each spelling."""
    (tmp_path / "biastest").mkdir()
    (tmp_path / "biastest" / "planted.py").write_text(
        "import os\nfrom os import getenv\n\nA = os.environ.get('X')\nB = getenv('Y')\nC = os.getenv('Z')\n"
        "D = 'os.environ in a string is no read'\n",
        encoding="utf-8",
    )
    (tmp_path / "app_planted.py").write_text("import os\n\nos.environ.setdefault('X', '1')\n", encoding="utf-8")
    found = {p.name: env_reads(p.read_text(encoding="utf-8")) for p in _product_files(tmp_path)}
    assert found == {"planted.py": [2, 4, 6], "app_planted.py": [3]}


# --------------------------------------------------------------------------- declarations
def test_every_setting_is_declared_once_and_every_variable_once():
    fields = [d.field for d in settings.DECLARATIONS if d.field is not None]
    assert fields == [f.name for f in dataclasses.fields(Settings)]
    names = [n for d in settings.DECLARATIONS for n in d.names]
    assert len(names) == len(set(names))
    for d in settings.DECLARATIONS:
        assert d.meaning and d.default and d.readers and d.names
        assert (d.parse is None) is (d.field is None)
        assert all(re.fullmatch(r"[A-Z][A-Z0-9_]*", n) for n in d.names)


def test_the_declared_readers_exist():
    """Each reader named as ``biastest.module.attribute`` is there (so the declarations cannot go stale)."""
    for d in settings.DECLARATIONS:
        for reader in d.readers:
            if not re.fullmatch(r"biastest(\.\w+)+", reader):
                continue  # a library (gradio, httpx …) or words
            module, _, attribute = reader.rpartition(".")
            assert hasattr(importlib.import_module(module), attribute), reader


def test_names_kept_beside_their_messages_are_the_declared_ones():
    """The store's Hub module still names its variables in its messages; the names are the settings'."""
    assert (hub.DATASET_ENV, hub.TOKEN_ENV, hub.ENDPOINT_ENV) == (
        settings.DATASET_ENV, settings.TOKEN_ENV, settings.ENDPOINT_ENV)


def _config_table(text: str) -> list[tuple[tuple[str, ...], str]]:
    section = text.split("## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    out = []
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        out.append((tuple(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", cells[0])), cells[1].replace("`", "")))
    return out


def test_the_docs_configuration_table_follows_the_declarations():
    assert _config_table(DOCS.read_text(encoding="utf-8")) == [(d.names, d.default) for d in settings.DECLARATIONS]


def test_the_table_check_catches_a_missing_variable():
    """Positive control for the check above."""
    text = DOCS.read_text(encoding="utf-8").replace("| `HF_ENDPOINT` |", "| HF_ENDPOINT |")
    assert _config_table(text) != [(d.names, d.default) for d in settings.DECLARATIONS]


# --------------------------------------------------------------------------- each variable
def test_the_server_address_has_one_fallback_order():
    assert settings.bind_host({}) == "127.0.0.1"
    assert settings.bind_host({"GRADIO_SERVER_NAME": "0.0.0.0"}) == "0.0.0.0"
    assert settings.bind_host({"GRADIO_SERVER_NAME": "0.0.0.0", "BIASTEST_HOST": " 127.0.0.1 "}) == "127.0.0.1"
    assert settings.bind_host({"BIASTEST_HOST": "  ", "GRADIO_SERVER_NAME": "::"}) == "::"  # blank = unset
    # the public-mode decision follows the same address when the launcher names none
    assert public.decide(environ={"GRADIO_SERVER_NAME": "0.0.0.0"}).public
    assert not public.decide(environ={"GRADIO_SERVER_NAME": "0.0.0.0", "BIASTEST_HOST": "localhost"}).public


def test_the_port_has_one_fallback_order():
    assert settings.bind_port({}) == 7860
    assert settings.bind_port({"PORT": "8080"}) == 8080
    assert settings.bind_port({"PORT": "8080", "GRADIO_SERVER_PORT": "9000"}) == 9000
    assert settings.bind_port({"PORT": "8080", "GRADIO_SERVER_PORT": "9000", "BIASTEST_PORT": " 7000 "}) == 7000


@pytest.mark.parametrize("value", ["http", "0", "65536", "-1", "80.5"])
def test_a_bad_port_stops_with_a_message_naming_the_variable(value):
    with pytest.raises(SettingsError) as e:
        settings.bind_port({"GRADIO_SERVER_PORT": value})
    assert e.value.message == settings.MSG_BAD_PORT.format(name="GRADIO_SERVER_PORT", value=value)


def test_the_launcher_refuses_a_bad_port_before_serving(monkeypatch, capsys):
    monkeypatch.setenv("BIASTEST_PORT", "seventy")
    assert serve.main([]) == 2
    assert settings.MSG_BAD_PORT.format(name="BIASTEST_PORT", value="seventy") in capsys.readouterr().err


@pytest.mark.parametrize(("value", "expected"), [
    ("1", True), ("TRUE", True), (" yes ", True), ("on", True), ("0", False), ("off", False), ("No", False),
    ("maybe", None), ("", None), (None, None),
])
def test_yes_no_flags(value, expected):
    env = {} if value is None else {settings.PUBLIC_ENV: value}
    assert settings.public_flag(env) is expected
    assert settings.hub_offline({} if value is None else {settings.OFFLINE_ENV: value}) is (expected is True)


def test_space_and_allowed_hosts():
    assert settings.space_id({}) is None and settings.space_id({"SPACE_ID": " "}) is None
    assert settings.space_id({"SPACE_ID": "user/app"}) == "user/app"
    assert settings.allowed_hosts({}) == ()
    assert settings.allowed_hosts({settings.ALLOWED_HOSTS_ENV: " VLLM.internal, ,10.1.0.0/16,"}) == (
        "vllm.internal", "10.1.0.0/16")


def test_folders(tmp_path):
    home = Path("~").expanduser()
    assert settings.data_dir({}) == home / ".cache" / "biastest" / "store"
    assert settings.data_dir({settings.DATA_DIR_ENV: str(tmp_path)}) == tmp_path
    assert settings.data_dir({settings.DATA_DIR_ENV: "~/x"}) == home / "x"
    assert settings.models_dir({}) is None and settings.models_dir({settings.MODELS_DIR_ENV: "  "}) is None
    assert settings.models_dir({settings.MODELS_DIR_ENV: "~/m"}) == home / "m"


@pytest.mark.parametrize(("value", "expected"), [("5", 5), (" 7 ", 7), ("0", 1), ("-3", 1), ("2.5", 3), ("many", 3),
                                                 ("", 3)])
def test_model_cache_size_falls_back_to_its_default(value, expected):
    assert settings.model_cache_size({settings.MODEL_CACHE_SIZE_ENV: value}) == expected


@pytest.mark.parametrize(("value", "expected"), [("90", 90.0), ("1.5", 1.5), ("0", 1.0), ("-5", 1.0),
                                                 ("soon", 7200.0), ("", 7200.0)])
def test_session_max_age_falls_back_to_its_default(value, expected):
    assert settings.session_max_age({settings.SESSION_MAX_AGE_ENV: value}) == expected


def test_hub_and_keys():
    assert settings.hf_dataset({}) == "" and settings.hf_dataset({settings.DATASET_ENV: " a/b "}) == "a/b"
    assert settings.hf_token({}) is None and settings.hf_token({"HF_TOKEN": " hf_x "}) == "hf_x"
    assert settings.hf_endpoint({}) is None and settings.hf_endpoint({"HF_ENDPOINT": "http://m"}) == "http://m"
    assert settings.openai_api_key({"OPENAI_API_KEY": ""}) is None
    assert settings.openai_api_key({"OPENAI_API_KEY": "sk-1"}) == "sk-1"


def test_accessors_read_the_environment_at_each_call(monkeypatch):
    monkeypatch.setenv(settings.MODEL_CACHE_SIZE_ENV, "4")
    assert settings.model_cache_size() == 4
    monkeypatch.setenv(settings.MODEL_CACHE_SIZE_ENV, "6")
    assert settings.model_cache_size() == 6 and Settings.from_env().model_cache_size == 6
    monkeypatch.delenv(settings.MODEL_CACHE_SIZE_ENV)
    assert settings.model_cache_size() == settings.DEFAULT_MODEL_CACHE_SIZE


# --------------------------------------------------------------------------- secrets
SECRETS = {"HF_TOKEN": "hf_TopSecret123", "OPENAI_API_KEY": "sk-TopSecret456"}


def test_secrets_never_show_in_the_settings():
    s = Settings.from_env({**SECRETS, "BIASTEST_HF_DATASET": "org/data"})
    shown = [repr(s), str(s), repr(s.dump()), str(s.dump()), repr(dataclasses.asdict(s)), repr(s.hf_token)]
    for text in shown:
        for value in SECRETS.values():
            assert value not in text
    assert s.dump()["hf_token"] == "***" and s.dump()["openai_api_key"] == "***"
    assert s.hf_token.reveal() == SECRETS["HF_TOKEN"] and s.openai_api_key.reveal() == SECRETS["OPENAI_API_KEY"]
    assert Settings.from_env({}).dump()["hf_token"] is None
    assert all(d.secret == (d.field in ("hf_token", "openai_api_key")) for d in settings.DECLARATIONS)


def test_a_secret_compares_by_value_without_showing_it():
    assert settings.Secret("a") == settings.Secret("a") != settings.Secret("b")
    assert f"{settings.Secret('a')}" == "***"


def test_a_variable_named_by_the_user(monkeypatch):
    monkeypatch.setenv("MY_ENDPOINT_KEY", " sk-abc ")
    assert settings.secret_from("MY_ENDPOINT_KEY") == "sk-abc"
    monkeypatch.setenv("MY_ENDPOINT_KEY", "   ")
    assert settings.secret_from("MY_ENDPOINT_KEY") is None
    monkeypatch.delenv("MY_ENDPOINT_KEY")
    assert settings.secret_from("MY_ENDPOINT_KEY") is None


@pytest.mark.parametrize("name", ["sk-TopSecret456", "1ABC", "", "A B", "A" * 129, None])
def test_a_bad_variable_name_is_refused_without_quoting_it(name):
    with pytest.raises(SettingsError) as e:
        settings.secret_from(name)
    assert e.value.message == settings.MSG_BAD_ENV_NAME
    assert name is None or not name or name not in e.value.message


def test_telemetry_is_set_off_unless_the_operator_chose(monkeypatch):
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "x")  # recorded, so the test leaves the environment as it was
    monkeypatch.delenv("GRADIO_ANALYTICS_ENABLED")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "0")
    settings.turn_off_telemetry()
    assert os.environ["GRADIO_ANALYTICS_ENABLED"] == "False" and os.environ["HF_HUB_DISABLE_TELEMETRY"] == "0"
