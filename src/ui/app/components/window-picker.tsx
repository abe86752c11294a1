import { useId } from 'preact/hooks';
import { setParams } from '../lib/router';
import { PRESETS, windowOf } from '../lib/window';
import { TimeInput } from './time-input';

/** Presets and explicit bounds, kept in the URL (`range`, or `from` and `to`). */
/**
 * `defaultLabel` names what the view shows without a window (the statistics' 90 days), as a preset
 * of its own that clears the window.
 */
export function WindowPicker({
  params,
  allowAll = true,
  defaultLabel,
}: {
  params: URLSearchParams;
  allowAll?: boolean;
  defaultLabel?: string;
}) {
  const range = params.get('range') ?? '';
  // two pickers on one page are two radio groups
  const group = `range-${useId()}`;
  // only explicit bounds are shown, which need no moment
  const window = windowOf(params, 0);
  const explicit = !PRESETS.some(([name]) => name === range);
  const unset = explicit && !params.get('from') && !params.get('to');
  return (
    <fieldset class="window">
      <legend>Time window</legend>
      <div class="segmented">
        {allowAll || defaultLabel ? (
          <label>
            <input
              type="radio"
              name={group}
              checked={unset}
              onChange={() => setParams({ range: undefined, from: undefined, to: undefined, offset: undefined })}
            />
            {defaultLabel ?? 'Any time'}
          </label>
        ) : null}
        {PRESETS.map(([name, label]) => (
          <label key={name}>
            <input
              type="radio"
              name={group}
              checked={range === name}
              onChange={() => setParams({ range: name, from: undefined, to: undefined, offset: undefined })}
            />
            {label}
          </label>
        ))}
      </div>
      <label>
        From{' '}
        <TimeInput
          value={explicit ? window.start : undefined}
          onValue={(from) => setParams({ range: undefined, from, offset: undefined })}
        />
      </label>
      <label>
        To{' '}
        <TimeInput
          value={explicit ? window.end : undefined}
          onValue={(to) => setParams({ range: undefined, to, offset: undefined })}
        />
      </label>
    </fieldset>
  );
}
