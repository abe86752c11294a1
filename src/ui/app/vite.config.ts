import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

// The web interface is served by cinv under /ui/ from dist/ui; asset names carry content hashes,
// so the server can cache them for a year and index.html never.
export default defineConfig({
  root,
  base: '/ui/',
  logLevel: 'warn',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: fileURLToPath(new URL('../../../dist/ui', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    reportCompressedSize: false,
  },
});
