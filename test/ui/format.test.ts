import { expect } from 'chai';
import { dateTime, fromTimeInput, timeOfDay, toTimeInput, zoneLabel } from '../../src/ui/app/lib/format.js';
import { timeTicks } from '../../src/ui/app/lib/time-axis.js';

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

describe('the time axis of the statistics (web interface)', () => {
  const at = (iso: string) => Date.parse(iso);

  it("labels a week by day at the zone's midnights", () => {
    const ticks = timeTicks(at('2026-11-13T15:00:00Z'), at('2026-11-20T15:00:00Z'), 'utc');
    expect(ticks.map((tick) => tick.label)).to.deep.equal([
      '11-14',
      '11-15',
      '11-16',
      '11-17',
      '11-18',
      '11-19',
      '11-20',
    ]);
    expect(new Date(ticks[0]!.at).toISOString()).to.equal('2026-11-14T00:00:00.000Z');
  });

  it('labels a day by hours, naming the date where a day begins', () => {
    const ticks = timeTicks(at('2026-11-19T13:00:00Z'), at('2026-11-20T13:00:00Z'), 'utc');
    expect(ticks.map((tick) => tick.label)).to.deep.equal([
      '15:00',
      '18:00',
      '21:00',
      '11-20',
      '03:00',
      '06:00',
      '09:00',
      '12:00',
    ]);
  });

  it('never crowds the axis: at most eight labels over 90 days', () => {
    const ticks = timeTicks(at('2026-09-01T00:00:00Z'), at('2026-11-30T00:00:00Z'), 'utc');
    expect(ticks.length).to.be.within(2, 8);
  });
});
