#!/usr/bin/env node
// Serves app.mjs's Mastra over HTTP the way `mastra dev` does (routes under /api), through
// @mastra/hono and @hono/node-server, on 127.0.0.1 only. Prints its base URL on the first
// stdout line, then serves until stdin closes or it is killed.
//
// Usage: node server.mjs [--port N]   (default: a free port)

import { serve } from '@hono/node-server';
import { MastraServer } from '@mastra/hono';
import { Hono } from 'hono';

import { buildMastra } from './app.mjs';

const portArg = process.argv.indexOf('--port');
const port = portArg > 0 ? Number(process.argv[portArg + 1]) : 0;

const app = new Hono();
const server = new MastraServer({ app, mastra: buildMastra(), prefix: '/api' });
await server.init();

const http = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(`http://127.0.0.1:${info.port}\n`);
});

// The test that started us ends us by closing our stdin (or killing us).
process.stdin.on('end', () => http.close(() => process.exit(0)));
process.stdin.resume();
