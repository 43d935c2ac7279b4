// The benchmark's page: one self-contained HTML file (inline CSS and SVG, nothing fetched, no script) drawn from a BenchReport.
//
// Every string that comes from the report (scenario names, targets, verdicts, error messages, the
// machine's model) goes through escapeHtml before it reaches the page: names such as
// `GET /users/user/{id}` or `A'` are data, and an error message may hold anything.

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  asCpuShare, compact, formatOps, formatUs, frontEndName, generatorBusyShareMax, latencyTargetsMs, ms, outcome,
  type BenchReport, type CpuShare, type MicroReport, type ScenarioResult,
} from './report.js';

const htmlEscapes: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text safe inside an element and inside a quoted attribute, in HTML and in inline SVG alike. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => htmlEscapes[c]!);
}

const e = escapeHtml;

// Drawing sizes in CSS pixels.
const barWidthPx = 300;
const barRowHeightPx = 22;
const latencyLabelWidthPx = 250;
const latencyPlotWidthPx = 560;
const latencyValueWidthPx = 150;
const cpuBarWidthPx = 120;

const colours = { met: '#2e7d32', missed: '#c62828', info: '#78909c', grid: '#d0d7de', p50: '#1565c0', p99: '#ef6c00', target: '#111' };

const css = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1400px;padding:0 16px;color:#1f2328;background:#fff}
h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:4px 8px;border-bottom:1px solid #eaeef2}
th{font-weight:600;background:#f6f8fa}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:8px 0}dt{font-weight:600}dd{margin:0}
.sid{font-weight:700;white-space:nowrap}.name{color:#57606a}.verdict{font-size:12px;color:#57606a;min-width:320px}td.scn{width:230px}td.tgt{width:170px;font-size:13px}
.badge{display:inline-block;padding:1px 7px;border-radius:10px;font-size:12px;font-weight:700;color:#fff;white-space:nowrap}
.b-met{background:${colours.met}}.b-missed{background:${colours.missed}}.b-info{background:${colours.info}}.b-error{background:#6a1b9a}
tr.missed td:first-child,tr.error td:first-child{box-shadow:inset 4px 0 0 ${colours.missed}}tr.met td:first-child{box-shadow:inset 4px 0 0 ${colours.met}}
td.cpu{white-space:nowrap}.flag{color:${colours.missed};font-weight:700}.note{color:#57606a;font-size:12px}.headline{font-size:16px;margin:12px 0}
svg{display:block}svg text{font:11px system-ui,sans-serif;fill:#1f2328}
`;

/** One self-contained HTML page of a benchmark run. */
export function htmlReport(report: BenchReport): string {
  const m = report.machine;
  const title = `authd benchmark: ${frontEndName(report.frontEnd)}, Node ${m.node}, ${m.date}`;
  return [
    '<!DOCTYPE html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${e(title)}</title><style>${css}</style></head><body>`,
    header(report),
    targetsSection(report.scenarios),
    latencySection(report.scenarios),
    cpuSection(report.scenarios),
    microSection(report.micro),
    '<p class="note">Written by bench/lib/html-report.ts from the run\'s JSON report beside this file.</p>',
    '</body></html>',
    '',
  ].join('\n');
}

/** The page's path beside a JSON report: latest-uws.json -> latest-uws.html. */
export function htmlPathBeside(jsonPath: string): string {
  return jsonPath.endsWith('.json') ? `${jsonPath.slice(0, -'.json'.length)}.html` : `${jsonPath}.html`;
}

export function writeHtmlReport(path: string, report: BenchReport): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, htmlReport(report));
}

function header(r: BenchReport): string {
  const m = r.machine;
  const judged = r.scenarios.filter((s) => s.pass !== null);
  const met = judged.filter((s) => s.pass === true).length;
  const missed = judged.filter((s) => s.pass === false).map((s) => s.id);
  const items: Array<[string, string]> = [
    ['run', `${r.mode}; ${r.users.toLocaleString('en-US')} users; ${r.connections} connections; ${r.durationS} s per scenario; took ${r.totalS.toFixed(0)} s`],
    ['front end', `${frontEndName(r.frontEnd)} (${r.frontEnd.reason})`],
    ['machine', `${m.cpus} x ${m.model} (available parallelism ${m.availableParallelism}), ${m.memoryGiB} GiB, Node ${m.node}, Linux ${m.kernel}`],
    ['date', m.date],
    ['ceilings', ceilingsText(r.ceilings)],
  ];
  const settings = Object.entries(r.server).map(([k, v]) => `<tr><td>${e(k)}</td><td>${e(v)}</td></tr>`).join('');
  return [
    `<h1>authd benchmark on ${e(frontEndName(r.frontEnd))}, Node ${e(m.node)}</h1>`,
    `<dl>${items.map(([k, v]) => `<dt>${e(k)}</dt><dd>${e(v)}</dd>`).join('')}</dl>`,
    `<p class="headline"><strong>${met} of ${judged.length} targets met</strong>${missed.length === 0 ? '' : `; missed: ${e(missed.join(', '))}`}</p>`,
    settings === '' ? '' : `<details><summary>server settings</summary><table>${settings}</table></details>`,
  ].join('\n');
}

/** "GET 99,304/s, POST 97,854/s (mean of 2 runs: ...); A, B, D against one measured just before". */
function ceilingsText(ceilings: Record<string, unknown>): string {
  const perSec = (n: unknown): string => (typeof n === 'number' ? `${Math.round(n).toLocaleString('en-US')}/s` : '?');
  const mean = ceilings['meanPerSec'] as Record<string, unknown> | undefined;
  const runs = Array.isArray(ceilings['runs']) ? (ceilings['runs'] as Array<Record<string, { reqPerSec?: unknown } | undefined>>) : [];
  const beside = typeof ceilings['beside'] === 'object' && ceilings['beside'] !== null ? Object.entries(ceilings['beside'] as Record<string, unknown>) : [];
  const parts = [mean === undefined ? 'not measured' : `GET ${perSec(mean['GET'])}, POST ${perSec(mean['POST'])}`];
  if (runs.length > 1) parts.push(`(mean of ${runs.length} runs: GET ${runs.map((c) => perSec(c['get']?.reqPerSec)).join(' then ')}, POST ${runs.map((c) => perSec(c['post']?.reqPerSec)).join(' then ')})`);
  const text = parts.join(' ');
  const besideText = beside.length === 0 ? '' : `; measured just before a scenario: ${beside.map(([id, n]) => `${id} ${perSec(n)}`).join(', ')}`;
  return `${text}${besideText}`;
}

function badge(s: ScenarioResult): string {
  const o = outcome(s);
  return `<span class="badge b-${o}">${o === 'met' ? 'MET' : o === 'missed' ? 'MISSED' : o === 'error' ? 'ERROR' : 'info'}</span>`;
}

function scenarioCell(s: ScenarioResult): string {
  return `<span class="sid">${e(s.id)}</span> <span class="name">${e(s.name)}</span>`;
}

/** Tick positions of the ratio axis: 0 to 1 x ceiling, further when a row is above it. */
function ratioAxisMax(rows: readonly ScenarioResult[]): number {
  const top = Math.max(1, ...rows.map((r) => r.ratio ?? 0).filter((r) => Number.isFinite(r)));
  return Math.min(2, Math.ceil(top * 4) / 4);
}

function ratioAxis(axisMax: number): string {
  const ticks: string[] = [];
  for (let t = 0; t <= axisMax + 1e-9; t += 0.25) {
    const x = 4 + (t / axisMax) * barWidthPx;
    ticks.push(`<line x1="${x.toFixed(1)}" y1="14" x2="${x.toFixed(1)}" y2="20" stroke="#888"/>`);
    if (Math.abs(t * 2 - Math.round(t * 2)) < 1e-9) ticks.push(`<text x="${x.toFixed(1)}" y="11" text-anchor="${t === 0 ? 'start' : 'middle'}">${t.toFixed(1)}</text>`);
  }
  return `<svg width="${barWidthPx + 24}" height="20" role="img" aria-label="x ceiling axis">${ticks.join('')}</svg>`;
}

/** A bar of `value` on 0..axisMax with the target as a marker line; clipped values end in a chevron. */
function bar(value: number, axisMax: number, targetValue: number | undefined, colour: string, y: number, h: number, label: string): string {
  const x0 = 4;
  const w = Math.max(1, (Math.min(value, axisMax) / axisMax) * barWidthPx);
  const parts = [`<rect x="${x0}" y="${y}" width="${w.toFixed(1)}" height="${h}" fill="${colour}"><title>${e(label)}</title></rect>`];
  if (value > axisMax) parts.push(`<path d="M${(x0 + w + 2).toFixed(1)} ${y} l5 ${h / 2} l-5 ${h / 2}" fill="none" stroke="${colour}" stroke-width="2"/>`);
  if (targetValue !== undefined) {
    const tx = x0 + (Math.min(targetValue, axisMax) / axisMax) * barWidthPx;
    parts.push(`<line x1="${tx.toFixed(1)}" y1="${y - 3}" x2="${tx.toFixed(1)}" y2="${y + h + 3}" stroke="${colours.target}" stroke-width="2"><title>${e(`target ${label.split(':')[0]}`)}</title></line>`);
  }
  return parts.join('');
}

function grid(axisMax: number, step: number, height: number): string {
  const lines: string[] = [];
  for (let t = step; t <= axisMax + 1e-9; t += step) {
    const x = 4 + (t / axisMax) * barWidthPx;
    lines.push(`<line x1="${x.toFixed(1)}" y1="0" x2="${x.toFixed(1)}" y2="${height}" stroke="${colours.grid}" stroke-dasharray="2 2"/>`);
  }
  return lines.join('');
}

/** The chart cell and the value cell of one row of the targets table. */
function targetCells(s: ScenarioResult, axisMax: number): [string, string] {
  const svg = (body: string, height: number): string => `<svg width="${barWidthPx + 24}" height="${height}" role="img">${body}</svg>`;
  const latency = latencyTargetsMs(s.target);
  if (latency !== undefined && (s.p50Ms !== null || s.p99Ms !== null)) {
    // Each percentile on its own axis, 0 to twice its bound, so the bound is always the middle mark.
    const lines: string[] = [grid(1, 0.5, 2 * barRowHeightPx)];
    const words: string[] = [];
    const pcts: Array<['p50' | 'p99', number | null, number | undefined]> = [['p50', s.p50Ms, latency.p50Ms], ['p99', s.p99Ms, latency.p99Ms]];
    pcts.forEach(([name, value, bound], i) => {
      if (value === null) return;
      const colour = bound === undefined ? colours.info : value <= bound ? colours.met : colours.missed;
      const scale = bound ?? value;
      lines.push(bar(value / (2 * scale), 1, bound === undefined ? undefined : 0.5, colour, 5 + i * barRowHeightPx, 12, `${name}: ${ms(value)} ms`));
      words.push(`${name} ${ms(value)} ms${bound === undefined ? '' : ` (&le; ${e(String(bound))} ms)`}`);
    });
    return [svg(lines.join(''), 2 * barRowHeightPx), `${words.join('<br>')}<br><span class="note">latency target: the middle mark; axis to twice it</span>`];
  }
  if (s.ratio !== null && Number.isFinite(s.ratio)) {
    const o = outcome(s);
    const colour = s.ratioMin === undefined ? colours.info : o === 'met' ? colours.met : colours.missed;
    const body = grid(axisMax, 0.25, barRowHeightPx) + bar(s.ratio, axisMax, s.ratioMin, colour, 5, 12, `${s.ratio.toFixed(2)} x ceiling`);
    const target = s.ratioMin === undefined ? '<span class="note">no ratio target</span>' : `target &ge; ${e(String(s.ratioMin))}`;
    return [svg(body, barRowHeightPx), `${s.ratio.toFixed(2)} x ${e(s.ceiling ?? '')} ceiling<br>${target}`];
  }
  return ['', ''];
}

function targetsSection(rows: readonly ScenarioResult[]): string {
  const axisMax = ratioAxisMax(rows);
  const body = rows.map((s) => {
    const [chart, value] = targetCells(s, axisMax);
    return `<tr class="row ${outcome(s)}"><td class="scn">${scenarioCell(s)}</td><td>${badge(s)}</td><td>${chart}</td><td class="num">${value}</td>` +
      `<td class="tgt">${e(s.target)}</td><td class="verdict">${e(s.verdict.replace(/^; /, ''))}</td></tr>`;
  });
  return [
    '<h2>Targets</h2>',
    '<p class="note">Bars: req/s over the ceiling (a bare server of the same front end), the black mark the target; green met, red missed, grey no ratio target.</p>',
    `<table><tr><th>scenario</th><th>result</th><th>x ceiling${ratioAxis(axisMax)}</th><th class="num">value</th><th>target</th><th>verdict</th></tr>`,
    ...body,
    '</table>',
  ].join('\n');
}

/** p50 and p99 of every row that has them, on one log axis in ms. */
function latencySection(rows: readonly ScenarioResult[]): string {
  const withLatency = rows.filter((s) => s.p50Ms !== null && s.p99Ms !== null && s.p50Ms > 0 && s.p99Ms > 0);
  if (withLatency.length === 0) return '<h2>Latency</h2><p>No row measured latency.</p>';
  const values = withLatency.flatMap((s) => [s.p50Ms!, s.p99Ms!]);
  const lo = 10 ** Math.floor(Math.log10(Math.min(...values)));
  const hi = 10 ** Math.ceil(Math.log10(Math.max(...values)));
  const decades = Math.max(1, Math.round(Math.log10(hi / lo)));
  const x = (v: number): number => latencyLabelWidthPx + (Math.log10(v / lo) / decades) * latencyPlotWidthPx;
  const top = 30;
  const height = top + withLatency.length * barRowHeightPx + 8;
  const width = latencyLabelWidthPx + latencyPlotWidthPx + latencyValueWidthPx;
  const parts: string[] = [];
  for (let d = 0; d <= decades; d++) {
    const v = lo * 10 ** d;
    const xv = x(v).toFixed(1);
    parts.push(`<line x1="${xv}" y1="${top - 6}" x2="${xv}" y2="${height - 4}" stroke="${colours.grid}"/>`);
    parts.push(`<text x="${xv}" y="${top - 10}" text-anchor="middle">${e(v >= 1000 ? `${+(v / 1000).toPrecision(3)} s` : `${+v.toPrecision(3)} ms`)}</text>`);
  }
  parts.push(`<circle cx="8" cy="8" r="4" fill="${colours.p50}"/><text x="16" y="12">p50</text>`);
  parts.push(`<rect x="50" y="4" width="8" height="8" fill="${colours.p99}"/><text x="62" y="12">p99</text>`);
  parts.push(`<line x1="100" y1="2" x2="100" y2="14" stroke="${colours.target}" stroke-width="2"/><text x="106" y="12">a latency target</text>`);
  withLatency.forEach((s, i) => {
    const cy = top + i * barRowHeightPx + barRowHeightPx / 2;
    const label = `${s.id}  ${s.name}`;
    const short = label.length > 38 ? `${label.slice(0, 37)}…` : label;
    parts.push(`<text x="0" y="${cy + 4}"><title>${e(label)}</title>${e(short)}</text>`);
    const x50 = x(s.p50Ms!);
    const x99 = x(s.p99Ms!);
    parts.push(`<line x1="${x50.toFixed(1)}" y1="${cy}" x2="${x99.toFixed(1)}" y2="${cy}" stroke="#9aa5b1" stroke-width="3"/>`);
    parts.push(`<circle cx="${x50.toFixed(1)}" cy="${cy}" r="5" fill="${colours.p50}"><title>${e(`${s.id} p50 ${ms(s.p50Ms)} ms`)}</title></circle>`);
    parts.push(`<rect x="${(x99 - 5).toFixed(1)}" y="${cy - 5}" width="10" height="10" fill="${colours.p99}"><title>${e(`${s.id} p99 ${ms(s.p99Ms)} ms`)}</title></rect>`);
    const bounds = latencyTargetsMs(s.target);
    for (const [name, bound, colour] of [['p50', bounds?.p50Ms, colours.p50], ['p99', bounds?.p99Ms, colours.p99]] as const) {
      if (bound === undefined || bound < lo || bound > hi) continue;
      const xb = x(bound).toFixed(1);
      parts.push(`<line x1="${xb}" y1="${cy - 9}" x2="${xb}" y2="${cy + 9}" stroke="${colours.target}" stroke-width="2"><title>${e(`${s.id} ${name} target ${bound} ms`)}</title></line>`);
      parts.push(`<line x1="${xb}" y1="${cy + 9}" x2="${xb}" y2="${cy + 10}" stroke="${colour}" stroke-width="2"/>`);
    }
    parts.push(`<text x="${latencyLabelWidthPx + latencyPlotWidthPx + 12}" y="${cy + 4}">${e(`${ms(s.p50Ms)} / ${ms(s.p99Ms)} ms`)}</text>`);
  });
  return [
    '<h2>Latency</h2>',
    '<p class="note">p50 and p99 of each row\'s answers, on a logarithmic axis (each grid line ten times the one before).</p>',
    `<svg width="${width}" height="${height}" role="img" aria-label="p50 and p99 latency per scenario, log scale">${parts.join('')}</svg>`,
  ].join('\n');
}

function cpuBar(cpu: CpuShare | undefined): string {
  if (cpu === undefined) return '';
  const share = cpu.generatorShare;
  const w = Number.isFinite(share) ? Math.max(1, Math.min(share, 1) * cpuBarWidthPx) : 0;
  const busy = share > generatorBusyShareMax;
  const mark = generatorBusyShareMax * cpuBarWidthPx;
  return `<svg width="${cpuBarWidthPx + 4}" height="14" role="img"><rect x="0" y="2" width="${cpuBarWidthPx}" height="10" fill="#eef1f4"/>` +
    `<rect x="0" y="2" width="${w.toFixed(1)}" height="10" fill="${busy ? colours.missed : colours.info}"/>` +
    `<line x1="${mark}" y1="0" x2="${mark}" y2="14" stroke="${colours.target}" stroke-width="1.5"/></svg>`;
}

function cpuText(cpu: CpuShare | undefined): string {
  if (cpu === undefined) return '-';
  const pct = (share: number): string => (Number.isFinite(share) ? `${Math.round(share * 100)}%` : '?');
  const flag = cpu.generatorShare > generatorBusyShareMax ? ' <span class="flag">GENERATOR-BOUND</span>' : '';
  return `${e(cpu.generator)} ${pct(cpu.generatorShare)} / server ${pct(cpu.serverShare)}${cpu.wholeScenario === true ? ' <span class="note">(whole scenario)</span>' : ''}${flag}`;
}

function cpuSection(rows: readonly ScenarioResult[]): string {
  const measured = rows.map((s) => ({ s, cpu: s.cpu ?? asCpuShare(s.extra['cpu']), ceiling: asCpuShare(s.extra['ceilingCpu']) }))
    .filter((r) => r.cpu !== undefined || r.ceiling !== undefined);
  const head = [
    '<h2>CPU</h2>',
    `<p class="note">Share of one core over the measured run (1 = a full core). A generator above ${generatorBusyShareMax * 100}% of a core (the mark) may have set the pace: GENERATOR-BOUND.</p>`,
  ];
  if (measured.length === 0) return [...head, '<p>No row recorded CPU.</p>'].join('\n');
  const body = measured.map(({ s, cpu, ceiling }) =>
    `<tr><td>${scenarioCell(s)}</td><td>${cpuBar(cpu)}</td><td class="cpu">${cpuText(cpu)}</td><td>${cpuBar(ceiling)}</td><td class="cpu">${cpuText(ceiling)}</td></tr>`);
  return [...head, '<table><tr><th>scenario</th><th colspan="2">generator / server on authd</th><th colspan="2">generator / server on the ceiling</th></tr>', ...body, '</table>'].join('\n');
}

function microSection(micro: MicroReport): string {
  const body = micro.results.map((r) =>
    `<tr><td>${e(r.group)}</td><td>${e(r.name)}</td><td class="num">${e(formatOps(r.opsPerSec))}</td><td class="num">${e(formatUs(r.meanUs))}</td>` +
    `<td class="num">${r.marginPct.toFixed(1)}</td><td class="num">${r.samples}</td></tr>`);
  const notes = [
    `${compact(micro.users)} users loaded in ${(micro.loadMs / 1000).toFixed(2)} s, search index completed in ${(micro.searchBuildMs / 1000).toFixed(2)} s`,
    `search index ${micro.searchSpeedup.toFixed(1)}x a linear scan over ${micro.searchTerms} terms`,
    `argon2id verify ${micro.argon2VerifyMs.toFixed(1)} ms, hash ${micro.argon2HashMs.toFixed(1)} ms`,
  ];
  return [
    '<h2>Micro benchmarks</h2>',
    `<p class="note">${e(notes.join('; '))}</p>`,
    '<table><tr><th>group</th><th>benchmark</th><th class="num">ops/s</th><th class="num">per op</th><th class="num">&plusmn;%</th><th class="num">samples</th></tr>',
    ...body,
    '</table>',
  ].join('\n');
}
