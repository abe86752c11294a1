/**
 * Leaf paths of some documents (`raw_data.spec.replicas`), for the filter builder's and column
 * picker's suggestions: taken from the rows on screen, so they name fields that exist.
 */
export function leafPaths(documents: readonly unknown[], prefix: string, limit = 400): string[] {
  const found = new Set<string>();
  const walk = (node: unknown, path: string, depth: number) => {
    if (found.size >= limit) return;
    if (Array.isArray(node)) {
      if (node.length > 0 && depth < 8) walk(node[0], `${path}.0`, depth + 1);
      return;
    }
    if (node !== null && typeof node === 'object') {
      if (depth >= 8) return;
      for (const [key, child] of Object.entries(node)) if (!key.includes('.')) walk(child, `${path}.${key}`, depth + 1);
      return;
    }
    found.add(path);
  };
  for (const document of documents) walk(document, prefix, 0);
  return [...found].sort();
}
