"""Headless runs of a real Claude Code that make hook events fire, each with a catch-all recorder.

A scenario sets up a home (files, a git repository, a skill, a slash command), a stand-in script,
settings with an http hook *and* a command hook on every event Claude Code knows (``EVENTS``) to a
``Recorder``, and runs ``claude -p`` (or several runs: a resume, a fork). ``capture`` runs them and
keeps every hook body, the status-line input and OTLP exports as the fixtures in
``fixtures/claude-2.1.332``; the tests run a few of them to keep the facts in ``docs/claude-code.md``
true. Each scenario returns a ``Capture``: its runs and what the recorder received.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.realclaude import standin as s
from tests.realclaude.claude import Claude, Run, control_request, user_message
from tests.realclaude.recorder import Hit, Recorder

# The hook events Claude Code 2.1.332 knows, in its own order (the bundle's event enum).
EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PreModelSwitch",
    "PostModelSwitch",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
    "DirectoryAdded",
    "MessageDisplay",
    "PreSkillShellCommand",
)
# Hooking these changes what Claude Code does even when the hook answers nothing (docs/claude-code.md):
# WorktreeCreate / WorktreeRemove replace git's worktree handling, so a catch-all leaves them out.
BEHAVIOUR_CHANGING = ("WorktreeCreate", "WorktreeRemove")


def catch_all(
    rec: Recorder, events: tuple[str, ...] = EVENTS, *, matchers: dict[str, str] | None = None
) -> dict[str, Any]:
    """A settings ``hooks`` block with an http hook and a command hook on each of ``events`` (the
    two kinds' bodies are compared: Claude Code sends the same input to both). ``matchers`` gives
    an event's matcher (FileChanged's is the file names it watches)."""
    http, command = rec.http_hooks(events), rec.command_hooks(events)
    hooks: dict[str, Any] = {}
    for ev in events:
        group: dict[str, Any] = {"hooks": http[ev][0]["hooks"] + command[ev][0]["hooks"]}
        if matchers and ev in matchers:
            group = {"matcher": matchers[ev], **group}
        hooks[ev] = [group]
    return hooks


@dataclass
class Capture:
    """What one scenario did.

    Attributes:
        name: str. runs: list[Run]. hits: list[Hit], the recorder's, in arrival order.
        requests: list[s.Request], the stand-in's.
    """

    name: str
    runs: list[Run] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    requests: list[s.Request] = field(default_factory=list)

    def hooks(self, kind: str | None = None) -> list[Hit]:
        return [h for h in self.hits if h.kind in ("http", "command") and (kind is None or h.kind == kind)]

    def fired(self, kind: str | None = None) -> list[str]:
        """The events that fired (each once, first-fired order)."""
        return list(dict.fromkeys(h.name for h in self.hooks(kind)))


@dataclass
class Env:
    """What a scenario gets: a Claude runner (its own root), the stand-in and the recorder."""

    claude: Claude
    api: s.StandIn
    rec: Recorder

    @property
    def home(self) -> Path:
        return self.claude.home()

    @property
    def proj(self) -> Path:
        return self.home / "proj"


Scenario = Callable[[Env], None]
SCENARIOS: dict[str, Scenario] = {}


def scenario(fn: Scenario) -> Scenario:
    SCENARIOS[fn.__name__] = fn
    return fn


def run_scenario(name: str, exe: Path, root: Path) -> Capture:
    """Run scenario ``name`` with Claude Code ``exe`` in ``root`` (an empty directory)."""
    with s.StandIn(request_ids=True) as api, Recorder() as rec:
        env = Env(Claude(exe, root, api.url), api, rec)
        SCENARIOS[name](env)
        return Capture(name, list(env.claude.runs), list(rec.hits), list(api.requests))


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=_git_env(cwd))


def _git_env(cwd: Path) -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": "user",
        "GIT_AUTHOR_EMAIL": "user@example.com",
        "GIT_COMMITTER_NAME": "user",
        "GIT_COMMITTER_EMAIL": "user@example.com",
        "HOME": str(cwd),
        "PATH": "/usr/bin:/bin",
    }


# -- the scenarios ------------------------------------------------------------------------------


@scenario
def spawn(e: Env) -> None:
    """A prompt that runs Bash, then spawns a subagent (asynchronous, 2.1.332's default) that reads
    a file, and finishes when the subagent's task-notification arrives. A project CLAUDE.md loads."""
    (e.proj / "hello.txt").write_text("hello\n")
    (e.proj / "CLAUDE.md").write_text("# Project notes\nBe brief.\n")
    e.api.script = s.script(
        s.conversation(
            "SPAWN-MAIN",
            s.bash("echo main-bash", "Print a word"),
            s.agent("SPAWN-SUB read hello.txt and report", description="Read a file"),
            s.text("Started the reader."),
            s.text("The reader finished."),
        ),
        s.conversation("SPAWN-SUB", s.read(str(e.proj / "hello.txt")), s.text("It says hello.")),
    )
    e.claude.run("SPAWN-MAIN run a command, then spawn a reader", settings={"hooks": catch_all(e.rec)}).check()


@scenario
def spawn_sync(e: Env) -> None:
    """The same spawn in the foreground (``run_in_background: false``): the Agent tool's result is
    the subagent's answer."""
    (e.proj / "hello.txt").write_text("hello\n")
    e.api.script = s.script(
        s.conversation("SYNC-MAIN", s.agent("SYNC-SUB read hello.txt", background=False), s.text("Done.")),
        s.conversation("SYNC-SUB", s.read(str(e.proj / "hello.txt")), s.text("It says hello.")),
    )
    e.claude.run("SYNC-MAIN spawn a reader and wait", settings={"hooks": catch_all(e.rec)}).check()


@scenario
def tool_failure(e: Env) -> None:
    """A Read of a missing file (PostToolUseFailure) and two tools in one answer (one PostToolBatch)."""
    e.api.script = s.script(
        s.conversation(
            "FAIL-MAIN",
            s.read(str(e.proj / "missing.txt")),
            s.tools(
                ("Bash", {"command": "echo one", "description": "Print one"}),
                ("Bash", {"command": "echo two", "description": "Print two"}),
            ),
            s.text("Done."),
        )
    )
    e.claude.run("FAIL-MAIN read a missing file", settings={"hooks": catch_all(e.rec)}).check()


@scenario
def api_failure(e: Env) -> None:
    """The API answers 429 (rate limited): the turn ends in an API error (StopFailure)."""
    e.api.script = s.script(s.conversation("ERR-MAIN", s.api_error(429, "rate_limit_error")))
    e.claude.run("ERR-MAIN anything", settings={"hooks": catch_all(e.rec)})


@scenario
def resume_compact_fork(e: Env) -> None:
    """A session, then ``--continue`` with ``/compact`` (SessionStart resume, Pre/PostCompact), then
    ``--resume --fork-session`` (SessionStart fork)."""
    e.api.script = s.script(
        s.conversation("RCF-MAIN", s.text("First answer.")), fallback=s.text("Summary: a greeting.")
    )
    settings = {"hooks": catch_all(e.rec)}
    first = e.claude.run("RCF-MAIN hello", settings=settings).check()
    sid = first.session_id
    assert sid is not None
    e.claude.run("/compact", args=["--continue"]).check()
    e.api.script = s.script(s.conversation("RCF-", s.text("Forked answer.")), fallback=s.text("OK"))
    e.claude.run("RCF-FORK go on", args=["--resume", sid, "--fork-session"]).check()


@scenario
def slash_and_skill(e: Env) -> None:
    """A project slash command (UserPromptExpansion) and a skill with an inline shell command
    (PreSkillShellCommand)."""
    commands = e.proj / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "greet.md").write_text("---\ndescription: Greet someone\n---\nEXPAND-MAIN greet $ARGUMENTS warmly.\n")
    skill = e.proj / ".claude" / "skills" / "today"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: today\ndescription: Say what day it is\n---\nSKILL-MAIN The date is !`echo 2026-12-01`.\n"
    )
    e.api.script = s.script(
        s.conversation("EXPAND-MAIN", s.text("Hello Bob!")), s.conversation("SKILL-MAIN", s.text("It is Tuesday."))
    )
    settings = {"hooks": catch_all(e.rec)}
    e.claude.run("/greet Bob", settings=settings).check()
    e.claude.run("/today").check()


@scenario
def sdk_controls(e: Env) -> None:
    """Driven as the Agent SDK drives it (stream-json): a first prompt, then control requests
    ``set_model`` (Pre/PostModelSwitch, source ``sdk``) and ``register_repo_root`` (DirectoryAdded),
    then a second prompt answered by the new model."""
    sub = e.proj / "vendored"
    sub.mkdir()
    _git(sub, "init", "-q", "-b", "main")
    e.api.script = s.script(s.conversation("SDK-MAIN", s.text("First."), s.text("Second.")))
    with e.claude.sdk(settings={"hooks": catch_all(e.rec)}) as sdk:
        sdk.send(user_message("SDK-MAIN hello"))
        sdk.wait_results(1)
        sdk.send(control_request("r1", "set_model", model="claude-haiku-4-5-20251001"))
        sdk.send(control_request("r2", "register_repo_root", directory=str(sub)))
        sdk.wait("both control responses", lambda: len(sdk.messages("control_response")) >= 2)
        sdk.send(user_message("SDK-MAIN again"))
        sdk.wait_results(2)


@scenario
def files_and_config(e: Env) -> None:
    """Driven over stream-json: after a first answer the test changes a watched file (FileChanged,
    matcher ``.envrc``) and the user's settings (ConfigChange) from outside; then Bash changes the
    working directory (CwdChanged)."""
    (e.proj / "sub").mkdir()
    envrc = e.proj / ".envrc"
    envrc.write_text("export A=1\n")
    e.api.script = s.script(
        s.conversation(
            "FILES-MAIN", s.text("Ready."), s.bash(f"cd {e.proj / 'sub'}", "Enter the sub folder"), s.text("Done.")
        )
    )
    settings: dict[str, Any] = {"hooks": catch_all(e.rec, matchers={"FileChanged": ".envrc"})}
    with e.claude.sdk(settings=settings, args=["--allowedTools", "Bash"]) as sdk:
        sdk.send(user_message("FILES-MAIN get ready"))
        sdk.wait_results(1)
        envrc.write_text("export A=2\n")
        sdk.wait("FileChanged", lambda: e.rec.of("http", "FileChanged"))
        e.claude.write_settings({**settings, "env": {"FROM_TEST": "1"}})
        sdk.wait("ConfigChange", lambda: e.rec.of("http", "ConfigChange"))
        sdk.send(user_message("FILES-MAIN now change folder"))
        sdk.wait_results(2)


@scenario
def setup_init(e: Env) -> None:
    """``--init-only`` (Setup, trigger ``init``) and ``--maintenance`` (trigger ``maintenance``)."""
    e.api.script = s.script(s.conversation("SETUP-MAIN", s.text("OK.")))
    e.claude.run("SETUP-MAIN hi", settings={"hooks": catch_all(e.rec)}, args=["--init-only"])
    e.claude.run("SETUP-MAIN hi", args=["--maintenance"])


@scenario
def permissions(e: Env) -> None:
    """A Bash call that needs permission in the default mode, headless with nobody to ask."""
    e.api.script = s.script(s.conversation("PERM-MAIN", s.bash("touch made-by-bash", "Make a file"), s.text("Done.")))
    e.claude.run("PERM-MAIN make a file", settings={"hooks": catch_all(e.rec)}, args=["--permission-prompts", "none"])


def _repo(path: Path) -> None:
    _git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("a\n")
    _git(path, "add", ".")
    _git(path, "commit", "-q", "-m", "first")


@scenario
def worktree_create(e: Env) -> None:
    """``--worktree`` in a git repository with a WorktreeCreate http hook that answers nothing: the
    run fails (the hook replaces git's worktree creation and gave no path)."""
    _repo(e.proj)
    e.api.script = s.script(s.conversation("WT-MAIN", s.text("OK.")))
    e.claude.run("WT-MAIN hi", settings={"hooks": e.rec.http_hooks(("WorktreeCreate",))}, args=["--worktree", "wt1"])


@scenario
def worktree_remove(e: Env) -> None:
    """The model enters a git worktree (EnterWorktree) and leaves removing it (ExitWorktree), with
    an http hook on WorktreeRemove: it does not fire (Claude Code removes a git worktree itself; the
    hook is only for worktrees a WorktreeCreate hook made, see ``worktree_hooks``)."""
    _repo(e.proj)
    e.api.script = s.script(
        s.conversation(
            "WTR-MAIN",
            s.tool("EnterWorktree", {"name": "wt2"}),
            s.tool("ExitWorktree", {"action": "remove"}),
            s.text("OK."),
        )
    )
    hooks = catch_all(e.rec, tuple(ev for ev in EVENTS if ev != "WorktreeCreate"))
    with e.claude.sdk(settings={"hooks": hooks}, args=["--allowedTools", "EnterWorktree ExitWorktree"]) as sdk:
        sdk.send(user_message("WTR-MAIN work in a worktree"))
        sdk.wait_results(1)


@scenario
def worktree_hooks(e: Env) -> None:
    """A WorktreeCreate command hook that makes a plain folder (a hook-made worktree), then
    EnterWorktree and ExitWorktree ``remove``: WorktreeRemove fires, and its http hook's empty
    answer counts as removed (the folder stays; no git fallback runs)."""
    _repo(e.proj)
    made = e.home / "made-by-hook"
    create = {"type": "command", "command": f"mkdir -p {made} && echo {made}"}
    hooks = catch_all(e.rec, tuple(ev for ev in EVENTS if ev != "WorktreeCreate"))
    hooks["WorktreeCreate"] = [{"hooks": [create]}, *e.rec.http_hooks(("WorktreeCreate",))["WorktreeCreate"]]
    e.api.script = s.script(
        s.conversation(
            "WTH-MAIN",
            s.tool("EnterWorktree", {"name": "wt3"}),
            s.tool("ExitWorktree", {"action": "remove", "discard_changes": True}),
            s.text("OK."),
        )
    )
    with e.claude.sdk(settings={"hooks": hooks}, args=["--allowedTools", "EnterWorktree ExitWorktree"]) as sdk:
        sdk.send(user_message("WTH-MAIN work in a worktree"))
        sdk.wait_results(1)


@scenario
def mcp_elicitation(e: Env) -> None:
    """An MCP server (``mcp_asker.py``) whose tool asks for input: Elicitation, ElicitationResult
    (headless, nobody answers: ``cancel``) and a Notification (``elicitation_response``)."""
    server = Path(__file__).with_name("mcp_asker.py")
    config = {"mcpServers": {"asker": {"type": "stdio", "command": sys.executable, "args": [str(server)]}}}
    e.api.script = s.script(
        s.conversation(
            "MCP-MAIN",
            s.tool("ToolSearch", {"query": "select:mcp__asker__ask"}),  # MCP tools are deferred in 2.1.332
            s.tool("mcp__asker__ask", {}),
            s.text("Nobody answered."),
        )
    )
    args = ["--mcp-config", json.dumps(config), "--allowedTools", "mcp__asker__ask"]
    e.claude.run("MCP-MAIN ask me", settings={"hooks": catch_all(e.rec)}, args=args).check()


@scenario
def tasks(e: Env) -> None:
    """The task list tools: TaskCreate (TaskCreated) and TaskUpdate to completed (TaskCompleted)."""
    e.api.script = s.script(
        s.conversation(
            "TASKS-MAIN",
            s.tool(
                "TaskCreate",
                {"subject": "Write the notes", "description": "Write notes.md", "activeForm": "Writing notes"},
            ),
            s.tool("TaskUpdate", {"taskId": "1", "status": "completed"}),
            s.text("Done."),
        )
    )
    with e.claude.sdk(settings={"hooks": catch_all(e.rec)}) as sdk:
        sdk.send(user_message("TASKS-MAIN plan and do"))
        sdk.wait_results(1)


@scenario
def named_agent(e: Env) -> None:
    """``CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1`` and an Agent spawn with a ``name``. In 2.1.332 this
    makes an ordinary background subagent whose ``.meta.json`` carries the name; no team folder, no
    TeammateIdle; the task tools are not among a subagent's tools headless (its TaskCreate fails)."""
    e.api.script = s.script(
        s.conversation(
            "NAMED-LEAD",
            s.tool(
                "Agent", {"description": "Take notes", "prompt": "NAMED-ALICE make a task and do it", "name": "alice"}
            ),
            s.text("Alice is on it."),
            s.text("Alice is done."),
        ),
        s.conversation(
            "NAMED-ALICE",
            s.tool("TaskCreate", {"subject": "Take notes", "description": "Write notes.md"}),
            s.tool("TaskUpdate", {"taskId": "1", "status": "completed"}),
            s.text("Notes taken."),
        ),
    )
    e.claude.run(
        "NAMED-LEAD hi", settings={"hooks": catch_all(e.rec)}, env={"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1"}
    )


@scenario
def statusline(e: Env) -> None:
    """The interactive UI on a pseudo-terminal, with a status-line command: the status line's input
    before and after a prompt whose Bash call asks for permission (a Notification once the dialog has
    waited; answered Yes), then ``/exit``."""
    e.api.script = s.script(
        s.conversation("SL-MAIN", s.bash("touch made-by-bash", "Make a file"), s.text("Made it.")),
    )
    settings = {"hooks": catch_all(e.rec), "statusLine": e.rec.status_line()}
    with e.claude.interactive(settings=settings) as term:
        term.wait("the first status line", lambda: e.rec.of("statusline"))
        term.submit("SL-MAIN make a file")
        term.wait("the permission request", lambda: e.rec.of("http", "PermissionRequest"))
        term.wait("the permission dialog", lambda: "Do you want" in term.screen())
        # 2.1.332 sends Notification (permission_prompt) once a permission dialog has waited 6 s
        term.wait("the Notification", lambda: e.rec.of("http", "Notification"), timeout_s=30)
        term.type("\r")
        term.wait("the answer", lambda: "Made it." in term.screen())
        term.wait(
            "a status line with usage", lambda: any(b'current_usage":{' in h.body for h in e.rec.of("statusline"))
        )
