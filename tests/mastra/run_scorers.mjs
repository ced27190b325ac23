#!/usr/bin/env node
// Differential harness for the built-in scorers: runs @mastra/evals' OWN prebuilt scorers over
// recorded runs and prints their scores, so evalgate's scorers can be compared number for number.
//
// Usage:   node run_scorers.mjs < cases.json > scores.json      (run `npm ci` in this folder first)
//
// stdin: a JSON array of cases:
//   {
//     "scorer": "content_similarity" | "textual_difference" | "keyword_coverage" | "completeness" |
//               "tone" | "tool_call_accuracy_code" | "trajectory" | "answer_relevancy" |
//               "answer_similarity" | "faithfulness" | "hallucination" | "toxicity" | "bias" |
//               "context_precision" | "context_relevance" | "context_recall" | "prompt_alignment" |
//               "summarization" | "tool_call_accuracy" | "rubric" | the checks "called_tool" |
//               "did_not_call" | "tool_order" | "max_tool_calls" | "used_no_tools" | "no_tool_errors",
//     "options": {...},            // passed to Mastra's factory as its options (camelCase, Mastra's names;
//                                  //   the checks take {tool, times}, {tools} or {max}); "noContext": true
//                                  //   gives a contextExtractor that finds none (an item without context)
//     "input": "user message",     // the agent's input (omit for none): a string, or what agent.generate takes
//                                  //   (a message, a list of messages and strings), converted by Mastra's MessageList
//     "output": RUN,               // as in run_mastra.mjs: "text" | {"text": "..." | [...], "tool_calls": [...]}
//                                  //   | {"messages": [raw MastraDBMessage, ...]}
//     "ground_truth": ...,         // optional
//     "expected_trajectory": {...},// optional (Mastra's camelCase keys)
//     "judge": [{...}, ...],       // LLM scorers: the judge's structured answers, one per judge step, in order
//                                  //   (a string: the reply's raw text)
//     "prompts": true              // optional: also return what each judge step was asked (its last message's text)
//   }
//   or {"scorer": "input_text", "input": ...}: what Mastra's scorers read of that input, with Mastra's own
//   readers: {"code": inputMessages' texts joined by ", " (the code scorers), "user": getUserMessageFromRunInput,
//   "system": getCombinedSystemPrompt (prompt alignment), "messages": how many inputMessages there are}
// stdout: a JSON array, one {"score": number} (with "prompts": [...] when asked) or {"error": "message"} per case
//         ({"code", "user", "system", "messages"} for input_text).
//
// The run is given to the scorer as runEvals gives it for an agent target: `input` is the agent's
// scoring input ({inputMessages: [the user message], rememberedMessages, systemMessages,
// taggedSystemMessages}), `output` the persisted response messages, and for the trajectory
// scorer `output` is extractTrajectory(messages) with the item's expectedTrajectory.
// LLM scorers get a scripted model: each judge call gets the next answer of "judge",
// then every further call (the reason step) gets a fixed sentence. Every model call is logged to stderr with --verbose.

import { readFileSync } from 'node:fs';
import { importExport } from './resolve.mjs';

const verbose = process.argv.includes('--verbose');

const { mod: prebuilt } = await importExport('@mastra/evals', './scorers/prebuilt');
const { extractTrajectory } = (await importExport('@mastra/core', './evals')).mod;
const { Agent } = (await importExport('@mastra/core', './agent')).mod;
const scorerUtils = (await importExport('@mastra/evals', './scorers/utils')).mod;

// ---- the run as a real agent persists it (same conversion as run_mastra.mjs) ----

let idCounter = 0;
const nextId = (p) => `${p}-${++idCounter}`;

function toolInvocation(tc) {
  const toolCallId = tc.id ?? nextId('call');
  const inv = { toolCallId, toolName: tc.name, args: tc.args ?? {} };
  // An error is any truthy value, as Mastra reads `result.error` (0, false, '' are none).
  const failed = Boolean(tc.error) || tc.status === 'error';
  if (tc.status === 'pending') return { ...inv, state: 'call' };
  // A failed call that still returned something is Mastra's `state: 'result'` with `isError`.
  if (failed && tc.result !== undefined) return { ...inv, state: 'result', isError: true, result: tc.result };
  if (failed) return { ...inv, state: 'output-error', errorText: typeof tc.error === 'string' ? tc.error : JSON.stringify(tc.error ?? 'error') };
  const out = { ...inv, state: 'result' };
  if (tc.result !== undefined) out.result = tc.result;
  return out;
}

function runToMessages(run) {
  if (run === undefined || run === null) run = { text: '' };
  if (typeof run === 'string') run = { text: run };
  if (Array.isArray(run.messages)) return run.messages; // raw MastraDBMessages, as a real agent persists them
  const texts = Array.isArray(run.text) && run.text.length > 0 ? run.text : [Array.isArray(run.text) ? '' : run.text ?? ''];
  const toolParts = (run.tool_calls ?? []).map((tc) => ({ type: 'tool-invocation', toolInvocation: toolInvocation(tc) }));
  // uncounted_tool_errors: failed invocations that are no calls (here: thrown, without a toolName)
  for (const errorText of run.uncounted_tool_errors ?? []) {
    toolParts.push({ type: 'tool-invocation', toolInvocation: { toolCallId: nextId('call'), state: 'output-error', args: {}, errorText } });
  }
  const messages = texts.map((text, i) => {
    const parts = i === 0 ? [...toolParts] : [];
    const content = { format: 2, parts };
    // A real agent also lists its calls that returned in the legacy toolInvocations (not thrown ones).
    const returned = parts.filter((p) => p.toolInvocation.state === 'result').map((p) => p.toolInvocation);
    if (returned.length > 0) content.toolInvocations = returned;
    if (typeof text === 'string' && text !== '') {
      parts.push({ type: 'text', text });
      content.content = text;
    }
    return { id: nextId('msg'), role: 'assistant', createdAt: new Date(0), content };
  });
  return messages;
}

// An agent that answers "ok": runEvals' agent target calls generate(item.input, {returnScorerData: true})
// (core dist/agent-BOxKOk3n.js:11036) and scores result.scoringData.input.
const usage0 = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
const okModel = {
  specificationVersion: 'v2', provider: 'stub', modelId: 'ok', supportedUrls: {},
  async doGenerate() { return { content: [{ type: 'text', text: 'ok' }], finishReason: 'stop', usage: usage0, warnings: [] }; },
  async doStream() {
    return { stream: new ReadableStream({ start(c) {
      c.enqueue({ type: 'stream-start', warnings: [] });
      c.enqueue({ type: 'text-start', id: 't' });
      c.enqueue({ type: 'text-delta', id: 't', delta: 'ok' });
      c.enqueue({ type: 'text-end', id: 't' });
      c.enqueue({ type: 'finish', finishReason: 'stop', usage: usage0 });
      c.close();
    } }) };
  },
};
// No instructions: the system prompt the scorers see (prompt alignment's getCombinedSystemPrompt) is then the
// input's own system messages, as for a string input (systemMessages: []); evalgate knows no agent's instructions.
const inputAgent = new Agent({ name: 'input-agent', instructions: '', model: okModel });

async function agentInput(input) {
  if (input === undefined || input === null) return { inputMessages: [], rememberedMessages: [], systemMessages: [], taggedSystemMessages: {} };
  if (typeof input !== 'string') {
    // Anything but a string is what a real agent makes of it: its MessageList converts the messages (and
    // throws on some, as the agent does). Mastra adds ids and dates to the objects it is given: copy first.
    const result = await inputAgent.generate(structuredClone(input), { scorers: {}, returnScorerData: true });
    return result.scoringData.input;
  }
  const text = input;
  const inputMessages = [{ id: nextId('user'), role: 'user', createdAt: new Date(0), content: { format: 2, parts: [{ type: 'text', text }], content: text } }];
  return { inputMessages, rememberedMessages: [], systemMessages: [], taggedSystemMessages: {} };
}

// What the scorers read of the input, by Mastra's own readers (evals dist/scorers/prebuilt/index.js:3991, utils.js:163).
async function inputText(c) {
  const input = await agentInput(c.input);
  return { code: input.inputMessages.map((m) => scorerUtils.getTextContentFromMastraDBMessage(m)).join(', '),
    user: scorerUtils.getUserMessageFromRunInput(input) ?? null, system: scorerUtils.getCombinedSystemPrompt(input),
    messages: input.inputMessages.length };
}

// ---- a scripted judge model (AI SDK LanguageModelV2 shape) ----

// The text of a call's last prompt message (the scorer's prompt for that step).
function promptText(prompt) {
  const last = Array.isArray(prompt) ? prompt[prompt.length - 1] : undefined;
  if (typeof last?.content === 'string') return last.content;
  return (Array.isArray(last?.content) ? last.content : []).filter((p) => p.type === 'text').map((p) => p.text).join('');
}

function scriptedModel(answers, log) {
  const queue = [...answers];
  const reply = (options) => {
    // Judge steps run in order and the reason step comes last: the answers first, then a sentence.
    const structured = queue.length > 0;
    // A string answer is the reply's text as is (duplicate keys, NaN, ...); anything else is sent as JSON.
    const answer = structured ? queue.shift() : undefined;
    const text = !structured ? 'The score follows from the verdicts.' : typeof answer === 'string' ? answer : JSON.stringify(answer);
    log.push({ structured, text, prompt: options.prompt });
    if (verbose) process.stderr.write(`judge call (${structured ? 'json' : 'text'}): ${text}\n`);
    return text;
  };
  const usage = { inputTokens: 10, outputTokens: 10, totalTokens: 20 };
  return {
    specificationVersion: 'v2',
    provider: 'scripted',
    modelId: 'scripted-judge',
    supportedUrls: {},
    async doGenerate(options) {
      const text = reply(options);
      return { content: [{ type: 'text', text }], finishReason: 'stop', usage, warnings: [] };
    },
    async doStream(options) {
      const text = reply(options);
      const stream = new ReadableStream({
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          controller.enqueue({ type: 'response-metadata', id: nextId('resp'), modelId: 'scripted-judge', timestamp: new Date(0) });
          controller.enqueue({ type: 'text-start', id: 't1' });
          controller.enqueue({ type: 'text-delta', id: 't1', delta: text });
          controller.enqueue({ type: 'text-end', id: 't1' });
          controller.enqueue({ type: 'finish', finishReason: 'stop', usage });
          controller.close();
        },
      });
      return { stream };
    },
  };
}

// ---- the scorers ----

function makeScorer(c, model) {
  let o = c.options ?? {};
  if (o.noContext) {  // how an item without context reaches the context scorers: an extractor that finds none
    const { noContext, ...rest } = o;
    o = { ...rest, contextExtractor: () => [] };
  }
  switch (c.scorer) {
    case 'content_similarity': return prebuilt.createContentSimilarityScorer(c.options);
    case 'textual_difference': return prebuilt.createTextualDifferenceScorer();
    case 'keyword_coverage': return prebuilt.createKeywordCoverageScorer();
    case 'completeness': return prebuilt.createCompletenessScorer();
    case 'tone': return prebuilt.createToneScorer(o);
    case 'tool_call_accuracy_code': return prebuilt.createToolCallAccuracyScorerCode(o);
    case 'trajectory': return prebuilt.createTrajectoryScorerCode(o);
    case 'answer_relevancy': return prebuilt.createAnswerRelevancyScorer({ model, ...(c.options ? { options: o } : {}) });
    case 'answer_similarity': return prebuilt.createAnswerSimilarityScorer({ model, ...(c.options ? { options: o } : {}) });
    case 'faithfulness': return prebuilt.createFaithfulnessScorer({ model, options: o });
    case 'hallucination': return prebuilt.createHallucinationScorer({ model, options: o });
    case 'toxicity': return prebuilt.createToxicityScorer({ model, options: o });
    case 'bias': return prebuilt.createBiasScorer({ model, options: o });
    case 'context_precision': return prebuilt.createContextPrecisionScorer({ model, options: o });
    case 'context_relevance': return prebuilt.createContextRelevanceScorerLLM({ model, options: o });
    case 'context_recall': return prebuilt.createContextRecallScorer({ model, options: o });
    case 'prompt_alignment': return prebuilt.createPromptAlignmentScorerLLM({ model, options: o });
    case 'summarization': return prebuilt.createSummarizationScorer({ model, options: o });
    case 'tool_call_accuracy': return prebuilt.createToolCallAccuracyScorerLLM({ model, availableTools: o.availableTools ?? [] });
    case 'rubric': return prebuilt.createRubricScorer({ model, criteria: o.criteria, options: o.options });
    // the quick checks, for edge cases in raw messages (run_mastra.mjs runs them through runEvals)
    case 'called_tool': return prebuilt.checks.calledTool(o.tool, o.times !== undefined ? { times: o.times } : {});
    case 'did_not_call': return prebuilt.checks.didNotCall(o.tool);
    case 'tool_order': return prebuilt.checks.toolOrder(o.tools);
    case 'max_tool_calls': return prebuilt.checks.maxToolCalls(o.max);
    case 'used_no_tools': return prebuilt.checks.usedNoTools();
    case 'no_tool_errors': return prebuilt.checks.noToolErrors();
    default: throw new Error(`harness: unknown scorer ${JSON.stringify(c.scorer)}`);
  }
}

async function runCase(c) {
  const log = [];
  try {
    if (c.scorer === 'input_text') return await inputText(c);
    const model = scriptedModel(c.judge ?? [], log);
    const scorer = makeScorer(c, model);
    const messages = runToMessages(c.output);
    const run = { input: await agentInput(c.input), output: messages };
    if ('ground_truth' in c) run.groundTruth = c.ground_truth;
    if (c.scorer === 'trajectory') {
      run.output = extractTrajectory(messages);
      if (c.expected_trajectory !== undefined) run.expectedTrajectory = c.expected_trajectory;
    }
    const result = await scorer.run(run);
    const structured = log.filter((l) => l.structured);
    const out = { score: result.score, judge_calls: structured.length };
    if (c.prompts) out.prompts = structured.map((l) => promptText(l.prompt));
    return out;
  } catch (err) {
    let msg = err?.message ?? String(err);
    for (let e = err?.cause, n = 0; e && n < 5; e = e.cause, n++) msg += ` <- ${e.message ?? e}`;
    return { error: msg };
  }
}

const silence = (...a) => { if (verbose) process.stderr.write(a.map(String).join(' ') + '\n'); };
console.log = console.info = console.warn = console.debug = silence;

const cases = JSON.parse(readFileSync(0, 'utf8'));
const results = [];
for (const c of cases) results.push(await runCase(c));
process.stdout.write(JSON.stringify(results) + '\n');
