"""Which hook events are status evidence of an agent (``ingestd.core.hookfold``), on the bodies a real
Claude Code 2.1.332 sent: the file, config, directory, instructions and model-switch events say
nothing of what an agent does, so they never wake a waiting agent."""

from __future__ import annotations

from ingestd.core.projector import fold_log
from ingestd.core.touch import Ctx
from tests.core.claude_fixtures import deliveries, hook_rows
from tests.core.projector_support import Model


def _fold(bodies: list[dict[str, object]]) -> Model:
    rows = hook_rows(bodies)
    m = Model()
    m.apply(fold_log(rows[0].session_id or "", rows, Ctx())[1])
    return m


def test_a_file_or_config_change_after_stop_leaves_the_main_agent_waiting() -> None:
    bodies = deliveries("files_and_config")
    names = [b["hook_event_name"] for b in bodies]
    upto = names.index("ConfigChange") + 1  # Stop, then FileChanged and ConfigChange from outside
    assert names[upto - 3 : upto] == ["Stop", "FileChanged", "ConfigChange"]
    m = _fold(bodies[:upto])
    sid = str(bodies[0]["session_id"])
    assert m.agent(sid).status == "waiting"
    assert m.tables["sessions"][sid].status == "waiting"
    events = sorted(m.tables["events"].values())
    assert [e.event_type for e in events] == names[:upto]
    assert [e.agent_id for e in events if e.event_type in ("FileChanged", "ConfigChange")] == [None, None]


def test_a_model_switch_or_directory_added_between_prompts_wakes_nothing() -> None:
    bodies = deliveries("sdk_controls")
    names = [b["hook_event_name"] for b in bodies]
    upto = names.index("PostModelSwitch") + 1
    assert "DirectoryAdded" in names[:upto] and names.index("Stop") < names.index("PreModelSwitch")
    m = _fold(bodies[:upto])
    assert m.agent(str(bodies[0]["session_id"])).status == "waiting"


def test_a_manual_compaction_ends_waiting_for_the_user() -> None:
    every = deliveries("resume_compact_fork")
    bodies = [b for b in every if b["session_id"] == every[0]["session_id"]]
    names = [b["hook_event_name"] for b in bodies]
    upto = names.index("PostCompact") + 1
    m = _fold(bodies[:upto])
    assert m.agent(str(bodies[0]["session_id"])).status == "waiting"
