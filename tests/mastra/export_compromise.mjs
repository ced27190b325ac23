#!/usr/bin/env node
// Writes evalgate/scorers/data/compromise-en.json: the parts of compromise's English model that its
// pre-tagger reads to tell a noun from a verb (lexicon, ambiguous words and their context clues,
// suffix guesses, tag hierarchy), taken from the installed compromise, so evalgate's completeness
// extracts the words Mastra's does.   Usage: node export_compromise.mjs   (run `npm ci` here first)
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const nlp = require('compromise');
const { model } = nlp.world();

const byValue = (obj) => {
  const out = {};
  for (const [word, value] of Object.entries(obj)) {
    const key = String(value);
    out[key] = out[key] ? `${out[key]}|${word}` : word;
  }
  return out;
};
const tags = {};
for (const [tag, t] of Object.entries(model.one.tagSet)) tags[tag] = [t.parents ?? [], t.not ?? []];
const regexes = (list) => list.map(([re, tag]) => [re.source, tag, re.flags]);
const endsWith = {};
for (const [ch, list] of Object.entries(model.two.endsWith)) endsWith[ch] = regexes(list);
const data = {
  version: nlp.version,
  lexicon: byValue(model.one.lexicon),
  switches: byValue(model.two.switches),
  clues: model.two.clues,
  tags,
  suffixes: model.two.suffixPatterns,
  endsWith,
  regexText: regexes(model.two.regexText),
  regexNormal: regexes(model.two.regexNormal),
  regexNumbers: regexes(model.two.regexNumbers),
  neighbours: model.two.neighbours,
  // verb form -> infinitive rules (suffix-thumb models), as compromise's toInfinitive reads them
  toInfinitive: { fromPast: model.two.models.fromPast, fromPresent: model.two.models.fromPresent,
    fromGerund: model.two.models.fromGerund, fromParticiple: model.two.models.fromParticiple },
  prefixes: Object.keys(model.one.prefixes ?? {}),
};
const out = new URL('../../evalgate/scorers/data/compromise-en.json', import.meta.url);
writeFileSync(out, JSON.stringify(data) + '\n');
process.stderr.write(`wrote ${out.pathname}\n`);
