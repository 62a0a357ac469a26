-- wrk 4.1 script for bench/hookwrk.py: POST /hooks with the bodies bench/hookload.py's hook_body makes
-- (a PreToolUse in one of 8 sessions, unique by tool_use_id), byte for byte; one wrk thread (-t1).
-- Argument: the run id (keeps tool_use_id values unique across runs on one database).
-- done() prints one line "WRKJSON {...}": counts, wrk's error kinds, latency percentiles in microseconds.
local run, n = "r", 0
local sessions = {}
for i = 0, 7 do sessions[i] = string.format("b0000000-0000-4000-8000-%012d", i) end
local fmt = '{"session_id":"%s","transcript_path":"/home/bench/.claude/projects/-home-bench/%s.jsonl",'
  .. '"cwd":"/home/bench/project","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash",'
  .. '"tool_input":{"command":"echo %d","description":"bench"},"tool_use_id":"toolu_bench_%s_%09d"}'

function init(args)
  run = args[1] or "r"
end

function request()
  local sid = sessions[n % 8]
  local body = string.format(fmt, sid, sid, n, run, n)
  n = n + 1
  return wrk.format("POST", "/hooks", { ["Content-Type"] = "application/json" }, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"pct_us":{',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout))
  for i, p in ipairs({ 50, 90, 95, 99, 99.9 }) do
    io.write(string.format('%s"%s":%d', i > 1 and "," or "", tostring(p), latency:percentile(p)))
  end
  io.write("}}\n")
end
