// Shared helpers of the TypeScript-client suites: a temporary repository,
// `baton serve --http` on a free port, and a pass/fail tally that ends on one
// summary line.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

/** A temporary repository with `.git` and one small manual (manuals/demo). */
export function makeRepo(label) {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), `baton-ts-${label}-`));
  fs.mkdirSync(path.join(repo, '.git'));
  fs.mkdirSync(path.join(repo, 'manuals', 'demo'), { recursive: true });
  fs.writeFileSync(
    path.join(repo, 'manuals', 'demo', 'terms.md'),
    '# 約款\n\n## 第10条 解約返戻金\n\n解約返戻金は請求から30日以内に支払います。\n\n' +
      '## 第11条 入院給付金\n\n入院1日につき5000円を支払います。\n',
  );
  // A project workflow with a command step, which a person may skip.
  fs.mkdirSync(path.join(repo, '.baton', 'workflows'), { recursive: true });
  fs.writeFileSync(
    path.join(repo, '.baton', 'workflows', 'ts-tiny.yaml'),
    [
      'id: ts-tiny',
      'label: TS tiny',
      'version: 1',
      'description: A command step, then a note.',
      'phases:',
      '  - id: lint',
      '    label: Lint',
      '    kind: command',
      '    commands:',
      '      fixed:',
      '        - [git, --version]',
      '  - id: wrap-up',
      '    label: Wrap up',
      '    kind: agent',
      '    agent: verifier',
      '    artifacts: [wrap-up.md]',
      '',
    ].join('\n'),
  );
  return repo;
}

/** Removes a repository made by makeRepo. */
export function removeRepo(repo) {
  fs.rmSync(repo, { recursive: true, force: true });
}

/** Writes an artifact (`content`, or a non-empty stand-in) into a workspace (`.specs/…`) of `repo`. */
export function writeArtifact(repo, workspace, name, content) {
  const file = path.join(repo, workspace, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content ?? `# ${name}\n\nWritten by the TypeScript suite.\n`);
}

/**
 * Starts `baton serve --http 127.0.0.1:0 ARGS…` in `repo`; resolves to
 * `{ url, child }` once the server announced its address.
 */
export function startHttp(baton, repo, args = []) {
  const child = spawn(baton, ['serve', ...args, '--http', '127.0.0.1:0'], {
    cwd: repo,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stderr });
    const timer = setTimeout(() => reject(new Error('baton did not announce its address')), 20000);
    lines.on('line', (line) => {
      const m = /http:\/\/(127\.0\.0\.1:\d+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve({ url: new URL(`http://${m[1]}/mcp`), child });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`baton exited with ${code} before listening`));
    });
  });
}

/** Stops a server started by startHttp and waits for it to exit. */
export async function stopHttp(child) {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** Counts checks; `summary()` prints `N passed, N failed` and returns the failures. */
export class Tally {
  constructor() {
    this.passed = 0;
    this.failed = [];
  }

  /** Runs one named check; an exception is a failure with its message. */
  async check(name, body) {
    try {
      await body();
      this.passed += 1;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.failed.push(`${name}: ${message}`);
      console.log(`FAIL ${name}: ${message}`);
    }
  }

  /** Prints the failures and the one closing line; returns the failure count. */
  summary() {
    console.log(`${this.passed} passed, ${this.failed.length} failed`);
    return this.failed.length;
  }
}

/** Throws `what` unless `condition` holds. */
export function assert(condition, what) {
  if (!condition) throw new Error(what);
}

/** JSON for messages, cut to `max` characters. */
export function short(value, max = 300) {
  const text = JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
