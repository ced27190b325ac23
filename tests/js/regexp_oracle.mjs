// What JavaScript's RegExp says: for each case {pattern, flags, exact, texts}, the result of
// `test()` on every text (Mastra's `matches` check: `pattern.test(output)`), or the SyntaxError
// the constructor throws. `exact` asks whether the pattern matches the whole text (evalgate's
// `exact`, docs/scorers.md): string-start and string-end lookarounds, whatever the `m` flag.
// Reads the cases as JSON on stdin; writes one result per case as JSON on stdout. Plain node.
import { readFileSync } from 'node:fs';

const cases = JSON.parse(readFileSync(0, 'utf8'));
const out = cases.map(({ pattern, flags, exact, texts }) => {
  let re;
  try {
    re = new RegExp(pattern, flags);
    if (exact) re = new RegExp(`(?:${pattern})(?![\\s\\S])`, flags.replace('g', '') + 'y');
  } catch (e) {
    return { error: String(e.message) };
  }
  return { results: texts.map((t) => { re.lastIndex = 0; return re.test(t); }) };
});
process.stdout.write(JSON.stringify(out));
