// What JavaScript's RegExp makes of `\p{NAME}` under the `u` flag: for each name, null when the
// constructor throws (no such property), else the runs [first, last] of the code points it matches
// (surrogates left out). Reads the names as JSON on stdin; writes the answers as JSON on stdout.
import { readFileSync } from 'node:fs';

const names = JSON.parse(readFileSync(0, 'utf8'));
const chunks = [];
for (let c = 0; c < 0x110000; c++) if (c < 0xd800 || c > 0xdfff) chunks.push(String.fromCodePoint(c));
const every = chunks.join('');
const out = names.map(({ name, runs }) => {
  let re;
  try {
    re = new RegExp(`\\p{${name}}+`, 'gu');
  } catch (e) {
    return null;
  }
  if (!runs) return [];
  const found = [];
  for (const m of every.matchAll(re)) {
    const tail = m[0].length > 1 && /[\udc00-\udfff]$/.test(m[0]) ? 2 : 1;  // an astral code point: two units
    const first = m[0].codePointAt(0);
    const last = m[0].codePointAt(m[0].length - tail);
    found.push([first, last]);
  }
  return found;
});
process.stdout.write(JSON.stringify(out));
