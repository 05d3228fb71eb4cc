// baton dashboard — hand-written, no framework, no build step.
// Data comes from /api (JSON) and /events (Server-Sent Events); the only
// HTML inserted as markup is what the server rendered from Markdown and
// sanitised. Everything else is built with textContent.
'use strict';
(() => {
  const KINDS = ['pipeline-init', 'phase-start', 'agent-dispatch', 'action-complete', 'phase-complete',
    'phase-fail', 'checkpoint', 'revision-required', 'pipeline-complete', 'abandon'];
  const FILTERS = [['all', 'All'], ['active', 'Active'], ['waiting', 'Waiting'], ['failed', 'Failed'],
    ['completed', 'Completed'], ['abandoned', 'Abandoned']];
  const S = {
    // The session's secret lives in this tab's sessionStorage, which only
    // this origin (scheme, host and port) can read; it travels as a header,
    // never as a cookie (cookies ignore ports). signedIn: it may act.
    session: sessionStorage.getItem('baton-session'), signedIn: false, reads: false,
    eventsTicket: null, loopback: true,
    filter: 'all', q: '', offset: 0, limit: 50, page: null,
    runId: null, run: null, view: null, artifact: null, seen: new Set(), stats: false,
  };

  const $ = (sel, root = document) => root.querySelector(sel);
  function h(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v == null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const kid of kids.flat()) if (kid != null) e.append(kid);
    return e;
  }
  const SVG = 'http://www.w3.org/2000/svg';
  function s(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v != null) e.setAttribute(k, String(v));
    for (const kid of kids.flat()) if (kid != null) e.append(kid);
    return e;
  }

  // ---- formatting -------------------------------------------------------
  function ago(iso) {
    const t = Date.parse(iso);
    if (!t) return '';
    const sec = Math.max(0, (Date.now() - t) / 1000);
    if (sec < 45) return 'just now';
    if (sec < 3600) return `${Math.round(sec / 60)} min ago`;
    if (sec < 86400) return `${Math.round(sec / 3600)} h ago`;
    return new Date(t).toLocaleDateString();
  }
  function dur(ms) {
    if (!ms) return '—';
    if (ms < 1000) return `${ms} ms`;
    const sec = ms / 1000;
    if (sec < 60) return `${sec.toFixed(1)} s`;
    const m = Math.floor(sec / 60);
    if (m < 60) return `${m} min ${Math.round(sec % 60)} s`;
    return `${Math.floor(m / 60)} h ${m % 60} min`;
  }
  const num = (n) => (n ? Number(n).toLocaleString() : '—');
  const clock = (iso) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  const cut = (t, n) => (t.length > n ? t.slice(0, n - 1) + '…' : t);
  // The history's numbers: minutes, US dollars, shares (absent: none yet).
  function mins(m) {
    if (!m) return '—';
    if (m < 60) return `${m} min`;
    return `${Math.floor(m / 60)} h ${Math.round(m % 60)} min`;
  }
  const usd = (x) => `$${Number(x || 0).toFixed(2)}`;
  const pct = (r) => (r == null ? '—' : `${Math.round(r * 1000) / 10}%`);
  const count = (n) => String(n || 0);

  // ---- notices ----------------------------------------------------------
  let noticeTimer = null;
  function notice(text, kind) {
    const n = $('#notice');
    n.textContent = text;
    n.className = `notice ${kind || ''}`;
    n.hidden = false;
    clearTimeout(noticeTimer);
    if (kind !== 'bad') noticeTimer = setTimeout(() => { n.hidden = true; }, 6000);
  }

  // ---- API --------------------------------------------------------------
  async function api(path, opts = {}) {
    const headers = {};
    if (opts.body) headers['Content-Type'] = 'application/json';
    if (S.session) headers['X-Baton-Session'] = S.session;
    const r = await fetch(path, { credentials: 'omit', ...opts, headers });
    let body = null;
    try { body = await r.json(); } catch (_) { /* not JSON */ }
    if (!r.ok) {
      const e = new Error((body && body.message) || `${r.status} ${r.statusText}`);
      e.status = r.status;
      if (r.status === 401 && !S.loopback) showTokenForm(true);
      throw e;
    }
    return body;
  }
  const post = (path, data) => api(path, { method: 'POST', body: JSON.stringify(data) });

  // ---- session ----------------------------------------------------------
  function showTokenForm(show) { $('#signin').hidden = !show || S.signedIn || S.reads; }
  function keepSession(secret) {
    S.session = secret || null;
    if (S.session) sessionStorage.setItem('baton-session', S.session);
    else sessionStorage.removeItem('baton-session');
  }
  function renderSession() {
    const b = $('#session');
    b.textContent = S.signedIn ? 'signed in' : 'read-only';
    b.className = `badge ${S.signedIn ? 'on' : ''}`;
    b.title = S.signedIn ? 'this browser may answer and abandon'
      : 'to act, open the sign-in link printed in the terminal that started baton';
  }
  async function initSession() {
    const m = location.hash.match(/^#signin=([0-9a-f]+)$/);
    if (m) {
      history.replaceState(history.state, '', location.pathname + location.search);
      try {
        const r = await post('/api/login', { key: m[1] });
        keepSession(r.session);
        notice('Signed in: this tab can answer and abandon runs.', 'ok');
      } catch (e) { notice(e.message, 'bad'); }
    }
    try {
      const st = await api('/api/session');
      if (S.session && !st.signedIn) keepSession(null); // expired or from an old server
      S.signedIn = !!st.canAct; S.reads = !!st.signedIn; S.eventsTicket = st.eventsTicket || null;
      S.loopback = st.loopback;
      $('#repo').textContent = st.repository || '';
      document.title = `baton · ${st.repository || ''}`;
      if (!S.signedIn && !S.loopback) showTokenForm(true);
    } catch (e) { notice(e.message, 'bad'); }
    renderSession();
  }
  $('#token-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const r = await post('/api/login', { token: $('#token').value });
      $('#token').value = '';
      // The access token reads; acting needs the printed one-time link.
      keepSession(r.session); S.reads = true; S.signedIn = !!r.canAct;
      const st = await api('/api/session');
      S.eventsTicket = st.eventsTicket || null;
      showTokenForm(false); renderSession(); refreshAll(); connect();
    } catch (e) { notice(e.message, 'bad'); }
  });

  // ---- run list ---------------------------------------------------------
  function renderFilters(counts) {
    const box = $('#filters');
    box.replaceChildren(...FILTERS.map(([key, label]) => h('button', {
      type: 'button', role: 'tab', 'aria-selected': S.filter === key ? 'true' : 'false', 'data-filter': key,
      text: `${label} ${counts ? counts[key] : ''}`.trim(),
      onclick: () => { S.filter = key; S.offset = 0; loadList(); },
    })));
  }
  function renderList() {
    const p = S.page;
    if (!p) return;
    renderFilters(p.counts);
    const list = $('#run-list');
    list.replaceChildren(...p.runs.map((r) => {
      const pct = r.total ? Math.round((100 * r.done) / r.total) : 0;
      return h('li', {},
        h('a', {
          href: `/runs/${encodeURIComponent(r.id)}`, 'data-run': r.id,
          'aria-current': r.id === S.runId ? 'page' : null, title: r.workspace,
          onclick: (ev) => { if (!ev.metaKey && !ev.ctrlKey) { ev.preventDefault(); select(r.id); } },
        },
        h('span', { class: 'name', text: r.specName || r.id }),
        h('span', { class: `pill s-${r.waiting ? 'waiting' : r.status}`, 'data-testid': 'row-status', text: r.waiting ? 'waiting for you' : r.status.replace('_', ' ') }),
        h('span', { class: 'meta', text: `${r.workflow} · ${r.currentPhaseLabel} · ${ago(r.lastUpdated)}` }),
        h('span', { class: 'progress', title: `${r.done}/${r.total} phases` }, h('i', { style: null })),
        ));
    }));
    // Width set through the CSSOM (no inline style attribute: the CSP forbids it).
    list.querySelectorAll('.progress i').forEach((bar, i) => {
      const r = p.runs[i];
      bar.style.width = `${r.total ? Math.round((100 * r.done) / r.total) : 0}%`;
    });
    if (!p.runs.length) list.append(h('li', { class: 'meta', text: p.total ? 'No runs on this page.' : 'No runs match.' }));
    const from = p.total ? p.offset + 1 : 0;
    $('#range').textContent = `${from}–${Math.min(p.offset + p.runs.length, p.total)} of ${p.total}`;
    $('#prev').disabled = p.offset === 0;
    $('#next').disabled = p.offset + p.runs.length >= p.total;
    const away = p.elsewhere || [];
    $('.elsewhere').hidden = !away.length;
    $('.elsewhere-list').replaceChildren(...away.map((r) => h('li', { 'data-elsewhere': r.workspace, title: r.request },
      h('span', { class: 'name', text: r.workspace.split('/').pop() }),
      h('span', { class: `pill s-${r.outcome}`, text: r.outcome }),
      h('span', { class: 'meta', text: r.branch ? `on branch ${r.branch}: git checkout ${r.branch} to see it` : 'its branch was not recorded' }))));
  }
  let listSeq = 0;
  async function loadList() {
    const seq = ++listSeq;
    const q = new URLSearchParams({ offset: S.offset, limit: S.limit, status: S.filter });
    if (S.q) q.set('q', S.q);
    try {
      const page = await api(`/api/runs?${q}`);
      if (seq !== listSeq) return; // a newer request won
      S.page = page;
      renderList();
    } catch (e) { if (e.status !== 401) notice(`Runs: ${e.message}`, 'bad'); }
  }
  $('#prev').addEventListener('click', () => { S.offset = Math.max(0, S.offset - S.limit); loadList(); });
  $('#next').addEventListener('click', () => { S.offset += S.limit; loadList(); });
  let searchTimer = null;
  $('#search').addEventListener('input', (ev) => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { S.q = ev.target.value.trim(); S.offset = 0; loadList(); }, 200);
  });

  // ---- one run ----------------------------------------------------------
  function select(id) {
    if (id !== S.runId) history.pushState({ run: id }, '', id ? `/runs/${encodeURIComponent(id)}` : '/');
    route();
  }
  function route() {
    const m = location.pathname.match(/^\/runs\/([^/]+)$/);
    const id = m ? decodeURIComponent(m[1]) : null;
    const stats = location.pathname === '/stats';
    if (id !== S.runId || stats !== S.stats) { S.runId = id; S.run = null; S.view = null; S.artifact = null; S.seen = new Set(); }
    S.stats = stats;
    document.querySelectorAll('#run-list a').forEach((a) => {
      if (a.dataset.run === id) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    });
    document.querySelectorAll('.views a').forEach((a) => {
      if ((a.dataset.view === 'stats') === stats) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    });
    if (stats) { loadStats(); return; }
    if (!id) { $('#detail').replaceChildren(h('p', { class: 'empty', text: 'Choose a run.' })); return; }
    loadRun();
  }
  window.addEventListener('popstate', route);
  document.querySelectorAll('.views a').forEach((a) => a.addEventListener('click', (ev) => {
    if (ev.metaKey || ev.ctrlKey) return;
    ev.preventDefault();
    if (location.pathname !== a.getAttribute('href')) history.pushState({}, '', a.getAttribute('href'));
    route();
  }));

  // ---- repository stats (the run history: `baton stats`) ------------------
  let statsSeq = 0;
  async function loadStats() {
    const seq = ++statsSeq;
    try {
      const d = await api('/api/stats');
      if (seq !== statsSeq || !S.stats) return;
      renderStats(d);
    } catch (e) { if (seq === statsSeq && e.status !== 401) notice(`Stats: ${e.message}`, 'bad'); }
  }
  function renderStats(d) {
    let node = $('#detail > .stats');
    if (!node) {
      node = $('#stats-template').content.firstElementChild.cloneNode(true);
      $('#detail').replaceChildren(node);
    }
    $('.stats-empty', node).hidden = d.runs > 0;
    const facts = [
      ['runs', 'ended runs', count(d.runs)], ['completed', 'completed', count(d.completed)],
      ['abandoned', 'abandoned', count(d.abandoned)],
      ['first_pass_rate', 'first-pass rate', pct(d.first_pass_rate), 'completed runs that never went back'],
      ['review_pass_rate', 'review pass rate', pct(d.review_pass_rate), 'review passes that let the work go on'],
      ['loops_per_run', 'revision loops / run', (d.loops_per_run || 0).toFixed(2)],
      ['tokens', 'tokens', num(d.tokens)], ['cost_usd', 'cost', usd(d.cost_usd), 'at the configured prices'],
    ];
    $('.stats-facts', node).replaceChildren(...facts.map(([key, label, val, title]) => h('div', { title },
      h('dt', { text: label }), h('dd', { 'data-stat': key, text: val }))));
    const bar = $('.outcome-bar', node);
    bar.hidden = !d.runs;
    bar.setAttribute('aria-label', `${d.completed} completed, ${d.abandoned} abandoned`);
    bar.title = bar.getAttribute('aria-label');
    // Widths through the CSSOM (the CSP forbids inline style attributes).
    $('.ok', bar).style.width = `${d.runs ? (100 * d.completed) / d.runs : 0}%`;
    $('.ab', bar).style.width = `${d.runs ? (100 * d.abandoned) / d.runs : 0}%`;
    $('[data-testid=stats-effort] tbody', node).replaceChildren(...d.by_effort.map((e) => h('tr', { 'data-effort': e.effort },
      h('td', { text: e.effort === '-' ? 'not set' : e.effort }), h('td', { class: 'num', text: count(e.runs) }),
      h('td', { class: 'num', text: count(e.completed) }), h('td', { class: 'num', text: e.loops_per_run.toFixed(2) }),
      h('td', { class: 'num', text: num(e.mean_tokens) }), h('td', { class: 'num', text: mins(e.mean_minutes) }),
      h('td', { class: 'num', text: usd(e.mean_cost_usd) }))));
    const most = Math.max(1, ...d.by_phase.map((p) => p.mean_tokens));
    const rows = d.by_phase.map((p) => h('tr', { 'data-phase': p.phase },
      h('td', { text: p.phase }), h('td', { class: 'num', text: count(p.runs) }), h('td', { class: 'num', text: count(p.visits) }),
      h('td', { class: 'num', text: count(p.back) }), h('td', { class: 'num', text: mins(p.mean_minutes) }),
      h('td', { class: 'num', text: num(p.mean_tokens) }), h('td', { class: 'bar-cell' }, h('span', { class: 'meter' }, h('i')))));
    $('[data-testid=stats-phase] tbody', node).replaceChildren(...rows);
    rows.forEach((row, i) => { $('.meter i', row).style.width = `${(100 * d.by_phase[i].mean_tokens) / most}%`; });
  }

  let runSeq = 0;
  async function loadRun() {
    const id = S.runId;
    if (!id) return;
    const seq = ++runSeq;
    try {
      const run = await api(`/api/runs/${encodeURIComponent(id)}`);
      if (seq !== runSeq || id !== S.runId) return;
      S.run = run;
      renderRun(run);
      loadInsights(id);
    } catch (e) {
      if (seq !== runSeq) return;
      if (e.status === 404) $('#detail').replaceChildren(h('p', { class: 'empty', text: `No run ${id} in this repository.` }));
      else notice(`Run: ${e.message}`, 'bad');
    }
  }

  function view() {
    if (S.view) return S.view;
    const node = $('#run-template').content.firstElementChild.cloneNode(true);
    $('#detail').replaceChildren(node);
    const v = {
      node, title: $('.run-title', node), sub: $('.run-sub', node), status: $('.run-status', node),
      link: $('.permalink', node), facts: $('.facts', node), question: $('.question', node),
      error: $('.error-line', node), feedback: $('.feedback-line', node), phases: $('.phase-graph', node),
      tasksSection: $('.tasks-section', node), taskGraph: $('.task-graph', node), tasks: $('.tasks tbody', node),
      artifacts: $('.artifacts', node), artifactView: $('.artifact-view', node), timeline: $('.timeline', node),
      abandon: $('.abandon', node), abandonForm: $('.abandon-form', node), next: $('.next-step', node),
      insights: $('.insights', node), summaryFacts: $('.summary-facts', node), estimate: $('.estimate', node),
      patterns: $('.review-patterns', node),
      questionName: null,
    };
    v.abandon.addEventListener('click', () => { v.abandonForm.hidden = false; $('.abandon-reason', node).focus(); });
    $('.abandon-cancel', node).addEventListener('click', () => { v.abandonForm.hidden = true; });
    v.abandonForm.addEventListener('submit', (ev) => { ev.preventDefault(); doAbandon($('.abandon-reason', node).value); });
    S.view = v;
    return v;
  }

  // One duration per run: from its start to its end (or to now while it
  // runs); what the agents reported of it, when they did, in brackets.
  function runTime(r) {
    const ended = r.status === 'completed' || r.status === 'abandoned' || r.status === 'failed';
    const ms = ended ? r.totals.elapsedMs : Math.max(r.totals.elapsedMs, Date.now() - new Date(r.created).getTime());
    const agents = r.totals.reportedMs ? ` (agents reported ${dur(r.totals.reportedMs)})` : '';
    return `${dur(ms)}${ended ? '' : ' so far'}${agents}`;
  }

  // Phases done out of those the run goes through: skipped phases are
  // not work done (the same words as `baton show`).
  function progress(r) {
    const phases = r.phases || [];
    if (!phases.length) return `${r.done}/${r.total}`;
    const skipped = phases.filter((p) => p.state === 'skipped').length;
    const done = phases.filter((p) => p.state === 'done').length;
    return `${done} of ${phases.length - skipped} phases done${skipped ? ` (${skipped} skipped)` : ''}`;
  }

  function renderRun(r) {
    const v = view();
    v.title.textContent = r.specName || r.id;
    v.sub.textContent = r.workspace;
    v.status.textContent = r.waiting ? 'waiting for you' : r.status.replace('_', ' ');
    v.status.className = `pill run-status s-${r.waiting ? 'waiting' : r.status}`;
    v.link.href = `/runs/${encodeURIComponent(r.id)}`;
    const facts = [
      ['workflow', r.workflowLabel], ['phase', `${r.currentPhaseLabel} (${r.currentPhase})`],
      ['progress', progress(r)], ['effort', r.effort], ['template', r.flowTemplate], ['branch', r.branch],
      ['started', new Date(r.created).toLocaleString()], ['time', runTime(r)], ['tokens', num(r.totals.tokens)],
    ].filter(([, val]) => val);
    v.facts.replaceChildren(...facts.map(([k, val]) => h('div', {}, h('dt', { text: k }), h('dd', { text: val }))));
    renderQuestion(v, r);
    v.error.hidden = !r.error; v.error.textContent = r.error ? `Last failure: ${r.error}` : '';
    v.feedback.hidden = !r.feedback; v.feedback.textContent = r.feedback ? `Your revision request, for the next agent: “${r.feedback}”` : '';
    renderPhases(v.phases, r);
    v.tasksSection.hidden = !r.tasks.length;
    if (r.tasks.length) { renderTaskGraph(v.taskGraph, r.tasks); renderTasks(v.tasks, r.tasks); }
    renderArtifacts(v, r);
    renderTimeline(v.timeline, r.timeline);
    v.abandon.hidden = !r.actions.abandon;
    if (!r.actions.abandon) v.abandonForm.hidden = true;
    v.abandon.disabled = !S.signedIn;
    v.abandon.title = S.signedIn ? '' : 'sign in with the link baton printed to act here';
    v.next.textContent = r.nextStep ? `Next: ${r.nextStep}` : '';
  }

  // What the run history says about this run: its summary (the numbers of
  // `analytics_summary`), the estimate for its request from similar past
  // runs, and the review patterns its reviewers' prompts carry.
  let insightSeq = 0;
  async function loadInsights(id) {
    const seq = ++insightSeq;
    try {
      const x = await api(`/api/runs/${encodeURIComponent(id)}/insights`);
      if (seq !== insightSeq || id !== S.runId || !S.view) return;
      renderInsights(S.view, x);
    } catch (_) { /* the run's own view already tells what went wrong */ }
  }
  function renderInsights(v, x) {
    const sm = x.summary;
    v.insights.hidden = false;
    const f = sm.findings || {};
    const facts = [
      ['tokens', num(sm.tokens)], ['cost', usd(sm.cost_usd)], ['revision loops', count(sm.loops)],
      ['phases', `${sm.phases_run} run, ${sm.phases_skipped} skipped`],
      ['findings', `${f.critical || 0} CRITICAL, ${f.minor || 0} MINOR`],
      ...Object.entries(sm.verdicts || {}).map(([file, verdict]) => [file, verdict]),
    ];
    v.summaryFacts.replaceChildren(...facts.map(([k, val]) => h('div', {}, h('dt', { text: k }), h('dd', { 'data-summary': k, text: val }))));
    const est = x.estimate;
    v.estimate.hidden = !est;
    if (est) {
      // One flat list of nodes: a nested array would be turned into text.
      v.estimate.replaceChildren(h('span', { text: est.display || '' }),
        ...(est.similar || []).flatMap((w, i) => [i ? ', ' : ' Most similar: ',
          h('a', { href: `/runs/${encodeURIComponent(w)}`, text: w, onclick: (ev) => { if (!ev.metaKey && !ev.ctrlKey) { ev.preventDefault(); select(w); } } })]));
    }
    // Reviewers without patterns of their own all get every reviewer's: shown once.
    const groups = [];
    for (const g of x.review_patterns || []) {
      const same = g.shared && groups.find((o) => o.shared && o.critical_only === g.critical_only);
      if (same) same.agents.push(g.agent); else groups.push({ ...g, agents: [g.agent] });
    }
    v.patterns.hidden = !groups.length;
    $('.pattern-groups', v.patterns).replaceChildren(...groups.map((g) => h('div', { class: 'pattern-group', 'data-agent': g.agents.join(' ') },
      h('h4', { text: `${g.agents.join(', ')}${g.critical_only ? ' (CRITICAL only)' : ''}${g.shared ? ` — none of ${g.agents.length > 1 ? 'their' : 'its'} own, so every reviewer’s` : ''}` }),
      h('ol', {}, g.patterns.map((p) => {
        const crit = p.by.filter((b) => b.severity === 'CRITICAL').reduce((n, b) => n + b.count, 0);
        const sev = crit === p.count ? 'CRITICAL' : (crit ? `${crit} CRITICAL` : 'MINOR');
        return h('li', {}, h('span', { text: p.text }), h('span', { class: 'meta', text: ` ${p.count}× · ${sev} · last in ${p.last_seen}` }));
      })))));
  }

  function renderQuestion(v, r) {
    const q = r.question;
    v.question.hidden = !q;
    if (!q) { v.questionName = null; return; }
    $('.q-name', v.question).textContent = q.name;
    // The server rendered and sanitised this Markdown (no raw HTML passes).
    $('.q-text', v.question).innerHTML = q.html || '';
    const how = $('.q-how', v.question);
    how.textContent = S.signedIn ? `Recorded as your answer (person:dashboard).`
      : `Read-only here: to answer on this page, open the sign-in link \`baton dashboard\` printed in its terminal. Or answer in a terminal: baton answer ${r.workspace} ${q.options[0] || ''} (options: ${q.options.join(', ')}).`;
    if (v.questionName === q.name && v.optionsSignedIn === S.signedIn) return; // keep what the person is typing
    v.questionName = q.name; v.optionsSignedIn = S.signedIn;
    const revise = $('.q-revise', v.question);
    revise.hidden = !q.takesText;
    const text = $('#revise-text', v.question);
    text.value = '';
    $('.q-options', v.question).replaceChildren(...q.options.map((opt) => h('button', {
      type: 'button', 'data-answer': opt, disabled: !S.signedIn,
      class: opt === 'abandon' ? 'danger' : (opt === q.options[0] ? 'primary' : null),
      text: opt === 'revise' ? 'revise (send back with your text)' : opt,
      onclick: () => {
        if (opt === 'abandon') { v.abandonForm.hidden = false; $('.abandon-reason', v.node).focus(); return; }
        if (opt === 'revise' && !text.value.trim()) { notice('Tell the agent what to change first.', 'bad'); text.focus(); return; }
        doAnswer(q, opt, opt === 'revise' ? text.value : '');
      },
    })));
  }

  async function doAnswer(q, answer, text) {
    const buttons = document.querySelectorAll('.q-options button');
    buttons.forEach((b) => { b.disabled = true; });
    try {
      const r = await post(`/api/runs/${encodeURIComponent(S.runId)}/answer`, { question: q.name, answer, text: text || null });
      notice(`${r.question}: ${r.answer} — recorded as ${r.by}. ${r.current_phase} is now ${r.current_phase_status.replace('_', ' ')}.`, 'ok');
      S.view.questionName = null;
    } catch (e) {
      notice(e.message, 'bad');
      buttons.forEach((b) => { b.disabled = !S.signedIn; });
    }
    refreshAll();
  }

  async function doAbandon(reason) {
    try {
      const r = await post(`/api/runs/${encodeURIComponent(S.runId)}/abandon`, { reason: reason.trim() || null });
      notice(`Abandoned at ${r.currentPhase} (by ${r.by}).`, 'ok');
      S.view.abandonForm.hidden = true;
    } catch (e) { notice(e.message, 'bad'); }
    refreshAll();
  }

  // Phase graph: the workflow's phases left to right; loops as dashed arcs.
  function renderPhases(svg, r) {
    const W = 138, H = 48, GAP = 30, TOP = 58, PAD = 10;
    const idx = new Map(r.phases.map((p, i) => [p.id, i]));
    const x = (i) => PAD + i * (W + GAP);
    const loops = r.edges.filter((e) => e.kind === 'loop' && idx.has(e.to) && idx.has(e.from));
    const width = PAD * 2 + r.phases.length * (W + GAP) - GAP;
    svg.replaceChildren();
    svg.setAttribute('viewBox', `0 0 ${width} ${TOP + H + 16}`);
    svg.setAttribute('width', width);
    svg.setAttribute('height', TOP + H + 16);
    svg.append(s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L10,5 L0,10 z' }))));
    for (const e of r.edges) {
      if (e.kind !== 'next' || !idx.has(e.to)) continue;
      const a = idx.get(e.from), b = idx.get(e.to);
      if (b === a + 1) svg.append(s('path', { class: 'edge', d: `M${x(a) + W},${TOP + H / 2} L${x(b)},${TOP + H / 2}`, 'marker-end': 'url(#arrow)' }));
    }
    loops.forEach((e, k) => {
      const a = idx.get(e.from), b = idx.get(e.to);
      const x1 = x(a) + W / 2, x2 = x(b) + W / 2;
      const lift = Math.min(TOP - 8, 18 + 12 * Math.abs(a - b) + (k % 3) * 6);
      svg.append(s('path', { class: 'edge loop', d: `M${x1},${TOP} C${x1},${TOP - lift} ${x2},${TOP - lift} ${x2},${TOP}`, 'marker-end': 'url(#arrow)' }, s('title', {}, `${e.from} → ${e.to} on ${e.when}`)));
      // The label sits near the arc's source, so loops into one phase keep theirs apart.
      svg.append(s('text', { class: 'edge-label', x: x1 - 6, y: TOP - lift * 0.62, 'text-anchor': 'end' }, cut(e.when || 'loop', 22)));
    });
    r.phases.forEach((p, i) => {
      const current = p.id === r.currentPhase;
      const sub = [p.state, p.visits > 1 ? `${p.visits}×` : null, p.durationMs ? dur(p.durationMs) : null, p.tokens ? `${num(p.tokens)} tok` : null].filter(Boolean).join(' · ');
      svg.append(s('g', { class: `node s-${p.state}${current ? ' current' : ''}`, 'data-phase': p.id, 'data-state': p.state, transform: `translate(${x(i)},${TOP})` },
        s('title', {}, `${p.label} (${p.id}, ${p.kind}${p.agent ? `, ${p.agent}` : ''})${p.artifacts.length ? `\nwrites ${p.artifacts.join(', ')}` : ''}`),
        s('rect', { width: W, height: H, rx: 7 }),
        s('text', { x: 8, y: 19 }, cut(p.label, 19)),
        s('text', { class: 'sub', x: 8, y: 37 }, cut(sub, 24))));
    });
    const cur = svg.querySelector('.node.current');
    if (cur && svg.parentElement && !svg.dataset.scrolled) {
      svg.dataset.scrolled = '1';
      const i = idx.get(r.currentPhase) || 0;
      svg.parentElement.scrollLeft = Math.max(0, x(i) - svg.parentElement.clientWidth / 2 + W / 2);
    }
  }

  // Task DAG: columns by dependency depth.
  function renderTaskGraph(svg, tasks) {
    const W = 170, H = 42, CG = 56, RG = 12, PAD = 8;
    const byId = new Map(tasks.map((t) => [t.id, t]));
    const depth = new Map();
    const d = (t, guard = 0) => {
      if (depth.has(t.id)) return depth.get(t.id);
      if (guard > tasks.length) return 0; // a cycle cannot be registered, but never loop
      const v = t.dependsOn.reduce((m, dep) => (byId.has(dep) ? Math.max(m, d(byId.get(dep), guard + 1) + 1) : m), 0);
      depth.set(t.id, v);
      return v;
    };
    tasks.forEach((t) => d(t));
    const cols = [];
    tasks.forEach((t) => { const c = depth.get(t.id); (cols[c] = cols[c] || []).push(t); });
    const pos = new Map();
    cols.forEach((col, c) => col.forEach((t, r) => pos.set(t.id, [PAD + c * (W + CG), PAD + r * (H + RG)])));
    const width = PAD * 2 + cols.length * (W + CG) - CG;
    const height = PAD * 2 + Math.max(...cols.map((c) => c.length)) * (H + RG) - RG;
    svg.replaceChildren(s('defs', {}, s('marker', { id: 'tarrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' }, s('path', { d: 'M0,0 L10,5 L0,10 z' }))));
    svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
    svg.setAttribute('width', width); svg.setAttribute('height', height);
    for (const t of tasks) {
      for (const dep of t.dependsOn) {
        if (!pos.has(dep)) continue;
        const [x1, y1] = pos.get(dep), [x2, y2] = pos.get(t.id);
        const a = x1 + W, b = y1 + H / 2, c = x2, e = y2 + H / 2, m = (a + c) / 2;
        svg.append(s('path', { class: 'edge', d: `M${a},${b} C${m},${b} ${m},${e} ${c},${e}`, 'marker-end': 'url(#tarrow)' }));
      }
    }
    for (const t of tasks) {
      const [tx, ty] = pos.get(t.id);
      svg.append(s('g', { class: `node s-${t.state}`, 'data-task': t.id, 'data-state': t.state, transform: `translate(${tx},${ty})` },
        s('title', {}, `Task ${t.id}: ${t.title}\n${t.mode} · ${t.state}${t.files.length ? `\n${t.files.join(', ')}` : ''}`),
        s('rect', { width: W, height: H, rx: 7 }),
        s('text', { x: 8, y: 17 }, cut(`${t.id}. ${t.title}`, 24)),
        s('text', { class: 'sub', x: 8, y: 33 }, `${t.state} · ${t.mode}`)));
    }
  }

  function renderTasks(tbody, tasks) {
    tbody.replaceChildren(...tasks.map((t) => h('tr', { 'data-task': t.id },
      h('td', { text: t.id }),
      h('td', { text: t.title, title: t.files.join(', ') }),
      h('td', { text: t.mode }),
      h('td', {}, h('span', { class: `pill s-${t.state}`, text: t.state, title: `implementation: ${t.implStatus || '—'}, review: ${t.reviewStatus || '—'}${t.retries ? `, ${t.retries} retries` : ''}` })),
      h('td', { class: 'num', text: t.runs || '—' }),
      h('td', { class: 'num', text: dur(t.durationMs) }),
      h('td', { class: 'num', text: num(t.tokens) }))));
  }

  function renderArtifacts(v, r) {
    const open = S.artifact;
    v.artifacts.replaceChildren(...r.artifacts.map((a) => h('button', {
      type: 'button', 'data-artifact': a.name, 'aria-pressed': open && open.name === a.name ? 'true' : 'false',
      title: `${a.phase ? `${a.phase} · ` : ''}${a.size.toLocaleString()} bytes${a.modified ? ` · ${ago(a.modified)}` : ''}`,
      text: a.name,
      onclick: () => toggleArtifact(a),
    })));
    if (!r.artifacts.length) v.artifacts.append(h('span', { class: 'meta', text: 'None yet.' }));
    // An open artifact that changed on disk is shown again.
    if (open) {
      const now = r.artifacts.find((a) => a.name === open.name);
      if (!now) { S.artifact = null; v.artifactView.hidden = true; } else if (now.modified !== open.modified || now.size !== open.size) showArtifact(now);
    }
  }
  function toggleArtifact(a) {
    if (S.artifact && S.artifact.name === a.name) {
      S.artifact = null; S.view.artifactView.hidden = true;
      S.view.artifacts.querySelectorAll('button').forEach((b) => b.setAttribute('aria-pressed', 'false'));
      return;
    }
    showArtifact(a);
  }
  async function showArtifact(a) {
    S.artifact = a;
    S.view.artifacts.querySelectorAll('button').forEach((b) => b.setAttribute('aria-pressed', b.dataset.artifact === a.name ? 'true' : 'false'));
    try {
      const doc = await api(`/api/runs/${encodeURIComponent(S.runId)}/artifacts/${encodeURIComponent(a.name)}`);
      if (!S.artifact || S.artifact.name !== a.name) return;
      const box = S.view.artifactView;
      // Sanitised on the server: raw HTML from the artifact arrives as text.
      box.innerHTML = doc.html;
      if (doc.truncated) box.append(h('p', { class: 'meta', text: `(cut at 1 MiB of ${doc.size.toLocaleString()} bytes)` }));
      box.hidden = false;
    } catch (e) { notice(e.message, 'bad'); }
  }

  function renderTimeline(ol, entries) {
    const fresh = S.seen.size > 0;
    const items = entries.slice().reverse().map((e) => {
      const key = `${e.at}|${e.what}|${e.phase}|${e.detail || ''}`;
      const isNew = fresh && !S.seen.has(key);
      S.seen.add(key);
      return h('li', { class: isNew ? 'fresh' : null, 'data-what': e.what },
        h('time', { datetime: e.at, title: new Date(e.at).toLocaleString(), text: clock(e.at) }),
        h('span', {}, h('span', { class: 'what', text: e.what }), ' ', h('span', { text: e.phase })),
        h('span', { class: 'd' }, e.detail || '', e.by ? h('span', { class: 'by', text: ` — ${e.by}` }) : null));
    });
    ol.replaceChildren(...items);
  }

  // ---- live updates -----------------------------------------------------
  // Throttled, never starved: the first event of a burst schedules one
  // refresh shortly after; events during the wait ride along with it.
  let listTimer = null, runTimer = null, statsTimer = null, replaying = false;
  function refreshAll() {
    clearTimeout(listTimer); clearTimeout(runTimer); listTimer = null; runTimer = null;
    loadList();
    if (S.stats) loadStats(); else loadRun();
  }
  function onEvent(rec) {
    const act = $('#activity');
    const id = rec.workspace.split('/').pop();
    act.prepend(h('li', { class: replaying ? null : 'fresh', title: rec.detail || '' },
      h('a', { href: `/runs/${encodeURIComponent(id)}`, text: rec.specName || id, onclick: (ev) => { ev.preventDefault(); select(id); } }),
      ` ${rec.event} · ${rec.phase}${rec.detail ? ` · ${rec.detail}` : ''}`));
    while (act.children.length > 100) act.lastChild.remove();
    if (replaying) return; // the refresh on (re)connect covers the replay
    if (!listTimer) listTimer = setTimeout(() => { listTimer = null; loadList(); }, 200);
    // A run that ends adds its record to the history: the stats change.
    if (S.stats && (rec.event === 'pipeline-complete' || rec.event === 'abandon') && !statsTimer) {
      statsTimer = setTimeout(() => { statsTimer = null; loadStats(); }, 300);
    }
    if (id === S.runId && !runTimer) runTimer = setTimeout(() => { runTimer = null; loadRun(); }, 60);
  }
  function connect() {
    const live = $('#live');
    if (window.batonEvents) window.batonEvents.close();
    // An EventSource sends no headers: beyond loopback it shows the
    // session's read ticket, which opens this stream and nothing else.
    const es = new EventSource(S.eventsTicket && !S.loopback
      ? `/events?ticket=${encodeURIComponent(S.eventsTicket)}` : '/events');
    window.batonEvents = es;
    es.addEventListener('open', () => {
      live.textContent = 'live'; live.className = 'badge on';
      $('#activity').replaceChildren(); // the server replays recent events
      replaying = true;
      // Replayed frames arrive at once; whatever came in meanwhile is covered
      // by a refresh when the replay window closes.
      setTimeout(() => { replaying = false; refreshAll(); }, 300);
    });
    es.addEventListener('error', () => { live.textContent = 'reconnecting…'; live.className = 'badge off'; });
    for (const k of KINDS) {
      es.addEventListener(k, (ev) => { try { onEvent(JSON.parse(ev.data)); } catch (_) { /* ignore a bad frame */ } });
    }
  }

  setInterval(() => { renderList(); }, 30000);
  (async () => {
    await initSession();
    route();
    connect();
  })();
})();
