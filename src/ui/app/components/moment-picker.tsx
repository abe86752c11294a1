import { dateTime } from '../lib/format';
import { Link, setParams } from '../lib/router';
import { TimeInput } from './time-input';

const HOUR = 3_600_000;
/** Moments a person reaches for after an incident; each becomes a fixed timestamp in the URL, so a link shows the same past later. */
const PRESETS: readonly (readonly [label: string, ms: number])[] = [
  ['1 h ago', HOUR],
  ['24 h ago', 24 * HOUR],
  ['7 d ago', 7 * 24 * HOUR],
];

/** The moment a view shows (`as_of` in its URL): now, a preset back from now, or any moment. */
export function MomentPicker({ asOf }: { asOf: string | undefined }) {
  const go = (moment: string | undefined) => setParams({ as_of: moment, offset: undefined, cursor: undefined });
  return (
    <fieldset class="window moment">
      <legend>As of</legend>
      <div class="segmented">
        <label>
          <input type="radio" name="as_of" checked={!asOf} onChange={() => go(undefined)} />
          Now
        </label>
        {PRESETS.map(([label, ms]) => (
          <button key={label} type="button" onClick={() => go(new Date(Date.now() - ms).toISOString())}>
            {label}
          </button>
        ))}
      </div>
      <label>
        Moment <TimeInput seconds value={asOf} onValue={go} />
      </label>
    </fieldset>
  );
}

/** Says plainly that the view shows the past, and leads back to the present. */
export function PastNotice({
  asOf,
  what,
  now,
  compare,
}: {
  asOf: string;
  what: string;
  now: string;
  compare?: string;
}) {
  return (
    <p class="past-notice" role="note">
      Showing {what} as it was stored at <strong>{dateTime(asOf)}</strong>. Last seen times and metrics are not history.{' '}
      <Link href={now}>Back to now</Link>
      {compare ? (
        <>
          {' · '}
          <Link href={compare}>Compare with now</Link>
        </>
      ) : null}
    </p>
  );
}
