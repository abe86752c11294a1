import { build, type Metafile } from 'esbuild';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { packagePath } from '../platform/paths.js';

/**
 * Builds the web interface (src/ui/app) into dist/ui: one bundle per view, loaded on demand, with
 * content hashes in every asset name, and the index page naming the entry script and stylesheet.
 *
 * esbuild bundles it directly. Vite's production bundler (Rollup, or Rolldown from Vite 8) comes
 * as native binaries in per-platform optional packages, and the registry this project installs
 * from does not serve all of them: npm then writes a lockfile that `npm ci` refuses. esbuild's
 * binaries are all there, and it does what this app needs (TypeScript and JSX, code splitting,
 * CSS, minification) in well under a second.
 */
export async function buildWebInterface(outDir = packagePath('dist', 'ui')): Promise<void> {
  const appDir = packagePath('src', 'ui', 'app');
  const entry = path.join(appDir, 'main.tsx');
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  const result = await build({
    entryPoints: [entry],
    outdir: path.join(outDir, 'assets'),
    publicPath: '/ui/assets',
    bundle: true,
    splitting: true,
    format: 'esm',
    target: 'es2022',
    minify: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: '[name]-[hash]',
    chunkNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    legalComments: 'none',
    define: { 'process.env.NODE_ENV': '"production"' },
    metafile: true,
    logLevel: 'warning',
  });
  const { script, stylesheet, preloads } = entryOutputs(result.metafile, path.relative(process.cwd(), entry), outDir);
  const template = await readFile(path.join(appDir, 'index.html'), 'utf8');
  const head = [
    ...(stylesheet ? [`<link rel="stylesheet" href="${stylesheet}" />`] : []),
    ...preloads.map((chunk) => `<link rel="modulepreload" href="${chunk}" />`),
  ].join('\n    ');
  const page = template
    .replace('</head>', `  ${head}\n  </head>`)
    .replace(/<script type="module" src="\.\/main\.tsx"><\/script>/, `<script type="module" src="${script}"></script>`);
  if (!page.includes(script))
    throw new Error('src/ui/app/index.html no longer loads ./main.tsx: the build cannot place its script');
  await writeFile(path.join(outDir, 'index.html'), page);
}

/** The entry's script, its stylesheet and the chunks it imports statically, as URLs under /ui/. */
function entryOutputs(
  metafile: Metafile,
  entry: string,
  outDir: string,
): { script: string; stylesheet?: string; preloads: string[] } {
  const url = (output: string) => `/ui/${path.relative(outDir, path.resolve(output)).split(path.sep).join('/')}`;
  const found = Object.entries(metafile.outputs).find(
    ([, output]) => output.entryPoint !== undefined && path.resolve(output.entryPoint) === path.resolve(entry),
  );
  if (!found) throw new Error(`the build wrote no output for ${entry}`);
  const [file, output] = found;
  return {
    script: url(file),
    stylesheet: output.cssBundle ? url(output.cssBundle) : undefined,
    preloads: output.imports
      .filter((imported) => imported.kind === 'import-statement' && !imported.external)
      .map((imported) => url(imported.path)),
  };
}

// `node dist/src/ui/build.js` (npm run build)
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  // no top-level await: test runners load this module as CommonJS too
  buildWebInterface().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
