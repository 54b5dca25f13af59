#!/usr/bin/env node
/**
 * Fails (exit 1) when the modules under src/ import each other in a cycle, printing each cycle.
 * Run by `npm run lint`. Every import counts: static, type-only and dynamic (`await import()`),
 * since a cycle through any of them means two modules that cannot be read, tested or moved
 * one without the other. Imports are resolved by TypeScript itself (`.js` specifiers to `.ts`
 * sources, as tsc does), so the graph is the compiler's, not a guess from file names.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src');
const options = { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, allowJs: false };

/** @param {string} dir @returns {string[]} */
const sources = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));

/** @type {Map<string, string[]>} module → the modules under src/ it imports */
const graph = new Map();
for (const file of sources(src)) {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  const targets = importedFiles
    .map(({ fileName }) => ts.resolveModuleName(fileName, file, options, ts.sys).resolvedModule?.resolvedFileName)
    .filter((target) => target !== undefined && resolve(target).startsWith(src + '/'))
    .map((target) => resolve(/** @type {string} */ (target)));
  graph.set(file, [...new Set(targets)]);
}

// Tarjan's strongly connected components: every component of more than one module is a cycle.
let index = 0;
/** @type {Map<string, number>} */ const order = new Map();
/** @type {Map<string, number>} */ const low = new Map();
/** @type {string[]} */ const stack = [];
const onStack = new Set();
/** @type {string[][]} */ const cycles = [];
/** @param {string} v */
function connect(v) {
  order.set(v, index);
  low.set(v, index++);
  stack.push(v);
  onStack.add(v);
  for (const w of graph.get(v) ?? []) {
    if (!order.has(w)) {
      connect(w);
      low.set(v, Math.min(/** @type {number} */ (low.get(v)), /** @type {number} */ (low.get(w))));
    } else if (onStack.has(w)) {
      low.set(v, Math.min(/** @type {number} */ (low.get(v)), /** @type {number} */ (order.get(w))));
    }
  }
  if (low.get(v) === order.get(v)) {
    /** @type {string[]} */ const component = [];
    let w;
    do {
      w = /** @type {string} */ (stack.pop());
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component);
  }
}
for (const v of graph.keys()) if (!order.has(v)) connect(v);

if (cycles.length > 0) {
  process.stderr.write(`import cycles under src/ (${cycles.length}):\n`);
  for (const c of cycles) process.stderr.write(`  ${c.map((f) => relative(root, f)).sort().join(', ')}\n`);
  process.exit(1);
}
