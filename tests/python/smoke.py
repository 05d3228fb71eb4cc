"""Smoke test of baton through an independent MCP client: the official Python SDK.

Usage: python3 tests/python/smoke.py PATH_TO_BATON

Drives `baton serve` over stdio and over streamable HTTP: initialize, tools/list
(the SDK validates every successful result against the tool's outputSchema),
a few lifecycle calls, and an error result. Exits non-zero on any mismatch.
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

    r = await session.call_tool("phase_start", {"workspace": ws, "phase": "phase-1"})
    check(not r.is_error and r.structured_content["events"] == ["phase-start"], f"{label}: {r}")

    r = await session.call_tool("phase_complete", {"workspace": ws, "phase": "phase-1"})
    check(r.is_error, f"{label}: completing without analysis.md must fail")
    err = json.loads(r.content[0].text)
    check(err["code"] == "blocked" and err["details"]["rule"] == "artifact_missing", f"{label}: {err}")

    r = await session.call_tool("phase_start", {"workspace": "../../etc", "phase": "phase-1"})
    check(r.is_error and json.loads(r.content[0].text)["code"] == "out_of_scope", f"{label}: {r}")

    r = await session.call_tool("state_resume_info", {"workspace": ws})
    check(r.structured_content["currentPhaseStatus"] == "in_progress", f"{label}: {r}")
    return ws


async def over_stdio(baton, repo):
    params = StdioServerParameters(command=baton, args=["serve"], cwd=repo)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await exercise(session, "stdio")


async def over_http(baton, repo):
    proc = subprocess.Popen(
        [baton, "serve", "--http", "127.0.0.1:0"],
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
        proc.terminate()
        proc.wait(timeout=10)


async def main():
    baton = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as repo:
        os.mkdir(os.path.join(repo, ".git"))
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
