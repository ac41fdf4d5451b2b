"""Assemble and deploy one app as a Hugging Face Space.

``python -m biastest.spaces deploy gpt --repo USER/NAME`` builds the Space in
a temporary folder — the front-matter README from ``spaces/<app>/README.md``,
the app file, the ``biastest`` package (without caches) and the pinned
``requirements.txt`` — and uploads it with ``huggingface_hub`` in one commit.
The token comes from ``HF_TOKEN`` (or ``--token``); it is passed to the
client only and never written anywhere. ``python -m biastest.spaces build gpt
--out DIR`` assembles without uploading.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from biastest import settings
from biastest.errors import BiastestError, SyncError

__all__ = ["SPACE_APPS", "SpaceDeployment", "assemble_space", "deploy_space", "main"]

ROOT = Path(__file__).resolve().parents[1]
SPACE_APPS = {"gpt": "app_gpt.py", "vqa": "app_vqa.py", "psychophysics": "app_psychophysics.py"}

MSG_UNKNOWN_APP = "There is no app called '{name}'. Choose one of: {choices}."
MSG_APP_MISSING = "The app file {path} is not in this checkout, so the '{name}' Space cannot be assembled."
MSG_BAD_REPO = "The Space repository must look like 'user/name', got {repo!r}."
MSG_SHARING = (
    "To share test data, open the Space's settings (Variables and secrets) and set BIASTEST_HF_DATASET as a "
    "variable (a dataset such as your-name/biastest-data) and HF_TOKEN as a secret (a write token for it). "
    "Without them the Space reads the public BiasTestGPT sentences and keeps what its users generate on its own disk."
)
MSG_NO_TOKEN = "Deploying needs a Hugging Face write token: set HF_TOKEN (it is never written to disk)."
MSG_DEPLOY_FAILED = "The Space could not be uploaded to {repo} ({kind}). Nothing was changed there; try again."

_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache")


@dataclass(frozen=True)
class SpaceDeployment:
    """What a deployment uploaded."""

    repo_id: str
    app: str
    files: tuple[str, ...]
    commit_url: str


def assemble_space(app: str, out_dir: str | Path, *, root: Path = ROOT) -> list[str]:
    """Copy everything one Space needs into ``out_dir``; return the relative file list.

    Raises
    ------
    BiastestError
        Unknown app name, or its app file is missing.
    """
    if app not in SPACE_APPS:
        raise BiastestError(MSG_UNKNOWN_APP.format(name=app, choices=", ".join(SPACE_APPS)))
    app_file = root / SPACE_APPS[app]
    if not app_file.exists():
        raise BiastestError(MSG_APP_MISSING.format(path=app_file.name, name=app))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy2(root / "spaces" / app / "README.md", out / "README.md")
    shutil.copy2(app_file, out / app_file.name)
    shutil.copy2(root / "requirements.txt", out / "requirements.txt")
    shutil.copytree(root / "biastest", out / "biastest", ignore=_IGNORE, dirs_exist_ok=True)
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def deploy_space(
    app: str, *, repo_id: str, token: str | None = None, private: bool = False, endpoint: str | None = None
) -> SpaceDeployment:
    """Assemble ``app`` and upload it to the Space ``repo_id`` in one commit.

    ``endpoint`` defaults to ``HF_ENDPOINT`` (or the public Hub).
    """
    from huggingface_hub import HfApi

    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise BiastestError(MSG_BAD_REPO.format(repo=repo_id))
    token = token or settings.hf_token()
    if not token:
        raise BiastestError(MSG_NO_TOKEN)
    api = HfApi(endpoint=endpoint or settings.hf_endpoint(), token=token)
    with tempfile.TemporaryDirectory(prefix="biastest-space-") as tmp:
        files = assemble_space(app, tmp)
        try:
            api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
            info = api.upload_folder(
                folder_path=tmp,
                repo_id=repo_id,
                repo_type="space",
                commit_message=f"Deploy biastest {app} app",
            )
        except Exception as exc:
            raise SyncError(MSG_DEPLOY_FAILED.format(repo=repo_id, kind=type(exc).__name__)) from None
    return SpaceDeployment(
        repo_id=repo_id, app=app, files=tuple(files), commit_url=str(getattr(info, "commit_url", info))
    )


def main(argv: list[str] | None = None) -> int:
    """Command line: ``build`` or ``deploy`` one Space."""
    parser = argparse.ArgumentParser(prog="python -m biastest.spaces", description="Assemble or deploy a Space.")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="assemble a Space folder")
    b.add_argument("app", choices=sorted(SPACE_APPS))
    b.add_argument("--out", required=True)
    d = sub.add_parser("deploy", help="assemble and upload a Space")
    d.add_argument("app", choices=sorted(SPACE_APPS))
    d.add_argument("--repo", required=True, help="user/name of the Space")
    d.add_argument("--private", action="store_true")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            files = assemble_space(args.app, args.out)
            print(f"Assembled {len(files)} files in {args.out}")
        else:
            result = deploy_space(args.app, repo_id=args.repo, private=args.private)
            print(f"Deployed {len(result.files)} files to {result.repo_id}: {result.commit_url}")
        print(MSG_SHARING)
    except BiastestError as exc:
        print(exc.message, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
