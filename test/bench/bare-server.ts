/**
 * The floor the list benchmark measures cinv against: node:http and postgres.js serving the same
 * JSON pages of configuration items with the least SQL that gives the same rows (same filters,
 * order, page size and columns as src/inventory/configuration-items/store.ts), and nothing else: no
 * authentication, no validation, no total, no admission control, no logging.
 *
 *   DATABASE_URL=postgres://... node --import tsx test/bench/bare-server.ts
 *
 * Prints `listening <port>` once it accepts connections; SIGTERM stops it.
 */
import { createServer, type ServerResponse } from 'node:http';
import postgres from 'postgres';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('set DATABASE_URL');
// the same pool size as `cinv serve` by default (CINV_DB_POOL_SIZE)
const sql = postgres(url, { max: Number(process.env.BARE_POOL_SIZE ?? 10), onnotice: () => {} });

const COLUMNS = sql`ci.ci_id, ci.name, ci.namespace, ci.ci_type, ci.status, ci.status_updated_at, ls.last_seen, ci.created_at, ci.updated_at, ci.raw_data`;
const COLUMN_FILTERS: Record<string, string> = { name: 'ci.name', namespace: 'ci.namespace', ci_type: 'ci.ci_type' };
const PAGE = 50;
const CI_PATH = '/api/v1/configuration-items';

/** `{"a": {"b": value}}` for path [a, b]: the containment cinv writes for a raw_data equality. */
const nest = (path: string[], value: string): unknown =>
  path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value);

/** `field:eq:value` only: the benchmark sends nothing else. */
function condition(filter: string) {
  const [field, op, ...rest] = filter.split(':');
  const value = rest.join(':');
  if (op !== 'eq' || !field) throw new Error(`unsupported filter ${filter}`);
  const column = COLUMN_FILTERS[field];
  if (column) return sql`${sql(column)} = ${value}`;
  if (field.startsWith('raw_data.'))
    return sql`ci.raw_data @> ${sql.json(nest(field.slice('raw_data.'.length).split('.'), value) as postgres.JSONValue)}::jsonb`;
  throw new Error(`unsupported filter ${filter}`);
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://bare');
  const answer = async () => {
    if (url.pathname === CI_PATH) {
      const where = url.searchParams
        .getAll('filter')
        .map(condition)
        .reduce(
          (all, part) => sql`${all} and ${part}`,
          sql`ci.tenant_id = ${DEFAULT_TENANT_ID} and ci.status = 'active'`,
        );
      const items = await sql`
        select ${COLUMNS} from configuration_items ci join ci_last_seen ls on ls.ci_id = ci.ci_id
        where ${where}
        order by ci.created_at desc, ci.ci_id desc
        limit ${PAGE}`;
      return send(res, 200, { items });
    }
    if (url.pathname.startsWith(`${CI_PATH}/`)) {
      const [item] = await sql`
        select ${COLUMNS} from configuration_items ci join ci_last_seen ls on ls.ci_id = ci.ci_id
        where ci.ci_id = ${url.pathname.slice(CI_PATH.length + 1)} and ci.tenant_id = ${DEFAULT_TENANT_ID}`;
      return item ? send(res, 200, item) : send(res, 404, { error: 'not found' });
    }
    send(res, 404, { error: 'not found' });
  };
  answer().catch((error: unknown) => send(res, 500, { error: String(error) }));
});

server.listen(0, '127.0.0.1', () => {
  console.log(`listening ${(server.address() as { port: number }).port}`);
});
process.once('SIGTERM', () => {
  server.close();
  void sql.end({ timeout: 1 }).then(() => process.exit(0));
});
