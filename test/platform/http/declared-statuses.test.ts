import { expect } from 'chai';
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { conflict } from '../../../src/platform/errors.js';
import { conflictResponse } from '../../../src/platform/http/schemas.js';
import { buildRouter, type RouterApp } from '../../../src/platform/http/router.js';
import { routeDefiner, type AnyRouteOf } from '../../../src/platform/http/route.js';

const defineRoute = routeDefiner<RouterApp>();
const app: RouterApp = { limits: { consume: async () => {} }, config: { bodyLimitBytes: 1024 } };

const routes: AnyRouteOf<RouterApp>[] = [
  defineRoute({
    method: 'POST',
    path: '/api/v1/undeclared',
    operationId: 'undeclared',
    summary: 'Answers a 409 it does not declare',
    tags: ['test'],
    access: 'public',
    responses: { 201: { description: 'Created.' } },
    async handler() {
      throw conflict('taken');
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/v1/declared',
    operationId: 'declared',
    summary: 'Answers a 409 it declares',
    tags: ['test'],
    access: 'public',
    responses: { 201: { description: 'Created.' }, ...conflictResponse('Taken') },
    async handler() {
      throw conflict('taken');
    },
  }),
];

/** A bare Koa app around the router: Koa answers an error with its `status`, or 500 without one. */
async function serve(checkResponses: boolean, errors: Error[] = []): Promise<{ server: Server; url: string }> {
  const koa = new Koa();
  koa.silent = true;
  koa.on('error', (error: Error) => errors.push(error));
  const router = buildRouter(app, routes, {
    checkResponses,
    authenticate: async () => {
      throw new Error('public routes only');
    },
  });
  koa.use(router.routes());
  const server = koa.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('error statuses a route does not declare', () => {
  it('fail the request when responses are checked, naming the route and the status', async () => {
    const errors: Error[] = [];
    const { server, url } = await serve(true, errors);
    try {
      const undeclared = await fetch(`${url}/api/v1/undeclared`, { method: 'POST' });
      const declared = await fetch(`${url}/api/v1/declared`, { method: 'POST' });
      expect(undeclared.status).to.equal(500);
      expect(declared.status).to.equal(409);
    } finally {
      server.close();
    }
    // Koa reports every error it answers: the declared 409 passes as it was thrown
    expect(errors.map((error) => error.message)).to.deep.equal([
      'POST /api/v1/undeclared answered 409 (taken), which its OpenAPI operation does not declare',
      'taken',
    ]);
  });

  it('pass through unchanged when responses are not checked (production)', async () => {
    const { server, url } = await serve(false);
    try {
      expect((await fetch(`${url}/api/v1/undeclared`, { method: 'POST' })).status).to.equal(409);
    } finally {
      server.close();
    }
  });
});
