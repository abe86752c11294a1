import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { lookup } from 'node:dns/promises';
import { guardedGet } from '../../../src/platform/net/guarded-http.js';
import { AllowedHosts, EndpointRefused, guardedAddress } from '../../../src/platform/net/endpoint.js';

describe('the request forgery guard on collector connections', () => {
  let server: Server;
  let base: string;
  let port: number;

  before(async () => {
    server = createServer((req, res) => {
      const to: Record<string, string> = {
        '/to-metadata': 'http://169.254.169.254/latest/meta-data/iam/',
        '/to-metadata-v6': 'http://[fd00:ec2::254]/',
        '/to-mapped': 'http://[::ffff:169.254.169.254]/',
        '/to-decimal': 'http://2852039166/latest/meta-data/',
        '/to-metadata-name': 'http://metadata.google.internal./computeMetadata/v1/',
        '/to-nat64': 'http://[64:ff9b::a9fe:a9fe]/',
        '/to-localhost': `http://localhost:${port}/ok`,
        '/to-file': 'file:///etc/passwd',
      };
      const location = to[req.url ?? ''];
      if (location) {
        res.writeHead(302, { location });
        res.end();
        return;
      }
      res.end('fine');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
  });
  after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const get = (path: string, allowed: string[] = [], allowPrivate = true) =>
    guardedGet(`${base}${path}`, {
      allowedHosts: new AllowedHosts(allowed, { allowPrivate }),
      signal: AbortSignal.timeout(5000),
    });

  async function refused(path: string, allowed: string[] = [], allowPrivate = true): Promise<string> {
    try {
      await get(path, allowed, allowPrivate);
    } catch (error) {
      expect(error).to.be.instanceOf(EndpointRefused);
      return (error as Error).message;
    }
    throw new Error(`${path} was not refused`);
  }

  it('follows redirects between allowed hosts, checking each by its resolved address', async () => {
    const reply = await get('/to-localhost');
    expect(reply.status).to.equal(200);
    expect(reply.body.toString()).to.equal('fine');
    expect(reply.url).to.equal(`http://localhost:${port}/ok`);
  });

  it('refuses a redirect to a cloud metadata address, however it is written', async () => {
    expect(await refused('/to-metadata')).to.match(/169\.254\.169\.254.*metadata/);
    expect(await refused('/to-metadata-v6')).to.match(/metadata/);
    expect(await refused('/to-mapped')).to.match(/metadata/);
    expect(await refused('/to-decimal')).to.match(/169\.254\.169\.254.*metadata/);
    expect(await refused('/to-metadata-name')).to.match(/metadata\.google\.internal.*cloud metadata host/);
    expect(await refused('/to-nat64')).to.match(/metadata/);
    expect(await refused('/to-file')).to.match(/file:/);
  });

  it('refuses loopback and private addresses at connection time when they are not allowed, by name and in every spelling', async () => {
    expect(await refused('/ok', [], false)).to.match(
      /127\.0\.0\.1 is a loopback, private or otherwise non-public address/,
    );
    // (a name no earlier test connected to: a pooled keep-alive connection is not looked up again)
    const viaName = await guardedGet(`http://localhost.:${port}/ok`, {
      allowedHosts: new AllowedHosts([], { allowPrivate: false }),
      signal: AbortSignal.timeout(5000),
    }).then(
      () => 'connected',
      (error: Error) => error.message,
    );
    expect(viaName).to.match(/localhost.*loopback name/);
    // a database driver connects to the address checked here, written in any form
    const strict = new AllowedHosts([], { allowPrivate: false });
    for (const host of ['127.0.0.1', '0x7f.1', '2130706433', '[::1]', 'localhost', 'localhost.', '10.0.0.8']) {
      const error = await guardedAddress(host, strict).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(error, host).to.be.instanceOf(EndpointRefused);
    }
    for (const host of ['169.254.169.254', '0xa9fea9fe', 'metadata.google.internal.']) {
      const error = await guardedAddress(host, new AllowedHosts([])).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(error, host).to.be.instanceOf(EndpointRefused);
    }
    expect(await guardedAddress('0x7f.1', new AllowedHosts([]))).to.equal('127.0.0.1');
    // allowed (the default), loopback is reached as usual
    expect((await get('/ok', [], true)).status).to.equal(200);
  });

  it('keeps connections inside CINV_SOURCE_ALLOWED_HOSTS, names after resolution included', async () => {
    expect(await refused('/ok', ['10.0.0.0/8'])).to.match(/not in CINV_SOURCE_ALLOWED_HOSTS/);
    expect((await get('/ok', ['127.0.0.0/8'])).status).to.equal(200);
    // the redirect names localhost, allowed by name here, or else judged by every address it resolves to
    expect((await get('/to-localhost', ['127.0.0.1/32', 'localhost'])).status).to.equal(200);
    const addresses = (await lookup('localhost', { all: true })).map((a) => a.address);
    if (addresses.every((a) => a === '127.0.0.1'))
      expect((await get('/to-localhost', ['127.0.0.1/32'])).status).to.equal(200);
    else
      expect(await refused('/to-localhost', ['127.0.0.1/32'])).to.match(
        /localhost refused: not in CINV_SOURCE_ALLOWED_HOSTS/,
      );
  });
});
