#!/usr/bin/env node
// Writes evalgate/scorers/data/compromise-en.json: the parts of compromise's English model that its
// tagger reads to tell a noun from a verb (lexicon, ambiguous words and their context clues, suffix
// and regex guesses, tag hierarchy, the post-tagger's match rules as compromise parses them) and its
// toInfinitive's conjugation rules, taken from the installed compromise, so evalgate's completeness
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
for (const [tag, t] of Object.entries(model.one.tagSet)) tags[tag] = [t.parents ?? [], t.not ?? [], t.children ?? []];
const regexes = (list) => list.map(([re, tag]) => [re.source, tag, re.flags]);
const endsWith = {};
for (const [ch, list] of Object.entries(model.two.endsWith)) endsWith[ch] = regexes(list);
// the post-tagger's match rules, parsed and indexed as compromise's sweep runs them
const net = nlp.world().methods.one.buildNet(model.two.matches, nlp.world());
const rules = model.two.matches.map((m) => ({ match: m.match, regs: m.regs, group: m.group, notIf: m.notIf,
  ifNo: m.ifNo, tag: m.tag, unTag: m.unTag, safe: m.safe, needs: m.needs, wants: m.wants, minWant: m.minWant,
  minWords: m.minWords }));
const index = new Map(model.two.matches.map((m, i) => [m, i]));
const hooks = Object.entries(net.hooks).map(([key, list]) => [key, list.map((m) => index.get(m))]);
const regsJson = (key, value) => {
  if (value instanceof Set) return [...value];
  if (value instanceof RegExp) return { source: value.source, flags: value.flags };
  return value;
};
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
  hyphenSuffixes: Object.keys(model.one.suffixes ?? {}),  // "flower-like" stays one word
  postTagger: { rules, hooks, always: net.always.map((m) => index.get(m)) },
};
const out = new URL('../../evalgate/scorers/data/compromise-en.json', import.meta.url);
writeFileSync(out, JSON.stringify(data, regsJson) + '\n');
process.stderr.write(`wrote ${out.pathname}\n`);
