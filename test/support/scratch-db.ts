import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { REAL_DATABASE_URL } from './db.js';

/** A throwaway database on the same server as the run's database (real PostgreSQL runs only). */
export async function createScratchDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  if (!REAL_DATABASE_URL) throw new Error('scratch databases need CINV_TEST_DATABASE_URL');
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(REAL_DATABASE_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const url = new URL(REAL_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}
