"""Smoke test of baton through an independent MCP client: the official Python SDK.

Usage: python3 tests/python/smoke.py PATH_TO_BATON

Drives `baton serve` over stdio and over streamable HTTP: initialize, tools/list
(the SDK validates every successful result against the tool's outputSchema),
a few lifecycle calls, the pipeline loop (seed 001) with an embedded report,
the manual tools (seed 002), and error results. Exits non-zero on any mismatch.
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def check(cond, what):
    if not cond:
        raise AssertionError(what)


async def exercise(session, label):
    await session.initialize()
    listed = await session.list_tools()
    names = sorted(t.name for t in listed.tools)
    check("init" in names and "state_resume_info" in names, f"{label}: tools {names}")
    for t in listed.tools:
        check(t.output_schema is not None, f"{label}: {t.name} has no outputSchema")

    r = await session.call_tool("init", {"spec_name": f"python {label}", "effort": "M"})
    check(not r.is_error, f"{label}: init failed: {r}")
    ws = r.structured_content["workspace"]
    check(json.loads(r.content[0].text) == r.structured_content, f"{label}: text mirror differs")
    check(r.structured_content["skippedPhases"] == ["phase-4b", "checkpoint-b"], f"{label}: {r}")

    # Recovery tools need an explicit force and a reason.
    r = await session.call_tool("phase_start", {"workspace": ws, "phase": "phase-1"})
    check(r.is_error and json.loads(r.content[0].text)["details"]["rule"] == "recovery_only", f"{label}: {r}")
    forced = {"force": True, "reason": "python smoke"}
    r = await session.call_tool("phase_start", {"workspace": ws, "phase": "phase-1", **forced})
    check(not r.is_error and r.structured_content["events"] == ["phase-start"], f"{label}: {r}")

    r = await session.call_tool("phase_complete", {"workspace": ws, "phase": "phase-1", **forced})
    check(r.is_error, f"{label}: completing without analysis.md must fail")
    check(r.structured_content is None, f"{label}: an error result carries no structuredContent: {r}")
    err = json.loads(r.content[0].text)
    check(err["code"] == "blocked" and err["details"]["rule"] == "artifact_missing", f"{label}: {err}")

    r = await session.call_tool("phase_start", {"workspace": "../../etc", "phase": "phase-1", **forced})
    check(r.is_error and json.loads(r.content[0].text)["code"] == "out_of_scope", f"{label}: {r}")

    r = await session.call_tool("state_resume_info", {"workspace": ws})
    check(r.structured_content["currentPhaseStatus"] == "in_progress", f"{label}: {r}")

    await pipeline(session, label)
    await manuals(session, label)
    return ws


async def pipeline(session, label):
    """Seed 001's loop: init, confirm, an agent action, its report embedded."""
    r = await session.call_tool("pipeline_init", {"arguments": f"fix the {label} login typo --nopr"})
    check(not r.is_error, f"{label}: pipeline_init {r}")
    init = r.structured_content
    check(init["source_type"] == "text" and init["flags"]["skip_pr"], f"{label}: {init}")
    r = await session.call_tool("pipeline_init_with_context", {
        "workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"],
        "user_confirmation": {"effort": "S", "use_current_branch": True}})
    check(not r.is_error and r.structured_content["ready"], f"{label}: confirm {r}")
    ws = r.structured_content["workspace"]
    r = await session.call_tool("pipeline_next_action", {"workspace": ws})
    a = r.structured_content
    check(a["type"] == "spawn_agent" and a["phase"] == "phase-1", f"{label}: {a}")
    check("## Output File" in a["prompt"], f"{label}: prompt layers")
    # The agent writes its artifact; the report travels with the next call.
    with open(os.path.join(REPO, ws, a["output_file"]), "w") as f:
        f.write("# Analysis\n\nWritten by the smoke test.\n")
    r = await session.call_tool("pipeline_next_action", {
        "workspace": ws, "previous_action_complete": True, "previous_tokens": 10})
    a = r.structured_content
    check(a["report_result"]["next_action_hint"] == "proceed", f"{label}: {a}")
    check(a["type"] == "spawn_agent" and a["phase"] == "phase-3", f"{label}: {a}")
    # A report without the artifact is refused and names the rule.
    r = await session.call_tool("pipeline_report_result", {"workspace": ws, "phase": "phase-3"})
    check(r.is_error and json.loads(r.content[0].text)["code"] == "blocked", f"{label}: {r}")


async def manuals(session, label):
    """Seed 002: list, find, page the hits, read the best section."""
    r = await session.call_tool("manual_ls", {})
    check(not r.is_error, f"{label}: manual_ls {r}")
    r = await session.call_tool("manual_find", {"query": "解約したら返戻金はいつ支払われますか"})
    check(not r.is_error and len(r.structured_content["trace_id"]) == 32, f"{label}: {r}")
    r = await session.call_tool("manual_hits", {"trace_id": r.structured_content["trace_id"], "limit": 3})
    items = r.structured_content["items"]
    check(items and items[0]["ref"]["path"] == "terms.md", f"{label}: {items}")
    # Compact rows may hoist manual_id out of the ref (seed 002); a read names it.
    ref = {"manual_id": "demo", **items[0]["ref"]}
    r = await session.call_tool("manual_read", {"ref": ref, "scope": "section"})
    check(not r.is_error and "30日以内" in r.content[0].text, f"{label}: {r}")
    r = await session.call_tool("manual_find", {"query": "x", "budget": {"max_candidates": True}})
    check(r.is_error and json.loads(r.content[0].text)["code"] == "invalid_parameter", f"{label}: {r}")


async def over_stdio(baton, repo):
    params = StdioServerParameters(command=baton, args=["serve", "--tools", "all"], cwd=repo)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await exercise(session, "stdio")


async def over_http(baton, repo):
    proc = subprocess.Popen(
        [baton, "serve", "--tools", "all", "--http", "127.0.0.1:0"],
        cwd=repo,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        m = re.search(r"http://(127\.0\.0\.1:\d+)", line)
        check(m is not None, f"no listening line: {line!r}")
        url = f"http://{m.group(1)}/mcp"
        async with streamable_http_client(url) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                return await exercise(session, "http")
    finally:
        # A loaded machine may take a while to stop the server: wait long,
        # and stop it for good only if it never exits (no wall clock fails
        # the smoke test).
        proc.terminate()
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


REPO = None


async def main():
    global REPO
    baton = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as repo:
        REPO = repo
        os.mkdir(os.path.join(repo, ".git"))
        os.makedirs(os.path.join(repo, "manuals", "demo"))
        with open(os.path.join(repo, "manuals", "demo", "terms.md"), "w") as f:
            f.write("# 約款\n\n## 第10条 解約返戻金\n\n解約返戻金は請求から30日以内に支払います。\n\n"
                    "## 第11条 入院給付金\n\n入院1日につき5000円を支払います。\n")
        ws1 = await over_stdio(baton, repo)
        ws2 = await over_http(baton, repo)
        check(ws1 != ws2, "two workspaces")
        for ws in (ws1, ws2):
            with open(os.path.join(repo, ws, "state.json")) as f:
                state = json.load(f)
            check(state["currentPhase"] == "phase-1", f"{ws}: {state['currentPhase']}")
    print("python mcp client smoke: 2 passed, 0 failed")


if __name__ == "__main__":
    asyncio.run(main())
