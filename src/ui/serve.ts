import type { Middleware } from 'koa';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { AppError } from '../platform/errors.js';
import { packagePath } from '../platform/paths.js';

/**
 * Serves the web interface built into dist/ui (`npm run build`). Every path under /ui/ that is not
 * a built file is the app's index page, whose router shows the view the path names. Asset names
 * carry content hashes: they are cached for a year, the index page never. Files are read once
 * and kept in memory with their gzip form (the whole build is a few hundred kilobytes).
 */

interface Asset {
  body: Buffer;
  gzip: Buffer;
  type: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
};

/** The app loads only its own scripts and talks only to this origin. Inline style attributes position virtual rows and chart bars. */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'";

async function loadBuild(dir: string): Promise<Map<string, Asset> | undefined> {
  const files = new Map<string, Asset>();
  const walk = async (relative: string): Promise<void> => {
    for (const entry of await readdir(path.join(dir, relative), { withFileTypes: true })) {
      const name = path.posix.join(relative, entry.name);
      if (entry.isDirectory()) await walk(name);
      else {
        const body = await readFile(path.join(dir, name));
        files.set(`/${name}`, {
          body,
          gzip: gzipSync(body),
          type: TYPES[path.extname(name)] ?? 'application/octet-stream',
        });
      }
    }
  };
  try {
    await walk('');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return files.has('/index.html') ? files : undefined;
}

export function webInterface(dir = packagePath('dist', 'ui')): Middleware {
  let build: Promise<Map<string, Asset> | undefined> | undefined;
  return async (ctx, next) => {
    if (ctx.path === '/' && (ctx.method === 'GET' || ctx.method === 'HEAD') && ctx.accepts('json', 'html') === 'html') {
      ctx.state.route = '/';
      ctx.redirect('/ui/');
      return;
    }
    if (ctx.path !== '/ui' && !ctx.path.startsWith('/ui/')) return next();
    ctx.state.route = '/ui';
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      throw new AppError(405, 'HTTP_405', 'Method not allowed', { allowed: ['GET', 'HEAD'] });
    }
    if (ctx.path === '/ui') {
      ctx.redirect(`/ui/${ctx.search}`);
      return;
    }
    build ??= loadBuild(dir);
    const files = await build;
    if (!files) {
      build = undefined;
      throw new AppError(404, 'HTTP_404', 'The web interface is not built: run `npm run build`');
    }
    const relative = ctx.path.slice('/ui'.length);
    let asset = files.get(relative);
    const immutable = asset !== undefined && relative.startsWith('/assets/');
    if (!asset) {
      // a missing script or stylesheet is a 404, not the index page parsed as one
      if (relative.startsWith('/assets/') || path.extname(relative) !== '')
        throw new AppError(404, 'HTTP_404', 'Route not found');
      asset = files.get('/index.html')!;
    }
    ctx.set('Cache-Control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'same-origin');
    if (asset.type.startsWith('text/html')) {
      ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
      ctx.set('X-Frame-Options', 'DENY');
    }
    ctx.vary('Accept-Encoding');
    ctx.type = asset.type;
    if (ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
      ctx.set('Content-Encoding', 'gzip');
      ctx.body = asset.gzip;
    } else {
      ctx.body = asset.body;
    }
  };
}
