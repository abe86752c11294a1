/**
 * Webhook receivers for the subscriptions benchmark, in a process of their own (as receivers are
 * elsewhere in real life): parsing what they are sent must not take the event loop of the load the
 * benchmark times.
 *
 *   node --import tsx test/bench/receivers.ts N
 *
 * Prints one JSON line with the N receivers' URLs. Each answers its status at once and counts the
 * records it was sent with a 2xx; `GET /control/count` gives the counts, `POST /control/answer/<i>/<status>`
 * sets receiver i's answer.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

const listen = (server: Server) =>
  new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );

/** Records in a batch's body: each is one change record object, with one change_type key (a name quoting it is escaped). */
function recordsIn(body: Buffer): number {
  const key = Buffer.from('"change_type"');
  let n = 0;
  for (let at = body.indexOf(key); at !== -1; at = body.indexOf(key, at + key.length)) n++;
  return n;
}

async function main(count: number): Promise<void> {
  const records = Array.from({ length: count }, () => 0);
  const answers = Array.from({ length: count }, () => 200);
  const urls: string[] = [];
  for (let i = 0; i < count; i++) {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (answers[i]! < 300) records[i]! += recordsIn(Buffer.concat(chunks));
        res.statusCode = answers[i]!;
        res.end();
      });
    });
    urls.push(`${await listen(server)}/hook`);
  }
  const control = createServer((req, res) => {
    const answer = /^\/control\/answer\/(\d+)\/(\d{3})$/.exec(req.url ?? '');
    if (answer) answers[Number(answer[1])] = Number(answer[2]);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(records));
  });
  console.log(JSON.stringify({ urls, control: await listen(control) }));
}

await main(Number(process.argv[2] ?? 1));
