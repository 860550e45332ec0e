// The inspection page: reads the run's history once (/api/history), then polls
// /api/snapshot, and charts the loss, the samples/s and each link's estimated bandwidth by
// step from the run's first step, however late it is opened. Everything it loads comes
// from the node itself.
//
// A job with a token: open the page as http://HOST:PORT/#token=TOKEN (the fragment never
// leaves the browser). The page keeps the token in sessionStorage, removes it from the
// address bar, and sends it as `Authorization: Bearer` with every request. A 401 shows a token
// field in the page (not a modal prompt, which would stop the page until answered).
'use strict';

const pollMs = 1000;
const maxPoints = 2000; // per series: past it, every other point goes (the run stays covered)
const tokenKey = 'deepcee-token';

function takeTokenFromFragment() {
  const m = /(?:^#|&)token=([^&]*)/.exec(window.location.hash);
  if (!m) return;
  sessionStorage.setItem(tokenKey, decodeURIComponent(m[1]));
  history.replaceState(null, '', window.location.pathname + window.location.search);
}

// `scales`: the chart's y axes (a second one for series of another size, as emulated beside
// real samples/s).
function lineChart(id, title, scales) {
  return new Chart(document.getElementById(id), {
    type: 'line',
    data: {datasets: []},
    options: {
      animation: false,
      maintainAspectRatio: false,
      parsing: false,
      normalized: true,
      elements: {point: {radius: 0}, line: {borderWidth: 1.5}},
      plugins: {title: {display: true, text: title}},
      scales: Object.assign({x: {type: 'linear', title: {display: true, text: 'step'}}}, scales),
    },
  });
}

const palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',
                 '#7f7f7f', '#bcbd22', '#17becf'];

// The dataset of `chart` labelled `label` (on the y axis `axis`), made on first use.
function series(chart, label, axis) {
  let d = chart.data.datasets.find(s => s.label === label);
  if (!d) {
    const color = palette[chart.data.datasets.length % palette.length];
    d = {label: label, data: [], borderColor: color, backgroundColor: color, yAxisID: axis || 'y'};
    chart.data.datasets.push(d);
  }
  return d;
}

function push(chart, label, x, y, axis) {
  if (y === null || y === undefined || !isFinite(y)) return;
  const d = series(chart, label, axis);
  if (d.data.length && d.data[d.data.length - 1].x === x) return;
  d.data.push({x: x, y: y});
  if (d.data.length > maxPoints) d.data = d.data.filter((_, i) => i % 2 === 0);
}

function points(chart) {
  return chart.data.datasets.reduce((n, d) => n + d.data.length, 0);
}

function fmt(v, digits) {
  return v === null || v === undefined ? '-' : Number(v).toFixed(digits);
}

const axis = (text, extra) => Object.assign({title: {display: true, text: text}}, extra);
const charts = {
  loss: lineChart('loss-chart', 'loss', {y: axis('loss')}),
  // Emulated samples/s (the virtual clock) can be far from real ones: each has its axis.
  throughput: lineChart('throughput-chart', 'samples/s', {
    // From zero: a steady rate reads as steady, not as noise in its last digits.
    y: axis('real samples/s', {beginAtZero: true}),
    emulated: axis('emulated samples/s',
                   {beginAtZero: true, position: 'right', grid: {drawOnChartArea: false}}),
  }),
  // Links of a job differ by orders of magnitude (NVLink beside a WAN).
  links: lineChart('links-chart', 'link bandwidth (estimated)',
                   {y: axis('MB/s', {type: 'logarithmic'})}),
};
let polls = 0;
let lastVersion = -1;
let historyRead = false;

// The run so far, as /api/history gives it: [step, value] pairs per series.
function showHistory(h) {
  for (const [step, v] of h.loss) push(charts.loss, 'loss', step, v);
  for (const [step, v] of h.validation) push(charts.loss, 'validation', step, v);
  if (h.validation.length) series(charts.loss, 'validation').pointRadius = 3;
  for (const [step, v] of h.real_samples_per_s) push(charts.throughput, 'real', step, v);
  for (const [step, v] of h.emulated_samples_per_s)
    push(charts.throughput, 'emulated', step, v, 'emulated');
  for (const [name, points] of Object.entries(h.links))
    for (const [step, v] of points) push(charts.links, name, step, v / 1e6);
}

function showLinks(links) {
  const body = document.querySelector('#links tbody');
  body.replaceChildren(...links.map(l => {
    const row = document.createElement('tr');
    for (const text of [l.name,
                        fmt(l.bandwidth_Bps / 1e6, 2) + ' (' + fmt(l.plan_bandwidth_Bps / 1e6, 2) + ')',
                        fmt(l.latency_s * 1e3, 2) + ' (' + fmt(l.plan_latency_s * 1e3, 2) + ')',
                        fmt(l.bytes_sent / 1e6, 2), String(l.transfers),
                        l.drifted ? 'drifted' : l.samples > 0 ? 'ok' : 'no sample']) {
      const cell = document.createElement('td');
      cell.textContent = text;
      row.appendChild(cell);
    }
    return row;
  }));
}

function show(s) {
  document.getElementById('title').textContent =
      s.job + ' · ' + s.model + ' on ' + s.cluster + ' (' + s.strategy + ', ' + s.time_mode + ' time)';
  document.getElementById('summary').textContent =
      'step ' + s.step + '/' + s.steps + ' | loss ' + fmt(s.loss, 4) + ' | val ' + fmt(s.val_loss, 4) +
      ' | ' + fmt(s.real_samples_per_s, 1) + ' real, ' + fmt(s.emulated_samples_per_s, 1) +
      ' emulated samples/s | dropped ' + s.dropped_messages + ' msg, ' + s.dropped_frames + ' frames';
  if (s.version === lastVersion) return;
  lastVersion = s.version;
  if (s.step > 0) {
    push(charts.loss, 'loss', s.step, s.loss);
    if (s.val_loss !== null) {
      push(charts.loss, 'validation', s.val_step, s.val_loss);
      series(charts.loss, 'validation').pointRadius = 3; // few and far between: show each
    }
    push(charts.throughput, 'real', s.step, s.real_samples_per_s);
    push(charts.throughput, 'emulated', s.step, s.emulated_samples_per_s, 'emulated');
    for (const l of s.links) push(charts.links, l.name, s.step, l.bandwidth_Bps / 1e6);
  }
  for (const c of Object.values(charts)) c.update('none');
  document.getElementById('points-loss').textContent = points(charts.loss);
  document.getElementById('points-throughput').textContent = points(charts.throughput);
  document.getElementById('points-links').textContent = points(charts.links);
  const loss = charts.loss.data.datasets.find(d => d.label === 'loss');
  if (loss && loss.data.length) document.getElementById('first-step').textContent = loss.data[0].x;
  showLinks(s.links);
}

function setState(text, error) {
  const state = document.getElementById('state');
  state.textContent = text;
  state.className = error ? 'error' : '';
}

async function poll() {
  const token = sessionStorage.getItem(tokenKey);
  const headers = token ? {Authorization: 'Bearer ' + token} : {};
  try {
    if (!historyRead) {
      const h = await fetch('/api/history', {headers: headers, cache: 'no-store'});
      if (h.ok) {
        showHistory(await h.json());
        historyRead = true;
      }
    }
    const res = await fetch('/api/snapshot', {headers: headers, cache: 'no-store'});
    if (res.status === 401) {
      document.getElementById('token-form').hidden = false;
      setState('unauthorized: the job needs its token (open the page as /#token=TOKEN)', true);
    } else if (!res.ok) {
      setState('waiting: ' + res.status + ' ' + (await res.text()).trim(), true);
    } else {
      document.getElementById('token-form').hidden = true;
      show(await res.json());
      polls += 1;
      document.getElementById('polls').textContent = polls;
      setState('live', false);
    }
  } catch (e) {
    setState('no answer from the job (ended?): ' + e.message, true);
  }
  setTimeout(poll, pollMs);
}

document.getElementById('token-form').addEventListener('submit', e => {
  e.preventDefault();
  sessionStorage.setItem(tokenKey, document.getElementById('token-input').value);
  document.getElementById('token-input').value = '';
});
takeTokenFromFragment();
poll();
