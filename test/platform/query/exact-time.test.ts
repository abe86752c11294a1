import { expect } from 'chai';
import { apiTimeOfUtcText, utcText } from '../../../src/platform/query/exact-time.js';
import { testDatabase } from '../../support/db.js';

describe('times written by the database as UTC text', () => {
  it('come out as Date#toISOString writes the same stored moment, in any session time zone', async () => {
    const { sql } = await testDatabase();
    const moments = [
      '2026-11-28 10:14:05.649123+00',
      '2026-11-28 10:14:05.649999+00',
      '2026-11-28 10:14:05.6+00',
      '2026-11-28 10:14:05.05+00',
      '2026-11-28 10:14:05+00',
      '2026-03-29 01:30:00.000001+01',
      '1999-12-31 23:59:59.999999-11',
      '0001-01-01 00:00:00+00',
    ];
    await sql.begin(async (tx) => {
      await tx`set local time zone 'Pacific/Chatham'`;
      for (const moment of moments) {
        const [row] = await tx<{ text: string; date: Date }[]>`
          select ${utcText(tx as unknown as typeof sql, 'm.at')} as text, m.at as date from (select ${moment}::timestamptz as at) m`;
        expect(apiTimeOfUtcText(row!.text), `${moment} (${row!.text})`).to.equal(row!.date.toISOString());
      }
    });
  });

  it('go through a Date in a form they do not expect, and are left as they are when even that fails', () => {
    expect(apiTimeOfUtcText('2026-01-02 03:04')).to.equal('2026-01-02T03:04:00.000Z');
    expect(apiTimeOfUtcText('12026-01-02 03:04:05.5')).to.equal('12026-01-02 03:04:05.5');
  });
});
