#!/usr/bin/env node
// Mastra's own runEvals(), in process, on the same agents and workflow server.mjs serves (app.mjs):
// the reference evalgate's `mastra` target is compared against.
//
// stdin:  {"agent": "weatherAgent" | "workflow": "forecastWorkflow",
//          "data": [{"input": ...} | {"inputs": [...]}],
//          "gates": [ENTRY], "scorers": [ENTRY]}
//   ENTRY = {"type": includes|excludes|equals|called_tool|did_not_call|no_tool_errors|used_no_tools|
//                    max_tool_calls|tool_order, ...the check's parameters, "id": "...", "threshold"?: ...}
//         | {"type": "result_includes", "field": "summary", "value": "warm", "id": "..."}  (workflows:
//           1 when the workflow result's field contains the value)
// stdout: {"verdict", "gateResults", "thresholdResults", "scores", "summary"} as runEvals returns them.

import { readFileSync } from 'node:fs';
import { createScorer, runEvals } from '@mastra/core/evals';
import { checks } from '@mastra/evals/checks';

import { buildMastra } from './app.mjs';

function makeScorer(e) {
  let s;
  switch (e.type) {
    case 'includes': s = checks.includes(e.value); break;
    case 'excludes': s = checks.excludes(e.value); break;
    case 'equals': s = checks.equals(e.value); break;
    case 'called_tool': s = checks.calledTool(e.tool, e.times === undefined ? {} : { times: e.times }); break;
    case 'did_not_call': s = checks.didNotCall(e.tool); break;
    case 'no_tool_errors': s = checks.noToolErrors(); break;
    case 'used_no_tools': s = checks.usedNoTools(); break;
    case 'max_tool_calls': s = checks.maxToolCalls(e.max); break;
    case 'tool_order': s = checks.toolOrder(e.tools); break;
    case 'result_includes':
      return createScorer({ id: e.id, name: e.id, description: 'workflow result field includes a value', type: 'agent' })
        .generateScore(({ run }) => (String(run.output?.[e.field] ?? '').includes(e.value) ? 1 : 0));
    default: throw new Error(`run_evals: unknown entry type ${JSON.stringify(e.type)}`);
  }
  if (e.id !== undefined) s.config.id = e.id;
  return s;
}

const spec = JSON.parse(readFileSync(0, 'utf8'));
// Mastra's logger may print to stdout; keep stdout for the result.
console.log = console.info = console.warn = console.debug = (...a) => process.stderr.write(a.map(String).join(' ') + '\n');

const mastra = buildMastra();
const target = spec.workflow ? mastra.getWorkflow(spec.workflow) : mastra.getAgent(spec.agent);
const result = await runEvals({
  target,
  data: spec.data,
  gates: (spec.gates ?? []).map(makeScorer),
  scorers: (spec.scorers ?? []).map((e) => ('threshold' in e ? { scorer: makeScorer(e), threshold: e.threshold } : makeScorer(e))),
  concurrency: 1,
});
process.stdout.write(JSON.stringify({
  verdict: result.verdict ?? null,
  gateResults: result.gateResults ?? null,
  thresholdResults: result.thresholdResults ?? null,
  scores: result.scores,
  summary: result.summary,
}) + '\n');
process.exit(0);
