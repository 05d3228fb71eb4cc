// baton through the official TypeScript MCP SDK client, over stdio and over
// streamable HTTP: every tool in tools/list is called with good input (the
// SDK validates the result against the tool's outputSchema) and with bad
// input (the refusal's code and message are read through the SDK's normal
// API: callTool resolves, isError is set, the text is {code, message}).
//
// A tool in tools/list without a recipe below fails the suite, so a new tool
// cannot slip through untested.
//
// Usage: node tests/ts/sdk_suite.mjs PATH_TO_BATON

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import path from 'node:path';

import {
  Tally,
  assert,
  makeRepo,
  removeRepo,
  short,
  startHttp,
  stopHttp,
  writeArtifact,
} from './lib.mjs';

/** The artifact each forge phase must leave (effort S walk). */
const FORGE_ARTIFACTS = {
  'phase-1': 'analysis.md',
  'phase-3': 'design.md',
  'phase-3b': 'review-design.md',
  'phase-7': 'comprehensive-review.md',
  'final-verification': 'final-verification.md',
  'final-summary': 'summary.md',
};

/** The issue workflow's artifact per phase. */
const ISSUE_ARTIFACTS = {
  issue_start: 'issue.md',
  implementation: 'implementation.md',
};

/** A recovery step's consent: force and a reason. */
const FORCE = { force: true, reason: 'the TypeScript suite repairs by hand' };

/** Artifacts that pass their phase's checks. */
const GOOD_ARTIFACTS = {
  'analysis.md': '# Analysis\n\nfacts\n',
  'design.md': '# Design\n\n## Approach\n\nx\n',
  'review-design.md': '# Review\n\n## Verdict: APPROVE\n',
};

/** Numbers "1".."n" for a list of tasks or criteria. */
const numbers = (list) => (list ?? []).map((_, i) => String(i + 1));

/**
 * Good and bad input for every tool, in the order a session uses them. `good`
 * returns the arguments (it may prepare the repository or call helper tools
 * first through `s.ok`); `after` inspects the result; `bad` returns
 * `[arguments, expected code]`.
 */
const RECIPES = [
  // ── recovery: a workspace moved by hand ───────────────────────────────
  {
    tool: 'init',
    good: () => ({ spec_name: 'ts lifecycle walk', effort: 'S' }),
    after: (s, r) => {
      s.ws = r.workspace;
      assert(r.flowTemplate === 'light', short(r));
    },
    bad: () => [{ effort: 'S' }, 'invalid_parameter'],
  },
  {
    tool: 'state_get',
    good: (s) => ({ workspace: s.ws }),
    bad: () => [{ workspace: '../../etc' }, 'out_of_scope'],
  },
  {
    tool: 'state_resume_info',
    good: (s) => ({ workspace: s.ws }),
    after: (s, r) => assert(r.currentPhase === 'phase-1', short(r)),
    bad: () => [{ workspace: '20990101-no-such-workspace' }, 'not_found'],
  },
  {
    tool: 'workspace_list',
    good: () => ({}),
    bad: () => [{ status: 7 }, 'invalid_parameter'],
  },
  {
    tool: 'run_overview',
    good: (s) => ({ workspace: s.ws }),
    after: (s, r) => assert(r.currentPhase === 'phase-1' && Array.isArray(r.phases), short(r)),
    bad: () => [{ workspace: '20990101-no-such-workspace' }, 'not_found'],
  },
  // The standalone setters are a person's recovery steps: without force and
  // a reason they explain what moves a run instead.
  {
    tool: 'phase_start',
    good: (s) => ({ workspace: s.ws, phase: 'phase-1', ...FORCE }),
    bad: (s) => [{ workspace: s.ws, phase: 'phase-1' }, 'blocked'],
  },
  {
    tool: 'phase_fail',
    good: (s) => ({ workspace: s.ws, phase: 'phase-1', message: 'simulated failure', ...FORCE }),
    bad: (s) => [{ workspace: s.ws, phase: 'phase-1', message: 'again', ...FORCE }, 'invalid_state'],
  },
  {
    tool: 'phase_complete',
    good: async (s) => {
      await s.ok('phase_start', { workspace: s.ws, phase: 'phase-1', ...FORCE });
      writeArtifact(s.repo, s.ws, 'analysis.md', GOOD_ARTIFACTS['analysis.md']);
      return { workspace: s.ws, phase: 'phase-1', ...FORCE };
    },
    after: async (s) => {
      // Walk on to the first checkpoint, through the same gates as the loop.
      for (const phase of ['phase-3', 'phase-3b']) {
        await s.ok('phase_start', { workspace: s.ws, phase, ...FORCE });
        const file = FORGE_ARTIFACTS[phase];
        writeArtifact(s.repo, s.ws, file, GOOD_ARTIFACTS[file]);
        await s.ok('phase_complete', { workspace: s.ws, phase, ...FORCE });
      }
    },
    bad: (s) => [{ workspace: s.ws, phase: 'phase-1', ...FORCE }, 'invalid_state'],
  },
  {
    tool: 'checkpoint',
    good: (s) => ({ workspace: s.ws, phase: 'checkpoint-a', ...FORCE }),
    // The answer is a person's (baton answer, the dashboard): no tool gives it.
    after: (s, r) => assert(r.currentPhaseStatus === 'awaiting_human', short(r)),
    bad: (s) => [{ workspace: s.ws, phase: 'phase-7', ...FORCE }, 'invalid_state'],
  },
  {
    // A command step has no evidence to give, so a person may skip it; a
    // phase with an artifact is never skipped by a tool.
    tool: 'skip_phase',
    good: async (s) => {
      const run = await s.ok('init', { spec_name: 'ts skip', workflow: 'ts-tiny' });
      s.tinyWs = run.workspace;
      return { workspace: s.tinyWs, phase: 'lint', ...FORCE };
    },
    after: (s, r) => assert(r.currentPhase === 'wrap-up', short(r)),
    bad: (s) => [{ workspace: s.tinyWs, phase: 'wrap-up', ...FORCE }, 'blocked'],
  },
  {
    tool: 'abandon',
    good: (s) => ({ workspace: s.ws, reason: 'the TypeScript suite is done with it' }),
    bad: (s) => [{ workspace: s.ws }, 'invalid_state'],
  },
  {
    tool: 'workflow_archive',
    good: (s) => ({ workspace: s.ws }),
    bad: () => [{ workspace: '20990101-no-such-workspace' }, 'not_found'],
  },
  // ── the issue workflow and other definitions ──────────────────────────
  {
    tool: 'startIssueWorkflow',
    good: () => ({ issueNumber: '#42' }),
    after: (s, r) => {
      s.issueWs = r.workspace;
      assert(r.currentPhase === 'issue_start', short(r));
    },
    bad: () => [{ issueNumber: 42 }, 'invalid_parameter'],
  },
  {
    tool: 'getCurrentPhase',
    good: () => ({ issueNumber: '42' }),
    after: (s, r) => {
      s.instruction = r.instruction;
    },
    bad: () => [{ issueNumber: '999' }, 'not_found'],
  },
  {
    tool: 'getWorkflowStatus',
    good: () => ({ issueNumber: '42' }),
    bad: () => [{ workspace: '20990101-no-such-workspace' }, 'not_found'],
  },
  {
    tool: 'completePhase',
    good: (s) => {
      writeArtifact(s.repo, s.issueWs, ISSUE_ARTIFACTS.issue_start);
      return {
        issueNumber: '42',
        phaseResult: {
          phaseName: 'issue_start',
          status: 'completed',
          workingFiles: ['src/lib.rs'],
          completedTasks: numbers(s.instruction.tasks),
          acceptanceCriteriaMet: numbers(s.instruction.acceptanceCriteria),
        },
      };
    },
    after: (s, r) => assert(r.currentPhase === 'implementation', short(r)),
    bad: () => [
      {
        issueNumber: '42',
        phaseResult: {
          phaseName: 'implementation',
          status: 'completed',
          workingFiles: [],
          completedTasks: [],
        },
      },
      'blocked',
    ],
  },
  {
    tool: 'workflow_definitions',
    good: () => ({}),
    after: (s, r) => assert(r.workflows.some((w) => w.id === 'issue'), short(r)),
    bad: () => [{ workflow: 7 }, 'invalid_parameter'],
  },
  {
    tool: 'workflow_start',
    good: () => ({ workflow: 'forge', specName: 'ts generic run' }),
    bad: () => [{ workflow: 'no-such-workflow', specName: 'x' }, 'not_found'],
  },
  {
    tool: 'workflow_stats',
    good: () => ({}),
    bad: () => [{ workflow: 7 }, 'invalid_parameter'],
  },
  // ── the pipeline ──────────────────────────────────────────────────────
  {
    tool: 'pipeline_init',
    good: () => ({ arguments: 'fix the login typo --nopr', current_branch: 'feature/typo' }),
    after: (s, r) => {
      s.init = r;
      assert(r.source_type === 'text' && r.flags.skip_pr === true, short(r));
    },
    bad: () => [{ current_branch: 'main' }, 'invalid_parameter'],
  },
  {
    tool: 'pipeline_init_with_context',
    good: async (s) => {
      const base = { workspace: s.init.workspace, task_text: s.init.core_text, flags: s.init.flags };
      const ask = await s.ok('pipeline_init_with_context', base);
      assert(ask.needs_user_confirmation, short(ask));
      return {
        ...base,
        user_confirmation: {
          effort: 'S',
          use_current_branch: true,
          enriched_request_body: ask.needs_user_confirmation.enriched_request_body,
        },
      };
    },
    after: (s, r) => {
      assert(r.ready === true, short(r));
      s.pws = r.workspace;
    },
    // A flags object sent as a JSON string (what a client that cannot send
    // objects produces) is refused, naming the field and the JSON type.
    bad: (s) => [
      { workspace: s.init.workspace, task_text: 'x', flags: '{"auto":false}' },
      'invalid_parameter',
    ],
  },
  {
    tool: 'pipeline_next_action',
    good: (s) => ({ workspace: s.pws }),
    after: (s, r) => assert(r.type === 'spawn_agent' && r.phase === 'phase-1', short(r)),
    bad: (s) => [{ workspace: s.pws, previous_tokens: -1 }, 'invalid_parameter'],
  },
  {
    tool: 'pipeline_report_result',
    good: (s) => {
      writeArtifact(s.repo, s.pws, 'analysis.md');
      return { workspace: s.pws, phase: 'phase-1', tokens_used: 10, duration_ms: 5 };
    },
    after: (s, r) => assert(r.next_action_hint === 'proceed', short(r)),
    bad: (s) => [{ workspace: s.pws, phase: 'phase-1', tokens_used: 'ten' }, 'invalid_parameter'],
  },
  // ── the run history (after the runs above) ────────────────────────────
  {
    tool: 'history_search',
    good: () => ({ query: 'fix the login typo', limit: 3 }),
    bad: () => [{ query: 5 }, 'invalid_parameter'],
  },
  {
    tool: 'history_patterns',
    good: () => ({ severity: 'CRITICAL' }),
    bad: () => [{ severity: 'FATAL' }, 'invalid_parameter'],
  },
  {
    tool: 'history_friction',
    good: () => ({ limit: 5 }),
    bad: () => [{ limit: 'five' }, 'invalid_parameter'],
  },
  {
    tool: 'history_reindex',
    good: () => ({}),
    after: (s, r) => assert(r.runs >= 1, short(r)),
    bad: () => [{ everything: true }, 'invalid_parameter'],
  },
  {
    tool: 'analytics_summary',
    good: (s) => ({ workspace: s.ws }),
    after: (s, r) => assert(r.outcome === 'abandoned', short(r)),
    bad: () => [{ workspace: '20990101-no-such-workspace' }, 'not_found'],
  },
  {
    tool: 'analytics_dashboard',
    good: () => ({ workflow: 'forge' }),
    after: (s, r) => assert(r.abandoned >= 1, short(r)),
    bad: () => [{ workflow: 7 }, 'invalid_parameter'],
  },
  {
    tool: 'analytics_estimate',
    good: () => ({ request: 'fix the login typo', effort: 'S' }),
    bad: () => [{ effort: 'S' }, 'invalid_parameter'],
  },
  // ── manuals ───────────────────────────────────────────────────────────
  {
    tool: 'manual_ls',
    good: () => ({}),
    bad: () => [{ id: 5 }, 'invalid_parameter'],
  },
  {
    tool: 'manual_toc',
    good: () => ({ manual_id: 'demo' }),
    bad: () => [{ manual_id: 'no-such-manual' }, 'not_found'],
  },
  {
    tool: 'manual_find',
    good: () => ({ query: '解約したら返戻金はいつ支払われますか' }),
    after: (s, r) => {
      s.trace = r.trace_id;
    },
    bad: () => [{ query: 'x', budget: { max_candidates: true } }, 'invalid_parameter'],
  },
  {
    tool: 'manual_hits',
    good: (s) => ({ trace_id: s.trace, limit: 3 }),
    after: (s, r) => {
      assert(r.items.length > 0, short(r));
      s.hit = r.items[0].ref;
    },
    bad: (s) => [{ trace_id: s.trace, limit: 0 }, 'invalid_parameter'],
  },
  {
    tool: 'manual_read',
    good: (s) => ({ ref: { manual_id: 'demo', ...s.hit }, scope: 'section' }),
    after: (s, r) => assert(r.text.includes('30日以内'), short(r)),
    bad: () => [{ ref: { manual_id: 'demo', path: 'no-such-file.md' } }, 'not_found'],
  },
  {
    tool: 'manual_scan',
    good: () => ({ manual_id: 'demo', path: 'terms.md' }),
    bad: () => [{ manual_id: 'demo', path: 'terms.md', start_line: 0 }, 'invalid_parameter'],
  },
];

/** One session: list, check coverage, run every recipe. */
async function exercise(client, repo, label, tally) {
  const listed = (await client.listTools()).tools;
  const names = listed.map((t) => t.name);
  await tally.check(`${label}: every listed tool has a recipe`, () => {
    const missing = names.filter((n) => !RECIPES.some((r) => r.tool === n));
    assert(missing.length === 0, `no good/bad-input recipe for ${missing.join(', ')} in tests/ts/sdk_suite.mjs`);
  });
  await tally.check(`${label}: every recipe's tool is listed`, () => {
    const stale = RECIPES.map((r) => r.tool).filter((n) => !names.includes(n));
    assert(stale.length === 0, `recipes for tools baton does not list: ${stale.join(', ')}`);
  });

  const s = { repo };
  s.call = (name, args) => client.callTool({ name, arguments: args });
  s.ok = async (name, args) => {
    // The SDK validates structuredContent against the outputSchema (it
    // compiled a validator for every tool at listTools); a mismatch throws.
    assert(client.getToolOutputValidator(name), `${name}: the SDK has no output validator`);
    const result = await s.call(name, args);
    assert(!result.isError, `${name} ${short(args)} failed: ${result.content?.[0]?.text}`);
    assert(result.structuredContent, `${name}: no structuredContent`);
    const mirrored = JSON.parse(result.content[0].text);
    assert(JSON.stringify(mirrored) === JSON.stringify(result.structuredContent), `${name}: text differs`);
    return result.structuredContent;
  };
  s.refused = async (name, args, code) => {
    const result = await s.call(name, args);
    assert(result.isError === true, `${name} ${short(args)} should fail with ${code}: ${short(result)}`);
    assert(result.structuredContent === undefined, `${name}: an error carries no structuredContent`);
    const error = JSON.parse(result.content[0].text);
    assert(error.code === code, `${name} ${short(args)}: expected ${code}, got ${short(error)}`);
    assert(typeof error.message === 'string' && error.message.length > 10, `${name}: no message`);
    return error;
  };

  for (const recipe of RECIPES) {
    if (!names.includes(recipe.tool)) continue;
    await tally.check(`${label}: ${recipe.tool} good input`, async () => {
      const args = await recipe.good(s);
      const result = await s.ok(recipe.tool, args);
      if (recipe.after) await recipe.after(s, result);
    });
    await tally.check(`${label}: ${recipe.tool} bad input`, async () => {
      const [args, code] = await recipe.bad(s);
      await s.refused(recipe.tool, args, code);
    });
  }

  await tally.check(`${label}: an unknown tool is an unknown_tool result`, async () => {
    const e = await s.refused('no_such_tool', {}, 'unknown_tool');
    assert(Array.isArray(e.details?.exposed), short(e));
  });
  await tally.check(`${label}: a wrong-typed object argument names the field and the JSON type`, async () => {
    const e = await s.refused(
      'pipeline_init_with_context',
      { workspace: s.init?.workspace ?? 'x', flags: '{"auto":false}' },
      'invalid_parameter',
    );
    assert(e.details?.field === 'flags', short(e));
    assert(/object/.test(e.message) && !/struct|Flags/.test(e.message), `Rust type names in ${e.message}`);
  });
}

async function overStdio(baton, tally) {
  const repo = makeRepo('stdio');
  const client = new Client({ name: 'baton-ts-suite', version: '1.0.0' });
  try {
    await client.connect(
      new StdioClientTransport({ command: baton, args: ['serve', '--tools', 'all'], cwd: repo, stderr: 'ignore' }),
    );
    await exercise(client, repo, 'stdio', tally);
  } finally {
    await client.close();
    removeRepo(repo);
  }
}

async function overHttp(baton, tally) {
  const repo = makeRepo('http');
  const { url, child } = await startHttp(baton, repo, ['--tools', 'all']);
  const client = new Client({ name: 'baton-ts-suite', version: '1.0.0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(url));
    await exercise(client, repo, 'http', tally);
  } finally {
    await client.close();
    await stopHttp(child);
    removeRepo(repo);
  }
}

async function main() {
  const baton = path.resolve(process.argv[2] ?? '');
  const tally = new Tally();
  await overStdio(baton, tally);
  await overHttp(baton, tally);
  process.exit(tally.summary() === 0 ? 0 : 1);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
