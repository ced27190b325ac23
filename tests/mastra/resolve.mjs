// Shared by the Node runners: load `pkg/subpath` through the package's "exports" map (its ESM build),
// looking in MASTRA_HARNESS_DIR (or this folder) and then its parents, as Node does.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const base = process.env.MASTRA_HARNESS_DIR || here;

export async function importExport(pkg, subpath) {
  let dir = base;
  for (;;) {
    const pkgDir = join(dir, 'node_modules', pkg);
    let manifest;
    try {
      manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
    } catch {
      const parent = dirname(dir);
      if (parent === dir) throw new Error(`cannot find ${pkg} from ${base}; run "npm ci" in ${here}`);
      dir = parent;
      continue;
    }
    const exp = manifest.exports?.[subpath];
    const target = exp?.import?.default ?? exp?.import ?? exp?.default;
    if (typeof target !== 'string') throw new Error(`${pkg} has no ESM export ${subpath}`);
    return { mod: await import(pathToFileURL(join(pkgDir, target)).href), version: manifest.version };
  }
}
