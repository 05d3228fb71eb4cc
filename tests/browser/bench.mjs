// Benchmark, not a test: the dashboard with 1,000 runs in the repository.
// Three real runs (completed with tasks, waiting at a checkpoint,
// abandoned) are made with the scripted agent and copied to RUNS folders;
// then the API is timed from node and the page in chromium.
//
//   BATON_BIN=target/release/baton node tests/browser/bench.mjs [RUNS]
import { cpSync, readFileSync, writeFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { batonBin, playwright, launch, makeRepo, startDashboard, baton } from './harness.mjs';

const RUNS = Number(process.argv[2] || 1000);
const REPEAT = 30;

const pct = (xs, p) => { const s = xs.slice().sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.round((s.length - 1) * p))]; };
const f = (x) => `${x.toFixed(1)} ms`;

async function main() {
  const bin = batonBin();
  const repo = makeRepo('baton-bench-');
  const specs = join(repo, '.specs');
  // Templates.
  const r1 = await baton(bin, repo, ['run', 'Completed template', '--effort', 'L', '--auto', '--nopr', '--agent', 'builtin:scripted']);
  if (r1.code !== 0) throw new Error(r1.stderr);
  await baton(bin, repo, ['run', 'Waiting template', '--effort', 'M', '--nopr', '--agent', 'builtin:scripted']);
  const templates = readdirSync(specs).filter((n) => /^\d{8}-/.test(n));
  const done = templates.find((n) => n.includes('completed-template'));
  const waiting = templates.find((n) => n.includes('waiting-template'));
  const base = Date.parse('2026-01-01T00:00:00Z');
  for (let i = 0; i < RUNS; i++) {
    const kind = i % 10 === 0 ? 'abandoned' : i % 3 === 0 ? 'waiting' : 'completed';
    const from = kind === 'completed' ? done : waiting;
    const created = new Date(base + i * 3600_000);
    const day = created.toISOString().slice(0, 10).replaceAll('-', '');
    const slug = `run-${i}-${kind}-feature-with-a-long-descriptive-name`;
    const folder = `${day}-${slug}`;
    cpSync(join(specs, from), join(specs, folder), { recursive: true });
    const path = join(specs, folder, 'state.json');
    const s = JSON.parse(readFileSync(path, 'utf8'));
    s.workspace = `.specs/${folder}`;
    s.specName = slug;
    s.timestamps.created = created.toISOString();
    s.timestamps.lastUpdated = new Date(created.getTime() + 60_000).toISOString();
    if (kind === 'abandoned') s.currentPhaseStatus = 'abandoned';
    writeFileSync(path, JSON.stringify(s, null, 2));
  }
  for (const t of templates) rmSync(join(specs, t), { recursive: true });
  console.log(`repository: ${RUNS} runs (${readdirSync(specs).length} folders)`);

  const dash = await startDashboard(bin, repo);
  const time = async (path) => {
    const xs = [];
    for (let i = 0; i < REPEAT; i++) {
      const t = performance.now();
      const r = await fetch(dash.url + path);
      await r.arrayBuffer();
      xs.push(performance.now() - t);
    }
    return xs;
  };
  const rows = [];
  const api = async (label, path) => { const xs = await time(path); rows.push([label, f(pct(xs, 0.5)), f(pct(xs, 0.95))]); };
  const first = (await (await fetch(`${dash.url}/api/runs?limit=1`)).json()).runs[0].id;
  // The run history's first use in the process records every ended run
  // found on disk (their state.json read once); later calls read the index.
  const t0 = performance.now();
  const stats = await (await fetch(`${dash.url}/api/stats`)).json();
  rows.push([`GET /api/stats, first (records ${stats.runs} ended runs found on disk)`, f(performance.now() - t0), '']);
  await api('GET /api/stats (history index)', '/api/stats');
  await api('GET /api/runs/{id}/insights (summary, estimate, patterns)', `/api/runs/${first}/insights`);
  await api('GET /api/runs (first page of 50)', '/api/runs?limit=50');
  await api('GET /api/runs (last page)', `/api/runs?limit=50&offset=${RUNS - 50}`);
  await api('GET /api/runs?status=waiting', '/api/runs?status=waiting');
  await api('GET /api/runs?q=run-77', '/api/runs?q=run-77');
  await api('GET /api/runs/{id} (one run at a glance)', `/api/runs/${first}`);

  const pw = await playwright();
  const browser = await launch(pw);
  const page = await browser.context.newPage();
  await page.addInitScript(() => {
    window.__long = [];
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); }).observe({ type: 'longtask', buffered: true });
  });
  const ui = [];
  const measure = async (label, fn, until) => {
    const t = performance.now();
    await fn();
    await until();
    ui.push([label, f(performance.now() - t)]);
  };
  await measure('open the page → first 50 runs listed', () => page.goto(dash.signIn), () => page.locator('#run-list [data-run]').nth(49).waitFor());
  await page.locator('[data-testid=live]', { hasText: 'live' }).waitFor();
  await measure('click a run → its whole picture shown', () => page.locator('#run-list [data-run]').first().click(), () => page.locator('[data-testid=timeline] li').first().waitFor());
  await measure('click "Stats" → the repository\'s numbers shown', () => page.locator('[data-testid=stats-tab]').click(), () => page.locator('[data-testid=stats-phase] tbody tr').first().waitFor());
  await page.locator('#run-list [data-run]').first().click();
  await page.locator('[data-testid=timeline] li').first().waitFor();
  const rangeChange = async (label, act) => {
    const before = await page.locator('#range').textContent();
    await measure(label, act, () => page.waitForFunction((b) => document.querySelector('#range').textContent !== b, before));
  };
  await rangeChange('filter "Waiting" → list shown', () => page.locator('[data-filter=waiting]').click());
  await rangeChange('next page → list shown', () => page.locator('#next').click());
  await page.locator('[data-filter=all]').click();
  await page.locator('#range', { hasText: `of ${RUNS}` }).waitFor();
  await rangeChange('type a search → list shown (200 ms typing pause included)', () => page.locator('#search').fill('run-999'));
  await page.locator('#search').fill('');
  await page.locator('[data-filter=all]').click();
  await page.locator('#range', { hasText: `of ${RUNS}` }).waitFor();
  // A run started by another process appears at the top of the open list.
  const t = performance.now();
  const r = await baton(bin, repo, ['run', 'A brand new run', '--effort', 'S', '--nopr', '--agent', 'builtin:scripted']);
  const exited = performance.now();
  await page.locator('#run-list [data-run*="a-brand-new-run"] [data-testid=row-status]', { hasText: 'waiting for you' }).waitFor();
  ui.push(['another process runs to a checkpoint → row shown (after it exits)', f(performance.now() - exited)]);
  ui.push(['  (that process ran for)', f(exited - t)]);
  const longTasks = await page.evaluate(() => window.__long);
  const heap = await page.evaluate(() => (performance.memory ? performance.memory.usedJSHeapSize : 0));
  ui.push(['long tasks (> 50 ms) on the page, whole session', `${longTasks.length}${longTasks.length ? `, longest ${f(Math.max(...longTasks))}` : ''}`]);
  if (heap) ui.push(['JS heap used', `${(heap / 1048576).toFixed(1)} MiB`]);
  const weight = await page.evaluate(async () => {
    let total = 0;
    for (const p of ['/', '/assets/app.js', '/assets/app.css']) total += (await (await fetch(p)).arrayBuffer()).byteLength;
    return total;
  });
  ui.push(['page weight (HTML + JS + CSS, uncompressed)', `${weight} bytes (${(weight / 1024).toFixed(1)} KiB)`]);
  void r;

  console.log(`\n| API (${REPEAT} requests each, ${RUNS} runs) | p50 | p95 |\n|---|---|---|`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  console.log(`\n| page in chromium (${RUNS} runs) | time |\n|---|---|`);
  for (const row of ui) console.log(`| ${row.join(' | ')} |`);
  await browser.close();
  await dash.stop();
  if (process.env.KEEP_REPO) console.log(`kept ${repo}`); else rmSync(repo, { recursive: true, force: true });
}

main().catch((e) => { console.error(e); process.exit(1); });
