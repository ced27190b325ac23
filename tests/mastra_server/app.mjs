// A small but real Mastra application for evalgate's `mastra` target tests: the same agents and
// workflow are served over HTTP by server.mjs and evaluated in-process by run_evals.mjs.
//
// - weatherAgent: tools get_weather (throws for Atlantis) and book_table (a client tool: no
//   execute, so its call stays pending); no memory.
// - memoryAgent: the same model and tool, with Mastra memory (in-memory storage).
// - forecastWorkflow: two steps, fetch-weather ({city} -> {city, temp}) then summarize
//   ({city, temp} -> {summary}).
//
// The model is scripted (no network): it reads the prompt and answers deterministically.

import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { InMemoryStore } from '@mastra/core/storage';
import { createTool } from '@mastra/core/tools';
import { createStep, createWorkflow } from '@mastra/core/workflows';
import { Memory } from '@mastra/memory';
import { z } from 'zod';

export function temperature(city) {
  let sum = 0;
  for (const ch of city) sum += ch.codePointAt(0);
  return 40 + (sum % 45);
}

const getWeather = createTool({
  id: 'get_weather',
  description: 'The current weather in a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    if (city === 'Atlantis') throw new Error('no weather station in Atlantis');
    return { city, temp: temperature(city) };
  },
});

// A client-side tool: Mastra cannot run it, so the call comes back without a result (pending).
const bookTable = createTool({
  id: 'book_table',
  description: 'Book a table at a restaurant (run by the client)',
  inputSchema: z.object({ city: z.string() }),
});

// ---- the scripted model (AI SDK LanguageModelV2) ----

function textOf(content) {
  if (typeof content === 'string') return content;
  return (content ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('');
}

function userTexts(prompt) {
  return prompt.filter((m) => m.role === 'user').map((m) => textOf(m.content));
}

export function script(prompt) {
  const last = prompt[prompt.length - 1];
  if (last?.role === 'tool') {
    const parts = last.content.filter((p) => p.type === 'tool-result');
    const sentences = parts.map((p) => {
      const output = p.output ?? {};
      if (String(output.type ?? '').startsWith('error')) return `Sorry, I could not get the weather.`;
      const value = output.value ?? {};
      return `It is ${value.temp}F in ${value.city}.`;
    });
    return { text: sentences.join(' ') };
  }
  const said = textOf(last?.content ?? '');
  const weather = /weather in ([A-Za-z][A-Za-z ]*?)[?.!]*$/i.exec(said);
  if (weather) return { call: { toolName: 'get_weather', input: { city: weather[1] } } };
  const booking = /book a table in ([A-Za-z][A-Za-z ]*?)[?.!]*$/i.exec(said);
  if (booking) return { call: { toolName: 'book_table', input: { city: booking[1] } } };
  const name = /my name is (\w+)/i.exec(said);
  if (name) return { text: `Nice to meet you, ${name[1]}.` };
  if (/what is my name/i.test(said)) {
    const earlier = userTexts(prompt).slice(0, -1).map((t) => /my name is (\w+)/i.exec(t)).filter(Boolean);
    return { text: earlier.length ? `Your name is ${earlier[earlier.length - 1][1]}.` : 'I do not know your name.' };
  }
  return { text: 'I can only talk about the weather.' };
}

let callCounter = 0;

function usageOf(prompt) {
  const inputTokens = prompt.reduce((n, m) => n + JSON.stringify(m.content).split(/\s+/).length, 0);
  return { inputTokens, outputTokens: 7, totalTokens: inputTokens + 7 };
}

export function scriptedModel() {
  const reply = (options) => {
    const step = script(options.prompt);
    const usage = usageOf(options.prompt);
    if (step.call) {
      const toolCallId = `call-${++callCounter}`;
      return { step, usage, content: [{ type: 'tool-call', toolCallId, toolName: step.call.toolName, input: JSON.stringify(step.call.input) }], finishReason: 'tool-calls' };
    }
    return { step, usage, content: [{ type: 'text', text: step.text }], finishReason: 'stop' };
  };
  return {
    specificationVersion: 'v2',
    provider: 'scripted',
    modelId: 'scripted-weather',
    supportedUrls: {},
    async doGenerate(options) {
      const { content, usage, finishReason } = reply(options);
      return { content, finishReason, usage, warnings: [], rawCall: { rawPrompt: null, rawSettings: {} } };
    },
    async doStream(options) {
      const { content, usage, finishReason } = reply(options);
      const chunks = [{ type: 'stream-start', warnings: [] }];
      for (const part of content) {
        if (part.type === 'text') {
          chunks.push({ type: 'text-start', id: 't1' }, { type: 'text-delta', id: 't1', delta: part.text }, { type: 'text-end', id: 't1' });
        } else {
          chunks.push(part);
        }
      }
      chunks.push({ type: 'finish', finishReason, usage });
      const stream = new ReadableStream({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk);
          controller.close();
        },
      });
      return { stream, rawCall: { rawPrompt: null, rawSettings: {} } };
    },
  };
}

// ---- the application ----

const fetchWeather = createStep({
  id: 'fetch-weather',
  inputSchema: z.object({ city: z.string() }),
  outputSchema: z.object({ city: z.string(), temp: z.number() }),
  execute: async ({ inputData }) => {
    if (inputData.city === 'Atlantis') throw new Error('no weather station in Atlantis');
    return { city: inputData.city, temp: temperature(inputData.city) };
  },
});

const summarize = createStep({
  id: 'summarize',
  inputSchema: z.object({ city: z.string(), temp: z.number() }),
  outputSchema: z.object({ summary: z.string() }),
  execute: async ({ inputData }) => ({
    summary: `${inputData.city}: ${inputData.temp}F, ${inputData.temp >= 65 ? 'warm' : 'cool'}`,
  }),
});

export function buildMastra() {
  const tools = { get_weather: getWeather, book_table: bookTable };
  const weatherAgent = new Agent({
    id: 'weatherAgent',
    name: 'weatherAgent',
    instructions: 'You answer questions about the weather.',
    model: scriptedModel(),
    tools,
  });
  const memoryAgent = new Agent({
    id: 'memoryAgent',
    name: 'memoryAgent',
    instructions: 'You remember the conversation.',
    model: scriptedModel(),
    tools,
    memory: new Memory({ storage: new InMemoryStore(), options: { lastMessages: 20 } }),
  });
  const forecastWorkflow = createWorkflow({
    id: 'forecastWorkflow',
    inputSchema: z.object({ city: z.string() }),
    outputSchema: z.object({ summary: z.string() }),
  })
    .then(fetchWeather)
    .then(summarize)
    .commit();
  return new Mastra({
    agents: { weatherAgent, memoryAgent },
    workflows: { forecastWorkflow },
    storage: new InMemoryStore(),
    logger: false,
  });
}
