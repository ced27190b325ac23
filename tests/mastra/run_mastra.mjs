#!/usr/bin/env node
// Differential harness: runs the REAL Mastra `runEvals()` with real `checks.*` scorers
// over recorded runs (evalgate CONTRACT.md section 3 format) and prints what Mastra returns.
//
// Usage:   node run_mastra.mjs < cases.json > results.json
//          (run `npm ci` in this folder first; or set MASTRA_HARNESS_DIR to a folder whose
//           node_modules holds @mastra/core and @mastra/evals)
//
// stdin:  a JSON array of cases (or a single case object). See README section at the bottom
//         of docs/mastra-semantics.md for the full format. In short:
//   {
//     "data": [
//       {"input": ..., "output": RUN},                                  // single turn
//       {"inputs": [..], "outputs": [RUN, ...]},                        // multi-turn, accumulated
//       {"turns": [{"input": .., "output": RUN, "gates": [..], "scorers": [..], "fixed": {..}}]},
//       ... any item may carry "fixed": {"<id>": VALUE} for harness-only "fixed" scorers
//     ],
//     "gates":   [ENTRY, ...],
//     "scorers": [ENTRY, ...],          // ENTRY may carry "threshold": number | {min?, max?}
//     "concurrency": 1                  // optional, passed to runEvals
//   }
//   RUN   = "text" | {"text": "..." | ["msg1", "msg2"], "tool_calls": [{name, args, result, error, status}],
//                     "uncounted_tool_errors": ["..."]}
//           | {"messages": [raw MastraDBMessage, ...]}   (raw passthrough, advanced)
//   ENTRY = {"type": "includes", "value": "a", "ignore_case": true, "threshold": 0.7, "id": "optional override"}
//           types: includes excludes equals matches similarity called_tool did_not_call tool_order
//                  max_tool_calls used_no_tools no_tool_errors (camelCase aliases accepted), and the
//                  harness-only "fixed" (score read from item/turn "fixed"[id]: a number, null, or one of
//                  "NaN" "Infinity" "-Infinity" "undefined" "not_scorable" "throw").
//           Without "id", the scorer keeps Mastra's own id (e.g. "check-includes"), so duplicates
//           of one check type merge exactly as they do in Mastra.
//
// stdout: a JSON array, one object per case:
//   {"verdict": "passed"|"scored"|"failed"|null, "gateResults": [...]|null,
//    "thresholdResults": [...]|null, "scores": {...}, "turnResults": [...]|null, "summary": {...}}
//   or {"error": "message", "cause": "message of the underlying error"} when runEvals throws.
//   Non-finite numbers are written as the strings "NaN", "Infinity", "-Infinity".

import { readFileSync } from 'node:fs';
import { importExport } from './resolve.mjs';

const core = await importExport('@mastra/core', './evals');
const evals = await importExport('@mastra/evals', './checks');
const { runEvals, createScorer, notScorable } = core.mod;
const { checks } = evals.mod;

// ---------------------------------------------------------------------------------------------
// Run (the run format, docs/spec.md) -> Mastra output messages (MastraDBMessage[], format 2)

let idCounter = 0;
const nextId = (p) => `${p}-${++idCounter}`;

function toolInvocation(tc, i) {
  const toolCallId = tc.id ?? tc.tool_call_id ?? nextId('call');
  const base = { toolCallId, toolName: tc.name, args: tc.args ?? {} };
  // An error is any truthy value, as Mastra reads `result.error` (0, false, '' are none).
  const failed = Boolean(tc.error) || tc.status === 'error';
  if (tc.status === 'pending') return { ...base, state: 'call' };
  // A failed call that still returned something is Mastra's `state: 'result'` with `isError`.
  if (failed && tc.result !== undefined) return { ...base, state: 'result', isError: true, result: tc.result };
  if (failed) {
    return {
      ...base,
      state: 'output-error',
      errorText: typeof tc.error === 'string' ? tc.error : JSON.stringify(tc.error ?? 'error'),
    };
  }
  const inv = { ...base, state: 'result' };
  if (tc.result !== undefined) inv.result = tc.result;
  return inv;
}

function runToMessages(run) {
  if (run === undefined || run === null) run = { text: '' };
  if (typeof run === 'string') run = { text: run };
  if (Array.isArray(run.messages)) return run.messages; // raw passthrough
  const texts = Array.isArray(run.text) ? run.text : [run.text ?? ''];
  const toolParts = (run.tool_calls ?? []).map((tc, i) => ({ type: 'tool-invocation', toolInvocation: toolInvocation(tc, i) }));
  // uncounted_tool_errors: failed invocations that are no calls (here: thrown, without a toolName)
  for (const errorText of run.uncounted_tool_errors ?? []) {
    toolParts.push({ type: 'tool-invocation', toolInvocation: { toolCallId: nextId('call'), state: 'output-error', args: {}, errorText } });
  }
  const messages = [];
  texts.forEach((text, i) => {
    // Same shape a real Agent persists (checked against @mastra/core 1.71.0): one assistant
    // message per turn, tool-invocation parts, then the text part; content.content = final text.
    const parts = i === 0 ? [...toolParts] : [];
    const content = { format: 2, parts };
    if (typeof text === 'string' && text !== '') {
      parts.push({ type: 'text', text });
      content.content = text;
    }
    messages.push({ id: nextId('msg'), role: 'assistant', createdAt: new Date(0), content });
  });
  if (texts.length === 0) {
    messages.push({ id: nextId('msg'), role: 'assistant', createdAt: new Date(0), content: { format: 2, parts: toolParts } });
  }
  return messages;
}

// ---------------------------------------------------------------------------------------------
// Fake agent target: runEvals only needs getModel() (a v2+ spec => generate() path),
// generate(input, options) returning {scoringData: {input, output}}, and, for multi-turn,
// getMemory() / getMastraInstance().

function makeTarget(caseSpec) {
  return {
    id: 'evalgate-recorded',
    name: 'evalgate-recorded',
    getModel: async () => ({ specificationVersion: 'v2', provider: 'recorded', modelId: 'recorded' }),
    getMemory: async () => ({ recorded: true }), // truthy: silences the "no memory" warning
    getMastraInstance: () => undefined,
    generate: async (input) => {
      const tag = input?.__evalgate;
      if (!tag) throw new Error('harness: unexpected input passed to target');
      const item = caseSpec.data[tag.item];
      let run;
      if (tag.kind === 'single') run = item.output;
      else if (tag.kind === 'inputs') run = (item.outputs ?? [])[tag.turn];
      else run = item.turns[tag.turn].output;
      if (run && typeof run === 'object' && run.throw) throw new Error(String(run.throw));
      return { text: '', scoringData: { input, output: runToMessages(run) } };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Entries (contract section 5) -> real checks

const pick = (e, ...keys) => {
  for (const k of keys) if (k in e) return e[k];
  return undefined;
};
const opts = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

function decodeFixed(v) {
  if (v === 'NaN') return NaN;
  if (v === 'Infinity') return Infinity;
  if (v === '-Infinity') return -Infinity;
  if (v === 'undefined') return undefined;
  return v;
}

function makeFixed(id, scope, caseSpec) {
  return createScorer({ id, name: id, description: 'harness fixed score' }).generateScore(({ run }) => {
    const tag = run.input?.__evalgate;
    if (!tag) throw new Error('harness: fixed scorer without tag');
    const item = caseSpec.data[tag.item];
    const table = scope === 'turn' ? item.turns[tag.turn].fixed ?? {} : item.fixed ?? {};
    if (!(id in table)) throw new Error(`harness: no fixed value for ${id} (item ${tag.item}${scope === 'turn' ? `, turn ${tag.turn}` : ''})`);
    const v = table[id];
    if (v === 'throw') throw new Error(`fixed scorer ${id} threw`);
    if (v === 'not_scorable') return notScorable(`fixed ${id}`);
    return decodeFixed(v);
  });
}

function makeScorer(e, scope, caseSpec) {
  const t = String(e.type ?? '').replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();
  const ignoreCase = pick(e, 'ignore_case', 'ignoreCase');
  let s;
  switch (t) {
    case 'includes': s = checks.includes(e.value, opts({ ignoreCase })); break;
    case 'excludes': s = checks.excludes(e.value, opts({ ignoreCase })); break;
    case 'equals': s = checks.equals(e.value, opts({ ignoreCase })); break;
    case 'matches': s = checks.matches(new RegExp(e.pattern, e.flags ?? ''), opts({ exact: e.exact })); break;
    case 'similarity': s = checks.similarity(e.value, opts({ ignoreCase, threshold: pick(e, 'cutoff', 'min_similarity') })); break;
    case 'called_tool': s = checks.calledTool(e.tool, opts({ times: e.times })); break;
    case 'did_not_call': s = checks.didNotCall(e.tool); break;
    case 'tool_order': s = checks.toolOrder(e.tools); break;
    case 'max_tool_calls': s = checks.maxToolCalls(e.max); break;
    case 'used_no_tools': s = checks.usedNoTools(); break;
    case 'no_tool_errors': s = checks.noToolErrors(); break;
    case 'fixed':
      if (!e.id) throw new Error('harness: a "fixed" entry needs an id');
      return makeFixed(e.id, scope, caseSpec);
    default: throw new Error(`harness: unknown entry type ${JSON.stringify(e.type)}`);
  }
  if (e.id !== undefined) s.config.id = e.id; // optional override of Mastra's fixed check id
  return s;
}

function makeEntries(list, scope, caseSpec, allowThreshold) {
  return (list ?? []).map((e) => {
    const scorer = makeScorer(e, scope, caseSpec);
    if (allowThreshold && 'threshold' in e) return { scorer, threshold: e.threshold };
    return scorer;
  });
}

// ---------------------------------------------------------------------------------------------

function buildConfig(caseSpec) {
  if (!Array.isArray(caseSpec.data)) throw new Error('harness: case.data must be an array');
  const data = caseSpec.data.map((item, i) => {
    const out = {};
    if ('ground_truth' in item) out.groundTruth = item.ground_truth;
    if ('groundTruth' in item) out.groundTruth = item.groundTruth;
    if ('turns' in item) {
      out.turns = (item.turns ?? []).map((turn, ti) => {
        // A turn without "input" is passed on without one, so Mastra's own validation reports it.
        const tt = 'input' in turn ? { input: { __evalgate: { item: i, turn: ti, kind: 'turns' }, input: turn.input } } : {};
        if (turn.gates) tt.gates = makeEntries(turn.gates, 'turn', caseSpec, false);
        if (turn.scorers) tt.scorers = makeEntries(turn.scorers, 'turn', caseSpec, true);
        return tt;
      });
    }
    if ('inputs' in item) {
      out.inputs = Array.isArray(item.inputs)
        ? item.inputs.map((inp, ti) => ({ __evalgate: { item: i, turn: ti, kind: 'inputs' }, input: inp }))
        : item.inputs;
    }
    if ('input' in item) {
      out.input = { __evalgate: { item: i, turn: 0, kind: 'single' }, input: item.input };
    }
    return out;
  });
  const config = { data, target: makeTarget(caseSpec) };
  if (caseSpec.gates !== undefined) config.gates = makeEntries(caseSpec.gates, 'item', caseSpec, false);
  if (caseSpec.scorers !== undefined) config.scorers = makeEntries(caseSpec.scorers, 'item', caseSpec, true);
  if (caseSpec.concurrency !== undefined) config.concurrency = caseSpec.concurrency;
  return config;
}

function causeChain(err) {
  const msgs = [];
  let e = err?.cause;
  while (e && msgs.length < 5) {
    msgs.push(e.message ?? String(e));
    e = e.cause;
  }
  return msgs.join(' <- ');
}

async function runCase(caseSpec) {
  let config;
  try {
    config = buildConfig(caseSpec);
  } catch (err) {
    return { error: err.message, harness_error: true };
  }
  try {
    const r = await runEvals(config);
    return {
      verdict: r.verdict ?? null,
      gateResults: r.gateResults ?? null,
      thresholdResults: r.thresholdResults ?? null,
      scores: r.scores,
      turnResults: r.turnResults ?? null,
      summary: r.summary,
    };
  } catch (err) {
    const out = { error: err?.message ?? String(err) };
    if (err?.id) out.error_id = err.id;
    const c = causeChain(err);
    if (c) out.cause = c;
    return out;
  }
}

function encodeNonFinite(_k, v) {
  if (typeof v === 'number' && !Number.isFinite(v)) return Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity';
  return v;
}

const raw = readFileSync(0, 'utf8');
let cases = JSON.parse(raw);
const single = !Array.isArray(cases);
if (single) cases = [cases];

// Silence Mastra's own logging on stdout (gate warnings etc.) so stdout stays pure JSON.
const origLog = console.log, origInfo = console.info, origWarn = console.warn, origDebug = console.debug;
console.log = console.info = console.warn = console.debug = (...a) => process.stderr.write(a.map(String).join(' ') + '\n');

const results = [];
for (const c of cases) results.push(await runCase(c));

console.log = origLog; console.info = origInfo; console.warn = origWarn; console.debug = origDebug;
const payload = single ? results[0] : results;
if (process.argv.includes('--versions')) {
  process.stderr.write(`@mastra/core ${core.version}, @mastra/evals ${evals.version}\n`);
}
process.stdout.write(JSON.stringify(payload, encodeNonFinite, process.argv.includes('--pretty') ? 2 : 0) + '\n');
