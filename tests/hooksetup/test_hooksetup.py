"""`ingestd hooks install | uninstall | print` on real settings files."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from ingestd.claude import hooksetup, settingsjson
from ingestd.cli import cli
from ingestd.errors import InputError

USER_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)", "Read(~/src/**)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh", "timeout": 10}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
        "CustomThing": [{"hooks": [{"type": "http", "url": "https://example.com/hooks"}]}],
    },
    "statusLine": {"type": "command", "command": "~/bin/status"},
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / ".claude").mkdir(parents=True)
    return h


def run(home: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["hooks", *args], env={"HOME": str(home)}, catch_exceptions=False)


def settings(home: Path) -> dict[str, Any]:
    return json.loads((home / ".claude" / "settings.json").read_text())


def backups(home: Path) -> list[Path]:
    return sorted((home / ".claude").glob("settings.json.bak-*"))


def test_install_round_trip_keeps_user_hooks_and_permissions(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    original = json.dumps(USER_SETTINGS, indent=2) + "\n"
    path.write_text(original)

    r = run(home, "install")
    assert r.exit_code == 0, r.output
    doc = settings(home)
    assert doc["permissions"] == USER_SETTINGS["permissions"]
    assert doc["statusLine"] == USER_SETTINGS["statusLine"]
    assert doc["model"] == "opus"
    # the user's hooks are still first, ours appended
    assert doc["hooks"]["PreToolUse"][0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
    assert doc["hooks"]["PreToolUse"][1]["hooks"][0] == {
        "type": "http",
        "url": "http://127.0.0.1:7391/hooks",
        "timeout": 5,
        "headers": {"X-Ingestd-Hook": "installed by ingestd hooks install"},  # what makes it ours
    }
    assert doc["hooks"]["Stop"][0] == USER_SETTINGS["hooks"]["Stop"][0]
    assert doc["hooks"]["CustomThing"] == USER_SETTINGS["hooks"]["CustomThing"]
    # SessionStart accepts only command hooks: the forwarder
    [ss] = doc["hooks"]["SessionStart"]
    assert ss["hooks"][0]["type"] == "command"
    assert "ingestd.forward" in ss["hooks"][0]["command"]
    for ev in hooksetup.HTTP_EVENTS:
        assert any(hooksetup.is_ours(h) for g in doc["hooks"][ev] for h in g["hooks"]), ev
    [bak] = backups(home)
    assert bak.read_text() == original

    # idempotent: a second install changes nothing and makes no backup
    after_first = path.read_text()
    r2 = run(home, "install")
    assert r2.exit_code == 0 and "already up to date" in r2.output
    assert path.read_text() == after_first
    assert len(backups(home)) == 1

    # uninstall removes only ours: back to the user's settings exactly
    r3 = run(home, "uninstall")
    assert r3.exit_code == 0, r3.output
    assert settings(home) == USER_SETTINGS


def test_dry_run_prints_the_diff_and_writes_nothing(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    before = path.read_text()
    r = run(home, "install", "--dry-run", "--port", "7400")
    assert r.exit_code == 0
    assert r.stdout.startswith("---")
    assert '+            "url": "http://127.0.0.1:7400/hooks",' in r.output
    assert path.read_text() == before
    assert backups(home) == []


def test_reinstall_on_another_port_replaces_ours(home: Path) -> None:
    run(home, "install")
    run(home, "install", "--port", "7500")
    doc = settings(home)
    urls = [h.get("url") for g in doc["hooks"]["Stop"] for h in g["hooks"]]
    assert urls == ["http://127.0.0.1:7500/hooks"]


def _ports(doc: dict[str, Any]) -> set[str]:
    """Every address the hooks send to: the http hooks' URLs and the forwarders' --url (on 127.0.0.1: the port)."""
    found = set(re.findall(r"http://([^/\s\"']+)/hooks", json.dumps(doc["hooks"])))
    return {a.removeprefix("127.0.0.1:") for a in found}


def test_the_hooks_go_to_the_address_serve_listens_on(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression: always 127.0.0.1:7391 unless --port, while serve listened where the config file or INGESTD_* said:
    # every hook went to a closed port and was lost (hooks are fire-and-forget)
    config = tmp_path / "config.toml"
    config.write_text("port = 9000\n")
    monkeypatch.setenv("INGESTD_CONFIG", str(config))
    assert _ports(json.loads(run(home, "print").stdout)) == {"9000"}
    run(home, "install")
    assert _ports(settings(home)) == {"9000"}
    monkeypatch.setenv("INGESTD_HOST", "::1")  # serve listens on [::1] only
    assert _ports(json.loads(run(home, "print").stdout)) == {"[::1]:9000"}
    monkeypatch.setenv("INGESTD_HOST", "0.0.0.0")  # a wildcard bind is reached on 127.0.0.1
    assert _ports(json.loads(run(home, "print").stdout)) == {"9000"}
    monkeypatch.delenv("INGESTD_HOST")
    monkeypatch.setenv("INGESTD_PORT", "9100")
    assert _ports(json.loads(run(home, "print").stdout)) == {"9100"}
    assert _ports(json.loads(run(home, "print", "--port", "9200").stdout)) == {"9200"}
    monkeypatch.setenv("INGESTD_PORT", "0")  # serve picks any port: no URL to write
    r = CliRunner().invoke(cli, ["hooks", "install"], env={"HOME": str(home)})
    assert r.exit_code == 2 and "pass its port with --port" in r.output
    assert _ports(settings(home)) == {"9000"}


def test_project_settings_and_missing_file(tmp_path: Path, home: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    r = run(home, "install", "--project", str(proj))
    assert r.exit_code == 0, r.output
    assert (proj / ".claude" / "settings.json").exists()
    assert not (home / ".claude" / "settings.json").exists()


def test_token_env_goes_in_headers_by_name_never_by_value(home: Path) -> None:
    r = CliRunner().invoke(
        cli,
        ["hooks", "install", "--token-env", "INGESTD_TOKEN"],
        env={"HOME": str(home), "INGESTD_TOKEN": "super-secret"},
    )
    assert r.exit_code == 0
    text = (home / ".claude" / "settings.json").read_text()
    assert "super-secret" not in text
    doc = json.loads(text)
    [g] = doc["hooks"]["Stop"]
    assert g["hooks"][0]["headers"] == {
        "X-Ingestd-Hook": "installed by ingestd hooks install",
        "Authorization": "Bearer ${INGESTD_TOKEN}",
    }
    assert g["hooks"][0]["allowedEnvVars"] == ["INGESTD_TOKEN"]
    assert "--token-env INGESTD_TOKEN" in doc["hooks"]["SessionStart"][0]["hooks"][0]["command"]


def test_legacy_uses_forwarders_everywhere(home: Path) -> None:
    """``--legacy`` (a Claude Code without HTTP hooks) writes command hooks, the forwarder, for every event."""
    run(home, "install", "--legacy")
    doc = settings(home)
    kinds = {h["type"] for groups in doc["hooks"].values() for g in groups for h in g["hooks"]}
    assert kinds == {"command"}


@pytest.mark.parametrize("broken", ['{"hooks": {', "[1, 2]", '{"hooks": []}'])
def test_broken_settings_are_refused_and_left_untouched(home: Path, broken: str) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text(broken)
    r = CliRunner().invoke(cli, ["hooks", "install"], env={"HOME": str(home)})
    assert r.exit_code == 2
    assert "nothing was changed" in r.output
    assert path.read_text() == broken
    assert backups(home) == []


def test_print_shows_the_block(home: Path) -> None:
    """``hooks print`` shows the block ``install`` would write, every event ingestd takes."""
    r = run(home, "print", "--port", "7391")
    doc = json.loads(r.stdout)
    assert set(doc["hooks"]) == {*hooksetup.HTTP_EVENTS, *hooksetup.COMMAND_ONLY_EVENTS}


class _Sink(BaseHTTPRequestHandler):
    got: ClassVar[list[tuple[bytes, str | None]]] = []

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length", "0"))
        _Sink.got.append((self.rfile.read(n), self.headers.get("Authorization")))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *a: Any) -> None:
        pass


def test_forwarder_posts_stdin_prints_nothing_and_exits_0(tmp_path: Path) -> None:
    srv = HTTPServer(("127.0.0.1", 0), _Sink)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/hooks"
        body = b'{"hook_event_name":"SessionStart","session_id":"s"}'
        p = subprocess.run(
            [sys.executable, "-m", "ingestd.forward", "--url", url, "--token-env", "TOK"],
            input=body,
            capture_output=True,
            env={"TOK": "abc", "PATH": "/usr/bin:/bin"},
            timeout=20,
        )
        assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
        assert _Sink.got == [(body, "Bearer abc")]
    finally:
        srv.shutdown()
        srv.server_close()
    # nobody listening: still exit 0, silently
    p = subprocess.run(
        [sys.executable, "-m", "ingestd.forward", "--url", url],
        input=b"{}",
        capture_output=True,
        timeout=20,
    )
    assert (p.returncode, p.stdout) == (0, b"")


@pytest.mark.parametrize("blank", ["", "  \n\t\n"])
def test_an_empty_settings_file_counts_as_an_empty_object(home: Path, blank: str) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text(blank)
    r = run(home, "uninstall")
    assert r.exit_code == 0, r.output
    assert "nothing to do" in r.output
    assert path.read_text() == blank

    r = run(home, "install")
    assert r.exit_code == 0, r.output
    assert set(settings(home)["hooks"]) == {*hooksetup.HTTP_EVENTS, *hooksetup.COMMAND_ONLY_EVENTS}
    [bak] = backups(home)
    assert bak.read_text() == blank


@pytest.mark.parametrize(
    ("broken", "where"),
    [
        ({"hooks": {"PreToolUse": {"a": 1}}}, "hooks.PreToolUse"),
        ({"hooks": {"CustomThing": "x"}}, "hooks.CustomThing"),
        ({"hooks": {"Stop": None}}, "hooks.Stop"),
        ({"hooks": {"Stop": ["not an object"]}}, "hooks.Stop[0]"),
        ({"hooks": {"Stop": [{"matcher": "*"}]}}, "hooks.Stop[0].hooks"),
        ({"hooks": {"Stop": [{"hooks": {"type": "command"}}]}}, "hooks.Stop[0].hooks"),
        ({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}, 3]}]}}, "hooks.Stop[0].hooks[1]"),
    ],
)
@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_hooks_of_the_wrong_shape_are_refused_by_place_and_left_untouched(
    home: Path, broken: dict[str, Any], where: str, action: str
) -> None:
    path = home / ".claude" / "settings.json"
    text = json.dumps(broken)
    path.write_text(text)
    r = CliRunner().invoke(cli, ["hooks", action], env={"HOME": str(home)})
    assert r.exit_code == 2, r.output
    assert f"`{where}`" in r.output
    assert "nothing was changed" in r.output
    assert "Traceback" not in r.output
    assert path.read_text() == text
    assert backups(home) == []


def test_install_never_replaces_an_entry_it_cannot_merge_into() -> None:
    with pytest.raises(InputError, match=r"hooks\.Stop"):
        hooksetup.install({"hooks": {"Stop": {"mine": 1}}}, hooksetup.HookTarget(port=7391))


@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_settings_that_are_a_directory_or_not_utf8_are_refused_cleanly(home: Path, action: str) -> None:
    path = home / ".claude" / "settings.json"
    path.mkdir()
    r = CliRunner().invoke(cli, ["hooks", action], env={"HOME": str(home)})
    assert r.exit_code == 2, r.output
    assert f"{path} is a directory, not a regular file" in r.output and "nothing was read" in r.output
    path.rmdir()
    path.write_bytes(b'{"model": "\xff"}')
    r = CliRunner().invoke(cli, ["hooks", action], env={"HOME": str(home)})
    assert r.exit_code == 2, r.output
    assert "not UTF-8" in r.output
    assert path.read_bytes() == b'{"model": "\xff"}'


@pytest.mark.parametrize("name", ["BAD NAME", "1TOKEN", "TOK-EN", "", "${X}", "TOKEN\n"])
@pytest.mark.parametrize("command", ["install", "print"])
def test_token_env_must_be_an_environment_variable_name(home: Path, name: str, command: str) -> None:
    r = CliRunner().invoke(cli, ["hooks", command, "--token-env", name], env={"HOME": str(home)})
    assert r.exit_code == 2, r.output
    assert "not an environment variable name" in r.output
    assert not (home / ".claude" / "settings.json").exists()


def test_token_env_accepts_underscores_and_digits(home: Path) -> None:
    r = run(home, "install", "--token-env", "_MY_TOKEN_2")
    assert r.exit_code == 0, r.output
    assert "${_MY_TOKEN_2}" in (home / ".claude" / "settings.json").read_text()


def test_a_missing_project_directory_is_refused_not_created(tmp_path: Path, home: Path) -> None:
    proj = tmp_path / "nope"
    r = CliRunner().invoke(cli, ["hooks", "install", "--project", str(proj)], env={"HOME": str(home)})
    assert r.exit_code == 2
    assert "does not exist" in r.output
    assert not proj.exists()


def test_a_missing_home_is_not_created(tmp_path: Path) -> None:
    gone = tmp_path / "no-home"
    r = CliRunner().invoke(cli, ["hooks", "install"], env={"HOME": str(gone)})
    assert r.exit_code == 2
    assert not gone.exists()


# -- files ingestd writes beside the user's ----------------------------------------


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644])
def test_the_backup_keeps_the_originals_mode(home: Path, mode: int) -> None:
    # regression: a 0600 settings.json (secrets in `env`) left a 0644 backup beside it
    path = home / ".claude" / "settings.json"
    path.write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    os.chmod(path, mode)
    assert run(home, "install").exit_code == 0
    [bak] = backups(home)
    assert stat.S_IMODE(bak.stat().st_mode) == mode
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_only_the_newest_five_backups_are_kept(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text("{}\n")
    mine = home / ".claude" / "settings.json.bak-mine"  # not ours: never touched
    mine.write_text("x")
    contents = []
    for i in range(8):
        contents.append(path.read_text())
        assert run(home, "install" if i % 2 == 0 else "uninstall").exit_code == 0
    kept = backups(home)
    assert mine in kept
    ours = [b for b in kept if b != mine]
    assert len(ours) == 5
    assert [b.read_text() for b in settingsjson.backups_of(path)] == contents[-5:]  # the newest five, in order
    assert mine.read_text() == "x"


def test_a_symlinked_settings_file_is_written_through_the_link(home: Path, tmp_path: Path) -> None:
    # regression: a dotfiles repository's link was replaced by a regular file
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude-settings.json"
    real.write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    os.chmod(real, 0o600)
    link = home / ".claude" / "settings.json"
    link.symlink_to(real)
    assert run(home, "install").exit_code == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert any(hooksetup.is_ours(h) for g in json.loads(real.read_text())["hooks"]["Stop"] for h in g["hooks"])
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    [bak] = backups(home)  # beside the link, as the user knows the file
    assert json.loads(bak.read_text()) == USER_SETTINGS
    assert sorted(p.name for p in dotfiles.iterdir()) == ["claude-settings.json"]  # nothing left in the repo
    assert run(home, "uninstall").exit_code == 0
    assert link.is_symlink() and json.loads(real.read_text()) == USER_SETTINGS


@pytest.mark.parametrize(
    "dump",
    [
        lambda d: json.dumps(d, indent=4) + "\n",
        lambda d: json.dumps(d, indent="\t"),
        lambda d: json.dumps(d, indent=2, separators=(",", ":")) + "\n",
        lambda d: json.dumps(d) + "\n",
        lambda d: json.dumps(d, ensure_ascii=True, indent=3) + "\n",
    ],
    ids=["4-spaces", "tabs-no-final-newline", "no-space-after-colon", "one-line", "ascii-escapes"],
)
def test_the_users_formatting_is_kept_and_the_dry_run_diff_only_adds(home: Path, dump: Any) -> None:
    doc = {**USER_SETTINGS, "env": {"GREETING": "héllo"}}
    path = home / ".claude" / "settings.json"
    original = dump(doc)
    path.write_text(original)
    r = run(home, "install", "--dry-run")
    assert r.exit_code == 0
    changed = [ln for ln in r.output.splitlines() if ln[:1] in ("+", "-") and not ln.startswith(("+++", "---"))]
    if "\n" in original.strip():
        assert changed and all(ln.startswith("+") for ln in changed), changed[:5]
    else:  # a one-line file: that line is the change, still one line, still in its style
        assert len(changed) == 2 and changed[0] == "-" + original.strip() and changed[1].startswith('+{"model": ')
    assert run(home, "install").exit_code == 0
    assert run(home, "uninstall").exit_code == 0
    assert path.read_text() == original  # install then uninstall: byte for byte the user's file


HAND_WRITTEN = """{
  "model": "opus",
  "permissions": { "allow": ["Bash(npm test:*)", "Read(~/src/**)"], "deny": [] },
  "env":   {"A": "1",   "B": "2"},
  "hooks": {
    "Stop": [ { "hooks": [ { "type": "command", "command": "say done" } ] } ],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}
    ]
  }
}
"""


def test_hand_laid_out_lines_are_left_alone_by_an_install(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text(HAND_WRITTEN)
    r = run(home, "install", "--dry-run")
    assert r.exit_code == 0
    removed = [ln[1:] for ln in r.output.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    # only the lines that themselves gain something: the one-line Stop list and the last PreToolUse group
    assert removed == [
        '    "Stop": [ { "hooks": [ { "type": "command", "command": "say done" } ] } ],',
        '      {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}',
    ]
    assert run(home, "install").exit_code == 0
    text = path.read_text()
    for line in HAND_WRITTEN.splitlines()[:4]:
        assert line in text.splitlines()
    doc = json.loads(text)
    assert doc["hooks"]["Stop"][0]["hooks"][0]["command"] == "say done"
    assert any(hooksetup.is_ours(h) for g in doc["hooks"]["Stop"] for h in g["hooks"])
    assert any(hooksetup.is_ours(h) for g in doc["hooks"]["SessionEnd"] for h in g["hooks"])
    # and an uninstall cuts exactly what the install added: the user's file, byte for byte
    r = run(home, "uninstall", "--dry-run")
    assert [ln[1:] for ln in r.output.splitlines() if ln.startswith("+") and not ln.startswith("+++")] == [
        '    "Stop": [ { "hooks": [ { "type": "command", "command": "say done" } ] } ],',
        '      {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}',
    ]
    assert run(home, "uninstall").exit_code == 0
    assert path.read_text() == HAND_WRITTEN


def test_uninstall_cuts_our_hook_out_of_a_group_the_user_shares_with_it(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    ours = {"type": "http", "url": "http://localhost:7391/hooks", "headers": dict([hooksetup.INSTALLED_BY])}
    text = (
        '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}, '
        + json.dumps(ours)
        + "]}],\n"
        + '  "Notification": [{"hooks": ['
        + json.dumps(ours)
        + "]}]}}\n"
    )
    path.write_text(text)
    assert run(home, "uninstall").exit_code == 0
    assert path.read_text() == '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}\n'


def test_command_hooks_run_the_installed_ingestd_not_the_clone(tmp_path: Path, home: Path) -> None:
    # Regression: hook commands pointed into the clone's .venv, so `make clean` broke them silently
    from ingestd.claude.paths import find_installed

    tool_python = tmp_path / "pipx" / "venvs" / "ingestd" / "bin" / "python"
    tool_python.parent.mkdir(parents=True)
    tool_python.write_text("")
    script = tool_python.parent / "ingestd"
    script.write_text(f"#!{tool_python}\nimport sys\n")
    script.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ingestd").symlink_to(script)
    env = {"HOME": str(home), "PATH": str(bin_dir)}
    assert find_installed(env).python == str(tool_python)
    res = CliRunner().invoke(cli, ["hooks", "install"], env=env, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert f"run {tool_python} -m ingestd.forward: the ingestd on PATH ({bin_dir}/ingestd)" in res.output
    doc = json.loads((home / ".claude" / "settings.json").read_text())
    commands = [h["command"] for e in doc["hooks"].values() for m in e for h in m["hooks"] if h["type"] == "command"]
    assert commands and all(c.startswith(f"{tool_python} -m ingestd.forward ") for c in commands)


def test_without_ingestd_on_path_the_hooks_say_why_they_are_fragile(home: Path) -> None:
    env = {"HOME": str(home), "PATH": "/nonexistent"}
    res = CliRunner().invoke(cli, ["hooks", "install", "--dry-run"], env=env, catch_exceptions=False)
    assert res.exit_code == 0
    assert "no ingestd on PATH" in res.output and "pipx install ." in res.output


@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_hooks_follow_claude_config_dir(tmp_path: Path, home: Path, action: str) -> None:
    # Claude Code reads its user settings from $CLAUDE_CONFIG_DIR/settings.json when that is set,
    # as `service install` and `ingest` already read $CLAUDE_CONFIG_DIR/projects (a regression: hooks
    # were written to ~/.claude/settings.json, which that Claude Code never reads)
    conf = tmp_path / "alt-claude"
    conf.mkdir()
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(conf)}
    r = CliRunner().invoke(cli, ["hooks", "install"], env=env)
    assert r.exit_code == 0, r.output
    assert "ingestd.forward" in (conf / "settings.json").read_text()
    assert not (home / ".claude" / "settings.json").exists()
    if action == "uninstall":
        r = CliRunner().invoke(cli, ["hooks", "uninstall"], env=env)
        assert r.exit_code == 0, r.output
        assert "ingestd" not in (conf / "settings.json").read_text()


def test_an_empty_claude_config_dir_is_unset(home: Path) -> None:
    r = CliRunner().invoke(cli, ["hooks", "install"], env={"HOME": str(home), "CLAUDE_CONFIG_DIR": ""})
    assert r.exit_code == 0, r.output
    assert (home / ".claude" / "settings.json").exists()


# A user's settings.json as Claude Code's /hooks menu leaves it: an event whose last hook was
# deleted stays as an empty list (PreToolUse here; SessionStart takes only our command forwarder).
WITH_EMPTY_EVENTS = """{
  "model": "opus",
  "permissions": {
    "allow": [
      "Bash(npm test:*)"
    ]
  },
  "hooks": {
    "PreToolUse": [],
    "SessionStart": [],
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "say done"
          }
        ]
      }
    ]
  }
}
"""


@pytest.mark.parametrize("flags", [[], ["--legacy"], ["--otel"]], ids=["http", "legacy", "otel"])
def test_an_event_list_that_was_empty_before_install_is_given_back_empty(home: Path, flags: list[str]) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text(WITH_EMPTY_EVENTS)
    assert run(home, "install", "--port", "7391", *flags).exit_code == 0
    doc = settings(home)
    for ev in ("PreToolUse", "SessionStart"):
        assert [hooksetup.kept_empty(h) for g in doc["hooks"][ev] for h in g["hooks"]] == [True]
    assert not any(hooksetup.kept_empty(h) for g in doc["hooks"]["Stop"] for h in g["hooks"])
    again = run(home, "install", "--port", "7391", *flags)
    assert again.exit_code == 0 and "already up to date" in again.output
    assert run(home, "uninstall").exit_code == 0
    assert path.read_text() == WITH_EMPTY_EVENTS  # byte for byte, the empty lists with it
