import { expect } from 'chai';
import { dateTime, fromTimeInput, timeOfDay, toTimeInput, zoneLabel } from '../../src/ui/app/lib/format.js';

describe('times in the chosen zone (web interface)', () => {
  it('shows and reads UTC whatever the zone of the machine', () => {
    expect(dateTime('2026-11-30T13:40:05.123Z', 'utc')).to.equal('2026-11-30 13:40:05');
    expect(timeOfDay('2026-11-30T13:40:05Z', 'utc')).to.equal('13:40');
    expect(toTimeInput('2026-11-30T13:40:05Z', false, 'utc')).to.equal('2026-11-30 13:40');
    expect(toTimeInput('2026-11-30T13:40:05Z', true, 'utc')).to.equal('2026-11-30 13:40:05');
    expect(fromTimeInput('2026-11-30 13:40', 'utc')).to.equal('2026-11-30T13:40:00.000Z');
    expect(fromTimeInput('2026-11-30T13:40:05', 'utc')).to.equal('2026-11-30T13:40:05.000Z');
    expect(fromTimeInput('2026-11-30', 'utc')).to.equal('2026-11-30T00:00:00.000Z');
    expect(zoneLabel('utc')).to.equal('UTC');
  });

  it('reads a local time back to the instant it shows', () => {
    const instant = '2026-07-01T09:15:00.000Z';
    expect(fromTimeInput(toTimeInput(instant, false, 'local'), 'local')).to.equal(instant);
    expect(zoneLabel('local')).to.match(/UTC[+−]\d{2}:\d{2}/);
  });

  it('refuses what is not a time, and takes an empty input as no time', () => {
    expect(fromTimeInput('', 'utc')).to.equal(undefined);
    expect(fromTimeInput('   ', 'utc')).to.equal(undefined);
    for (const text of ['11/30/2026', '2026-02-30 10:00', '2026-11-30 25:00', 'yesterday', '2026-11-30 10']) {
      expect(fromTimeInput(text, 'utc'), text).to.equal(null);
    }
  });
});
