// baton through the MCP Inspector CLI (`mcp-inspector --cli`, pinned in
// package.json), as a person would drive it from a terminal: tools/list
// prints no warning, the pipeline's confirmation call takes its object and
// boolean arguments from `--tool-arg`, and one completePhase goes through
// with an object argument.
//
// Usage: node tests/ts/inspector_smoke.mjs PATH_TO_BATON

import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Tally, assert, makeRepo, removeRepo, short, writeArtifact } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const INSPECTOR = path.join(here, 'node_modules', '@modelcontextprotocol', 'inspector', 'cli', 'build', 'cli.js');

/** The Inspector's own v1 notice about itself (not about baton). */
const OWN_NOTICE = [
  '⚠️  @modelcontextprotocol/inspector v1 is deprecated.',
  'Upgrade:  npx @modelcontextprotocol/inspector@latest',
  'v1 receives security fixes only.',
];

/** stderr lines that are not the Inspector's notice about itself. */
function warnings(stderr) {
  return stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !OWN_NOTICE.some((n) => l === n.trim()));
}

/** Runs `mcp-inspector --cli BATON serve --tools all ARGS…` in `repo`. */
function inspector(baton, repo, args) {
  const run = spawnSync(process.execPath, [INSPECTOR, '--cli', baton, 'serve', '--tools', 'all', ...args], {
    cwd: repo,
    encoding: 'utf8',
    timeout: 60000,
  });
  if (run.error) throw run.error;
  let output = null;
  try {
    output = JSON.parse(run.stdout);
  } catch {
    // left null: the checks report stdout
  }
  return { status: run.status, stdout: run.stdout, stderr: run.stderr, output };
}

/** A tools/call through the Inspector; returns the tool's result. */
function call(baton, repo, tool, toolArgs) {
  const args = ['--method', 'tools/call', '--tool-name', tool];
  for (const a of toolArgs) args.push('--tool-arg', a);
  const run = inspector(baton, repo, args);
  assert(run.status === 0, `${tool}: exit ${run.status}\n${run.stdout}\n${run.stderr}`);
  assert(warnings(run.stderr).length === 0, `${tool}: warnings on stderr:\n${run.stderr}`);
  assert(run.output && run.output.isError === false, `${tool} failed: ${short(run.output ?? run.stdout, 800)}`);
  return run.output.structuredContent;
}

async function main() {
  const baton = path.resolve(process.argv[2] ?? '');
  const tally = new Tally();
  const repo = makeRepo('inspector');
  try {
    await tally.check('tools/list prints every tool and no warning', () => {
      const run = inspector(baton, repo, ['--method', 'tools/list']);
      assert(run.status === 0, `exit ${run.status}: ${run.stderr}`);
      assert(warnings(run.stderr).length === 0, `warnings on stderr:\n${run.stderr}`);
      assert(run.output.tools.length >= 28, `${run.output.tools.length} tools`);
    });

    let init;
    await tally.check('pipeline_init from --tool-arg strings', () => {
      init = call(baton, repo, 'pipeline_init', ['arguments=fix the login typo --nopr', 'current_branch=feature/typo']);
      assert(init.flags.skip_pr === true, short(init));
    });

    await tally.check('pipeline_init_with_context: the confirmation call with object and boolean arguments', () => {
      const confirmed = call(baton, repo, 'pipeline_init_with_context', [
        `workspace=${init.workspace}`,
        `task_text=${init.core_text}`,
        `flags=${JSON.stringify(init.flags)}`,
        'user_confirmation={"effort":"S","use_current_branch":true}',
      ]);
      assert(confirmed.ready === true, short(confirmed));
      const next = call(baton, repo, 'pipeline_next_action', [`workspace=${confirmed.workspace}`]);
      assert(next.type === 'spawn_agent', short(next));
    });

    await tally.check('completePhase with an object argument', () => {
      const start = call(baton, repo, 'startIssueWorkflow', ['issueNumber=#7']);
      const numbers = (list) => list.map((_, i) => String(i + 1));
      writeArtifact(repo, start.workspace, 'issue.md');
      const phaseResult = {
        phaseName: 'issue_start',
        status: 'completed',
        workingFiles: ['src/lib.rs'],
        completedTasks: numbers(start.instruction.tasks),
        acceptanceCriteriaMet: numbers(start.instruction.acceptanceCriteria),
      };
      const done = call(baton, repo, 'completePhase', ['issueNumber=#7', `phaseResult=${JSON.stringify(phaseResult)}`]);
      assert(done.currentPhase === 'implementation', short(done));
    });
  } finally {
    removeRepo(repo);
  }
  process.exit(tally.summary() === 0 ? 0 : 1);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
