// Shared by the browser tests and the benchmark: find the binary and the
// browser (failing loudly, naming the install command, when one is
// missing), make a repository, start `baton dashboard` on a pseudo-terminal
// so it prints its one-time sign-in link, and run other baton processes.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(HERE, '..', '..');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const OUT = resolve(process.env.BROWSER_TEST_OUT || join(ROOT, 'target', 'browser-tests'));

/** The baton binary: $BATON_BIN or target/debug/baton. */
export function batonBin() {
  const bin = resolve(process.env.BATON_BIN || join(ROOT, 'target', 'debug', 'baton'));
  if (!existsSync(bin)) {
    throw new Error(`baton binary not found at ${bin}: build it first (cargo build -p baton) or set BATON_BIN`);
  }
  return bin;
}

/** playwright-core from tests/browser/node_modules, or a loud failure. */
export async function playwright() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`chromium not found at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (Debian) or set CHROMIUM`);
  }
  try {
    return await import('playwright-core');
  } catch (e) {
    throw new Error(`playwright-core is not installed: run \`npm ci --prefix tests/browser\` (${e.message})`);
  }
}

/** Chromium, headless, with a fresh profile folder. */
export async function launch(pw) {
  const profile = mkdtempSync(join(tmpdir(), 'baton-chromium-'));
  const context = await pw.chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1360, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  return { context, close: async () => { await context.close(); rmSync(profile, { recursive: true, force: true }); } };
}

export const ENV = { ...process.env, BATON_FSYNC: 'off', BATON_LOG: 'warn', NO_COLOR: '1' };
for (const k of Object.keys(ENV)) if (k.startsWith('BATON_NOTIFY') || k === 'BATON_DASHBOARD_TOKEN') delete ENV[k];

/** A git repository with one commit. */
export function makeRepo(prefix = 'baton-browser-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const git = (...args) => execFileSync('git', args, { cwd: dir, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  git('config', 'user.email', 'test@example.invalid');
  git('config', 'user.name', 'baton test');
  writeFileSync(join(dir, 'README.md'), '# demo\n');
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src', 'core.txt'), 'core\n');
  git('add', '.');
  git('commit', '-q', '-m', 'initial');
  return dir;
}

/**
 * `baton dashboard --port 0` on a pseudo-terminal (`script`), as a person
 * starts it: resolves with its address and the one-time sign-in link.
 */
export function startDashboard(bin, repo) {
  const child = spawn('script', ['-qfec', `${bin} dashboard --port 0`, '/dev/null'], {
    cwd: repo, env: ENV, stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolveStart, reject) => {
    const timer = setTimeout(() => reject(new Error(`the dashboard did not start:\n${out}`)), 30000);
    const onData = (b) => {
      out += b.toString();
      const link = out.match(/(http:\/\/127\.0\.0\.1:\d+)\/#signin=([0-9a-f]+)/);
      if (link) {
        clearTimeout(timer);
        resolveStart({
          child, url: link[1], signIn: `${link[1]}/#signin=${link[2]}`, output: () => out,
          stop: () => new Promise((r) => { child.once('exit', r); child.kill('SIGTERM'); }),
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the dashboard exited (${code}):\n${out}`)));
  });
}

/** Runs baton with `args` (no terminal) and resolves with its exit code and output. */
export function baton(bin, repo, args, opts = {}) {
  return new Promise((resolveRun) => {
    const child = spawn(bin, args, { cwd: repo, env: { ...ENV, ...(opts.env || {}) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (b) => { stdout += b; });
    child.stderr.on('data', (b) => { stderr += b; });
    child.once('exit', (code) => resolveRun({ code, stdout, stderr }));
  });
}

export function out(name) {
  mkdirSync(OUT, { recursive: true });
  return join(OUT, name);
}
