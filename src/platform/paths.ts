import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/**
 * The package's root directory (where package.json, sql/ and mappings/ are), found by walking up
 * from this file: the same from the sources (src/) and from the build (dist/src/).
 */
export function packageRoot(): string {
  if (root) return root;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json')) || !existsSync(path.join(dir, 'sql'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the cinv package root (package.json beside sql/)');
    dir = parent;
  }
  root = dir;
  return dir;
}

/** A path inside the package, e.g. `packagePath('mappings', 'change-records.json')`. */
export const packagePath = (...parts: string[]): string => path.join(packageRoot(), ...parts);
