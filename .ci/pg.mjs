// Creates or drops the throwaway database of a CI run on the machine's PostgreSQL server.
import postgres from 'postgres';

const [action, name] = process.argv.slice(2);
const server = process.env.CINV_CI_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
if (!['create', 'drop', 'ping'].includes(action ?? '') || (action !== 'ping' && !/^[a-z0-9_]+$/.test(name ?? ''))) {
  console.error('usage: node .ci/pg.mjs ping | create NAME | drop NAME');
  process.exit(2);
}
const sql = postgres(server, { max: 1, connect_timeout: 5, onnotice: () => {} });
try {
  if (action === 'ping') await sql`select 1`;
  if (action === 'create') {
    await sql.unsafe(`drop database if exists ${name} with (force)`);
    await sql.unsafe(`create database ${name}`);
  }
  if (action === 'drop') await sql.unsafe(`drop database if exists ${name} with (force)`);
} catch (error) {
  console.error(`PostgreSQL at ${server.replace(/\/\/[^@]*@/, '//')}: ${error.message}`);
  process.exitCode = 1;
} finally {
  await sql.end({ timeout: 2 });
}
