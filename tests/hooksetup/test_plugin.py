"""The Claude Code plugin shipped with ingestd: its files against Claude Code's plugin format
(docs/claude-code.md §3) and ``hooks install``'s events, ``ingestd plugin path``, and the rule that
the plugin and ``hooks install`` never both deliver. ``tests/realclaude/test_plugin.py`` runs the
real ``claude plugin validate`` and a real Claude Code with the plugin installed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ingestd
from ingestd.claude import hooksetup, pluginsetup
from ingestd.cli import cli

REPO = Path(__file__).resolve().parents[2]
# Claude Code 2.1.332's hook-handler keys (its settings schema, docs/claude-code.md §1, §3).
HTTP_KEYS = {"type", "url", "timeout", "headers", "allowedEnvVars"}
COMMAND_KEYS = {"type", "command", "async", "timeout"}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / ".claude").mkdir(parents=True)
    return h


def run(home: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, list(args), env={"HOME": str(home)})


def shipped_hooks() -> dict[str, Any]:
    return dict(json.loads((pluginsetup.SHIPPED / pluginsetup.HOOKS).read_text()))


def test_the_shipped_hooks_file_is_what_the_code_renders_for_the_default_address() -> None:
    text = (pluginsetup.SHIPPED / pluginsetup.HOOKS).read_text()
    assert text == pluginsetup.render_hooks(pluginsetup.DEFAULT_TARGET)


def test_the_manifest_names_the_plugin_and_the_package_version() -> None:
    manifest = json.loads((pluginsetup.SHIPPED / pluginsetup.MANIFEST).read_text())
    assert manifest["name"] == "ingestd"
    assert manifest["version"] == ingestd.__version__
    assert set(manifest) <= {"name", "version", "description", "author", "keywords", "homepage", "license"}


def test_every_event_hooks_install_hooks_is_in_the_plugin_with_the_same_handler_kind() -> None:
    hooks = shipped_hooks()["hooks"]
    assert set(hooks) == set(hooksetup.HTTP_EVENTS) | set(hooksetup.COMMAND_ONLY_EVENTS)
    for event, groups in hooks.items():
        (group,) = groups
        assert group.get("matcher") == hooksetup.EVENTS_BY_NAME[event].matcher
        (hook,) = group["hooks"]
        if event in hooksetup.COMMAND_ONLY_EVENTS:
            assert set(hook) <= COMMAND_KEYS
            assert hook["command"] == "ingestd-forward --url http://127.0.0.1:7391/hooks --timeout-s 2"
        else:
            assert set(hook) <= HTTP_KEYS
            assert hook["type"] == "http"
            assert hook["url"] == "http://127.0.0.1:7391/hooks"
            assert hook["headers"] == {"X-Ingestd-Hook": pluginsetup.PLUGIN_MARK}
            assert not hooksetup.is_ours(hook)  # never taken for a hook `hooks install` wrote


def test_the_forwarder_the_plugin_runs_is_a_console_script_of_ingestd_forward() -> None:
    text = (REPO / "pyproject.toml").read_text()
    assert 'ingestd-forward = "ingestd.forward:main"' in text
    for pattern in ("claude/plugin/README.md", "claude/plugin/.claude-plugin/*", "claude/plugin/hooks/*"):
        assert f'"{pattern}"' in text


def test_the_marketplace_offers_the_plugin_through_ingestd_plugin_path() -> None:
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    assert market["name"] and market["owner"]["name"]
    (entry,) = market["plugins"]
    assert entry["name"] == "ingestd"
    assert entry["source"] == {"source": "command", "command": "ingestd plugin path", "timeout": 60, "mode": "copy"}


def test_plugin_path_prints_the_shipped_directory_for_the_default_address(home: Path) -> None:
    r = run(home, "plugin", "path")
    assert r.exit_code == 0, r.output
    assert r.output == f"{pluginsetup.SHIPPED}\n"


def test_plugin_path_writes_a_copy_for_another_port_and_token(home: Path, tmp_path: Path) -> None:
    db = tmp_path / "data" / "ingestd.db"
    r = run(home, "plugin", "path", "--port", "45123", "--token-env", "TOK", "--db", str(db))
    assert r.exit_code == 0, r.output
    out = Path(r.output.strip())
    assert out.parent == db.parent
    assert (out / pluginsetup.MANIFEST).read_bytes() == (pluginsetup.SHIPPED / pluginsetup.MANIFEST).read_bytes()
    hooks = json.loads((out / pluginsetup.HOOKS).read_text())["hooks"]
    stop = hooks["Stop"][0]["hooks"][0]
    assert stop["url"] == "http://127.0.0.1:45123/hooks"
    assert stop["headers"]["Authorization"] == "Bearer ${TOK}"
    assert stop["allowedEnvVars"] == ["TOK"]
    start = hooks["SessionStart"][0]["hooks"][0]["command"]
    assert start == "ingestd-forward --url http://127.0.0.1:45123/hooks --timeout-s 2 --token-env TOK"
    again = run(home, "plugin", "path", "--port", "45123", "--token-env", "TOK", "--db", str(db))
    assert again.output == r.output


def test_hooks_install_refuses_while_the_plugin_is_enabled(home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    text = json.dumps({"enabledPlugins": {"ingestd@ingestd": True, "other@x": True}}) + "\n"
    settings.write_text(text)
    r = run(home, "hooks", "install", "--port", "7391")
    assert r.exit_code == 2
    assert "the ingestd plugin is enabled" in r.output
    assert "claude plugin disable ingestd@ingestd" in r.output
    assert settings.read_text() == text


def test_hooks_install_goes_ahead_when_the_plugin_is_disabled(home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    settings.write_text(json.dumps({"enabledPlugins": {"ingestd@ingestd": False}}))
    r = run(home, "hooks", "install", "--port", "7391")
    assert r.exit_code == 0, r.output
    assert pluginsetup.hooks_installed_in(json.loads(settings.read_text()))


def test_hooks_install_in_a_project_refuses_while_the_plugin_is_enabled_for_the_user(
    home: Path, tmp_path: Path
) -> None:
    (home / ".claude" / "settings.json").write_text(json.dumps({"enabledPlugins": {"ingestd@market": True}}))
    project = tmp_path / "proj"
    project.mkdir()
    r = run(home, "hooks", "install", "--port", "7391", "--project", str(project))
    assert r.exit_code == 2
    assert "ingestd@market" in r.output
    assert not (project / ".claude" / "settings.json").exists()


def test_plugin_path_refuses_while_hooks_install_hooks_are_installed(home: Path) -> None:
    assert run(home, "hooks", "install", "--port", "7391").exit_code == 0
    r = run(home, "plugin", "path")
    assert r.exit_code == 2
    assert "ingestd's hooks are installed in" in r.output
    assert "ingestd hooks uninstall" in r.output
    assert run(home, "hooks", "uninstall").exit_code == 0
    assert run(home, "plugin", "path").output == f"{pluginsetup.SHIPPED}\n"


@pytest.mark.parametrize(
    ("settings", "ids"),
    [
        ({}, []),
        ({"enabledPlugins": []}, []),
        (
            {"enabledPlugins": {"ingestd@a": True, "ingestd@b": False, "ingestdx@a": True, "x@ingestd": True}},
            ["ingestd@a"],
        ),
    ],
)
def test_which_plugin_ids_count_as_the_ingestd_plugin_enabled(settings: dict[str, Any], ids: list[str]) -> None:
    assert pluginsetup.enabled_in(settings) == ids


@pytest.mark.parametrize("where", ["dest", "hooks"])
def test_plugin_path_writes_its_hooks_only_into_a_folder_of_the_users_own(
    home: Path, tmp_path: Path, where: str
) -> None:
    """Beside a database in a shared folder (/tmp) another user could make the copy's folder first,
    or a symlink to theirs, and then change the commands Claude Code runs."""
    db = tmp_path / "data" / "ingestd.db"
    args = ("plugin", "path", "--port", "45123", "--db", str(db))
    dest = db.parent / "claude-plugin-127.0.0.1-45123"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = dest if where == "dest" else dest / "hooks"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere, target_is_directory=True)
    r = run(home, *args)
    assert r.exit_code == 2 and f"{link} is a symlink" in r.output, r.output
    assert list(elsewhere.iterdir()) == []
    link.unlink()
    link.mkdir()
    link.chmod(0o777)
    r = run(home, *args)
    assert r.exit_code == 2 and "mode 0777" in r.output and f"chmod 700 {link}" in r.output, r.output
    link.chmod(0o755)
    r = run(home, *args)
    assert r.exit_code == 0 and (dest / pluginsetup.HOOKS).is_file(), r.output
