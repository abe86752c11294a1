import { setTimeZone, zoneLabel, type TimeZone } from '../lib/format';

/**
 * Which zone times are shown and typed in, named in the header: the browser's (by name and
 * offset) or UTC, as Grafana offers. `onChange` re-renders the views, which read the zone as they draw.
 */
export function TimeZoneToggle({ zone, onChange }: { zone: TimeZone; onChange: (zone: TimeZone) => void }) {
  const next: TimeZone = zone === 'utc' ? 'local' : 'utc';
  return (
    <button
      type="button"
      class="time-zone"
      onClick={() => {
        setTimeZone(next);
        onChange(next);
      }}
      title={`Times are shown in ${zoneLabel(zone)}; switch to ${next === 'utc' ? 'UTC' : `the browser's zone, ${zoneLabel('local')}`}`}
    >
      Times: {zone === 'utc' ? 'UTC' : zoneLabel('local')}
    </button>
  );
}
