import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import type { Connection } from './connection.js';
import { pairsOf } from './info.js';

/** ACL GETUSER calls per round trip. */
const USERS_PER_BATCH = 100;

/** Redis 7 answers patterns as one string (`~a* ~b*`), 6.2 as a list: one list of patterns either way. */
const patterns = (value: unknown): string[] =>
  (Array.isArray(value) ? value.map(String) : String(value ?? '').split(/\s+/)).filter(Boolean);

/**
 * What ACL GETUSER says of a user without its passwords: they come as SHA-256 hashes (`passwords`)
 * and are dropped here, leaving their count. ACL LIST is never read: its rules carry the hashes
 * (`#…`) inline.
 */
export function userRecord(name: string, reply: unknown): UniversalRecord {
  const user = pairsOf(reply);
  const flags = (Array.isArray(user.flags) ? user.flags.map(String) : []).sort();
  const selectors = (Array.isArray(user.selectors) ? user.selectors : []).map((s) => {
    const selector = pairsOf(s);
    return {
      commands: String(selector.commands ?? ''),
      keys: patterns(selector.keys),
      channels: patterns(selector.channels),
    };
  });
  const access = {
    enabled: flags.includes('on'),
    nopass: flags.includes('nopass'),
    flags,
    commands: String(user.commands ?? ''),
    keys: patterns(user.keys),
    channels: patterns(user.channels),
    selectors,
    password_count: Array.isArray(user.passwords) ? user.passwords.length : 0,
  };
  return { external_id: `user/${name}`, ci_type: 'redis.user', name, raw_data: access, type_data: access };
}

/** Every ACL user, asked for a hundred at a time; a server before Redis 6 has no ACL users. */
export async function userRecords(connection: Connection): Promise<UniversalRecord[]> {
  let names: string[];
  try {
    names = ((await connection.call('ACL', 'USERS')) as string[]).map(String).sort();
  } catch (error) {
    if (/unknown command/i.test(error instanceof Error ? error.message : String(error))) return [];
    throw new Error(`ACL USERS: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  const records: UniversalRecord[] = [];
  for (let start = 0; start < names.length; start += USERS_PER_BATCH) {
    const slice = names.slice(start, start + USERS_PER_BATCH);
    const answers = await connection.batch(slice.map((name) => ['ACL', 'GETUSER', name]));
    for (const [i, answer] of answers.entries()) {
      if (answer.error !== undefined) throw new Error(`ACL GETUSER: ${answer.error}`);
      // a user removed between the two calls answers nil
      if (answer.value !== null) records.push(userRecord(slice[i]!, answer.value));
    }
  }
  return records;
}
