import { useEffect, useState } from 'preact/hooks';
import { fromTimeInput, timeZone, toTimeInput, zoneLabel } from '../lib/format';

/**
 * A moment typed as ISO reads (`2026-11-23 14:05`), in the zone the page shows times in, whatever
 * the browser's locale: a datetime-local input shows its locale's order (mm/dd/yyyy) beside the
 * ISO dates everywhere else. The value is taken when the input is left or Enter is pressed.
 */
export function TimeInput({
  value,
  onValue,
  seconds = false,
}: {
  value: string | undefined;
  onValue: (iso: string | undefined) => void;
  seconds?: boolean;
}) {
  const shown = toTimeInput(value, seconds);
  const [draft, setDraft] = useState(shown);
  const [invalid, setInvalid] = useState(false);
  useEffect(() => {
    setDraft(shown);
    setInvalid(false);
  }, [shown]);
  const commit = (text: string) => {
    const iso = fromTimeInput(text);
    if (iso === null) return setInvalid(true);
    setInvalid(false);
    if (iso !== value) onValue(iso);
  };
  return (
    <input
      type="text"
      inputMode="numeric"
      class="time-input"
      size={seconds ? 19 : 16}
      placeholder={seconds ? 'YYYY-MM-DD HH:MM:SS' : 'YYYY-MM-DD HH:MM'}
      title={`${seconds ? 'YYYY-MM-DD HH:MM:SS' : 'YYYY-MM-DD HH:MM'}, ${zoneLabel()}${timeZone() === 'utc' ? '' : " (the browser's zone)"}`}
      aria-invalid={invalid}
      value={draft}
      onInput={(event) => setDraft((event.currentTarget as HTMLInputElement).value)}
      onChange={(event) => commit((event.currentTarget as HTMLInputElement).value)}
    />
  );
}
